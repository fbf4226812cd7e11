// Views of the file tools' results: an ApplyPatch's files, a List's tree, a Read's image or PDF.
//
// Each is built from the result's fields, as text (textContent), never as
// markup. An image is shown only from the base64 data the model got, with
// its type checked against the four Read sends (a data: URL, which the
// page's Content-Security-Policy allows for images and nothing else); never
// from a path.
//
// Pieces:
//   patchView    ApplyPatch: each file (action, path, from) with its hunks' match grades and its diff
//   splitDiff    a patch's diff -> per-file sections, hunk by hunk (counted, not guessed)
//   listTree     List: the entries as a nested tree, folders with their counts, files with sizes
//   imageView    Read of an image: the image as sent, its size and its scaling
//   pdfView      Read of a PDF: each page's text under its page number

import { el, plural } from "./dom.js";

const num = (n) => Number(n).toLocaleString("en-US");
const MAX_ROWS = 5000; // rendered diff lines or tree entries (the result's budget keeps it below)

// --- ApplyPatch -------------------------------------------------------------------

const HUNK_HEAD = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

// The diff as files: [{old, new, lines: [{cls, text, oldStart?}]}]. A hunk's
// lines are counted from its header, so a removed line "-- x" (shown "--- x")
// is never taken for the next file's header.
export function splitDiff(diff) {
  const lines = diff.endsWith("\n") ? diff.slice(0, -1).split("\n") : diff.split("\n");
  const files = [];
  let file = null;
  let oldLeft = 0;
  let newLeft = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (oldLeft > 0 || newLeft > 0) {
      const tag = line[0];
      if (tag === "\\") { file.lines.push({ cls: "meta", text: line }); continue; }
      if (tag !== "+") oldLeft--;
      if (tag !== "-") newLeft--;
      file.lines.push({ cls: tag === "+" ? "add" : tag === "-" ? "del" : "same", text: line });
      continue;
    }
    const head = HUNK_HEAD.exec(line);
    if (head && file) {
      oldLeft = head[2] === undefined ? 1 : Number(head[2]);
      newLeft = head[4] === undefined ? 1 : Number(head[4]);
      file.lines.push({ cls: "hunk", text: line, oldStart: Number(head[1]), oldCount: oldLeft });
      continue;
    }
    if (line.startsWith("--- ") && (lines[i + 1] || "").startsWith("+++ ")) {
      file = { old: line.slice(4), new: lines[i + 1].slice(4), lines: [] };
      file.lines.push({ cls: "meta", text: line }, { cls: "meta", text: lines[i + 1] });
      files.push(file);
      i++;
      continue;
    }
    if (line === "\\ No newline at end of file" && file) { file.lines.push({ cls: "meta", text: line }); continue; }
    if (!file) { file = { old: null, new: null, lines: [] }; files.push(file); }
    file.lines.push({ cls: "same", text: line });
  }
  return files;
}

// The diff section of a result's file: its new path (b/...), or its old one when deleted.
function sectionOf(sections, file) {
  const want = file.action === "delete" ? [`a/${file.path}`, "/dev/null"] : [null, `b/${file.path}`];
  return sections.find((s) => !s.taken && (want[0] === null || s.old === want[0]) && s.new === want[1]);
}

const GRADE_TEXT = { exact: "exact", "trailing-space": "trailing space ignored", whitespace: "whitespace ignored" };

function gradeBadge(hunk) {
  if (hunk.alreadyApplied) return el("span", "badge grade already", "already applied");
  return el("span", `badge grade g-${hunk.matched}`, GRADE_TEXT[hunk.matched] || hunk.matched);
}

const ACTION_TEXT = { add: "added", update: "updated", delete: "deleted", move: "moved" };

