// The toolbound web view: sessions, their tool calls, a call's output live.
//
// Everything shown from a tool call goes into the page as text
// (textContent), never as HTML. Output panes are virtual: they keep the
// lines in memory and put only the ones on screen into the DOM, so a
// 200,000-line output costs a few dozen elements.
//
// Pieces:
//   Pane         a virtual, ANSI-aware, append-only text view
//   api          fetch JSON from the server (the cookie carries the token)
//   sessions / calls / detail / viewer   the page's four parts
//   route        the location hash (#s=SESSION&c=CALL) -> what is shown

import { PLAIN, compact, parseLine, scanState } from "./ansi.js";

const OVERSCAN = 20; // lines rendered above and below the visible ones
const COMPACT_AT = 4096; // a line still being written is compacted past this length
const POLL_MS = 1000; // while the session is live or a call of it runs
const IDLE_POLL_MS = 5000;
const VIEW_PAGE_LINES = 500;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function styleRun(span, style) {
  const cls = [];
  let fg = style.fg;
  let bg = style.bg;
  if (style.inverse) [fg, bg] = [bg === null ? "inv-fg" : bg, fg === null ? "inv-bg" : fg];
  if (typeof fg === "number") cls.push(`f${fg}`);
  else if (fg === "inv-fg") cls.push("finv");
  else if (fg) span.style.color = fg;
  if (typeof bg === "number") cls.push(`b${bg}`);
  else if (bg === "inv-bg") cls.push("binv");
  else if (bg) span.style.backgroundColor = bg;
  if (style.bold) cls.push("bold");
  if (style.dim) cls.push("dim");
  if (style.italic) cls.push("italic");
  if (style.underline) cls.push("underline");
  if (style.strike) cls.push("strike");
  if (cls.length) span.className = cls.join(" ");
}

// A virtual text view: append raw output, see the lines on screen.
export class Pane {
  constructor(scroller) {
    this.scroller = scroller;
    this.spacer = el("div", "spacer");
    this.view = el("div", "view");
    scroller.replaceChildren(this.spacer, this.view);
    this.follow = true;
    this.pending = false;
    this.lineHeight = 0;
    this.firstNumber = 1; // the number shown beside the first line (a file window's offset + 1)
    this.clear();
    // A pane first shown (or resized) renders again, at its real line height.
    new ResizeObserver(() => this.schedule()).observe(scroller);
    scroller.addEventListener("scroll", () => {
      const s = this.scroller;
      this.follow = s.scrollTop + s.clientHeight >= s.scrollHeight - this.lineHeight - 2;
      this.schedule();
    });
  }

  clear() {
    this.lines = []; // complete lines, raw
    this.starts = []; // the style each complete line starts in
    this.cur = ""; // the line being written
    this.curStart = PLAIN;
    this.follow = true;
    this.scroller.scrollTop = 0;
    this.schedule();
  }

  get count() {
    return this.lines.length + (this.cur ? 1 : 0);
  }

  // Append raw output; a "\n" ends a line, "\r\n" too.
  append(text) {
    const parts = text.split("\n");
    for (let i = 0; i < parts.length; i++) {
      this.cur += parts[i];
      if (i < parts.length - 1) {
        let raw = this.cur;
        if (raw.endsWith("\r")) raw = raw.slice(0, -1);
        raw = this.compacted(raw, 0);
        this.lines.push(raw);
        this.starts.push(this.curStart);
        this.curStart = scanState(raw, this.curStart);
        this.cur = "";
      }
    }
    this.cur = this.compacted(this.cur, COMPACT_AT);
    this.schedule();
  }

  // A line longer than `over` that rewrote itself (\r) is kept as what it shows.
  compacted(raw, over) {
    if (raw.length <= over || !raw.includes("\r")) return raw;
    const shorter = compact(raw, this.curStart);
    return shorter === null ? raw : shorter;
  }

