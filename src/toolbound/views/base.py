"""What every view is: a result's status, its outcome line, and the view's defaults.

A view (``toolbound.views``) answers, for a result dict of its tool that is
not an error, what the result means: the text the model reads, its status,
the outputs it names, the bytes the tool saw that the model did not, and a
call's arguments on one line. ``View`` holds the answers a tool has when it
says nothing else; each tool's view overrides what its results tell.

Pieces:
    StatusName  the words of a status (the web rows' ``status``)
    Status      a status and whether the protocols report it as an error
    DONE, RUNNING, ERROR, FAILED, TIMED_OUT, ABORTED, KILLED  the statuses
    Outcome     a status and the line that says it (a command's end, a job's state)
    View        a tool's view, with the defaults of a tool that says nothing more
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

StatusName = Literal["running", "done", "error", "timedOut", "aborted", "killed"]


@dataclass(frozen=True, slots=True)
class Status:
    """A result's status: ``name`` as the page shows it; ``is_error`` whether the
    protocols report the result as an error (MCP ``isError``, the CLI's exit 1)."""

    name: StatusName
    is_error: bool = False


DONE = Status("done")
# A job that runs on: not an error anywhere, not an end.
RUNNING = Status("running")
# A TOOL_… error (or the tool crashed): the tool refused or could not do its work.
ERROR = Status("error", is_error=True)
# The command failed (a non-zero exit, a signal): the page shows it as an error,
# but the tool did its work, so the protocols do not (the seed: only a timeout is).
FAILED = Status("error")
# The seed: a timeout is "kill process tree + error", a command's or a job's.
TIMED_OUT = Status("timedOut", is_error=True)
ABORTED = Status("aborted")
# Stopped (JobStop, the page, its session's end): not a failure.
KILLED = Status("killed")


@dataclass(frozen=True, slots=True)
class Outcome:
    """The status of what a result is about and the line that says it
    (``exit status 3``, ``killed (SIGTERM)``), as the page shows it first."""

    status: Status
    text: str

    def to_wire(self) -> dict[str, str]:
        return {"status": self.status.name, "text": self.text}


class View:
    """A tool's view of its results (never an error result: ``toolbound.views`` answers those).

    A method may raise KeyError, TypeError or AttributeError on a dict that is
    not one of its tool's shapes (a stored row of another version); the
    dispatch in ``toolbound.views`` answers for it then.
    """

    def text(self, result: dict[str, Any]) -> str:
        """The text the model reads (``toolbound.model_text``'s, before a fit)."""
        raise NotImplementedError

    def status(self, result: dict[str, Any]) -> Status:
        """The call's status: done, unless the tool's results tell more."""
        return DONE

    def outcomes(self, result: dict[str, Any]) -> list[Outcome]:
        """The lines the page shows first, each with its status: a command's end, a job's state."""
        return []

    def outputs(self, result: dict[str, Any]) -> list[dict[str, Any]]:
        """The files the result names that a viewer can page with Read:
        ``{"name", "path", "offset"}`` each."""
        return []

    def elided_bytes(self, result: dict[str, Any]) -> int:
        """What the tool saw that the model did not, in bytes, from the result alone."""
        return 0

    def image(self, result: dict[str, Any]) -> dict[str, Any] | None:
        """The image sent beside the text (``data``, ``mimeType``, ``width``, ``height``)."""
        return None

    def reread_avoided(self, result: dict[str, Any]) -> bool:
        """Whether the result answered a re-read without sending the window again."""
        return False

    def short_args(self, args: dict[str, Any]) -> str | None:
        """The arguments as one line, before it is flattened and cut; None: as JSON."""
        return None
