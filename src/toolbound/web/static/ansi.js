// Terminal output -> styled text runs, for one line at a time.
//
// A line's raw text may hold SGR colour codes (ESC [ ... m), carriage returns
// (a progress line rewriting itself), backspaces, "erase line" (ESC [ K) and
// other escape sequences (dropped). Styles carry over from line to line, so
// each line is parsed from the state the previous one ended in: `scanState`
// computes that cheaply, `parseLine` makes the runs of the lines on screen.
// Output is never interpreted as HTML: callers put run text in textContent.
//
// Pieces:
//   PLAIN       the state at the start of output
//   scanState   (raw, state) -> the state after the line
//   parseLine   (raw, state) -> {runs: [{text, style}], end}
//   compact     (raw, state) -> an equivalent raw line without overwritten text
//   styleKey    a style -> a stable key (equal styles share one object)

const ESC = "\x1b";

function makeStyle(fields) {
  return Object.freeze({
    fg: null, bg: null, bold: false, dim: false, italic: false,
    underline: false, inverse: false, strike: false, ...fields,
  });
}

export const PLAIN = makeStyle({});

const interned = new Map([[styleKey(PLAIN), PLAIN]]);

export function styleKey(s) {
  return [s.fg, s.bg, +s.bold, +s.dim, +s.italic, +s.underline, +s.inverse, +s.strike].join("|");
}

function intern(fields) {
  const s = makeStyle(fields);
  const key = styleKey(s);
  const known = interned.get(key);
  if (known) return known;
  if (interned.size < 4096) interned.set(key, s);
  return s;
}

function color256(n) {
  if (n < 16) return n; // a palette index: the page's CSS classes colour it
  if (n < 232) {
    const v = [0, 95, 135, 175, 215, 255];
    const i = n - 16;
    return `rgb(${v[Math.floor(i / 36)]},${v[Math.floor(i / 6) % 6]},${v[i % 6]})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g},${g},${g})`;
}

// Apply one SGR parameter list to a style.
function applySgr(style, params) {
  const codes = params === "" ? [0] : params.split(/[;:]/).map((p) => (p === "" ? 0 : +p));
  const f = { ...style };
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i];
    if (c === 0) Object.assign(f, PLAIN);
    else if (c === 1) f.bold = true;
    else if (c === 2) f.dim = true;
    else if (c === 3) f.italic = true;
    else if (c === 4) f.underline = true;
    else if (c === 7) f.inverse = true;
    else if (c === 9) f.strike = true;
    else if (c === 22) { f.bold = false; f.dim = false; }
    else if (c === 23) f.italic = false;
    else if (c === 24) f.underline = false;
    else if (c === 27) f.inverse = false;
    else if (c === 29) f.strike = false;
    else if (c >= 30 && c <= 37) f.fg = c - 30;
    else if (c === 39) f.fg = null;
    else if (c >= 40 && c <= 47) f.bg = c - 40;
    else if (c === 49) f.bg = null;
    else if (c >= 90 && c <= 97) f.fg = c - 90 + 8;
    else if (c >= 100 && c <= 107) f.bg = c - 100 + 8;
    else if (c === 38 || c === 48) {
      let value = null;
      if (codes[i + 1] === 5 && i + 2 < codes.length) {
        value = color256(codes[i + 2] & 255);
        i += 2;
      } else if (codes[i + 1] === 2 && i + 4 < codes.length) {
        const [r, g, b] = codes.slice(i + 2, i + 5).map((x) => x & 255);
        value = `rgb(${r},${g},${b})`;
        i += 4;
      } else {
        break; // malformed: ignore the rest, as terminals do
      }
      if (c === 38) f.fg = value;
      else f.bg = value;
    }
  }
  return intern(f);
}

// One escape sequence at raw[i] (raw[i] === ESC): [kind, params, length].
// kind is "sgr", "el" (erase in line), "skip", or "partial" (cut off at the end).
function readEscape(raw, i) {
  const next = raw[i + 1];
  if (next === undefined) return ["partial", "", 1];
  if (next === "[") {
    let j = i + 2;
    while (j < raw.length && raw.charCodeAt(j) >= 0x20 && raw.charCodeAt(j) <= 0x3f) j++;
    if (j >= raw.length) return ["partial", "", j - i];
    const final = raw[j];
    const params = raw.slice(i + 2, j);
    if (final === "m") return ["sgr", params, j - i + 1];
    if (final === "K") return ["el", params, j - i + 1];
    return ["skip", "", j - i + 1];
  }
  if (next === "]" || next === "P" || next === "_" || next === "^") {
    // OSC / DCS / APC / PM: up to BEL or ESC \
    for (let j = i + 2; j < raw.length; j++) {
      if (raw[j] === "\x07") return ["skip", "", j - i + 1];
      if (raw[j] === ESC && raw[j + 1] === "\\") return ["skip", "", j - i + 2];
    }
    return ["partial", "", raw.length - i];
  }
  return ["skip", "", 2];
}

