// Small helpers the page's modules share.
//
// Pieces:
//   el       a new element with a class and its text (as text, never markup)
//   plural   "1 line", "2 lines"

export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
