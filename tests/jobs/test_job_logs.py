"""A job's logs: bounded on disk, exact counts, stable positions (and a 2 GB job)."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest

from jobs_support import start
from support import wait_for_async
from toolbound import DEFAULT_LIMITS, ToolHost
from toolbound.bounds import count_lines
from toolbound.jobs.job import READ_BYTES
from toolbound.jobs.log import Span, StreamLog
from toolbound.jobs.page import complete_utf8_end, page_stream
from toolbound.limits import Budget

HEAD, TAIL = 1000, 4000


def random_lines(rng: random.Random, size: int) -> bytes:
    out = bytearray()
    while len(out) < size:
        out += b"x" * rng.randrange(0, 120) + b"\n"
    return bytes(out[:size])


def test_the_log_keeps_its_head_and_a_rolling_tail_and_counts_what_it_drops(
    tmp_path: Path,
) -> None:
    rng = random.Random(7)
    stream = random_lines(rng, 200_000)
    log = StreamLog(tmp_path / "out.log", head_bytes=HEAD, tail_bytes=TAIL)
    at = 0
    while at < len(stream):
        n = rng.randrange(1, 3000)
        chunk = stream[at : at + n]
        log.append(bytearray(chunk), len(chunk))
        at += len(chunk)
        assert (tmp_path / "out.log").stat().st_size <= HEAD + 2 * TAIL + 3000
        assert log.totals() == Span(at, count_lines(stream[:at]))
    gap = log.gap()
    assert gap is not None
    head_end, tail_start = gap
    on_disk = (tmp_path / "out.log").read_bytes()
    # The head ends after a newline, the tail starts a line; the middle is counted.
    assert on_disk == stream[:head_end] + stream[tail_start:]
    assert stream[head_end - 1 : head_end] == stream[tail_start - 1 : tail_start] == b"\n"
    assert TAIL <= len(stream) - tail_start <= 2 * TAIL
    assert log.dropped() == Span(tail_start - head_end, stream.count(b"\n", head_end, tail_start))
    # Any two positions on disk: the same bytes and exact line counts, gap included.
    kept = [p for p in range(0, len(stream), 97) if p < head_end or p >= tail_start]
    for _ in range(200):
        a, b = sorted(rng.sample(kept, 2))
        assert log.lines_between(a, len(stream)) == Span(len(stream) - a, count_lines(stream[a:]))
        seg = log.segment(a, b - a)
        assert seg.data == stream[a : a + len(seg.data)]
    log.close()


def test_a_stdout_page_stops_before_the_dropped_part_and_its_next_skips_it(tmp_path: Path) -> None:
    stream = b"".join(b"line %05d\n" % i for i in range(3000))  # 11 bytes a line
    log = StreamLog(tmp_path / "out.log", head_bytes=HEAD, tail_bytes=TAIL)
    log.append(bytearray(stream), len(stream))
    head_end, tail_start = log.gap() or (0, 0)
    budget = Budget(max_bytes=600, max_lines=4000)
    pages, since = [], 0
    while since < len(stream):
        page = page_stream(log, since, budget, "head", running=False)
        pages.append(page)
        since = page.next
    shown = b"".join(p.cut.kept.encode() for p in pages)
    assert shown == stream[:head_end] + stream[tail_start:]
    # Every page whose range (since to the end) holds the dropped part counts it.
    gap = Span(tail_start - head_end, (tail_start - head_end) // 11)
    starts = [0] + [p.next for p in pages[:-1]]
    assert [p.omitted for p in pages] == [gap if s < tail_start else Span() for s in starts]
    # The page that reaches the head's end says where the rest is, and skips the gap.
    [skipping] = [p for p in pages if p.next == tail_start]
    assert skipping.cut.payload.endswith(
        f"Full output saved to {log.path} — Grep it, or Read it with offset/limit.]"
    )
    log.close()


def test_a_page_of_a_running_job_never_splits_a_character() -> None:
    snowman = "☃".encode()
    assert complete_utf8_end(b"ab" + snowman[:2]) == 2
    assert complete_utf8_end(b"ab" + snowman) == 5
    assert complete_utf8_end(b"ab\xff") == 3


@pytest.mark.slow  # big data
async def test_a_job_writing_2_gb_keeps_its_logs_within_their_bound_and_its_counts_exact(
    host: ToolHost,
) -> None:
    line = b"0123456789" * 9 + b"abcdefghi\n"  # 100 bytes
    total = 2 * 1024**3
    command = f"yes {line[:-1].decode()} | head -c {total}; echo done >&2"
    started = await start(host, command)
    job_id, path = started["jobId"], started["logs"]["stdout"]
    limits = DEFAULT_LIMITS
    bound = limits.job_log_head_bytes + 2 * limits.job_log_tail_bytes + READ_BYTES
    peak = [0]

    def finished() -> bool:
        peak[0] = max(peak[0], os.stat(path).st_size)
        return not host.jobs.get(job_id).running

    await wait_for_async(finished, "the 2 GB job to end", timeout_s=120, poll_s=0.005)
    assert peak[0] <= bound
    out = await host.call("JobOutput", {"jobId": job_id, "since": {"stdout": 0, "stderr": 0}})
    lines = -(-total // len(line))
    assert (out["state"], out["exitCode"], out["stderr"]) == ("exited", 0, "done\n")
    assert out["totals"] == {
        "stdout": {"bytes": total, "lines": lines},
        "stderr": {"bytes": 5, "lines": 1},
    }
    # Paging the whole log from the start: every byte on disk once, the rest counted.
    on_disk = await asyncio.to_thread(Path(path).read_bytes)
    assert len(on_disk) <= bound
    shown, omitted = bytearray(), {"bytes": 0, "lines": 0}
    since = 0
    while since < total:
        page = await host.call(
            "JobOutput", {"jobId": job_id, "since": {"stdout": since, "stderr": 5}}
        )
        text = page["stdout"]
        if page["truncated"]:
            text = text[: text.rindex("[truncated: ")]
        shown += text.encode()
        if since == 0:
            omitted = page["omitted"]["stdout"]
        since = page["next"]["stdout"]
    assert bytes(shown) == on_disk
    # The first page's range is the whole stream: it counts all the log dropped.
    assert omitted["bytes"] == total - len(on_disk)
    assert omitted["lines"] + count_lines(on_disk) == lines


def test_a_stderr_page_shows_the_last_part_and_counts_what_the_log_dropped(
    tmp_path: Path,
) -> None:
    stream = b"".join(b"err %06d\n" % i for i in range(3000))  # 11 bytes a line
    log = StreamLog(tmp_path / "err.log", head_bytes=HEAD, tail_bytes=TAIL)
    log.append(bytearray(stream), len(stream))
    head_end, tail_start = log.gap() or (0, 0)
    page = page_stream(log, 0, Budget(max_bytes=550, max_lines=4000), "tail", running=False)
    assert page.next == len(stream)
    assert page.omitted == Span(tail_start - head_end, (tail_start - head_end) // 11)
    assert page.cut.kept.encode() == stream[-550:]
    assert page.cut.payload.startswith(
        f"[truncated: kept the last 50 of 3000 lines; limit 4000 lines / 550 bytes. "
        f"Full output saved to {log.path} — Grep it, or Read it with offset/limit.]\n"
    )
    log.close()


def test_a_next_handed_out_keeps_its_line_count_once_the_log_dropped_it(tmp_path: Path) -> None:
    line = b"0123456789\n"
    log = StreamLog(tmp_path / "out.log", head_bytes=HEAD, tail_bytes=TAIL)
    first = line * 600  # 6600 bytes: no compaction yet
    log.append(bytearray(first), len(first))
    log.remember(2200)  # 200 lines before it
    more = line * 1000
    log.append(bytearray(more), len(more))
    head_end, tail_start = log.gap() or (0, 0)
    assert head_end < 2200 < tail_start
    total = len(first) + len(more)
    assert log.lines_between(2200, total) == Span(total - 2200, 1600 - 200)
    log.close()
