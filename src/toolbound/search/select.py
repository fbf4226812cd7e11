"""Which walked files a search keeps: Glob's ``pattern``, Grep's ``glob`` and ``type``.

None of them may lift an ignore rule: the files kept are those a plain
``rg --files`` walk lists that also pass the filter. rg's own ``--glob`` is an
override that whitelists what it matches (folders too), so it is not used for
a positive glob; rg is instead narrowed by a *file type*, which rg checks only
after the ignore files (tested on rg 14.1), and the exact glob is applied here
(search/globs.py) to what rg prints.

A type selection lifts one rule, though: rg skips its hidden-name check for a
file a type whitelists, so ``rg --files -t js`` lists ``.eslintrc.js``, which a
plain walk does not (unless an ignore file re-includes it with ``!``). So a
file with a hidden name that such a walk prints is only *held*: a plain walk
(``confirm_args``) decides whether it stays. Dot files are few; the plain walk
runs only when one matched.

A component of a positive glob that starts with a literal ``.``
(``.github/workflows/*.yml``, ``.eslintrc.json``, ``**/.env.example``) names
hidden files and folders (CONTRACT 4, from 0.3): the walk then takes
``--hidden`` (``.git`` excluded, ignore rules kept), and a listed path is kept
only when each of its hidden components is one that such a component matches,
so ``.github/workflows/*.yml`` lists ``.github/workflows/ci.yml`` but no other
hidden folder comes with it.

Pieces:
    FileSelection     the filter: the rg flags that narrow the walk, the exact test
    is_dot_file       rg's hidden test on a printed path
    NO_SELECTION      every file the walk lists
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolbound.search.globs import PathGlob, compile_glob

# The name of the file type a glob's file-name part is given to rg as.
_GLOB_TYPE = "toolboundglob"


# Never listed, whatever a pattern names: git's own folder.
_HIDDEN_ARGS = ["--hidden", "--glob", "!.git"]


@dataclass(frozen=True, slots=True)
class FileSelection:
    glob: PathGlob | None = None
    type_name: str | None = None
    # The glob's components that start with a literal `.`, each a name test.
    dot_names: tuple[PathGlob, ...] = ()

    @classmethod
    def of(cls, *, glob: str | None, type_name: str | None, argument: str) -> FileSelection:
        """Compile ``glob`` (TOOL_INVALID_PATTERN naming ``argument`` if it is bad)."""
        compiled = compile_glob(glob, argument=argument) if glob else None
        dot_names: tuple[PathGlob, ...] = ()
        if compiled is not None and not compiled.negated and glob:
            names = [compile_glob(c, argument=argument) for c in _dot_components(glob)]
            dot_names = tuple(n for n in names if n is not None)
        return cls(compiled, type_name or None, dot_names)

    @property
    def _glob_type(self) -> str | None:
        """The glob's file-name part, to narrow rg by as a type (when there is no type)."""
        g = self.glob
        if g is None or g.negated or self.type_name or g.basename is None:
            return None
        return None if ":" in g.basename else g.basename

    def rg_args(self) -> list[str]:
        """Flags that narrow rg's walk to a superset of the kept files, lifting nothing."""
        out: list[str] = list(_HIDDEN_ARGS) if self.dot_names else []
        if self.glob is not None and self.glob.negated:
            # An override that only removes files lifts nothing: rg applies it exactly.
            out += ["--glob", self.glob.pattern]
        if self.type_name:
            out += ["--type", self.type_name]
        elif (name := self._glob_type) is not None:
            out += ["--type-add", f"{_GLOB_TYPE}:{name}", "--type", _GLOB_TYPE]
        return out

    def confirm_args(self) -> list[str]:
        """The plain walk's flags: what decides whether a held dot file stays."""
        if self.glob is not None and self.glob.negated:
            return ["--glob", self.glob.pattern]
        return list(_HIDDEN_ARGS) if self.dot_names else []

    @property
    def holds_dot_files(self) -> bool:
        """True when rg is narrowed by a type, so a dot file it prints needs confirming."""
        return bool(self.type_name) or self._glob_type is not None

    def printed_filter(self) -> Callable[[list[bytes]], list[bytes]] | None:
        """The exact test on a batch of paths rg printed under a ``.`` target (``./src/x``).

        None when rg's own narrowing already is the test: no glob, a negated
        one (rg applies it), one matching every file, or one on the file name
        alone that rg was given as a type. A glob under a literal folder
        (``src/**``, or ``src/**/*.ts`` with rg given ``*.ts``) is a prefix
        test, about a third of the regex's cost a path.
        """
        exact = self._exact_filter()
        if not self.dot_names:
            return exact
        named = self._named_hidden
        if exact is None:
            return lambda batch: [p for p in batch if named(p)]
        return lambda batch: [p for p in exact(batch) if named(p)]

    def _named_hidden(self, printed: bytes) -> bool:
        """Whether each hidden component of a printed path (``./a/.b/c``) is one a
        literal-dot component of the glob names."""
        if b"/." not in printed:
            return True
        parts = printed.split(b"/")[1:]
        return all(
            any(n.matches(part) for n in self.dot_names) for part in parts if part[:1] == b"."
        )

    def _exact_filter(self) -> Callable[[list[bytes]], list[bytes]] | None:
        g = self.glob
        if g is None or g.negated:
            return None
        if g.printed is None:
            return _nothing
        if g.everything or (g.by_name and self._glob_type is not None):
            return None
        prefix = g.under
        if prefix is not None and (g.any_name or self._glob_type is not None):
            return lambda batch: [p for p in batch if p.startswith(prefix)]
        fullmatch = g.printed.fullmatch
        return lambda batch: [p for p in batch if fullmatch(p)]


NO_SELECTION = FileSelection()


def _dot_components(glob: str) -> list[str]:
    """The components of ``glob`` that start with a literal ``.`` (not ``.`` or ``..``)."""
    return [c for c in glob.split("/") if c.startswith(".") and c not in (".", "..")]


def _nothing(batch: list[bytes]) -> list[bytes]:
    return []  # a folders-only glob (`build/`) names no file


def is_dot_file(printed: bytes) -> bool:
    """A file whose name starts with a dot (rg's hidden test, on the name only)."""
    return printed.rpartition(b"/")[2].startswith(b".")
