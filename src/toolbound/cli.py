"""The ``toolbound`` command line: a thin adapter over ``ToolHost``.

``toolbound call TOOL 'JSON_ARGS'`` prints one JSON document (exit 0 for a
result, 1 for a tool error result or a timed-out Bash call, 2 for a usage
error); with ``--events`` it prints JSON Lines: every chunk event, then the
result event; with ``--text`` the result's model text (``model_text``) instead
of its JSON, with the same exit status.
``toolbound tools`` prints ``builtin_tool_defs()``.
``toolbound session list|show ID|context ID|ledger ID|checkpoint ID --summary TEXT|
end ID|prune --ended-before DAYS [--transcripts]`` prints the session store's view
as one JSON document (``ledger ID``: ``Session.ledger()``, where its context
went). ``--store URL`` (else ``$TOOLBOUND_STORE``, else the data dir) names the
store: a data dir or a ``postgresql://`` URL.
``toolbound serve`` runs the MCP server and the web view (``toolbound.serve``,
imported only then); ``toolbound web`` the web view alone, over the store.
``toolbound setup claude-code|codex|gemini|opencode [--http URL --token TOKEN]``
prints that harness's configuration for toolbound (``toolbound.harness_setup``).

Pieces:
    build_parser        the argparse tree
    parse_http_address  ``serve --http HOST:PORT``
    check_loopback      ``serve --http`` stays on loopback without ``--allow-remote``
    parse_json_args     ``call``'s JSON_ARGS, or a usage error
    main                entry point of the console script
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only light modules here: each command imports what it needs (the tool models
# and the host for `call`, the mcp SDK for `serve`), so none pays for the others.
from toolbound.fit import FitMode, fit_mode
from toolbound.limits import PROFILE_NAMES, profile_named

if TYPE_CHECKING:
    from toolbound.greeting import Opening

# The CLI's own session when none is named, so a spill file named by one call
# stays readable by the next.
CLI_SESSION = "cli"

# Where `toolbound serve` listens unless told otherwise (endpoint /mcp).
DEFAULT_HTTP = "127.0.0.1:8765"
# The bearer token of `serve --http` when set (otherwise a random one is printed).
TOKEN_ENV = "TOOLBOUND_TOKEN"
# The store of every command when set (read once by `serve`, then removed).
STORE_ENV = "TOOLBOUND_STORE"


def _add_places(p: argparse.ArgumentParser, *, workspace: bool = True) -> None:
    if workspace:
        p.add_argument("--workspace", default=".", help="folder the tools serve (default: cwd)")
    p.add_argument("--data-dir", default=None, help="store and scratch dirs")
    if workspace:
        p.add_argument(
            "--allow-external",
            action="append",
            default=[],
            metavar="DIR",
            help="approve a folder outside the workspace (repeatable)",
        )


def _add_sandbox(p: argparse.ArgumentParser, *, default: str | None = "off") -> None:
    p.add_argument(
        "--sandbox",
        choices=["off", "read-only", "workspace-write"],
        default=default,
        help="where Bash commands may write (default: "
        + (
            "off, unconfined)"
            if default == "off"
            else "workspace-write where bubblewrap works, else off, said at start)"
        ),
    )
    p.add_argument(
        "--no-network",
        dest="network",
        action="store_false",
        help="Bash commands get no network but their own loopback",
    )
    p.add_argument(
        "--allow-write",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder confined commands may write besides the workspace, e.g. a cache "
        "(repeatable)",
    )
    p.add_argument(
        "--protect-git",
        action="store_true",
        help="keep the workspace's .git/hooks and .git/config read-only for confined commands",
    )
    p.add_argument(
        "--keep-env-back",
        action="append",
        default=[],
        metavar="NAME",
        help="a variable no command gets in its environment, besides $TOOLBOUND_TOKEN and "
        "$TOOLBOUND_STORE (repeatable)",
    )


def _add_profile(p: argparse.ArgumentParser, *, default: str = "exact") -> None:
    p.add_argument(
        "--profile",
        choices=list(PROFILE_NAMES),
        default=default,
        help=f"the result profile (default {default}): exact (the seed's budgets) or economy "
        "(the same facts in less of the context)",
    )
    p.add_argument(
        "--context-window",
        type=_tokens,
        default=None,
        metavar="TOKENS",
        help="the model's context window: economy budgets shrink as the session's "
        "recorded context fills it",
    )


def _tokens(text: str) -> int:
    try:
        tokens = int(text)
    except ValueError:
        tokens = 0
    if tokens < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of tokens")
    return tokens


def _fit(text: str) -> FitMode:
    try:
        return fit_mode(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="the session store: a postgresql:// URL or a data dir "
        "(default: $TOOLBOUND_STORE, else the data dir)",
    )


class _ToolsListed(argparse.HelpFormatter):
    """``call --help``: the usage, then every tool of the registry (imported only then)."""

    def format_help(self) -> str:
        from toolbound.tools.registry import TOOL_NAMES

        return f"{super().format_help()}\ntools: {', '.join(TOOL_NAMES)}\n"


class _Version(argparse.Action):
    """``--version``: the installed package's version (read only when asked)."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> None:
        import toolbound

        sys.stdout.write(f"toolbound {toolbound.__version__}\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolbound", description="A tool host for AI coding agents, with bounded results."
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    call = sub.add_parser(
        "call",
        help="run one tool and print its result as JSON",
        formatter_class=_ToolsListed,
    )
    call.add_argument("tool", help="the tool's name (listed below)")
    call.add_argument("args", help="the tool's arguments as a JSON object")
    _add_places(call)
    _add_store(call)
    call.add_argument("--session", default=CLI_SESSION, help="session id")
    shown = call.add_mutually_exclusive_group()
    shown.add_argument("--events", action="store_true", help="print JSON Lines events")
    shown.add_argument(
        "--text", action="store_true", help="print the text the model reads instead of JSON"
    )
    _add_sandbox(call)
    _add_profile(call)

    serve = sub.add_parser(
        "serve",
        help=f"serve the tools over MCP (default: streamable HTTP on {DEFAULT_HTTP}, /mcp)",
    )
    transport = serve.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="serve over stdin/stdout")
    transport.add_argument(
        "--http",
        metavar="HOST:PORT",
        default=DEFAULT_HTTP,
        help=f"listen here (default {DEFAULT_HTTP})",
    )
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --http on an address outside 127.0.0.0/8 and ::1 (anyone who can "
        "reach it and holds the token runs Bash)",
    )
    _add_places(serve)
    _add_sandbox(serve, default=None)
    # Economy: the seed's budgets exceed what harnesses take in one result (README).
    _add_profile(serve, default="economy")
    _add_store(serve)
    serve.add_argument(
        "--fit",
        type=_fit,
        default="auto",
        metavar="auto|off|BYTES",
        help="keep each result's whole text within its client's per-result cap, cutting it "
        "here with markers so the harness never does: auto (default) knows the client from "
        "initialize's clientInfo; off applies none; a number of bytes caps it for any client",
    )
    serve.add_argument(
        "--structured",
        action="store_true",
        help="results in the 0.2 shape for programmatic clients: the result as "
        "structuredContent beside the text, and output schemas (default: the text only, "
        "which is what every harness's model should read)",
    )

    web = sub.add_parser(
        "web", help=f"serve the web view alone, over the store (default {DEFAULT_HTTP})"
    )
    web.add_argument(
        "--http", metavar="HOST:PORT", default=DEFAULT_HTTP, help=f"listen here ({DEFAULT_HTTP})"
    )
    web.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --http on an address outside 127.0.0.0/8 and ::1",
    )
    _add_places(web)
    _add_store(web)

    setup = sub.add_parser(
        "setup", help="print a harness's configuration that makes toolbound its tool layer"
    )
    setup.add_argument("harness", choices=["claude-code", "codex", "gemini", "opencode"])
    setup.add_argument(
        "--workspace", default=".", help="the workspace serve --stdio serves (default: .)"
    )
    setup.add_argument(
        "--http",
        metavar="URL",
        default=None,
        help="reach a running `toolbound serve --http` at URL (e.g. http://127.0.0.1:8765/mcp)",
    )
    setup.add_argument(
        "--token",
        default=None,
        help=f"the bearer token serve printed (default: ${TOKEN_ENV}); with --http",
    )

    tools = sub.add_parser("tools", help="print the tool definitions")
    tools.add_argument("--format", choices=["anthropic", "openai", "mcp"], default="anthropic")
    tools.add_argument(
        "--profile",
        choices=list(PROFILE_NAMES),
        default="exact",
        help="describe the tools for this result profile (as `serve --profile` does)",
    )

    session = sub.add_parser("session", help="inspect and compact stored sessions")
    actions = session.add_subparsers(dest="action", required=True)
    for action, text in (
        ("list", "every session"),
        ("prune", "remove the recorded tool calls of sessions that ended long ago"),
    ):
        p = actions.add_parser(action, help=text)
        _add_places(p, workspace=False)
        _add_store(p)
        if action == "prune":
            p.add_argument(
                "--ended-before",
                type=float,
                required=True,
                metavar="DAYS",
                help="prune sessions that ended more than DAYS days ago",
            )
            p.add_argument(
                "--transcripts",
                action="store_true",
                help="remove their transcripts and checkpoints too",
            )
    for action, text in (
        ("show", "a session: its info, transcript, checkpoints and tool calls"),
        ("context", "the messages the model gets for a session"),
        ("ledger", "where a session's context went: tokens and bytes per call and per tool"),
        ("checkpoint", "compact a session into a checkpoint"),
        ("end", "end a session and remove its scratch dir"),
    ):
        p = actions.add_parser(action, help=text)
        p.add_argument("id", help="session id")
        _add_places(p, workspace=False)
        _add_store(p)
        if action == "context":
            p.add_argument("--provider", choices=["anthropic", "openai"], default="anthropic")
        if action == "checkpoint":
            p.add_argument("--summary", required=True, help="the summary of the session so far")
    return parser


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def parse_json_args(text: str) -> Any:
    """``JSON_ARGS`` as a value; ValueError with the usage message for any JSON we cannot take.

    That is: invalid JSON, ``NaN``/``Infinity``, an integer past Python's digit
    limit, and nesting deeper than the interpreter's recursion limit. A string
    that is not Unicode (a lone surrogate escape) is valid JSON: the tool
    refuses it as an argument (TOOL_INVALID_ARGUMENT, toolbound.arguments).
    """
    try:
        args = json.loads(text, parse_constant=_not_json)
        json.dumps(args, ensure_ascii=False)
    except RecursionError:
        raise ValueError("JSON_ARGS is nested too deeply; pass one flat JSON object") from None
    except ValueError as err:
        raise ValueError(f"JSON_ARGS is not valid JSON ({err}); pass one JSON object") from None
    return args


