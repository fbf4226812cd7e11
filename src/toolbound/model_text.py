"""``model_text``: the one text the model reads for a tool result (CONTRACT section 8).

A pure function of the result dict. The MCP text block, the ``text`` of every
result event (``host.stream``, ``toolbound call --events``, the store's replay),
``toolbound call --text`` and the web view's model view are all this text; no
adapter renders a result on its own.

The shapes:

- an error: ``TOOL_CODE: message``;
- Read: the window's content as it is, then the notice in brackets; a PDF's
  pages the same way; an image one line naming it and its scaling (the image
  itself goes beside the text where the protocol carries images);
- Glob: one path a line, then the notice;
- List: a tree, an entry a line indented two spaces per level below the
  folder listed: a folder as ``name/  (N entries)``, a file as ``name  (N
  bytes)``, a link as ``name@``; then the notice;
- Grep: ripgrep's heading layout, a path once and then its lines, ``12:text``
  for a match and ``12-text`` for a context line, a blank line between files;
  ``path`` a line for ``filesWithMatches`` and ``path:count`` for ``count``;
- Bash: the outcome first (``[exit status 0]``, ``[killed by signal SIGKILL]``,
  ``[timed out]``, ``[aborted]``) with the notice, then each non-empty stream
  inside its own ``<stdout>`` / ``<stderr>`` tags. The stream's text follows
  the opening tag's line verbatim and the closing tag follows it directly, so
  a stream without a final newline stays without one and the model can tell
  which stream every line came from. The seed's markers stand in the stream
  text verbatim.
- background jobs (CONTRACT section 9): a job's start (Bash with
  ``background: true``) as ``[job job_… started: pid N, running]`` and its two
  log paths; a page (JobOutput, JobStop, a job's final result event) as its
  state first (``[job job_… exited: exit status 0]``, ``killed by signal
  SIGTERM``, ``stopped: …`` for a job stopped that exited on its own terms,
  ``timed out``), the matched line and the notice, each non-empty stream in
  its tags as Bash, then where the next JobOutput goes on (``[next: stdout
  120, stderr 0]``); the list a line per job.
- Edit and Write: one summary line (``Edited src/a.py: 1 replacement.``,
  ``Created src/a.py (123 bytes).`` or ``Wrote …``), then the unified diff
  as it is, then the notice in brackets.
- ApplyPatch: one line per file (``Updated src/a.py: exact at line 12,
  whitespace at line 40.``, ``Added …``, ``Deleted …``, ``Moved a to b…``),
  then the diff, then the notice.

With a fit (``toolbound.fit``: the client's per-result cap, CONTRACT section
14) the whole text is kept within the cap by the last guard,
``bounds.whole.within``: the tools cut to budgets shrunk to the cap already,
so the guard cuts only what their markers and notices add, and says so.

Pieces:
    model_text   tool name + result dict (+ fit) -> the model's text
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from toolbound.bounds.whole import within
from toolbound.fit import NO_FIT, Fit

JOB_TOOLS = ("JobOutput", "JobStop", "JobInput")

NO_FILES = "No files matched."
NO_MATCHES = "No matches."
NO_ENTRIES = "No entries listed."
NO_JOBS = "No background jobs in this session."


def model_text(tool: str, result: dict[str, Any], *, fit: Fit = NO_FIT) -> str:
    """The text the model reads for ``result``, a result dict of ``tool``, within ``fit``.

    A dict that is not one of the tool's result shapes (an unknown tool's, or
    a stored row from another version) reads as its JSON, never an exception.
    """
    try:
        text = _render(tool, result)
    except (KeyError, TypeError, AttributeError):
        text = json.dumps(result, ensure_ascii=False)
    if not fit.capped:
        return text
    return within(text, max_bytes=fit.max_bytes, max_lines=fit.max_lines, client=fit.client)


def _render(tool: str, result: dict[str, Any]) -> str:
    if "error" in result:
        return f"{result['error']['code']}: {result['error']['message']}"
    if tool in JOB_TOOLS or "jobId" in result:
        return _job(result)
    notice = result.get("notice")
    if tool == "Read" and "image" in result:
        return _image_line(result)
    if tool == "Read":
        # The content stays byte-faithful; the notice (next offset) follows it.
        return _joined(result["content"], _bracketed(notice))
    if tool == "Glob":
        return _listing(result["matches"], notice, empty=NO_FILES)
    if tool == "List":
        return _listing(_tree_lines(result), notice, empty=NO_ENTRIES)
    if tool == "Grep":
        return _grep(result, notice)
    if tool == "Bash":
        return _bash(result)
    if tool in ("Edit", "Write"):
        return _joined(_change_summary(tool, result), result["diff"], _bracketed(notice))
    if tool == "ApplyPatch":
        summary = "\n".join(_patch_summary(entry) for entry in result["files"])
        return _joined(summary, result["diff"], _bracketed(notice))
    return json.dumps(result, ensure_ascii=False)


def _image_line(result: dict[str, Any]) -> str:
    image = result["image"]
    size, original = (
        (image["width"], image["height"]),
        (image["originalWidth"], image["originalHeight"]),
    )
    sent = len(image["data"]) * 3 // 4
    if size == original:
        how = "sent at full size"
    else:
        how = f"scaled down to {size[0]}x{size[1]} to fit 1568 px and 1.15 megapixels"
    return (
        f"[Image {result['path']}: {original[0]}x{original[1]}, {how}, as {image['mimeType']} "
        f"({sent} bytes).]"
    )


def _bracketed(notice: str | None) -> str:
    return f"[{notice}]" if notice else ""


def _joined(*parts: str) -> str:
    """The non-empty parts, each starting on a line of its own."""
    out = ""
    for part in parts:
        if not part:
            continue
        if out and not out.endswith("\n"):
            out += "\n"
        out += part
    return out


def _listing(lines: Iterable[str], notice: str | None, *, empty: str) -> str:
    body = "\n".join(lines)
    return _joined(body or empty, _bracketed(notice))


def _tree_lines(result: dict[str, Any]) -> Iterable[str]:
    """List's entries as an indented tree (the folder listed is the top)."""
    base = result["path"]
    top = 0 if base == "." else base.count("/") + 1
    for entry in result["entries"]:
        path = entry["path"]
        level = path.count("/") - top
        name = path.rsplit("/", 1)[-1]
        if entry["type"] == "dir":
            n = entry.get("entries", 0)
            yield f"{'  ' * level}{name}/  ({n} {'entry' if n == 1 else 'entries'})"
        elif entry["type"] == "link":
            yield f"{'  ' * level}{name}@"
        else:
            yield f"{'  ' * level}{name}  ({entry.get('size', 0)} bytes)"


