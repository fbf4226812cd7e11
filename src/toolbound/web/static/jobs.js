// The session's background jobs: what each runs, its state and output so far
// (each stream's last lines, as text),
// a link to its live output (a job is a call of its own: the detail view
// streams it), and a stop button that asks first.
//
// A row's status (its colour) is the server's (the jobs' view), its words the state's.
// Rows come from GET /api/sessions/{sid}/jobs on each poll while the session
// has a job; a row is rebuilt only when its job changed (its totals change
// as it prints), and a confirmation being answered moves into the new row.
// A row says how many inputs the agent wrote (JobInput) and the last one.
// Everything is set as text.
//
// Pieces:
//   JobsPanel   refresh(session, calls), the rows, the stop and its confirmation

import { PLAIN, parseLine, scanState } from "./ansi.js";
import { el, plural } from "./dom.js";

const enc = encodeURIComponent;

const STATE_TEXT = { running: "running", exited: "exited", killed: "killed", timedOut: "timed out", failed: "crashed" };

function outcome(job) {
  if (job.state === "exited") return `exit status ${job.exitCode}`;
  if (job.signal) return `${STATE_TEXT[job.state] || job.state} (${job.signal})`;
  return STATE_TEXT[job.state] || job.state;
}

function totalsText(totals) {
  if (!totals) return "";
  return ["stdout", "stderr"]
    .map((s) => `${s} ${plural(totals[s].lines, "line")}, ${plural(totals[s].bytes, "byte")}`)
    .join(" · ");
}

// Each stream's last lines so far, as text (colour escapes applied, never markup).
function outputBox(output) {
  const box = el("div", "job-output");
  if (!output) {
    box.append(el("p", "meta", "Its output is not held here: open it for the live stream."));
    return box;
  }
  if (!output.stdout && !output.stderr) {
    box.append(el("p", "meta", "no output yet"));
    return box;
  }
  for (const stream of ["stdout", "stderr"]) {
    if (!output[stream]) continue;
    const pre = el("pre", `job-tail ${stream}`);
    pre.dataset.stream = stream;
    let style = PLAIN;
    const lines = output[stream].split("\n").map((raw) => {
      const text = parseLine(raw, style).runs.map((r) => r.text).join("");
      style = scanState(raw, style);
      return text;
    });
    pre.textContent = lines.join("\n");
    box.append(pre);
  }
  return box;
}

// What the agent wrote to the job: how many inputs, the last one as text.
function inputLine(inputs) {
  const p = el("div", "meta job-input", `input: ${plural(inputs.count, "call")}, the last `);
  const last = inputs.last.replaceAll("\n", "⏎");
  p.append(el("code", null, inputs.cut ? `${last}…` : last));
  if (inputs.closed) p.append(" · stdin closed");
  return p;
}

export class JobsPanel {
  constructor(box, fetchJson, callHref) {
    this.box = box;
    this.list = box.querySelector("#jobs-list");
    this.fetchJson = fetchJson;
    this.callHref = callHref;
    this.session = null;
    this.rows = new Map(); // job id -> {node, key}
  }

  reset(session) {
    this.session = session;
    this.rows.clear();
    this.list.replaceChildren();
    this.box.hidden = true;
  }

  async refresh(session, calls) {
    if (session !== this.session) this.reset(session);
    if (!session || !calls.some((c) => c.toolCallId.startsWith("job_"))) return;
    const { status, body } = await this.fetchJson(`/api/sessions/${enc(session)}/jobs`);
    if (status !== 200 || session !== this.session) return;
    this.draw(body.jobs);
  }

  draw(jobs) {
    this.box.hidden = jobs.length === 0;
    const wanted = new Set(jobs.map((j) => j.jobId));
    for (const [id, row] of this.rows) {
      if (!wanted.has(id)) { row.node.remove(); this.rows.delete(id); }
    }
    jobs.forEach((job, i) => {
      const key = JSON.stringify(job);
      let row = this.rows.get(job.jobId);
      if (!row || row.key !== key) {
        const node = this.item(job);
        // A question being asked (or a stop being sent) outlives new totals.
        const asking = row && row.node.querySelector(".job-stop.asking");
        const fresh = node.querySelector(".job-stop");
        if (asking && fresh) fresh.replaceWith(asking);
        if (row) row.node.replaceWith(node);
        row = { node, key };
        this.rows.set(job.jobId, row);
      }
      const at = this.list.children[i] || null;
      if (row.node !== at) this.list.insertBefore(row.node, at);
    });
  }

  item(job) {
    const li = el("li", "job");
    li.dataset.id = job.jobId;
    li.dataset.state = job.state;
    const link = el("a", "job-command", job.command || job.jobId);
    link.href = this.callHref(job.jobId);
    link.title = "its output, live";
    const head = el("div", "job-head");
    head.append(link, " ", el("span", `badge st-${job.status}`, outcome(job)));
    const meta = el("div", "meta");
    meta.append(el("span", "job-id", job.jobId), " · ", el("span", "job-totals", totalsText(job.totals)));
    li.append(head, meta, outputBox(job.output));
    if (job.inputs) li.append(inputLine(job.inputs));
    if (job.description) li.append(el("div", "meta job-desc", job.description));
    if (job.stoppable) li.append(this.stopControls(job));
    else if (job.stopNote) li.append(el("div", "meta job-note", job.stopNote));
    return li;
  }

  // "stop" first asks; only "Stop it" sends the request.
  stopControls(job) {
    const box = el("div", "job-stop");
    const stop = el("button", "stop", "stop");
    stop.type = "button";
    stop.addEventListener("click", () => {
      const ask = el("span", "confirm");
      const yes = el("button", "confirm-yes", "Stop it");
      const no = el("button", "confirm-no", "Keep it running");
      yes.type = no.type = "button";
      ask.append(el("span", "question", `Stop ${job.jobId}? Its whole process tree is stopped (TERM, then KILL).`), " ", yes, " ", no);
      no.addEventListener("click", () => {
        box.classList.remove("asking");
        box.replaceChildren(stop);
      });
      yes.addEventListener("click", () => this.stop(job, box));
      box.classList.add("asking");
      box.replaceChildren(ask);
    });
    box.append(stop);
    return box;
  }

  async stop(job, box) {
    box.replaceChildren(el("span", "stopping", "stopping…"));
    const response = await fetch(`/api/sessions/${enc(this.session)}/jobs/${enc(job.jobId)}/stop`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: "{}",
    });
    const body = await response.json().catch(() => ({}));
    if (response.status !== 200) {
      box.replaceChildren(el("span", "status error", body.error || `stop failed: ${response.status}`));
      return;
    }
    box.replaceChildren(el("span", "stopped", `stopped: ${STATE_TEXT[body.state] || body.state}`));
  }
}