  // The text of line i as shown (escapes applied), for tests and copying.
  lineText(i) {
    const raw = i < this.lines.length ? this.lines[i] : this.cur;
    const start = i < this.lines.length ? this.starts[i] : this.curStart;
    return parseLine(raw, start).runs.map((r) => r.text).join("");
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.render();
    });
  }

  // The line height in pixels; 0 while the pane is hidden (nothing to draw).
  measure() {
    if (this.lineHeight) return this.lineHeight;
    const probe = el("div", "line", "M");
    this.view.append(probe);
    this.lineHeight = probe.getBoundingClientRect().height;
    probe.remove();
    return this.lineHeight;
  }

  render() {
    const lh = this.measure();
    if (!lh) return;
    const total = this.count;
    this.spacer.style.height = `${total * lh}px`;
    const s = this.scroller;
    if (this.follow) s.scrollTop = s.scrollHeight;
    const first = Math.max(0, Math.floor(s.scrollTop / lh) - OVERSCAN);
    const last = Math.min(total, Math.ceil((s.scrollTop + s.clientHeight) / lh) + OVERSCAN);
    const rows = [];
    for (let i = first; i < last; i++) {
      const raw = i < this.lines.length ? this.lines[i] : this.cur;
      const start = i < this.lines.length ? this.starts[i] : this.curStart;
      const row = el("div", "line");
      row.dataset.n = String(this.firstNumber + i);
      for (const run of parseLine(raw, start).runs) {
        if (run.style === PLAIN) {
          row.append(document.createTextNode(run.text));
        } else {
          const span = el("span", null, run.text);
          styleRun(span, run.style);
          row.append(span);
        }
      }
      rows.push(row);
    }
    this.view.style.transform = `translateY(${first * lh}px)`;
    this.view.replaceChildren(...rows);
  }
}

// --- the server ---------------------------------------------------------------

