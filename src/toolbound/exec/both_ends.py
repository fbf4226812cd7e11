"""The economy profile's capture: both ends of a stream, behind the reader's interface.

``bounds.headtail.HeadTailCapture`` keeps a stream's first and last bytes and
counts what it dropped between them; the stream readers (``exec.reader``)
take a head or a tail capture (``exec.capture``). :class:`BothEndsCapture`
is a ``HeadCapture`` whose every method the reader calls (``feed``,
``reserve``, ``commit``, ``finish``) is its own, so a reader keeps both ends
without knowing it. Past the head, each read is copied once into the tail's
ring (the ring keeps the bytes anyway); ``retained()`` is what the Bash tool
shapes.

Pieces:
    BothEndsCapture  head + tail retention for a StreamReader; retained() -> Retained
"""

from __future__ import annotations

from toolbound.bounds.headtail import HeadTailCapture, Retained
from toolbound.exec.capture import Captured, HeadCapture
from toolbound.limits import Budget


class BothEndsCapture(HeadCapture):
    """Keeps a stream's first ``head`` and last ``tail`` bytes and lines."""

    def __init__(self, *, head: Budget, tail: Budget) -> None:
        super().__init__(max_bytes=head.max_bytes, max_lines=head.max_lines)
        self._ends = HeadTailCapture(head=head, tail=tail)
        self._read = bytearray()

    @property
    def full(self) -> bool:
        """Never: the tail keeps taking the stream's last bytes."""
        return False

    def feed(self, data: bytes) -> bytes:
        self._ends.feed(data)
        return data

    def reserve(self, size: int) -> memoryview:
        if len(self._read) < size:
            self._read = bytearray(size)
        return memoryview(self._read)[:size]

    def commit(self, n: int) -> None:
        self._ends.feed(bytes(memoryview(self._read)[:n]))

    def retained(self) -> Retained:
        """Both ends as kept, and what was dropped between them."""
        return self._ends.finish()

    def finish(self) -> Captured:
        """The head, with the whole stream's totals (as a HeadCapture reports it)."""
        self._read = bytearray()
        kept = self._ends.finish()
        return Captured(kept.head, "head", kept.total_bytes, kept.total_lines)