async def _call(ns: argparse.Namespace, args: Any) -> int:
    from toolbound.host import ToolHost

    async with ToolHost(
        workspace=ns.workspace,
        data_dir=ns.data_dir,
        session_id=ns.session,
        allow_external=ns.allow_external,
        sandbox=ns.sandbox,
        network=ns.network,
        keep_env_back=ns.keep_env_back,
        allow_write=ns.allow_write,
        protect_git=ns.protect_git,
        store=ns.store,
        profile=ns.profile,
        context_window=ns.context_window,
        warm=False,  # one call: it imports its own tool's module only
    ) as host:
        host.jobs.ends_with_call = True  # a job started here ends as this process does
        last: dict[str, Any] = {}
        async for event in host.stream(ns.tool, args):
            if ns.events:
                sys.stdout.write(_dump(event) + "\n")
                sys.stdout.flush()
            if event["type"] == "result":
                last = event
        result: dict[str, Any] = last.get("result", {})
        if ns.text:
            text = last.get("text", "")
            # A terminal's prompt starts on a line of its own; the text itself is as it is.
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
        elif not ns.events:
            sys.stdout.write(_dump(result) + "\n")
    from toolbound.results import is_error

    return 1 if is_error(ns.tool, result) else 0


def _session(ns: argparse.Namespace) -> dict[str, Any]:
    from toolbound.paths import default_data_dir
    from toolbound.store import PruneReport, SessionError, SessionStore, is_url, store_location
    from toolbound.store.db import DB_NAME

    data_dir = Path(ns.data_dir) if ns.data_dir is not None else default_data_dir()
    location = store_location(ns.store, data_dir)
    cutoff = 0.0
    if ns.action == "prune":
        if not ns.ended_before >= 0:
            raise ValueError("--ended-before takes a number of days >= 0")
        cutoff = time.time() - ns.ended_before * 86400
    if not is_url(location) and not (Path(location) / DB_NAME).is_file():
        # Nothing stored there: answer without creating the data dir or a store.
        if ns.action == "list":
            return {"sessions": []}
        if ns.action == "prune":
            return {"pruned": PruneReport(0, 0, 0, 0).to_wire(), "endedBefore": cutoff}
        raise SessionError(f"there is no session {ns.id!r} in {location} (it holds no store)")
    with SessionStore(location, scratch_dir=data_dir) as store:
        if ns.action == "list":
            return {"sessions": [info.to_wire() for info in store.list()]}
        if ns.action == "prune":
            report = store.prune(ended_before=cutoff, transcripts=ns.transcripts)
            return {"pruned": report.to_wire(), "endedBefore": cutoff}
        if ns.action == "end":
            return {"session": store.end(ns.id).to_wire()}
        session = store.get(ns.id)
        if session is None:
            raise SessionError(f"there is no session {ns.id!r} in {store.describe()}")
        if ns.action == "show":
            return {
                "session": session.info().to_wire(),
                "transcript": session.transcript(),
                "checkpoints": [c.to_wire() for c in session.checkpoints()],
                "toolCalls": store.tool_calls(ns.id),
            }
        if ns.action == "context":
            return {
                "sessionId": ns.id,
                "provider": ns.provider,
                "messages": session.context(ns.provider),
            }
        if ns.action == "ledger":
            return session.ledger()
        return {"checkpoint": session.checkpoint(summary=ns.summary).to_wire()}


