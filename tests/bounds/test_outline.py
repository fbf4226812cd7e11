"""The outline of what a cut window did not show: top-level definitions and their lines."""

from __future__ import annotations

from toolbound.bounds.outline import Definition, Outline, outline

PYTHON = b"""import os


class Cache:
    def get(self, key):
        return None


async def fetch(url):
    pass

def main():
    '''class Inside: a docstring's words are not a definition'''
"""


def test_top_level_python_definitions_are_listed_with_their_lines() -> None:
    assert outline(PYTHON, first_line=1, max_entries=10, max_line_chars=100) == Outline(
        (
            Definition(4, "class Cache:"),
            Definition(9, "async def fetch(url):"),
            Definition(12, "def main():"),
        )
    )


def test_line_numbers_count_from_the_first_line_given() -> None:
    found = outline(b"x = 1\ndef f():\n", first_line=301, max_entries=10, max_line_chars=100)
    assert found == Outline((Definition(302, "def f():"),))


def test_past_the_cap_the_rest_are_counted_not_listed() -> None:
    data = b"".join(b"def f%d():\n    pass\n" % i for i in range(5))
    assert outline(data, first_line=1, max_entries=2, max_line_chars=100) == Outline(
        (Definition(1, "def f0():"), Definition(3, "def f1():")), more=3
    )


def test_a_long_definition_line_is_clipped_with_an_ellipsis() -> None:
    data = b"def f(" + b"a, " * 50 + b"):\n"
    (entry,) = outline(data, first_line=1, max_entries=5, max_line_chars=20).entries
    assert entry == Definition(1, "def f(a, a, a, a, a…")


def test_other_languages_top_level_definitions_are_found() -> None:
    data = (
        b"export function render(props) {\n"
        b"  function inner() {}\n"
        b"}\n"
        b"func (s *Server) Serve() error {\n"
        b"pub fn parse(input: &str) -> Ast {\n"
        b"pub(crate) struct Token;\n"
        b"impl Display for Token {\n"
        b"// class Commented\n"
    )
    found = outline(data, first_line=1, max_entries=10, max_line_chars=100)
    assert [d.line for d in found.entries] == [1, 4, 5, 6, 7]


def test_a_log_or_data_file_has_no_outline() -> None:
    data = b'2026-01-01 INFO classify request\n{"def": 1}\n  "class": 2\n'
    assert outline(data, first_line=1, max_entries=10, max_line_chars=100) == Outline(())
