"""A scripted model server that speaks the four APIs the harnesses call, and records them.

Pieces:
- ``Step``: one scripted tool call (the tool's bare name and its arguments).
- ``ModelServer``: an HTTP server on 127.0.0.1 answering Anthropic Messages
  (``/v1/messages``), OpenAI Responses (``/responses``), the Gemini API
  (``:streamGenerateContent`` / ``:generateContent``) and OpenAI Chat
  Completions (``/chat/completions``), streaming with SSE when asked.
- The turn rule: a request that offers tools is a turn of the agent loop; the
  number of tool results already in its history is the index of the next
  scripted step, so the server is stateless and side requests (titles, topic
  checks, token counts) never move the script. Past the script's end the
  model answers with a final text. A scripted tool name is matched to the
  name the harness offers (``mcp__toolbound__Read``, ``toolbound_Read``...)
  by its last segment.
- ``tool_results(api, body)``: the tool results a request body carries, in
  one shape for every API (call id, tool name when known, text, error flag),
  which is what the tests assert on.

Every request (path and JSON body) is kept in ``ModelServer.requests``.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_TEXT = "All done."


@dataclass(frozen=True)
class Step:
    """One scripted tool call: ``tool`` is the bare tool name (``Read``), ``args`` its input."""

    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    """A tool result as a request body carries it, whatever the API."""

    call_id: str
    name: str
    text: str
    is_error: bool | None


@dataclass
class Request:
    """One request the server got: which API, its path, its JSON body."""

    api: str
    path: str
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


# -- reading the request bodies ---------------------------------------------------------------


def _text_of(content: Any) -> str:
    """The text of a tool result's content: a string, or the text parts of a block list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                parts.append(str(block.get("text", block.get("output", ""))))
            else:
                parts.append(str(block))
        return "".join(parts)
    return json.dumps(content)


def tool_results(api: str, body: dict[str, Any]) -> list[ToolResult]:
    """Every tool result in a request body, in history order."""
    found: list[ToolResult] = []
    if api == "anthropic":
        names = {}
        for message in body.get("messages", []):
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if block.get("type") == "tool_use":
                    names[block["id"]] = block["name"]
                elif block.get("type") == "tool_result":
                    call_id = block["tool_use_id"]
                    found.append(
                        ToolResult(
                            call_id,
                            names.get(call_id, ""),
                            _text_of(block.get("content")),
                            bool(block.get("is_error", False)),
                        )
                    )
    elif api == "responses":
        names = {}
        for item in body.get("input", []):
            kind = item.get("type")
            if kind in ("function_call", "custom_tool_call"):
                names[item["call_id"]] = item.get("name", "")
            elif kind in ("function_call_output", "custom_tool_call_output"):
                output = item.get("output")
                if isinstance(output, dict):
                    output = output.get("content", output)
                found.append(
                    ToolResult(
                        item["call_id"], names.get(item["call_id"], ""), _text_of(output), None
                    )
                )
    elif api == "gemini":
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                response = part.get("functionResponse")
                if response is not None:
                    payload = response.get("response", {})
                    if set(payload) == {"output"} and isinstance(payload["output"], str):
                        text = payload["output"]
                        is_error = None
                    elif set(payload) == {"error"} and isinstance(payload["error"], str):
                        text = payload["error"]
                        is_error = True
                    else:
                        text = json.dumps(payload)
                        is_error = None
                    found.append(
                        ToolResult(response.get("id", ""), response.get("name", ""), text, is_error)
                    )
    elif api == "chat":
        names = {}
        for message in body.get("messages", []):
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
            if message.get("role") == "tool":
                call_id = message.get("tool_call_id", "")
                found.append(
                    ToolResult(
                        call_id, names.get(call_id, ""), _text_of(message.get("content")), None
                    )
                )
    return found


def offered_tools(api: str, body: dict[str, Any]) -> list[str]:
    """The tool names a request offers its model."""
    names: list[str] = []
    for tool in body.get("tools") or []:
        if api == "gemini":
            names += [d["name"] for d in tool.get("functionDeclarations", [])]
        elif api == "chat":
            names.append(tool.get("function", {}).get("name", ""))
        elif api == "responses" and tool.get("type") == "namespace":
            names += [f"{tool.get('name', '')}::{t.get('name', '')}" for t in tool.get("tools", [])]
        else:
            names.append(tool.get("name", ""))
    return [n for n in names if n]


def resolve(tool: str, offered: list[str]) -> str:
    """The offered name that ends in ``tool`` after a separator (or is it)."""
    for name in offered:
        if name == tool or re.search(r"(^|[_.:/-])" + re.escape(tool) + "$", name):
            return name
    return tool


# -- the server ---------------------------------------------------------------------------------