def parse_http_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); ValueError if malformed."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--http takes HOST:PORT, e.g. {DEFAULT_HTTP} (got {text!r})")
    return host, int(port)


def check_loopback(host: str) -> None:
    """ValueError unless ``host`` is (or resolves only to) 127.0.0.0/8 or ::1."""
    import ipaddress
    import socket

    try:
        addresses = {ipaddress.ip_address(host)}
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except OSError as err:
            raise ValueError(f"--http host {host!r} does not resolve: {err}") from None
        addresses = {ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in infos}
    outside = sorted(str(a) for a in addresses if not a.is_loopback)
    if outside:
        raise ValueError(
            f"--http {host} is not a loopback address ({', '.join(outside)}): anyone who can "
            "reach it could run Bash here. Bind 127.0.0.1 or ::1, or pass --allow-remote "
            "to serve other machines (they need the bearer token)."
        )


def _serve(ns: argparse.Namespace, *, web_only: bool = False) -> int:
    """``toolbound serve``, or with ``web_only`` ``toolbound web``: the same checks."""
    workspace = Path(ns.workspace).resolve()
    if not workspace.is_dir():
        return _usage(f"workspace {ns.workspace} is not a directory")
    try:
        http = None if getattr(ns, "stdio", False) else parse_http_address(ns.http)
        if http is not None and not ns.allow_remote:
            check_loopback(http[0])
    except ValueError as err:
        return _usage(str(err))
    # Read once, then gone from the server's environment (CONTRACT section 16):
    # every host of the server, and its web view, records into this store.
    store = ns.store or os.environ.pop(STORE_ENV, None) or None
    token = os.environ.pop(TOKEN_ENV, None) or None
    for name in getattr(ns, "keep_env_back", ()):
        os.environ.pop(name, None)
    from toolbound.exec.sandbox import SandboxPolicy, serve_default

    sandbox, fallback = getattr(ns, "sandbox", "off"), None
    if sandbox is None:
        sandbox, fallback = serve_default(network=ns.network)
    try:  # refused now, not at the first call of each session
        SandboxPolicy.create(
            sandbox,
            keep_env_back=getattr(ns, "keep_env_back", ()),
            allow_write=getattr(ns, "allow_write", ()),
        )
    except ValueError as err:
        return _usage(str(err))
    opening, sandbox_line = None, None
    if http is None:
        try:
            opening, sandbox_line = _open_stdio(ns, sandbox=sandbox, fallback=fallback)
        except KeyboardInterrupt:
            return 130
    # Imported here (over stdio, loaded while the client's initialize was answered):
    # the mcp SDK costs most of a second, which `toolbound call` never pays.
    from toolbound.serve import ServeOptions, serve, serve_web

    options = ServeOptions(
        workspace=workspace,
        http=http,
        data_dir=Path(ns.data_dir) if ns.data_dir is not None else None,
        allow_external=tuple(Path(d) for d in ns.allow_external),
        token=token,
        sandbox=sandbox,
        network=getattr(ns, "network", True),
        store=store,
        keep_env_back=tuple(getattr(ns, "keep_env_back", ())),
        allow_write=tuple(Path(d) for d in getattr(ns, "allow_write", ())),
        protect_git=getattr(ns, "protect_git", False),
        sandbox_fallback=fallback,
        profile=profile_named(getattr(ns, "profile", "economy")),
        context_window=getattr(ns, "context_window", None),
        shape="structured" if getattr(ns, "structured", False) else "text",
        fit=getattr(ns, "fit", "auto"),
    )
    try:
        if web_only and http is not None:
            asyncio.run(serve_web(options, *http, store=store))
            return 0
        return serve(options, opening=opening, sandbox_line=sandbox_line)
    except OSError as err:
        return _usage(str(err))
    except KeyboardInterrupt:
        return 130


