"""The walk ranks files a batch at a time: the result is the one-by-one result."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from toolbound.search.files import _SPLIT_BATCH_PATHS, _Stats
from toolbound.search.ranking import NewestFiles

files = st.lists(
    st.tuples(st.integers(-3, 5), st.binary(min_size=1, max_size=3)),
    unique_by=lambda f: f[1],
    max_size=60,
)


@given(files, st.integers(1, 10), st.integers(1, 25))
def test_batches_through_contenders_keep_what_a_full_sort_puts_first(
    offered: list[tuple[int, bytes]], capacity: int, batch: int
) -> None:
    heap = NewestFiles(capacity)
    for start in range(0, len(offered), batch):
        part = offered[start : start + batch]
        for mtime, path in heap.contenders([m for m, _ in part], [p for _, p in part]):
            if heap.would_keep(mtime, path):
                heap.add(mtime, path)
    expected = sorted(offered, key=lambda f: (-f[0], f[1]))[:capacity]
    assert heap.ranked() == [path for _, path in expected]
    assert heap.overflowed == (len(offered) > capacity)


def test_a_split_batch_keeps_order_and_drops_a_file_gone_since_it_was_listed(
    tmp_path: Path,
) -> None:
    n = _SPLIT_BATCH_PATHS + 7
    printed = [f"./f{i:05d}".encode() for i in range(n)]
    for i, name in enumerate(printed):
        (tmp_path / name.decode()).write_bytes(b"")
        os.utime(tmp_path / name.decode(), ns=(i, i * 1000))
    gone = printed[n - 3]
    (tmp_path / gone.decode()).unlink()
    with _Stats(os.fsencode(tmp_path)) as stats:
        mtimes, kept = stats.mtimes(printed)
    assert kept == [p for p in printed if p != gone]
    assert mtimes == [int(p[3:]) * 1000 for p in kept]


def test_contenders_turn_away_a_tie_with_the_worst_kept_file_that_sorts_after_it() -> None:
    # Installed trees give thousands of files one mtime: a tie that cannot
    # enter must not reach the per-file loop.
    heap = NewestFiles(2)
    for path in (b"./a", b"./b"):
        heap.add(7, path)
    out = heap.contenders([7, 7, 8, 6], [b"./0", b"./c", b"./d", b"./e"])
    assert out == [(7, b"./0"), (8, b"./d")]
    assert heap.overflowed
