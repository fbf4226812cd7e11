"""The read record: what was Read (for Edit) and whether a window was returned before (economy)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolbound.edit import ReadRecord, Seen, content_digest
from toolbound.results import ErrorCode, ToolError

FILE = Path("/ws/a.txt")
DATA = b"".join(b"line %d\n" % i for i in range(10))


def saw(record: ReadRecord, call_id: str, offset: int, limit: int, data: bytes = DATA) -> Seen:
    lines = data.splitlines(keepends=True)
    start = sum(map(len, lines[:offset]))
    end = sum(map(len, lines[: offset + limit]))
    return record.saw_window(
        FILE,
        call_id=call_id,
        offset=offset,
        limit=limit,
        line_count=len(lines[offset : offset + limit]),
        start_byte=start,
        end_byte=end,
        at_eof=end == len(data),
        digest=content_digest(data, start, end),
    )


def test_a_re_read_of_the_same_unchanged_window_names_the_earlier_call() -> None:
    record = ReadRecord()
    first = saw(record, "c1", 0, 5)
    digest = content_digest(DATA, 0, first.end_byte)
    assert record.earlier_read(FILE, offset=0, limit=5, digest=digest) == first
    assert record.earlier_read(FILE, offset=0, limit=5, digest=content_digest(b"x")) is None
    assert record.earlier_read(FILE, offset=5, limit=5, digest=digest) is None


def test_after_a_checkpoint_earlier_reads_still_count_for_edit_but_not_as_in_context() -> None:
    record = ReadRecord()
    first = saw(record, "c1", 0, 5)
    record.new_context()
    assert record.earlier_read(FILE, offset=0, limit=5, digest=first.digest) is None
    record.check(FILE, DATA, size=len(DATA), shown="a.txt", tool="Edit")
    again = saw(record, "c2", 0, 5)
    assert record.earlier_read(FILE, offset=0, limit=5, digest=first.digest) == again


def test_an_edit_is_not_a_read_the_model_has_seen() -> None:
    record = ReadRecord()
    saw(record, "c1", 0, 10)
    record.wrote(FILE, call_id="e1", by="Edit", size=len(DATA), digest=content_digest(DATA))
    assert record.earlier_read(FILE, offset=0, limit=10, digest=content_digest(DATA)) is None
    assert [s.call_id for s in record.seen(FILE)] == ["e1"]


def test_windows_replace_the_same_window_and_a_whole_read_replaces_all() -> None:
    record = ReadRecord()
    saw(record, "c1", 0, 3)
    saw(record, "c2", 3, 3)
    saw(record, "c3", 0, 3)
    assert [s.call_id for s in record.seen(FILE)] == ["c2", "c3"]
    saw(record, "c4", 0, 10)
    assert [s.call_id for s in record.seen(FILE)] == ["c4"]


def test_check_judges_the_bytes_each_window_returned() -> None:
    record = ReadRecord()
    with pytest.raises(ToolError) as caught:
        record.check(FILE, DATA, size=len(DATA), shown="a.txt", tool="Write")
    assert caught.value.code == ErrorCode.NOT_READ
    saw(record, "c1", 0, 3)
    saw(record, "c2", 8, 2)
    changed_outside = DATA.replace(b"line 5", b"LINE 5")
    record.check(FILE, changed_outside, size=len(DATA), shown="a.txt", tool="Edit")
    for changed in (DATA.replace(b"line 1", b"LINE 1"), DATA + b"line 10\n", DATA[:-1]):
        with pytest.raises(ToolError) as caught:
            record.check(FILE, changed, size=len(changed), shown="a.txt", tool="Edit")
        assert caught.value.code == ErrorCode.FILE_CHANGED


def test_windows_kept_per_file_are_bounded() -> None:
    record = ReadRecord(max_windows_per_file=4)
    for offset in range(8):
        saw(record, f"c{offset}", offset, 1)
    assert [s.call_id for s in record.seen(FILE)] == ["c4", "c5", "c6", "c7"]


def test_a_saved_record_comes_back_whole(tmp_path: Path) -> None:
    record = ReadRecord()
    real = tmp_path / "f.txt"
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9.txt"))  # not UTF-8
    record.saw_window(
        real,
        call_id="c1",
        offset=0,
        limit=10,
        line_count=2,
        start_byte=0,
        end_byte=6,
        at_eof=True,
        digest=content_digest(b"a\nbcd\n"),
    )
    record.wrote(odd, call_id="c2", by="Write", size=3, digest=content_digest(b"xyz"))
    record.new_context()
    back = ReadRecord.from_json(record.to_json())
    assert (back.seen(real), back.seen(odd)) == (record.seen(real), record.seen(odd))
    assert back.earlier_read(real, offset=0, limit=10, digest=content_digest(b"a\nbcd\n")) is None
    with pytest.raises(ValueError, match="not a saved read record"):
        ReadRecord.from_json('{"files": {}}')