// One file of the patch: what was done to it, each hunk's grade, its diff
// (a hunk header carries the grade of the hunk that matched at its first line).
function patchFile(file, section, truncated) {
  const box = el("section", `patch-file act-${file.action}`);
  box.dataset.path = file.path;
  const head = el("h4");
  head.append(el("span", `badge action act-${file.action}`, ACTION_TEXT[file.action] || file.action), " ");
  head.append(file.action === "move" ? `${file.from} → ${file.path}` : file.path);
  if (file.alreadyApplied) head.append(" ", el("span", "badge grade already", "already as the patch makes it"));
  box.append(head);
  if (file.hunks.length) {
    const list = el("ol", "hunks");
    file.hunks.forEach((hunk, i) => {
      const item = el("li", "hunk-grade", `hunk ${i + 1} at line ${num(hunk.line)} `);
      item.dataset.line = String(hunk.line);
      item.dataset.matched = hunk.matched;
      if (hunk.alreadyApplied) item.dataset.already = "true";
      item.append(gradeBadge(hunk));
      list.append(item);
    });
    box.append(list);
  }
  if (!section) {
    const why = file.alreadyApplied ? "nothing written" : truncated ? "the diff was cut before this file" : "no lines changed";
    box.append(el("p", "empty no-diff", `No diff: ${why}.`));
    return box;
  }
  section.taken = true;
  const rows = el("div", "rows diff");
  const applied = file.hunks.filter((h) => !h.alreadyApplied);
  for (const line of section.lines.slice(0, MAX_ROWS)) {
    const row = el("div", line.cls, line.text);
    if (line.cls === "hunk") {
      // "-N,0" (nothing removed) names the line before the insertion.
      const at = line.oldCount === 0 ? line.oldStart + 1 : line.oldStart;
      const hunk = applied.find((h) => h.line === at);
      if (hunk) { row.append(" ", gradeBadge(hunk)); row.dataset.matched = hunk.matched; }
    }
    rows.append(row);
  }
  box.append(rows);
  return box;
}

export function patchTitle(result) {
  const hunks = result.files.reduce((n, f) => n + f.hunks.length, 0);
  const loose = result.files.reduce((n, f) => n + f.hunks.filter((h) => h.matched !== "exact").length, 0);
  const parts = [plural(result.files.length, "file"), plural(hunks, "hunk")];
  if (loose) parts.push(`${loose} matched loosely`);
  return parts.join(" · ");
}

export function patchView(result) {
  const sections = splitDiff(result.diff);
  const nodes = result.files.map((file) => patchFile(file, sectionOf(sections, file), result.truncated));
  const rest = sections.filter((s) => !s.taken); // a section no file names: shown, not lost
  for (const s of rest) {
    const rows = el("div", "rows diff");
    for (const line of s.lines.slice(0, MAX_ROWS)) rows.append(el("div", line.cls, line.text));
    nodes.push(rows);
  }
  return nodes;
}

// --- List ---------------------------------------------------------------------------

const entriesText = (n) => (n === 1 ? "1 entry" : `${num(n)} entries`);

