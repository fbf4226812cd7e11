"""ripgrep's ``--glob`` meaning, compiled to a regex on the raw path bytes (RE2: linear time).

Grep's ``glob`` and Glob's ``pattern`` keep ripgrep's syntax, but not rg's
``--glob`` *mechanism*: rg treats such a glob as an override that whitelists
whatever it matches, folders included, so ``**/*`` would walk into ``.git``
and a gitignored ``node_modules``. Here the glob only filters the files that a
plain ``rg --files`` walk lists; it never lifts an ignore rule.

The translation mirrors ripgrep 14.1 exactly (the ``ignore`` crate's gitignore
line rules, then ``globset`` with ``literal_separator``): a glob without a
``/`` matches the file name at any depth (``**/`` is put in front), a leading
``/`` anchors it to the searched folder, a trailing ``/`` matches folders only
(so no file), ``/**`` at the end matches everything inside, ``**`` is a whole
path component, ``*`` ``?`` and classes never match ``/``, ``{a,b}`` are
alternatives (not nested), ``\\`` escapes, a leading ``!`` negates. Matching
is on bytes (``(?-u)`` in globset), so a path that is not UTF-8 is matched as
rg matches it. tests/search/test_globs.py checks the translation against rg.

A negated glob (``!*.min.js``) is different: rg's override then only removes
files, which lifts nothing, so it is still handed to rg as ``--glob``.

Pieces:
    PathGlob      a compiled glob: ``matches(rel)``, ``negated``, ``basename``
    compile_glob  the pattern -> PathGlob, or TOOL_INVALID_PATTERN with rg's wording
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolbound.linear_regex import LinearRegex, compile_bytes
from toolbound.results import ErrorCode, ToolError

_UNCLOSED_CLASS = "unclosed character class; missing ']'"
_UNCLOSED_ALTERNATES = "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"
_NESTED_ALTERNATES = "nested alternate groups are not allowed"
_DANGLING_ESCAPE = "dangling '\\'"

# Regex pieces (bytes, DOTALL: globset's `.` matches a newline too).
_ANY = "[^/]"
_STAR = "[^/]*"
_RECURSIVE_PREFIX = "(?:/?|.*/)"
_RECURSIVE_SUFFIX = "/.*"
_RECURSIVE_MIDDLE = "(?:/|/.*/)"


# Bodies that match every file path: `**`, and `*` / `**/*` (a name at any depth).
_EVERYTHING = {".*", _RECURSIVE_PREFIX + _STAR}


class _GlobSyntaxError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class PathGlob:
    """A compiled glob.

    ``matches(rel)`` tests a file's path relative to the searched folder (no
    leading ``./``). ``negated`` globs select the files they do *not* match.
    ``basename`` is a glob for the file name alone that every matching path
    satisfies (``*.ts`` for ``src/**/*.ts``), or None: rg can narrow a walk by
    it as a file type, which reads no ignore rule differently. ``by_name``
    is true when that test is the whole glob (``*.py``); ``everything`` when
    the glob matches every file (``*``, ``**``, ``**/*``).
    """

    pattern: str
    regex: LinearRegex | None
    negated: bool
    basename: str | None
    by_name: bool = False
    everything: bool = False
    # The same test on a path as rg prints it under a `.` target ("./src/x").
    printed: LinearRegex | None = None
    # For `DIR/**` and `DIR/**/NAME` with DIR literal: the printed prefix
    # (b"./DIR/") every match starts with. A path under it matches iff its
    # file name matches ``basename`` (or always, for `DIR/**`: ``any_name``).
    under: bytes | None = None
    any_name: bool = False

    def matches(self, rel: bytes) -> bool:
        if self.regex is None:
            return False  # a folders-only glob (`build/`) names no file
        return self.regex.fullmatch(rel)


def _literal(ch: str) -> str:
    return "".join(re.escape(bytes([b]).decode("latin-1")) for b in ch.encode())


def _class_char(ch: str) -> str:
    # Inside a class, globset also writes non-ASCII as its UTF-8 bytes.
    return "".join(f"\\x{b:02x}" for b in ch.encode())


class _Parser:
    """globset 0.4.14's parser, emitting regex text instead of tokens."""

    def __init__(self, glob: str) -> None:
        self.chars = glob
        self.i = 0
        self.prev: str | None = None
        self.cur: str | None = None
        # One list of (token, regex) per open alternative; stack[0] is the glob.
        self.stack: list[list[tuple[str, str]]] = [[]]
        self.alternates: list[list[list[tuple[str, str]]]] = []

    def bump(self) -> str | None:
        self.prev = self.cur
        self.cur = self.chars[self.i] if self.i < len(self.chars) else None
        if self.cur is not None:
            self.i += 1
        return self.cur

    def peek(self) -> str | None:
        return self.chars[self.i] if self.i < len(self.chars) else None

    def push(self, kind: str, regex: str) -> None:
        self.stack[-1].append((kind, regex))

    def parse(self) -> str:
        while (c := self.bump()) is not None:
            if c == "?":
                self.push("any", _ANY)
            elif c == "*":
                self.star()
            elif c == "[":
                self.klass()
            elif c == "{":
                if len(self.stack) > 1:
                    raise _GlobSyntaxError(_NESTED_ALTERNATES)
                self.stack.append([])
            elif c == "}":
                # As in globset 0.4.14, a `}` with no group open adds an empty one.
                alts = self.stack[1:]
                del self.stack[1:]
                parts = ["".join(r for _, r in alt) for alt in reversed(alts)]
                parts = [p for p in parts if p]
                self.push("alternates", f"(?:{'|'.join(parts)})" if parts else "")
            elif c == "," and len(self.stack) > 1:
                self.stack.append([])
            elif c == "\\":
                escaped = self.bump()
                if escaped is None:
                    raise _GlobSyntaxError(_DANGLING_ESCAPE)
                self.push("literal", _literal(escaped))
            else:
                self.push("literal", _literal(c))
        if len(self.stack) > 1:
            raise _GlobSyntaxError(_UNCLOSED_ALTERNATES)
        tokens = self.stack[0]
        if [k for k, _ in tokens] == ["recursive_prefix"]:
            return ".*"
        return "".join(r for _, r in tokens)

    def star(self) -> None:
        prev = self.prev
        if self.peek() != "*":
            self.push("star", _STAR)
            return
        self.bump()
        if not self.stack[-1]:
            if self.peek() not in (None, "/"):
                self.push("star", _STAR)
                self.push("star", _STAR)
            else:
                self.push("recursive_prefix", _RECURSIVE_PREFIX)
                self.bump()
            return
        if prev != "/" and (len(self.stack) <= 1 or prev not in (",", "{")):
            self.push("star", _STAR)
            self.push("star", _STAR)
            return
        nxt = self.peek()
        if nxt is None:
            self.bump()
            is_suffix = True
        elif nxt in (",", "}") and len(self.stack) >= 2:
            is_suffix = True
        elif nxt == "/":
            self.bump()
            is_suffix = False
        else:
            self.push("star", _STAR)
            self.push("star", _STAR)
            return
        kind, _ = self.stack[-1].pop()
        if kind == "recursive_prefix":
            self.push("recursive_prefix", _RECURSIVE_PREFIX)
        elif kind == "recursive_suffix" or is_suffix:
            self.push("recursive_suffix", _RECURSIVE_SUFFIX)
        else:
            self.push("recursive_middle", _RECURSIVE_MIDDLE)

    def klass(self) -> None:
        negated = self.peek() in ("!", "^")
        if negated:
            self.bump()
        ranges: list[list[str]] = []
        first, in_range = True, False
        while True:
            c = self.bump()
            if c is None:
                raise _GlobSyntaxError(_UNCLOSED_CLASS)
            if c == "]" and not first:
                break
            if c == "-" and not first:
                if in_range:
                    self._close_range(ranges[-1], "-")
                    in_range = False
                else:
                    in_range = True
            elif in_range:
                self._close_range(ranges[-1], c)
                in_range = False
            else:
                ranges.append([c, c])
            first = False
        if in_range:
            ranges.append(["-", "-"])
        body = "".join(
            _class_char(a) if a == b else f"{_class_char(a)}-{_class_char(b)}" for a, b in ranges
        )
        self.push("negated_class" if negated else "class", f"[{'^' if negated else ''}{body}]")

    @staticmethod
    def _close_range(r: list[str], end: str) -> None:
        r[1] = end
        if r[1] < r[0]:
            raise _GlobSyntaxError(f"invalid range; '{r[0]}' > '{r[1]}'")


def _gitignore_line(line: str) -> tuple[str, bool, bool] | None:
    """The ignore crate's line rules: (glob, negated, folders only), None for no glob."""
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip()
    if not line:
        return None
    negated = absolute = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
        absolute = line.startswith("/")
    else:
        if line.startswith("!"):
            negated, line = True, line[1:]
        if line.startswith("/"):
            line, absolute = line[1:], True
    only_dir = line.endswith("/")
    if only_dir:
        line = line[:-1]
        if line.endswith("\\"):
            line = line[:-1]
    actual = line
    if not absolute and "/" not in line and not (actual.startswith("**/") or actual == "**"):
        actual = f"**/{actual}"
    if actual.endswith("/**"):
        actual = f"{actual}/*"
    return actual, negated, only_dir


def _basename(actual: str) -> str | None:
    """The file-name glob every match of ``actual`` satisfies, when one is plain to see."""
    if "/" not in actual:
        return None
    head, _, name = actual.rpartition("/")
    if not name or "**" in name or set(name) <= {"*"}:
        return None
    # A class or brace group spanning the last slash, or a negated class
    # (which, as in globset, can match a `/`), makes the split unsafe.
    if any(c in name for c in "]}\\") and "[" not in name and "{" not in name:
        return None
    if "[!" in name or "[^" in name or name.count("[") != name.count("]"):
        return None
    if name.count("{") != name.count("}") or ("{" in head and "}" not in head.split("{")[-1]):
        return None
    return name


def _under(actual: str, basename: str | None) -> tuple[bytes | None, bool]:
    """The literal folder every match of ``actual`` lies in, and whether any name there matches.

    Only `DIR/**/NAME` with DIR free of glob syntax, and NAME ``*`` or the
    glob's own ``basename`` with no class (which could match a ``/``).
    """
    head, sep, name = actual.rpartition("/**/")
    if not sep or not head or any(c in head for c in "*?[]{}\\"):
        return None, False
    if name == "*":
        return b"./" + head.encode() + b"/", True
    if basename is not None and name == basename and "[" not in name:
        return b"./" + head.encode() + b"/", False
    return None, False


def compile_glob(pattern: str, *, argument: str) -> PathGlob | None:
    """Compile ``pattern`` as rg's ``--glob`` would, or None when it selects nothing.

    ``argument`` names the argument in the error message.
    """
    parsed = _gitignore_line(pattern)
    if parsed is None:
        return None  # rg takes an empty or `#` glob as no glob at all
    actual, negated, only_dir = parsed
    try:
        body = _Parser(actual).parse()
    except _GlobSyntaxError as err:
        raise ToolError(
            ErrorCode.INVALID_PATTERN,
            f"Invalid glob: error parsing glob '{pattern}': {err}\nFix `{argument}` "
            "(e.g. `**/*.py`) and call again.",
        ) from None
    if only_dir:
        return PathGlob(pattern=pattern, regex=None, negated=negated, basename=None)
    source = body.encode("latin-1")
    basename = _basename(actual)
    under, any_name = _under(actual, basename)
    return PathGlob(
        pattern=pattern,
        regex=compile_bytes(source),
        negated=negated,
        basename=basename,
        # `**/NAME` with NAME unable to match a `/`: the file-name test is exact.
        by_name=basename is not None and actual == f"**/{basename}" and "[" not in basename,
        everything=body in _EVERYTHING,
        printed=compile_bytes(rb"\./(?:" + source + rb")"),
        under=under,
        any_name=any_name,
    )