def _open_stdio(
    ns: argparse.Namespace, *, sandbox: str, fallback: str | None
) -> tuple[Opening | None, str]:
    """``serve --stdio``'s start: the server loads in a thread while the client's opening
    ``initialize`` is answered here (``toolbound.greeting``); the opening, and the
    sandbox line the answer's instructions named (``sandbox`` the mode in force,
    ``fallback`` why the default one could not be built)."""
    import importlib
    import threading

    import toolbound
    from toolbound.exec.sandbox import SandboxPolicy, describe
    from toolbound.greeting import instructions, open_stdio

    loader = threading.Thread(
        target=importlib.import_module, args=("toolbound.serve",), name="toolbound-load"
    )
    loader.start()
    sandbox_line = describe(SandboxPolicy.create(sandbox, network=ns.network), fallback=fallback)
    said = instructions(profile=ns.profile, fit=str(ns.fit), sandbox=sandbox_line)
    try:
        opening = open_stdio(version=toolbound.__version__, instructions=said)
    finally:
        loader.join()
    return (opening if opening.line.strip() else None), sandbox_line


def _setup(ns: argparse.Namespace) -> int:
    """``toolbound setup``: the configuration on stdout, where it goes on stderr."""
    from toolbound.harness_setup import Server, config

    if ns.http is not None:
        token = ns.token or os.environ.get(TOKEN_ENV)
        if not token:
            return _usage(
                f"setup --http needs the token `toolbound serve` printed: --token TOKEN "
                f"or ${TOKEN_ENV}"
            )
        server = Server(url=ns.http, token=token)
    else:
        server = Server(command=(*_own_command(), "serve", "--stdio", "--workspace", ns.workspace))
    text, notes = config(ns.harness, server)
    sys.stdout.write(text)
    sys.stderr.write(f"toolbound: {notes}\n")
    return 0