function humanBytes(n) {
  if (n < 1024) return plural(n, "byte");
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

// The entries as nested lists: an entry goes under its folder when the
// folder is listed, else at the top (named from the listed folder).
export function listTree(result) {
  const root = el("ul", "tree");
  const folders = new Map(); // path -> its <ul>
  const base = result.path === "." ? "" : `${result.path.replace(/\/+$/, "")}/`;
  for (const entry of result.entries.slice(0, MAX_ROWS)) {
    const cut = entry.path.lastIndexOf("/");
    const parent = cut < 0 ? "" : entry.path.slice(0, cut);
    const under = folders.get(parent);
    let name = under ? entry.path.slice(cut + 1) : entry.path;
    if (!under && base && name.startsWith(base)) name = name.slice(base.length);
    const item = el("li", `entry ${entry.type}`);
    item.dataset.path = entry.path;
    item.dataset.type = entry.type;
    item.append(el("span", "name", entry.type === "dir" ? `${name}/` : name));
    if (entry.type === "dir" && entry.entries !== undefined) item.append(el("span", "size", entriesText(entry.entries)));
    else if (entry.type === "file" && entry.size !== undefined) item.append(el("span", "size", humanBytes(entry.size)));
    else if (entry.type === "link") item.append(el("span", "badge link", "link"));
    (under || root).append(item);
    if (entry.type === "dir") {
      const children = el("ul");
      item.append(children);
      folders.set(entry.path, children);
    }
  }
  for (const ul of folders.values()) if (!ul.children.length) ul.remove();
  return [root];
}

export function listTitle(result) {
  return `${result.path} · ${entriesText(result.count)}`;
}

// --- Read of an image or a PDF ----------------------------------------------------------

// The types Read sends an image as: nothing else becomes a data: URL.
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function imageCaption(result) {
  const img = result.image;
  const size = `${num(img.width)}×${num(img.height)} px`;
  const scaled = img.width === img.originalWidth && img.height === img.originalHeight
    ? "sent at full size"
    : `scaled from ${num(img.originalWidth)}×${num(img.originalHeight)}`;
  const data = typeof img.data === "string" ? img.data : "";
  const sent = Math.floor((data.length * 3) / 4) - (data.match(/=*$/)[0].length);
  return `${result.path} (${result.root}) · ${img.mimeType} · ${size}, ${scaled} · sent ${humanBytes(sent)} · file ${humanBytes(result.fileBytes)}`;
}

export function imageView(result) {
  const img = result.image;
  const figure = el("figure", "read-image");
  const caption = el("figcaption", "image-info", imageCaption(result));
  const data = typeof img.data === "string" ? img.data : "";
  if (!IMAGE_TYPES.has(img.mimeType)) {
    figure.append(el("p", "marker image-refused", `Not shown: ${img.mimeType} is not png, jpeg, gif or webp.`));
  } else if (!data || !BASE64.test(data)) {
    figure.append(el("p", "marker image-refused", "Not shown: the stored result holds no image data."));
  } else {
    const picture = document.createElement("img");
    picture.alt = `${result.path} as the model got it`;
    picture.width = img.width;
    picture.height = img.height;
    picture.src = `data:${img.mimeType};base64,${data}`;
    figure.append(picture);
  }
  figure.append(caption);
  return [figure];
}

export function imageTitle(result) {
  const tokens = Math.ceil((result.image.width * result.image.height) / 750);
  return `${result.path} · image · about ${num(tokens)} tokens (width × height ÷ 750)`;
}

// The pages' text, split only at the headers Read wrote, in the order of the
// range it names ("3" or "1-10"): a page's own "--- Page 9 ---" line stays text.
export function pdfView(result) {
  const [first, last] = result.pages ? result.pages.split("-").map(Number) : [1, 0];
  const lines = result.content.endsWith("\n") ? result.content.slice(0, -1).split("\n") : result.content.split("\n");
  const nodes = [];
  let page = null;
  let next = first;
  for (const line of lines) {
    if (next <= (last || first) && line === `--- Page ${next} ---`) {
      page = el("section", "pdf-page");
      page.dataset.page = String(next);
      page.append(el("h4", null, `page ${next}`), el("div", "rows"));
      nodes.push(page);
      next++;
      continue;
    }
    if (!page) {
      page = el("section", "pdf-page");
      page.append(el("div", "rows"));
      nodes.push(page);
    }
    page.lastChild.append(el("div", null, line));
  }
  if (!nodes.length) nodes.push(el("p", "empty", "No text on these pages."));
  return nodes;
}

export function pdfTitle(result) {
  const range = result.pages ? `pages ${result.pages.replace("-", "–")} of ${result.totalPages}` : `none of ${result.totalPages} pages`;
  return `${result.path} (${result.root}) · PDF · ${range} · ${humanBytes(result.fileBytes)}`;
}
