// The toolbound web view: sessions, their tool calls, a call's output live.
//
// Everything shown from a tool call goes into the page as text
// (textContent), never as HTML. Output panes are virtual: they keep the
// lines in memory and put only the ones on screen into the DOM, so a
// 200,000-line output costs a few dozen elements. A result is rendered from
// its fields (a Read window, Grep hits by file, a Glob list, a diff, two
// streams), never by reading markers back out of text; the model view shows
// the text the model read exactly as the server sent it.
//
// Pieces:
//   Pane         a virtual, ANSI-aware, append-only text view (a job's input
//                as lines of their own, marked, between its output's lines)
//   api          fetch JSON from the server (the cookie carries the token)
//   sessions     the list: workspace, host, times, calls; a text filter
//   calls        the session's calls, rows updated in place
//   ledger       the session's context ledger drawn (ledger.js), fetched as calls finish
//   jobs         the session's background jobs, their state, a guarded stop (jobs.js)
//   detail       one call: arguments, outcome (the server's), its result rendered, model view
//   renderers    per tool: Bash, Read, Grep, Glob, Edit/Write, JobOutput/JobStop/JobInput, errors;
//                ApplyPatch, List and a Read's image or PDF (files.js)
//   viewer       "open full output": Read windows of a spill file or a file
//   route        the location hash (#s=SESSION&c=CALL) -> what is shown

import { PLAIN, compact, parseLine, scanState } from "./ansi.js";
import { el, plural } from "./dom.js";
import { imageTitle, imageView, listTitle, listTree, patchTitle, patchView, pdfTitle, pdfView } from "./files.js";
import { JobsPanel } from "./jobs.js";
import { LedgerPanel } from "./ledger.js";