async function api(path) {
  const response = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

const enc = encodeURIComponent;
const callPath = (cid) => `/api/sessions/${enc(state.session)}/calls/${enc(cid)}`;

// --- state --------------------------------------------------------------------

const state = {
  session: null,
  call: null,
  source: null, // the EventSource of the call shown
  lastSeq: -1,
  viewer: null, // {cid, name, offsets: [...], result}
  running: true, // a call of the session is running: poll often
  live: true, // the session is served right now: poll often
};

const $ = (id) => document.getElementById(id);

// A running call shows how long it has run so far.
function durationOf(call) {
  if (call.status === "running" && call.startedAt) return Math.max(0, Date.now() - call.startedAt * 1000);
  return call.durationMs;
}

function formatDuration(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

const STATUS_TEXT = {
  running: "running", done: "done", error: "error", timedOut: "timed out", aborted: "aborted",
};

function badge(status) {
  return el("span", `badge st-${status}`, STATUS_TEXT[status] || status);
}

// --- sessions -----------------------------------------------------------------

async function refreshSessions() {
  const { sessions } = await api("/api/sessions");
  const list = $("sessions");
  const items = sessions.map((s) => {
    const a = el("a", s.id === state.session ? "current" : "", s.id);
    a.href = `#s=${enc(s.id)}`;
    const li = el("li");
    li.append(a);
    if (s.live) li.append(el("span", "badge live", "live"));
    else if (s.endedAt) li.append(el("span", "badge ended", "ended"));
    return li;
  });
  if (!items.length) items.push(el("li", "empty", "No sessions yet."));
  list.replaceChildren(...items);
  state.live = sessions.some((s) => s.id === state.session && s.live);
  // No session chosen (by the address either): show the first.
  if (!parseHash().session && sessions.length) location.hash = `#s=${enc(sessions[0].id)}`;
}

// --- calls --------------------------------------------------------------------

async function refreshCalls() {
  if (!state.session) return;
  const { calls } = await api(`/api/sessions/${enc(state.session)}/calls`);
  state.running = calls.some((c) => c.status === "running");
  const rows = calls.map((c) => {
    const row = el("a", `call${c.toolCallId === state.call ? " current" : ""}`);
    row.href = `#s=${enc(state.session)}&c=${enc(c.toolCallId)}`;
    row.dataset.id = c.toolCallId;
    row.append(el("span", "tool", c.tool), el("span", "args", c.argsShort), badge(c.status));
    if (c.cut) row.append(el("span", "badge cut", "cut"));
    row.append(el("span", "duration", formatDuration(durationOf(c))));
    return row;
  });
  if (!rows.length) rows.push(el("p", "empty", "No tool calls in this session yet."));
  $("calls").replaceChildren(...rows);
  if (state.call) {
    const current = calls.find((c) => c.toolCallId === state.call);
    if (current) showHead(current);
  }
}

// --- one call -----------------------------------------------------------------

let panes = null;

function showHead(call) {
  const head = $("call-head");
  const parts = [el("span", "tool", call.tool), badge(call.status)];
  if (call.cut) parts.push(el("span", "badge cut", "cut"));
  parts.push(el("span", "duration", formatDuration(durationOf(call))));
  head.replaceChildren(...parts, el("div", "args full", call.argsShort));
  head.dataset.status = call.status;
}

function closeStream() {
  if (state.source) state.source.close();
  state.source = null;
}

async function showCall(cid) {
  closeStream();
  state.call = cid;
  state.lastSeq = -1;
  panes.stdout.clear();
  panes.stderr.clear();
  $("result").replaceChildren();
  $("outputs").replaceChildren();
  $("detail").hidden = false;
  const call = await api(callPath(cid));
  if (state.call !== cid) return;
  showHead(call);
  openStream(cid);
}

function openStream(cid) {
  const source = new EventSource(`${callPath(cid)}/events?after=${state.lastSeq}`);
  state.source = source;
  $("detail").dataset.stream = "open";
  source.addEventListener("chunk", (msg) => {
    const event = JSON.parse(msg.data);
    if (event.seq <= state.lastSeq) return; // already shown (a reconnect)
    state.lastSeq = event.seq;
    panes[event.stream].append(event.data);
  });
  source.addEventListener("result", async (msg) => {
    const event = JSON.parse(msg.data);
    state.lastSeq = event.seq;
    closeStream();
    await finishCall(cid, event);
  });
  source.addEventListener("failed", (msg) => {
    const event = JSON.parse(msg.data);
    closeStream();
    $("result").replaceChildren(el("p", "status error", `The tool crashed: ${event.message}`));
    $("detail").dataset.stream = "done";
  });
  source.addEventListener("end", () => {
    closeStream();
    $("detail").dataset.stream = "done";
  });
  source.addEventListener("error", () => {
    // A refused stream (the call's events are no longer held) is not retried.
    if (source.readyState !== EventSource.CLOSED || state.source !== source) return;
    closeStream();
    $("result").replaceChildren(el("p", "status error", "This call's output is not available."));
    $("detail").dataset.stream = "done";
  });
}

function bashStatus(result) {
  if (result.timedOut) return ["timedOut", "timed out; the process tree was stopped"];
  if (result.aborted) return ["aborted", "aborted; the process tree was stopped"];
  if (result.signal) return ["error", `killed by signal ${result.signal}`];
  return [result.exitCode === 0 ? "done" : "error", `exit status ${result.exitCode}`];
}

// What the model read: the result event's text (toolbound.model_text), shown
// as it is, never re-derived from the result.
function modelView(text) {
  const view = el("pre", "model-text", text);
  view.title = `what the model read: ${new TextEncoder().encode(text).length} bytes`;
  return view;
}

async function finishCall(cid, event) {
  const result = event.result;
  const call = await api(callPath(cid));
  if (state.call !== cid) return;
  showHead(call);
  const box = $("result");
  const parts = [];
  if (result.error) {
    parts.push(el("p", "status error", event.text));
  } else if (call.tool === "Bash") {
    const [cls, text] = bashStatus(result);
    parts.push(el("p", `status ${cls}`, text));
    for (const stream of ["stdout", "stderr"]) {
      const o = result.omitted && result.omitted[stream];
      if (o && (o.bytes || o.lines)) {
        parts.push(el("p", "marker", `${stream}: capture dropped ${o.bytes} bytes, ${o.lines} lines`));
      }
    }
    parts.push(modelView(event.text));
  } else if (call.tool === "Read") {
    // The file's own lines, numbered from the window's offset; the notice beside them.
    panes.stdout.follow = false;
    panes.stdout.append(result.content.replace(/\n$/, ""));
    if (result.notice) parts.push(el("p", "marker", result.notice));
  } else {
    // Glob, Grep, Edit, Write stream no chunks: their output is the model's text.
    panes.stdout.follow = false;
    panes.stdout.append(event.text.replace(/\n$/, ""));
  }
  box.replaceChildren(...parts);
  const buttons = call.outputs.map((o) => {
    const b = el("button", "open", `open full output: ${o.name}`);
    b.dataset.output = o.name;
    b.addEventListener("click", () => openViewer(cid, o.name, null));
    return b;
  });
  $("outputs").replaceChildren(...buttons);
  $("detail").dataset.stream = "done";
}

// --- the full-output viewer ----------------------------------------------------

let viewerPane = null;

async function openViewer(cid, name, offset) {
  state.viewer = { cid, name, offsets: [] };
  $("viewer").hidden = false;
  await loadPage(offset);
}

async function loadPage(offset) {
  const v = state.viewer;
  const query = offset === null ? `limit=${VIEW_PAGE_LINES}` : `offset=${offset}&limit=${VIEW_PAGE_LINES}`;
  const result = await api(`${callPath(v.cid)}/outputs/${enc(v.name)}?${query}`);
  viewerPane.clear();
  if (result.error) {
    $("viewer-info").textContent = `${result.error.code}: ${result.error.message}`;
    v.result = null;
    return;
  }
  v.result = result;
  viewerPane.follow = false;
  viewerPane.firstNumber = result.offset + 1;
  viewerPane.append(result.content.endsWith("\n") ? result.content.slice(0, -1) : result.content);
  const first = result.offset + 1;
  const lastLine = result.offset + result.lineCount;
  const of = result.totalLines !== undefined ? ` of ${result.totalLines}` : "";
  $("viewer-path").textContent = result.path;
  $("viewer-info").textContent = `lines ${first}–${lastLine}${of} · ${result.fileBytes} bytes`;
  $("viewer-prev").disabled = result.offset === 0;
  $("viewer-next").disabled = result.totalLines !== undefined;
  $("viewer").dataset.offset = String(result.offset);
}

function viewerNext() {
  const v = state.viewer;
  if (!v || !v.result) return;
  v.offsets.push(v.result.offset);
  loadPage(v.result.offset + v.result.lineCount);
}

function viewerPrev() {
  const v = state.viewer;
  if (!v || !v.result) return;
  const back = v.offsets.length ? v.offsets.pop() : Math.max(0, v.result.offset - VIEW_PAGE_LINES);
  loadPage(back);
}

// --- routing ------------------------------------------------------------------

function parseHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { session: params.get("s"), call: params.get("c") };
}

async function route() {
  const { session, call } = parseHash();
  if (session !== state.session) {
    state.session = session;
    state.call = null;
    closeStream();
    $("detail").hidden = true;
    $("viewer").hidden = true;
  }
  if (call && call !== state.call) {
    $("viewer").hidden = true;
    await showCall(call);
  }
  await Promise.all([refreshSessions(), refreshCalls()]);
}

async function poll() {
  try {
    await Promise.all([refreshSessions(), refreshCalls()]);
    $("conn").textContent = "";
  } catch (err) {
    $("conn").textContent = "server unreachable";
  }
  setTimeout(poll, state.running || state.live ? POLL_MS : IDLE_POLL_MS);
}

function start() {
  panes = { stdout: new Pane($("out-stdout")), stderr: new Pane($("out-stderr")) };
  viewerPane = new Pane($("viewer-text"));
  $("viewer-next").addEventListener("click", viewerNext);
  $("viewer-prev").addEventListener("click", viewerPrev);
  $("viewer-close").addEventListener("click", () => { $("viewer").hidden = true; });
  window.addEventListener("hashchange", route);
  window.toolbound = { panes, viewerPane, state };
  route().finally(() => setTimeout(poll, POLL_MS));
}

start();
