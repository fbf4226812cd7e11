// The session's context ledger as a picture: plain SVG, drawn from the
// ledger the server sends (GET /api/sessions/{sid}/ledger, the store's
// Session.ledger()).
//
// - per tool: a bar of the tokens its results sent the model, and under it
//   (lighter, on a scale of its own) what its tools saw that the model did
//   not, the elided bytes in tokens at the estimator's 4 bytes a token;
//   calls, re-reads avoided;
// - over the session: call by call, the running total of tokens sent (an
//   area on the left axis), the elided running total (a line on the right
//   axis, its own scale), a diamond where a re-read was avoided; each call's
//   column links to the call.
//
// Every label is set as text (textContent), never as markup.
//
// Pieces:
//   LedgerPanel   fetches the ledger when the session's finished calls change, draws it
//   drawTools     the per-tool bars
//   drawTime      the running totals, call by call

import { el } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
// The estimator's figure (store/tokens.py): elided bytes are shown as the tokens they would cost.
const BYTES_PER_TOKEN = 4;
const WIDTH = 400;
const TOOL_ROW = 30;
const LABEL_W = 72;
const TIME_H = 150;
const PAD = { left: 44, right: 6, top: 16, bottom: 18 };

const num = (n) => Number(n).toLocaleString("en-US");

export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

const elidedTokens = (bytes) => Math.ceil(bytes / BYTES_PER_TOKEN);

function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function titled(node, text) {
  node.append(svgEl("title", {}, text));
  return node;
}

// One row per tool, most tokens first: its figures on a line of their own (the
// label before them, never over them), then the sent bar and the elided bar,
// each on its own scale (elided bytes run to megabytes where tokens sent run
// to thousands: on one scale the tokens would be a sliver).
export function drawTools(ledger) {
  const tools = Object.entries(ledger.tools).sort((a, b) => b[1].modelTokens - a[1].modelTokens);
  const height = Math.max(1, tools.length) * TOOL_ROW + 2;
  const svg = svgEl("svg", { viewBox: `0 0 ${WIDTH} ${height}`, role: "img", class: "ledger-tools" });
  svg.append(svgEl("title", {}, "Context per tool: tokens sent, and elided bytes as tokens, each on its own scale"));
  const topSent = Math.max(1, ...tools.map(([, t]) => t.modelTokens));
  const topElided = Math.max(1, ...tools.map(([, t]) => elidedTokens(t.elidedBytes)));
  const barW = WIDTH - LABEL_W - 2;
  svg.dataset.topSent = String(topSent);
  tools.forEach(([tool, t], i) => {
    const y = i * TOOL_ROW;
    const sent = (t.modelTokens / topSent) * barW;
    const elided = (elidedTokens(t.elidedBytes) / topElided) * barW;
    const row = svgEl("g", {
      class: "tool-row", "data-tool": tool, "data-tokens": t.modelTokens,
      "data-elided": t.elidedBytes, "data-rereads": t.rereadsAvoided,
    });
    let figures = `${num(t.modelTokens)} tok · ${num(t.calls)} call${t.calls === 1 ? "" : "s"}`;
    if (t.rereadsAvoided) figures += ` · ${num(t.rereadsAvoided)} re-read${t.rereadsAvoided === 1 ? "" : "s"} avoided`;
    row.append(
      svgEl("text", { x: LABEL_W - 6, y: y + 19, class: "label end" }, tool),
      svgEl("text", { x: LABEL_W, y: y + 10, class: "value" }, figures),
      titled(svgEl("rect", { x: LABEL_W, y: y + 13, width: sent, height: 8, class: "sent" }),
        `${tool}: ${num(t.modelTokens)} tokens sent in ${num(t.calls)} calls`),
      titled(svgEl("rect", { x: LABEL_W, y: y + 22, width: elided, height: 4, class: "elided" }),
        `${tool}: ${formatBytes(t.elidedBytes)} elided (≈ ${num(elidedTokens(t.elidedBytes))} tokens)`),
    );
    if (t.elidedBytes) {
      row.append(svgEl("text", { x: WIDTH, y: y + 10, class: "value elided-value end" }, `${formatBytes(t.elidedBytes)} elided`));
    }
    svg.append(row);
  });
  return svg;
}