class ModelServer:
    """Serve ``script`` to every harness that connects; ``url`` once started."""

    def __init__(self, script: list[Step]) -> None:
        self.script = script
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"owner": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def record(self, api: str, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Request(api, path, body))

    def turns(self) -> list[Request]:
        """The recorded requests that offered tools (the agent loop's turns)."""
        return [r for r in self.requests if offered_tools(r.api, r.body)]

    def results(self) -> list[ToolResult]:
        """The tool results of the last turn with the most of them (the whole session's)."""
        best: list[ToolResult] = []
        for turn in self.turns():
            found = tool_results(turn.api, turn.body)
            if len(found) >= len(best):
                best = found
        return best

    def next_step(self, api: str, body: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
        """(call id, offered tool name, args) of the step this turn asks for, or None to finish."""
        offered = offered_tools(api, body)
        if not offered:
            return None
        index = len(tool_results(api, body))
        if index >= len(self.script):
            return None
        step = self.script[index]
        return f"call_{index}", resolve(step.tool, offered), step.args


class _Handler(BaseHTTPRequestHandler):
    owner: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        try:
            parsed = json.loads(raw or b"{}")
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}
        return parsed if isinstance(parsed, dict) else {"_value": parsed}

    def _send_json(self, payload: Any, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, events: list[tuple[str | None, Any]]) -> None:
        chunks = []
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            payload = data if isinstance(data, str) else json.dumps(data)
            chunks.append(f"{head}data: {payload}\n\n")
        data = "".join(chunks).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self.owner.record("get", self.path, {})
        if path.endswith("/models"):
            self._send_json(
                {"object": "list", "data": [{"id": "scripted", "object": "model"}], "models": []}
            )
        else:
            self._send_json({})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        body = self._body()
        if path.endswith("/messages/count_tokens"):
            self.owner.record("count", self.path, body)
            self._send_json({"input_tokens": 100})
        elif path.endswith("/messages"):
            self.owner.record("anthropic", self.path, body)
            self._anthropic(body)
        elif path.endswith("/responses"):
            self.owner.record("responses", self.path, body)
            self._responses(body)
        elif path.endswith("/chat/completions"):
            self.owner.record("chat", self.path, body)
            self._chat(body)
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self.owner.record("gemini", self.path, body)
            self._gemini(body, stream=":streamGenerateContent" in path)
        elif ":countTokens" in path:
            self.owner.record("count", self.path, body)
            self._send_json({"totalTokens": 100})
        else:
            self.owner.record("other", self.path, body)
            self._send_json({})

    # Anthropic Messages ---------------------------------------------------------------------

    def _anthropic(self, body: dict[str, Any]) -> None:
        step = self.owner.next_step("anthropic", body)
        usage = {"input_tokens": 10, "output_tokens": 5}
        if step is None:
            block: dict[str, Any] = {"type": "text", "text": FINAL_TEXT}
            stop = "end_turn"
        else:
            block = {
                "type": "tool_use",
                "id": f"toolu_{step[0]}",
                "name": step[1],
                "input": step[2],
            }
            stop = "tool_use"
        message = {
            "id": "msg_scripted",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "scripted"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            self._send_json(message)
            return
        start = (
            {**block, "input": {}} if block["type"] == "tool_use" else {"type": "text", "text": ""}
        )
        delta = (
            {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            if block["type"] == "tool_use"
            else {"type": "text_delta", "text": FINAL_TEXT}
        )
        self._send_sse(
            [
                (
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {**message, "content": [], "stop_reason": None},
                    },
                ),
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": start},
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": usage,
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
        )

    # OpenAI Responses -----------------------------------------------------------------------

    def _responses(self, body: dict[str, Any]) -> None:
        step = self.owner.next_step("responses", body)
        if step is None:
            item: dict[str, Any] = {
                "type": "message",
                "id": "msg_scripted",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
            }
        else:
            namespace, _, name = step[1].rpartition("::")
            item = {
                "type": "function_call",
                "id": f"fc_{step[0]}",
                "call_id": step[0],
                "name": name,
                "arguments": json.dumps(step[2]),
                "status": "completed",
            }
            if namespace:
                item["namespace"] = namespace
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        response = {
            "id": "resp_scripted",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model", "scripted"),
            "output": [item],
            "usage": usage,
        }
        self._send_sse(
            [
                (
                    "response.created",
                    {"type": "response.created", "response": {**response, "output": []}},
                ),
                (
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": 0, "item": item},
                ),
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": 0, "item": item},
                ),
                ("response.completed", {"type": "response.completed", "response": response}),
            ]
        )

    # OpenAI Chat Completions ----------------------------------------------------------------

    def _chat(self, body: dict[str, Any]) -> None:
        step = self.owner.next_step("chat", body)
        base = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
        }
        base["model"] = body.get("model", "scripted")
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if step is None:
            message: dict[str, Any] = {"role": "assistant", "content": FINAL_TEXT}
            finish = "stop"
        else:
            call = {
                "id": step[0],
                "type": "function",
                "function": {"name": step[1], "arguments": json.dumps(step[2])},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            self._send_json(
                {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
            )
            return
        delta: dict[str, Any] = {"role": "assistant"}
        if step is None:
            delta["content"] = FINAL_TEXT
        else:
            delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
        self._send_sse(
            [
                (None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
                (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
                (None, {**base, "choices": [], "usage": usage}),
                (None, "[DONE]"),
            ]
        )

    # Gemini API -----------------------------------------------------------------------------

    def _gemini(self, body: dict[str, Any], *, stream: bool) -> None:
        step = self.owner.next_step("gemini", body)
        if step is None:
            wants_json = (body.get("generationConfig") or {}).get(
                "responseMimeType"
            ) == "application/json"
            text = (
                json.dumps({"reasoning": "done", "next_speaker": "user"})
                if wants_json
                else FINAL_TEXT
            )
            part: dict[str, Any] = {"text": text}
        else:
            part = {"functionCall": {"name": step[1], "args": step[2], "id": step[0]}}
        payload = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "scripted",
        }
        if stream:
            self._send_sse([(None, payload)])
        else:
            self._send_json(payload)