const OVERSCAN = 20; // lines rendered above and below the visible ones
const COMPACT_AT = 4096; // a line still being written is compacted past this length
const POLL_MS = 1000; // while the session is live or a call of it runs
const IDLE_POLL_MS = 5000;
const VIEW_PAGE_LINES = 500;
const MAX_ROWS = 5000; // rendered rows of a Grep or Glob result (its budget keeps it below)
const INPUT_MARK = "› "; // before each line the agent wrote to a job (JobInput)

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
    this.inputs = new Set(); // the numbers of the lines that are a job's input
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

  // What the agent wrote to the job (a JobInput), in order with the output: the
  // line being written ends here, then each input line, marked, as a line of its
  // own (its text never changes the output's colours); `close`: stdin closed.
  appendInput(text, close) {
    if (this.cur) this.append("\n");
    const body = text.endsWith("\n") ? text.slice(0, -1) : text;
    const lines = body || !close ? body.split("\n") : [];
    if (close) lines.push("(stdin closed)");
    for (const line of lines) {
      this.inputs.add(this.lines.length);
      this.lines.push(INPUT_MARK + line.replaceAll("\r", ""));
      this.starts.push(PLAIN);
    }
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
      const row = el("div", this.inputs.has(i) ? "line input" : "line");
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

async function fetchJson(path) {
  const response = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  const body = await response.json().catch(() => null);
  return { status: response.status, body };
}

async function api(path) {
  const { status, body } = await fetchJson(path);
  if (status !== 200) throw new Error(`${path}: ${status}`);
  return body;
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
  sessions: [], // the last list the server sent
  sessionsKey: "", // what the list was drawn from (rows + filter + current)
  polls: 0, // polls done (tests wait for the next one)
  rows: new Map(), // tool call id -> {node, key}
  order: [], // the session's call ids in order: a call's number is its place + 1
  followCalls: true, // the calls list is at its end: new calls scroll into view
  callsDrawn: false, // the list was drawn once for this session
  scrollToDetail: false, // a row was clicked: bring its detail into view once shown
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

const pad = (n) => String(n).padStart(2, "0");

// Local time, to the second; the date only when it is not today.
function formatTime(seconds) {
  if (seconds === null || seconds === undefined) return "?";
  const d = new Date(seconds * 1000);
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (d.toDateString() === new Date().toDateString()) return time;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

const STATUS_TEXT = {
  running: "running", done: "done", error: "error", timedOut: "timed out", aborted: "aborted", killed: "killed",
};

function badge(status) {
  return el("span", `badge st-${status}`, STATUS_TEXT[status] || status);
}

// --- sessions -----------------------------------------------------------------

function sessionMatches(s, filter) {
  if (!filter) return true;
  const hay = [s.id, s.workspace || "", s.host || ""].join("\n").toLowerCase();
  return filter.split(/\s+/).every((word) => hay.includes(word));
}

function sessionItem(s) {
  const li = el("li", s.id === state.session ? "current" : "");
  li.dataset.id = s.id;
  const a = el("a", `sid${s.id === state.session ? " current" : ""}`, s.id);
  a.href = `#s=${enc(s.id)}`;
  li.append(a, " ");
  if (s.live) li.append(el("span", "badge live", "live"));
  else if (s.endedAt) li.append(el("span", "badge ended", "ended"));
  const where = el("div", "meta where");
  where.append(el("span", "ws", s.workspace || "workspace unknown"), " · ", el("span", "host", s.host || "host unknown"));
  const when = el("div", "meta when");
  const calls = `${s.toolCalls} call${s.toolCalls === 1 ? "" : "s"}`;
  const tokens = s.tokens === null || s.tokens === undefined ? "tokens —" : `${s.tokens.toLocaleString("en-US")} tokens`;
  when.append(
    el("span", "started", `started ${formatTime(s.createdAt)}`), " · ",
    el("span", "last", `last ${formatTime(s.lastActivity)}`), " · ",
    el("span", "count", calls), " · ",
    el("span", "tokens", tokens),
  );
  li.append(where, when);
  return li;
}

function drawSessions() {
  const filter = $("session-filter").value.trim().toLowerCase();
  const key = JSON.stringify([state.sessions, filter, state.session]);
  if (key === state.sessionsKey) return;
  state.sessionsKey = key;
  const shown = state.sessions.filter((s) => sessionMatches(s, filter));
  const items = shown.map(sessionItem);
  if (!state.sessions.length) items.push(el("li", "empty", "No sessions yet."));
  else if (!items.length) items.push(el("li", "empty", "No session matches the filter."));
  $("sessions").replaceChildren(...items);
}

async function refreshSessions() {
  const { sessions, here } = await api("/api/sessions");
  state.sessions = sessions;
  $("here").textContent = here ? `on ${here}` : "";
  drawSessions();
  const current = sessions.find((s) => s.id === state.session);
  state.live = Boolean(current && current.live);
  $("session-head").textContent = current ? `· ${current.id} · ${current.workspace || ""} · ${current.host || ""}` : "";
  // No session chosen (by the address either): show the newest.
  if (!parseHash().session && sessions.length) location.hash = `#s=${enc(sessions[0].id)}`;
}

// --- calls --------------------------------------------------------------------

// "call #3 (toolu_01…)": how the page names a call elsewhere (its number is its row's).
function callName(cid) {
  const i = state.order.indexOf(cid);
  return i < 0 ? `call ${cid}` : `call #${i + 1} (${cid})`;
}

function callRow(c, i) {
  const row = el("a", `call${c.toolCallId === state.call ? " current" : ""}`);
  row.href = `#s=${enc(state.session)}&c=${enc(c.toolCallId)}`;
  row.dataset.id = c.toolCallId;
  row.title = c.toolCallId;
  row.addEventListener("click", () => {
    if (c.toolCallId === state.call) $("detail").scrollIntoView({ block: "start" });
    else state.scrollToDetail = true;
  });
  row.append(el("span", "num-call", `#${i + 1}`), el("span", "tool", c.tool), el("span", "args", c.argsShort), badge(c.status));
  if (c.toolCallId.startsWith("job_")) row.append(el("span", "badge job", "background job"));
  if (c.cut) row.append(el("span", "badge cut", "cut"));
  row.append(el("span", "duration", formatDuration(durationOf(c))));
  if (c.description) row.append(el("span", "desc", c.description));
  return row;
}

// Rows are keyed by call id and rebuilt only when their call changed: a
// session of hundreds of calls costs a few new rows per poll, not hundreds.
async function refreshCalls() {
  if (!state.session) return;
  const session = state.session;
  const { calls } = await api(`/api/sessions/${enc(session)}/calls`);
  if (state.session !== session) return;
  state.running = calls.some((c) => c.status === "running");
  state.order = calls.map((c) => c.toolCallId);
  const box = $("calls");
  const before = box.scrollHeight;
  const wanted = new Set(calls.map((c) => c.toolCallId));
  for (const [id, row] of state.rows) {
    if (!wanted.has(id)) { row.node.remove(); state.rows.delete(id); }
  }
  box.querySelector(".empty")?.remove();
  calls.forEach((c, i) => {
    const key = JSON.stringify([c, i, c.toolCallId === state.call, c.status === "running" ? Math.floor(Date.now() / 1000) : 0]);
    let row = state.rows.get(c.toolCallId);
    if (!row || row.key !== key) {
      const node = callRow(c, i);
      if (row) row.node.replaceWith(node);
      row = { node, key };
      state.rows.set(c.toolCallId, row);
    }
    const at = box.children[i] || null;
    if (row.node !== at) box.insertBefore(row.node, at);
  });
  if (!calls.length) box.replaceChildren(el("p", "empty", "No tool calls in this session yet."));
  followCalls(box, before);
  for (const a of document.querySelectorAll("#result a[data-call-name]")) {
    const name = callName(a.dataset.callName);
    if (a.textContent !== name) a.textContent = name;
  }
  if (state.call) {
    const current = calls.find((c) => c.toolCallId === state.call);
    if (current) showHead(current);
  }
  await Promise.all([ledger.refresh(session, calls), jobs.refresh(session, calls)]);
}

// The list follows the session: while it is scrolled to its end, new calls
// (a running one) scroll into view; scrolled away, it stays where it is. A
// list first drawn with a call chosen opens on that call's row.
function followCalls(box, before) {
  if (!state.callsDrawn && box.children.length) {
    state.callsDrawn = true;
    const chosen = state.call && state.rows.get(state.call);
    if (chosen) {
      box.scrollTop = Math.max(0, chosen.node.offsetTop - box.clientHeight / 2);
      state.followCalls = box.scrollTop + box.clientHeight >= box.scrollHeight - 2;
      return;
    }
    box.scrollTop = box.scrollHeight;
    return;
  }
  if (state.followCalls && box.scrollHeight !== before) box.scrollTop = box.scrollHeight;
}

function clearCalls() {
  state.rows.clear();
  state.order = [];
  state.callsDrawn = false;
  state.followCalls = true;
  $("calls").replaceChildren();
}

// --- one call -----------------------------------------------------------------

let panes = null;
let readPane = null;
let ledger = null;
let jobs = null;

function showHead(call) {
  const head = $("call-head");
  const i = state.order.indexOf(call.toolCallId);
  const parts = [el("span", "num-call", i < 0 ? "" : `#${i + 1}`), el("span", "tool", call.tool), badge(call.status)];
  if (call.cut) parts.push(el("span", "badge cut", "cut"));
  parts.push(el("span", "duration", formatDuration(durationOf(call))));
  parts.push(el("span", "call-id", call.toolCallId));
  head.replaceChildren(...parts);
  head.dataset.status = call.status;
}

// Every argument, whole: a string as its text, anything else as JSON.
function showArgs(call) {
  const list = $("args-list");
  const items = [];
  const args = call.args && typeof call.args === "object" && !Array.isArray(call.args) ? call.args : { "": call.args };
  for (const [name, value] of Object.entries(args)) {
    const dd = el("dd", null, typeof value === "string" ? value : JSON.stringify(value, null, 1));
    dd.dataset.arg = name;
    items.push(el("dt", null, name), dd);
  }
  list.replaceChildren(...items);
  const desc = $("call-description");
  desc.textContent = call.description || "";
  desc.hidden = !call.description;
}

function closeStream() {
  if (state.source) state.source.close();
  state.source = null;
}

function resetDetail() {
  panes.stdout.clear();
  panes.stderr.clear();
  readPane.clear();
  for (const id of ["result", "outputs", "list-view", "args-list", "model-text"]) $(id).replaceChildren();
  for (const id of ["bash-view", "read-view", "list-view", "model", "viewer"]) $(id).hidden = true;
  for (const stream of ["stdout", "stderr"]) {
    $(`${stream}-label`).textContent = stream;
    $(`out-${stream}`).parentElement.classList.remove("empty-stream");
  }
}

async function showCall(cid) {
  closeStream();
  state.call = cid;
  state.lastSeq = -1;
  resetDetail();
  $("detail").hidden = false;
  $("detail").dataset.stream = "open";
  const call = await api(callPath(cid));
  if (state.call !== cid) return;
  showHead(call);
  showArgs(call);
  $("bash-view").hidden = call.tool !== "Bash";
  if (state.scrollToDetail) {
    state.scrollToDetail = false;
    pinDetail();
  }
  openStream(cid);
}

// A click on a row: its detail may be far below (one column): bring it into view,
// and keep it there while the panels above it are still filling in (the ledger,
// the jobs, the calls list grow after the detail is shown, pushing it down), until
// the reader scrolls or PIN_MS have passed.
const PIN_MS = 3000;
let unpinDetail = null;

function pinDetail() {
  if (unpinDetail) unpinDetail();
  const detail = $("detail");
  const place = () => {
    const top = detail.getBoundingClientRect().top;
    if (top < 0 || top > window.innerHeight * 0.6) detail.scrollIntoView({ block: "start" });
  };
  place();
  const observer = new ResizeObserver(place);
  for (const id of ["calls-panel", "session-panels"]) observer.observe($(id));
  const events = ["wheel", "touchstart", "keydown", "mousedown"];
  const timer = setTimeout(() => unpinDetail(), PIN_MS);
  unpinDetail = () => {
    observer.disconnect();
    clearTimeout(timer);
    for (const e of events) window.removeEventListener(e, unpinDetail);
    unpinDetail = null;
  };
  for (const e of events) window.addEventListener(e, unpinDetail, { passive: true });
}

function openStream(cid) {
  const source = new EventSource(`${callPath(cid)}/events?after=${state.lastSeq}`);
  state.source = source;
  source.addEventListener("chunk", (msg) => {
    const event = JSON.parse(msg.data);
    if (event.seq <= state.lastSeq) return; // already shown (a reconnect)
    state.lastSeq = event.seq;
    panes[event.stream].append(event.data);
  });
  // A job's input (what JobInput wrote), where it came among the job's output.
  source.addEventListener("input", (msg) => {
    const event = JSON.parse(msg.data);
    if (event.seq <= state.lastSeq) return;
    state.lastSeq = event.seq;
    panes.stdout.appendInput(event.data, event.close);
  });
  source.addEventListener("result", async (msg) => {
    const event = JSON.parse(msg.data);
    state.lastSeq = event.seq;
    closeStream();
    await finishCall(cid);
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

// The model view: the result event's text as the server sent it, never re-derived here.
function showModel(model) {
  if (!model) return;
  $("model-text").textContent = model.text;
  $("model-tokens").textContent = String(model.tokens);
  $("model-bytes").textContent = String(model.bytes);
  // The client the result went to and the per-result cap its text was kept within.
  const fit = model.fitBytes == null ? "no per-result cap" : `cap ${model.fitBytes} bytes`;
  const known = model.client || model.fitBytes != null;
  $("model-fit").textContent = known ? `, sent to ${model.client ?? "a client"} (${fit})` : "";
  $("model").hidden = false;
}

function showOutputs(cid, outputs) {
  const items = outputs.map((o) => {
    if (o.gone) {
      const note = el("p", "gone", `${o.name}: ${o.gone}`);
      note.dataset.output = o.name;
      return note;
    }
    const b = el("button", "open", `open full output: ${o.name}`);
    b.dataset.output = o.name;
    b.addEventListener("click", () => openViewer(cid, o.name, null));
    return b;
  });
  $("outputs").replaceChildren(...items);
}

async function finishCall(cid) {
  const call = await api(callPath(cid));
  if (state.call !== cid) return;
  showHead(call);
  showArgs(call);
  render(call);
  showModel(call.model);
  showOutputs(cid, call.outputs);
  $("detail").dataset.stream = "done";
}

// --- renderers: a result as what it is ------------------------------------------

function render(call) {
  const result = call.result;
  const parts = [];
  if (!result) return;
  if (result.error) {
    parts.push(el("p", "status error", `${result.error.code}: ${result.error.message}`));
  } else if (["JobOutput", "JobStop", "JobInput"].includes(call.tool) && "next" in result) {
    renderJobPage(call.tool, result, call.outcomes[0], parts);
  } else if (call.tool === "JobOutput" && Array.isArray(result.jobs)) {
    showList(jobList(result.jobs, call.outcomes), plural(result.jobs.length, "job"));
  } else if (call.tool === "Bash" && "exitCode" in result) {
    renderBash(result, call.outcomes[0], parts);
  } else if (call.tool === "Bash" && result.jobId) {
    parts.push(jobStarted(result, call.status));
  } else if (call.tool === "Read" && result.image && typeof result.image === "object") {
    showList(imageView(result), imageTitle(result));
  } else if (call.tool === "Read" && "totalPages" in result && typeof result.content === "string") {
    showList(pdfView(result), pdfTitle(result));
  } else if (call.tool === "Read" && "content" in result) {
    renderRead(call, result, parts);
  } else if (call.tool === "Grep" && Array.isArray(result.matches)) {
    showList(grepHits(result), `${result.count} lines, ${result.files} file${result.files === 1 ? "" : "s"}`);
  } else if (call.tool === "Grep" && Array.isArray(result.files)) {
    showList(fileList(result.files), `${result.count} file${result.count === 1 ? "" : "s"} with matches`);
  } else if (call.tool === "Grep" && Array.isArray(result.counts)) {
    showList(countList(result.counts), `${result.count} file${result.count === 1 ? "" : "s"}`);
  } else if (call.tool === "Glob" && Array.isArray(result.matches)) {
    showList(fileList(result.matches), `${result.count} file${result.count === 1 ? "" : "s"}`);
  } else if (call.tool === "ApplyPatch" && Array.isArray(result.files) && typeof result.diff === "string") {
    showList(patchView(result), patchTitle(result));
  } else if (call.tool === "List" && Array.isArray(result.entries)) {
    showList(listTree(result), listTitle(result));
  } else if ((call.tool === "Edit" || call.tool === "Write") && typeof result.diff === "string") {
    showList(diffLines(result.diff), editSummary(call.tool, result));
  } else {
    showList([el("pre", "rows", JSON.stringify(result, null, 2))], "result");
  }
  if (result.notice && !["Bash", "JobOutput", "JobStop", "JobInput"].includes(call.tool)) parts.push(el("p", "marker notice", result.notice));
  $("result").replaceChildren(...parts);
}

// The outcome lines (a command's end, a job's state) and their status are the
// server's (the tool's view, toolbound/views): the page shows them as sent.
function statusLine(outcome, tag = "p") {
  return el(tag, `status ${outcome.status}`, outcome.text);
}

// Bash: the outcome first, then each stream (its totals on its label), live or replayed.
function renderBash(result, outcome, parts) {
  parts.push(statusLine(outcome));
  if (result.notice) parts.push(el("p", "marker notice", result.notice));
  for (const stream of ["stdout", "stderr"]) {
    const total = result.totals && result.totals[stream];
    if (total) $(`${stream}-label`).textContent = `${stream} · ${plural(total.lines, "line")} · ${plural(total.bytes, "byte")}`;
    // A stream that stayed empty keeps its label and gives its room to the other.
    $(`out-${stream}`).parentElement.classList.toggle("empty-stream", Boolean(total && !total.bytes));
    const o = result.omitted && result.omitted[stream];
    if (o && (o.bytes || o.lines)) {
      parts.push(el("p", "marker", `${stream}: capture dropped ${o.bytes} bytes, ${o.lines} lines`));
    }
    if (result.truncated && !("state" in result) && typeof result[stream] === "string") {
      const said = openOnModelView(stream, result[stream]);
      if (said) parts.push(said);
    }
  }
  $("bash-view").hidden = false;
}

// A cut stream opens on what the model read of it, not at the capture's end.
// The result's text and the capture agree line by line up to where the model's
// copy was cut; there the result has its marker. A kept head (the marker
// after it) opens at line 1; a kept tail (the marker first) at the end.
function openOnModelView(stream, text) {
  const pane = panes[stream];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const captured = pane.cur ? [...pane.lines, pane.cur] : pane.lines;
  let at = 0;
  while (at < lines.length && at < captured.length && captured[at] === lines[at]) at++;
  if (at >= lines.length) return null; // the model read the stream whole
  const out = $(`out-${stream}`);
  out.dataset.cutAt = String(at);
  const p = el("p", "marker model-cut");
  p.dataset.stream = stream;
  if (at > 0) {
    pane.follow = false;
    out.scrollTop = 0;
    pane.schedule();
    p.append(`${stream}: the model read lines 1–${num(at)} (the pane opens on them), then the marker: `);
  } else {
    p.append(`${stream}: the model read the marker, then the stream's last lines (the pane's end): `);
  }
  p.append(el("code", null, lines[at]));
  return p;
}

// JobOutput, JobStop and JobInput: the job's state, the page of each stream
// (stdout's head, stderr's tail, as the model read them; JobInput's: what the
// job printed just after the input), where the next page starts.
function renderJobPage(tool, result, outcome, parts) {
  const head = el("p", `status ${outcome.status} job-state`);
  const lead = { JobStop: "stopped job ", JobInput: "input to job " }[tool] || "job ";
  head.append(lead, jobLink(result.jobId), ` · ${outcome.text}`);
  parts.push(head);
  if (typeof result.matched === "string") {
    const matched = el("p", "marker job-matched", "matched: ");
    matched.append(el("code", null, result.matched));
    parts.push(matched);
  }
  const next = el("p", "job-next", `next page from: stdout byte ${num(result.next.stdout)} · stderr byte ${num(result.next.stderr)}`);
  next.dataset.stdout = String(result.next.stdout);
  next.dataset.stderr = String(result.next.stderr);
  parts.push(next);
  if (result.notice) parts.push(el("p", "marker notice", result.notice));
  for (const stream of ["stdout", "stderr"]) {
    const total = result.totals[stream];
    $(`${stream}-label`).textContent = `${stream} · this page · the job's ${plural(total.lines, "line")}, ${plural(total.bytes, "byte")} so far`;
    $(`out-${stream}`).parentElement.classList.toggle("empty-stream", !result[stream]);
    const o = result.omitted && result.omitted[stream];
    if (o && (o.bytes || o.lines)) {
      parts.push(el("p", "marker", `${stream}: the log dropped ${num(o.bytes)} bytes, ${num(o.lines)} lines`));
    }
    const pane = panes[stream];
    pane.clear();
    pane.follow = stream === "stderr"; // stderr's page is its tail
    pane.append(result[stream]);
  }
  $("bash-view").hidden = false;
}

// JobOutput without a jobId: the session's jobs, each with its state's outcome.
function jobList(jobs, outcomes) {
  const rows = el("div", "rows job-list");
  for (const [i, job] of jobs.entries()) {
    const row = el("div", "job-entry");
    row.dataset.id = job.jobId;
    row.append(jobLink(job.jobId), " ", statusLine(outcomes[i], "span"), " ", el("code", null, job.command));
    rows.append(row);
  }
  return [rows];
}

function jobLink(jobId) {
  const link = el("a", "job-link", jobId);
  link.href = `#s=${enc(state.session)}&c=${enc(jobId)}`;
  return link;
}

const num = (n) => Number(n).toLocaleString("en-US");

// Bash with ``background: true``: the job it started, a link to the job's own output.
function jobStarted(result, status) {
  const p = el("p", `status ${status}`, "started background job ");
  p.append(jobLink(result.jobId), ` · pid ${result.pid}`);
  return p;
}

// Read: the window of the file, numbered from its offset. An "unchanged"
// re-read sent no content: it says so and links the call that sent it.
function renderRead(call, result, parts) {
  const first = result.offset + 1;
  const last = result.offset + result.lineCount;
  const of = result.totalLines !== undefined ? ` of ${result.totalLines}` : "";
  const where = `${result.path} (${result.root}) · lines ${first}–${last}${of} · ${plural(result.fileBytes, "byte")}`;
  $("read-info").textContent = where;
  if (result.unchanged) {
    parts.push(unchangedSince(call.unchangedSince, where));
    return;
  }
  readPane.firstNumber = first;
  readPane.follow = false;
  readPane.append(result.content.endsWith("\n") ? result.content.slice(0, -1) : result.content);
  $("read-view").hidden = false;
}

function unchangedSince(earlier, where) {
  const p = el("p", "marker unchanged", "unchanged since ");
  if (earlier) {
    const link = el("a", "unchanged-link", callName(earlier));
    link.dataset.callName = earlier; // named again once the list numbers it
    link.href = `#s=${enc(state.session)}&c=${enc(earlier)}`;
    p.append(link, ": ");
  } else {
    p.append("an earlier call: ");
  }
  p.append(`the same bytes of ${where}; no content was sent, the model reads that call's result`);
  return p;
}

function showList(nodes, title) {
  const box = $("list-view");
  box.replaceChildren(el("h3", "list-title", title), ...nodes);
  box.hidden = false;
}

function numbered(cls, n, text) {
  const row = el("div", cls);
  const num = el("span", "num");
  num.dataset.n = String(n);
  row.append(num, document.createTextNode(text));
  return row;
}

// Grep content: the hits grouped by file in the result's order; context lines
// ("context": true) apart from matches; a gap between runs of lines.
function grepHits(result) {
  const groups = new Map();
  for (const m of result.matches.slice(0, MAX_ROWS)) {
    if (!groups.has(m.path)) groups.set(m.path, []);
    groups.get(m.path).push(m);
  }
  const nodes = [];
  for (const [path, hits] of groups) {
    const matches = hits.filter((m) => !m.context).length;
    const file = el("section", "grep-file");
    file.dataset.path = path;
    file.append(el("h4", null, `${path} · ${plural(matches, "match")}`));
    const rows = el("div", "rows");
    let prev = null;
    for (const m of hits) {
      if (prev !== null && m.line > prev + 1) rows.append(el("div", "hit gap", "  …"));
      rows.append(numbered(`hit ${m.context ? "context" : "match"}`, m.line, m.text));
      prev = m.line;
    }
    file.append(rows);
    nodes.push(file);
  }
  return nodes;
}

function fileList(paths) {
  const list = el("ol", "files");
  for (const p of paths.slice(0, MAX_ROWS)) list.append(el("li", null, p));
  return [list];
}

function countList(counts) {
  const rows = el("div", "rows counts");
  for (const c of counts.slice(0, MAX_ROWS)) rows.append(el("div", null, `${c.count}\t${c.path}`));
  return [rows];
}

function editSummary(tool, result) {
  const what = tool === "Edit" ? plural(result.replacements, "replacement") : plural(result.bytes, "byte");
  return `${result.path} · ${what}${result.created ? " · created" : ""}`;
}

// A unified diff, each line coloured by what it is (its first character).
function diffLines(diff) {
  const rows = el("div", "rows diff");
  const lines = diff.endsWith("\n") ? diff.slice(0, -1).split("\n") : diff.split("\n");
  for (const line of lines.slice(0, MAX_ROWS)) {
    let cls = "same";
    if (line.startsWith("+++") || line.startsWith("---")) cls = "meta";
    else if (line.startsWith("@@")) cls = "hunk";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    rows.append(el("div", cls, line));
  }
  return [rows];
}

// --- the full-output viewer ----------------------------------------------------

let viewerPane = null;

async function openViewer(cid, name, offset) {
  state.viewer = { cid, name, offsets: [] };
  const viewer = $("viewer");
  viewer.hidden = false;
  $("viewer-info").textContent = "loading…";
  // It opens beside the button that asked for it, brought into view.
  viewer.scrollIntoView({ block: "nearest" });
  await loadPage(offset);
  viewer.scrollIntoView({ block: "nearest" });
}

async function loadPage(offset) {
  const v = state.viewer;
  const query = offset === null ? `limit=${VIEW_PAGE_LINES}` : `offset=${offset}&limit=${VIEW_PAGE_LINES}`;
  const { status, body } = await fetchJson(`${callPath(v.cid)}/outputs/${enc(v.name)}?${query}`);
  viewerPane.clear();
  const info = $("viewer-info");
  if (status !== 200 || !body || body.error) {
    info.textContent = body && typeof body.error === "string" ? body.error : `not available (${status})`;
    info.className = "gone";
    v.result = null;
    $("viewer-prev").disabled = $("viewer-next").disabled = true;
    return;
  }
  const result = body;
  info.className = "";
  v.result = result;
  viewerPane.follow = false;
  viewerPane.firstNumber = result.offset + 1;
  viewerPane.append(result.content.endsWith("\n") ? result.content.slice(0, -1) : result.content);
  const first = result.offset + 1;
  const lastLine = result.offset + result.lineCount;
  const of = result.totalLines !== undefined ? ` of ${result.totalLines}` : "";
  $("viewer-path").textContent = result.path;
  info.textContent = `lines ${first}–${lastLine}${of} · ${result.fileBytes} bytes`;
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
    clearCalls();
    $("detail").hidden = true;
  }
  if (call && call !== state.call) await showCall(call);
  await Promise.all([refreshSessions(), refreshCalls()]);
}

async function poll() {
  try {
    await Promise.all([refreshSessions(), refreshCalls()]);
    $("conn").textContent = "";
  } catch (err) {
    $("conn").textContent = "server unreachable";
  }
  state.polls += 1;
  setTimeout(poll, state.running || state.live ? POLL_MS : IDLE_POLL_MS);
}

function start() {
  panes = { stdout: new Pane($("out-stdout")), stderr: new Pane($("out-stderr")) };
  readPane = new Pane($("read-window"));
  viewerPane = new Pane($("viewer-text"));
  const callHref = (cid) => `#s=${enc(state.session)}&c=${enc(cid)}`;
  ledger = new LedgerPanel($("ledger"), fetchJson, callHref);
  jobs = new JobsPanel($("jobs"), fetchJson, callHref);
  $("viewer-next").addEventListener("click", viewerNext);
  $("viewer-prev").addEventListener("click", viewerPrev);
  $("viewer-close").addEventListener("click", () => { $("viewer").hidden = true; });
  $("session-filter").addEventListener("input", drawSessions);
  $("calls").addEventListener("scroll", () => {
    const box = $("calls");
    state.followCalls = box.scrollTop + box.clientHeight >= box.scrollHeight - 2;
  });
  window.addEventListener("hashchange", route);
  window.toolbound = { panes, readPane, viewerPane, state, ledger, jobs };
  route().finally(() => setTimeout(poll, POLL_MS));
}

start();