def _own_command() -> tuple[str, ...]:
    """How a harness starts this toolbound: its console script, else this interpreter."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "toolbound" and script.exists():
        return (str(script.resolve()),)
    return (sys.executable, "-m", "toolbound")


def _usage(message: str) -> int:
    sys.stderr.write(f"toolbound: {message}\n")
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.command == "tools":
        from toolbound.limits import DEFAULT_LIMITS
        from toolbound.tooldefs import builtin_tool_defs

        defs = builtin_tool_defs(DEFAULT_LIMITS, ns.format, profile=profile_named(ns.profile))
        sys.stdout.write(_dump(defs) + "\n")
        return 0
    if ns.command == "session":
        try:
            document = _session(ns)
        except (ValueError, OSError) as err:  # SessionError, StoreUnavailable among them
            return _usage(str(err))
        sys.stdout.write(_dump(document) + "\n")
        return 0
    if ns.command == "call":
        from toolbound.results import ToolError

        try:
            args = parse_json_args(ns.args)
        except ValueError as err:
            return _usage(str(err))
        try:
            return asyncio.run(_call(ns, args))
        except ToolError as err:
            return _usage(err.message)
        except (ValueError, OSError) as err:
            return _usage(str(err))
        except KeyboardInterrupt:
            return 130
    if ns.command == "setup":
        return _setup(ns)
    if ns.command == "serve":
        return _serve(ns)
    if ns.command == "web":
        return _serve(ns, web_only=True)
    return _usage(f"unknown command {ns.command}")


if __name__ == "__main__":
    sys.exit(main())
