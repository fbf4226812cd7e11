"""The bounded heaps keep exactly what a full sort would put first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from toolbound.limits import Budget
from toolbound.search.ranking import Entry, FirstEntries, NewestFiles, fit_budget

files = st.lists(
    st.tuples(st.integers(0, 5), st.binary(min_size=1, max_size=3)),
    unique_by=lambda f: f[1],
    max_size=40,
)


@given(files, st.integers(1, 10))
def test_newest_files_keeps_what_a_full_sort_puts_first(
    offered: list[tuple[int, bytes]], capacity: int
) -> None:
    heap = NewestFiles(capacity)
    for mtime, path in offered:
        if heap.would_keep(mtime, path):
            heap.add(mtime, path)
    expected = sorted(offered, key=lambda f: (-f[0], f[1]))[:capacity]
    assert heap.ranked() == [path for _, path in expected]
    assert heap.overflowed == (len(offered) > capacity)


def test_a_path_ranks_before_a_longer_path_it_begins_at_one_mtime() -> None:
    heap = NewestFiles(3)
    for path in (b"./ab", b"./a/b", b"./a", b"./b"):
        if heap.would_keep(5, path):
            heap.add(5, path)
    assert heap.ranked() == [b"./a", b"./a/b", b"./ab"]


@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(1, 50)), unique=True, max_size=60),
    st.integers(1, 20),
)
def test_first_entries_keeps_the_first_by_rank_then_line(
    offered: list[tuple[int, int]], capacity: int
) -> None:
    heap = FirstEntries(capacity)
    for rank, line in offered:
        heap.add(rank, line, f"{rank}:{line}", False)
    expected = sorted(offered)[:capacity]
    assert heap.ranked() == [Entry(r, n, f"{r}:{n}", False) for r, n in expected]


def test_fit_budget_names_the_ceiling_that_stopped_it() -> None:
    budget = Budget(max_bytes=100, max_lines=3)
    ten = ["x" * 10] * 5
    assert fit_budget(ten, head_limit=2, budget=budget, cost=len).count == 2
    assert fit_budget(ten, head_limit=2, budget=budget, cost=len).stopped_by == "headLimit"
    assert fit_budget(ten, head_limit=9, budget=budget, cost=len).stopped_by == "lines"
    wide = ["x" * 40] * 5
    fit = fit_budget(wide, head_limit=9, budget=budget, cost=len, fixed_bytes=10)
    assert (fit.count, fit.stopped_by) == (2, "bytes")
    assert fit_budget(ten[:2], head_limit=9, budget=budget, cost=len).stopped_by is None