// The state after a line, without building its runs.
export function scanState(raw, state) {
  if (raw.indexOf(ESC) < 0) return state;
  let s = state;
  for (let i = raw.indexOf(ESC); i >= 0 && i < raw.length; i = raw.indexOf(ESC, i)) {
    const [kind, params, len] = readEscape(raw, i);
    if (kind === "sgr") s = applySgr(s, params);
    i += len;
  }
  return s;
}

// Control characters other than tab are shown as their Unicode pictures
// (U+2400...), so every byte of output stays visible as text.
function visible(ch) {
  const c = ch.charCodeAt(0);
  if (c < 0x20 && c !== 0x09) return String.fromCharCode(0x2400 + c);
  if (c === 0x7f) return "\u2421";
  return ch;
}

const SIMPLE = /[\x00-\x08\x0a-\x1f\x7f]/;

// The runs of one line: [{text, style}], and the state it ends in.
export function parseLine(raw, state) {
  if (!SIMPLE.test(raw)) {
    const runs = raw ? [{ text: raw, style: state }] : [];
    return { runs, end: state, col: raw.length, cells: raw.length };
  }
  // A line with escapes or carriage returns: lay it out cell by cell.
  const chars = [];
  const styles = [];
  let col = 0;
  let s = state;
  for (let i = 0; i < raw.length; ) {
    const ch = raw[i];
    if (ch === ESC) {
      const [kind, params, len] = readEscape(raw, i);
      if (kind === "sgr") s = applySgr(s, params);
      else if (kind === "el") {
        const mode = params === "" ? 0 : +params;
        if (mode === 0) { chars.length = col; styles.length = col; }
        else if (mode === 2 || mode === 1) {
          for (let k = 0; k < Math.min(col, chars.length); k++) chars[k] = " ";
          if (mode === 2) { chars.length = col; styles.length = col; }
        }
      }
      i += len;
      continue;
    }
    if (ch === "\r") { col = 0; i++; continue; }
    if (ch === "\b") { col = Math.max(0, col - 1); i++; continue; }
    // A surrogate pair is one cell.
    const code = raw.charCodeAt(i);
    const text = code >= 0xd800 && code < 0xdc00 && i + 1 < raw.length ? raw.slice(i, i + 2) : visible(ch);
    i += code >= 0xd800 && code < 0xdc00 && i + 1 < raw.length ? 2 : 1;
    while (chars.length < col) { chars.push(" "); styles.push(PLAIN); }
    chars[col] = text;
    styles[col] = s;
    col++;
  }
  const runs = [];
  for (let k = 0; k < chars.length; k++) {
    const last = runs[runs.length - 1];
    if (last && last.style === styles[k]) last.text += chars[k];
    else runs.push({ text: chars[k], style: styles[k] });
  }
  return { runs, end: s, col, cells: chars.length };
}

function sgrOf(style) {
  const codes = [0];
  if (style.bold) codes.push(1);
  if (style.dim) codes.push(2);
  if (style.italic) codes.push(3);
  if (style.underline) codes.push(4);
  if (style.inverse) codes.push(7);
  if (style.strike) codes.push(9);
  for (const [value, base, bright, ext] of [[style.fg, 30, 90, 38], [style.bg, 40, 100, 48]]) {
    if (value === null) continue;
    if (typeof value === "number") codes.push(value < 8 ? base + value : bright + value - 8);
    else {
      const [r, g, b] = value.match(/\d+/g);
      codes.push(ext, 2, r, g, b);
    }
  }
  return `${ESC}[${codes.join(";")}m`;
}

// A raw line with the same look, end state and cursor but without
// overwritten text, so a progress bar that rewrites itself a thousand times
// stays small. Null when the cursor sits mid-line (left as it is).
export function compact(raw, state) {
  const { runs, end, col, cells } = parseLine(raw, state);
  if (col !== 0 && col !== cells) return null;
  let out = "";
  let current = state;
  for (const run of runs) {
    if (run.style !== current) { out += sgrOf(run.style); current = run.style; }
    out += run.text;
  }
  if (end !== current) out += sgrOf(end);
  if (col === 0 && cells > 0) out += "\r";
  return out;
}
