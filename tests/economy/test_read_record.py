"""The read record's side of economy re-reads: the text a Read showed, and checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

from toolbound.edit import ReadRecord, Seen, content_digest

FILE = Path("/ws/a.txt")
DATA = b"".join(b"line %d\n" % i for i in range(10))
SHOWN = content_digest(b"the text the Read returned")


def saw(record: ReadRecord, call_id: str, *, text_digest: str = SHOWN) -> Seen:
    return record.saw_window(
        FILE,
        call_id=call_id,
        offset=0,
        limit=200,
        line_count=10,
        start_byte=0,
        end_byte=len(DATA),
        at_eof=True,
        digest=content_digest(DATA),
        text_digest=text_digest,
    )


def earlier(record: ReadRecord, text_digest: str = SHOWN) -> Seen | None:
    return record.earlier_read(
        FILE, offset=0, limit=200, digest=content_digest(DATA), text_digest=text_digest
    )


def test_a_re_read_must_show_the_same_text_as_well_as_the_same_bytes() -> None:
    record = ReadRecord()
    first = saw(record, "c1")
    assert earlier(record) == first
    assert earlier(record, content_digest(b"other text")) is None


def test_a_new_checkpoint_count_starts_a_new_context_and_the_same_count_does_not() -> None:
    record = ReadRecord()
    first = saw(record, "c1")
    record.follow_checkpoints(0)
    assert earlier(record) == first
    version = record.version
    record.follow_checkpoints(1)
    assert earlier(record) is None
    assert record.version > version
    again = saw(record, "c2")
    record.follow_checkpoints(1)
    assert earlier(record) == again


def test_the_checkpoint_count_and_the_text_digest_are_saved_with_the_record() -> None:
    record = ReadRecord()
    record.follow_checkpoints(3)
    first = saw(record, "c1")
    back = ReadRecord.from_json(record.to_json())
    assert back.seen(FILE) == (first,)
    back.follow_checkpoints(3)
    assert earlier(back) == first
    back.follow_checkpoints(4)
    assert earlier(back) is None


def test_a_record_saved_before_checkpoints_were_followed_loads_with_none_known() -> None:
    record = ReadRecord()
    saw(record, "c1", text_digest="")
    saved = json.loads(record.to_json())
    del saved["checkpoints"]
    for entry in saved["files"][str(FILE)]:
        del entry["text_digest"]
    back = ReadRecord.from_json(json.dumps(saved))
    # Its windows count for Edit, but none stands for an economy re-read's text.
    assert earlier(back) is None
    assert back.seen(FILE)[0].text_digest == ""
    back.follow_checkpoints(1)
    assert earlier(back, "") is None