// The running totals call by call: x is the call's place in the session. The
// tokens sent (an area) are on the left axis, scaled to their own total; the
// elided total (a line) on the right axis, scaled to its own.
export function drawTime(ledger, callHref) {
  const calls = ledger.calls;
  const svg = svgEl("svg", { viewBox: `0 0 ${WIDTH} ${TIME_H}`, role: "img", class: "ledger-time" });
  svg.append(svgEl("title", {}, "Context over the session: running tokens sent (left axis), elided (right axis)"));
  let elided = 0;
  const points = calls.map((c) => {
    elided += c.elidedBytes;
    return { call: c, sent: c.runningTokens, elided };
  });
  const top = Math.max(1, ...points.map((p) => p.sent));
  const topElided = Math.max(1, ...points.map((p) => p.elided));
  svg.dataset.topSent = String(top);
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = TIME_H - PAD.top - PAD.bottom;
  const step = plotW / Math.max(1, calls.length);
  const x = (i) => PAD.left + step * (i + 1);
  const y = (tokens) => PAD.top + plotH * (1 - tokens / top);
  const yElided = (bytes) => PAD.top + plotH * (1 - bytes / topElided);
  const base = y(0);
  const area = (values) => {
    const line = values.map((v, i) => `L${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    return `M${PAD.left},${base} ${line} L${x(values.length - 1).toFixed(1)},${base} Z`;
  };
  svg.append(
    svgEl("line", { x1: PAD.left, y1: base, x2: WIDTH - PAD.right, y2: base, class: "axis" }),
    svgEl("line", { x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: base, class: "axis" }),
    svgEl("text", { x: PAD.left - 3, y: PAD.top + 4, class: "tick end sent-top" }, num(top)),
    svgEl("text", { x: PAD.left - 3, y: base, class: "tick end" }, "0"),
    svgEl("text", { x: PAD.left, y: TIME_H - 4, class: "tick" }, "0"),
    svgEl("text", { x: WIDTH - PAD.right, y: TIME_H - 4, class: "tick end" },
      `${num(calls.length)} call${calls.length === 1 ? "" : "s"}`),
  );
  if (!calls.length) return svg;
  svg.append(svgEl("path", { d: area(points.map((p) => p.sent)), class: "sent" }));
  if (elided) {
    const line = points.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${yElided(p.elided).toFixed(1)}`).join(" ");
    svg.append(
      svgEl("path", { d: `M${PAD.left},${base} L${line.slice(1)}`, class: "elided-line" }),
      svgEl("line", { x1: WIDTH - PAD.right, y1: PAD.top, x2: WIDTH - PAD.right, y2: base, class: "axis" }),
      svgEl("text", { x: WIDTH - PAD.right, y: PAD.top - 5, class: "tick end elided-top" }, `${formatBytes(topElided)} elided`),
    );
  }
  points.forEach((p, i) => {
    const c = p.call;
    const link = svgEl("a", {
      href: callHref(c.toolCallId), class: "col", "data-call": c.toolCallId,
      "data-running": p.sent, "data-elided": p.elided,
    });
    let tip = `#${i + 1} ${c.tool}: +${num(c.modelTokens)} tokens, ${num(p.sent)} in all`;
    if (c.elidedBytes) tip += `; ${formatBytes(c.elidedBytes)} elided`;
    if (c.rereadAvoided) tip += "; re-read avoided";
    link.append(titled(svgEl("rect", { x: x(i) - step, y: PAD.top, width: step, height: plotH, class: "hit" }), tip));
    if (c.rereadAvoided) {
      const cx = x(i);
      const cy = y(p.sent);
      link.append(svgEl("path", { d: `M${cx},${cy - 4} l4,4 l-4,4 l-4,-4 Z`, class: "reread" }));
    }
    svg.append(link);
  });
  return svg;
}

function summaryText(total) {
  const parts = [
    `${num(total.modelTokens)} tokens sent in ${num(total.calls)} call${total.calls === 1 ? "" : "s"}`,
    `${formatBytes(total.elidedBytes)} elided`,
    `${num(total.rereadsAvoided)} re-read${total.rereadsAvoided === 1 ? "" : "s"} avoided`,
  ];
  if (total.spilledBytes) parts.push(`${formatBytes(total.spilledBytes)} spilled`);
  return parts.join(" · ");
}

// The panel of one session. ``refresh(calls)`` after each poll of the calls:
// the ledger is fetched again while a finished call is missing from it (the
// store records a result a moment after the page sees it), and redrawn only
// when it changed.
export class LedgerPanel {
  constructor(box, fetchJson, callHref) {
    this.box = box;
    this.fetchJson = fetchJson;
    this.callHref = callHref;
    this.reset(null);
  }

  reset(session) {
    this.session = session;
    this.covered = null; // the finished calls the drawn ledger holds
    this.drawn = "";
    this.box.hidden = true;
  }

  async refresh(session, calls) {
    if (session !== this.session) this.reset(session);
    if (!session) return;
    const finished = calls.filter((c) => c.status !== "running" && !c.failed).map((c) => c.toolCallId);
    const want = finished.join("\n");
    if (want === this.covered) return;
    const path = `/api/sessions/${encodeURIComponent(session)}/ledger`;
    const { status, body } = await this.fetchJson(path);
    if (session !== this.session) return;
    if (status !== 200) {
      this.covered = want; // asked again when another call finishes
      this.show(null, body && body.error);
      return;
    }
    const held = new Set(body.calls.map((c) => c.toolCallId));
    if (finished.every((id) => held.has(id))) this.covered = want;
    this.show(body, null);
  }

  show(ledger, error) {
    const key = JSON.stringify([ledger, error]);
    if (key === this.drawn) return;
    this.drawn = key;
    this.box.hidden = false;
    const total = this.box.querySelector("#ledger-total");
    const charts = this.box.querySelector("#ledger-charts");
    if (!ledger) {
      total.textContent = "not recorded";
      charts.replaceChildren(el("p", "empty", error || ""));
      this.box.dataset.calls = "";
      return;
    }
    total.textContent = summaryText(ledger.total);
    const tools = el("figure");
    const time = el("figure");
    tools.append(el("figcaption", "", "per tool"), drawTools(ledger));
    time.append(el("figcaption", "", "running total, call by call"), drawTime(ledger, this.callHref));
    charts.replaceChildren(tools, time);
    this.box.dataset.calls = String(ledger.total.calls);
  }
}