def _grep(result: dict[str, Any], notice: str | None) -> str:
    if "counts" in result:
        counts = (f"{c['path']}:{c['count']}" for c in result["counts"])
        return _listing(counts, notice, empty=NO_MATCHES)
    if "matches" not in result:
        return _listing(result["files"], notice, empty=NO_MATCHES)
    lines: list[str] = []
    path: str | None = None
    for entry in result["matches"]:
        if entry["path"] != path:
            if path is not None:
                lines.append("")
            path = entry["path"]
            lines.append(path)
        sep = "-" if entry.get("context") else ":"
        column = entry.get("column")
        at = f"[from column {column}] " if column else ""
        lines.append(f"{entry['line']}{sep}{at}{entry['text']}")
    return _listing(lines, notice, empty=NO_MATCHES)


def _outcome(result: dict[str, Any]) -> str:
    if result["timedOut"]:
        return "[timed out]"
    if result["aborted"]:
        return "[aborted]"
    if result["exitCode"] is not None:
        return f"[exit status {result['exitCode']}]"
    return f"[killed by signal {result['signal']}]"


def _stream(label: str, text: str) -> str:
    return f"<{label}>\n{text}</{label}>" if text else ""


def _bash(result: dict[str, Any]) -> str:
    return _joined(
        _outcome(result),
        f"[in {result['workdir']}]" if result.get("workdir") else "",
        _bracketed(result.get("notice")),
        _stream("stdout", result["stdout"]),
        _stream("stderr", result["stderr"]),
    )


def _change_summary(tool: str, result: dict[str, Any]) -> str:
    path = result["path"]
    if tool == "Edit":
        n = result["replacements"]
        return f"Edited {path}: {n} replacement{'' if n == 1 else 's'}."
    verb = "Created" if result["created"] else "Wrote"
    n = result["bytes"]
    return f"{verb} {path} ({n} byte{'' if n == 1 else 's'})."


_PATCH_VERBS = {"add": "Added", "update": "Updated", "delete": "Deleted", "move": "Moved"}


def _patch_summary(entry: dict[str, Any]) -> str:
    """One line per file: ``Updated src/a.py: exact at line 12, whitespace at line 40.``"""
    path = entry["path"]
    where = f"{entry['from']} to {path}" if "from" in entry else path
    unchanged = entry.get("alreadyApplied", False)
    hunks = ", ".join(
        f"{h['matched']} at line {h['line']}"
        + (" (already applied)" if h.get("alreadyApplied") and not unchanged else "")
        for h in entry["hunks"]
    )
    if unchanged:
        return f"{where}: already applied, unchanged" + (f" ({hunks})." if hunks else ".")
    return f"{_PATCH_VERBS[entry['action']]} {where}" + (f": {hunks}." if hunks else ".")


# --- background jobs ---------------------------------------------------------


def _state(result: dict[str, Any]) -> str:
    state = str(result["state"])
    if state == "running":
        return "running"
    if state == "timedOut":
        return "timed out"
    if result.get("signal"):
        return f"killed by signal {result['signal']}"
    if result.get("exitCode") is not None:
        verb = "exited" if state == "exited" else "stopped"
        return f"{verb}: exit status {result['exitCode']}"
    return state


def _sizes(totals: dict[str, Any]) -> str:
    out, err = totals["stdout"], totals["stderr"]
    return (
        f"stdout {out['bytes']} bytes / {out['lines']} lines, "
        f"stderr {err['bytes']} bytes / {err['lines']} lines"
    )


def _job(result: dict[str, Any]) -> str:
    """The text the model reads for a job result (a start, a page, or the list)."""
    if "jobs" in result:
        lines = [
            f"{job['jobId']} {_state(job)}: {job['command']} "
            f"(started {job['startedAt']}; {_sizes(job['totals'])})"
            for job in result["jobs"]
        ]
        return "\n".join(lines) or NO_JOBS
    job_id = result["jobId"]
    if "logs" in result:
        logs = result["logs"]
        where = f", in {result['workdir']}" if result.get("workdir") else ""
        tty = ", on a terminal (one stream: stdout)" if result.get("tty") else ""
        return _joined(
            f"[job {job_id} started: pid {result['pid']}, running{where}{tty}]",
            f"stdout log: {logs['stdout']}\nstderr log: {logs['stderr']}",
            _bracketed(result.get("notice")),
        )
    matched = result.get("matched")
    nxt = result["next"]
    return _joined(
        f"[job {job_id} {_state(result)}]",
        f"[matched: {matched}]" if matched is not None else "",
        _bracketed(result.get("notice")),
        _stream("stdout", result["stdout"]),
        _stream("stderr", result["stderr"]),
        f"[next: stdout {nxt['stdout']}, stderr {nxt['stderr']}]",
    )
