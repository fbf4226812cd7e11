"""The page's terminal renderer (static/ansi.js), run in Chromium on the served page."""

from __future__ import annotations

from typing import Any

import pytest

# One event loop per module: the module shares one Chromium (conftest.py).
pytestmark = pytest.mark.asyncio(loop_scope="module")

RUNS = """
async ([raw, start]) => {
  const ansi = await import('/static/ansi.js');
  let state = ansi.PLAIN;
  for (const line of start) state = ansi.scanState(line, state);
  return ansi.parseLine(raw, state).runs.map(r => {
    const s = r.style;
    const on = ['bold', 'dim', 'italic', 'underline', 'inverse', 'strike'].filter(k => s[k]);
    return [r.text, s.fg, s.bg, on.join(',')];
  });
}
"""

ESC = "\x1b"


# (raw line, lines before it, the runs it shows: text, fg, bg, attributes)
CASES: list[tuple[str, list[str], list[list[Any]]]] = [
    ("plain <b>text</b>", [], [["plain <b>text</b>", None, None, ""]]),
    (f"{ESC}[1;31mbad{ESC}[0m ok", [], [["bad", 1, None, "bold"], [" ok", None, None, ""]]),
    (
        f"{ESC}[38;5;196mx{ESC}[48;2;1;2;3my",
        [],
        [["x", "rgb(255,0,0)", None, ""], ["y", "rgb(255,0,0)", "rgb(1,2,3)", ""]],
    ),
    (f"{ESC}[92;44mhi", [], [["hi", 10, 4, ""]]),
    ("50%\r100%", [], [["100%", None, None, ""]]),
    ("abcdef\rXY", [], [["XYcdef", None, None, ""]]),
    (f"long progress\r{ESC}[Kdone", [], [["done", None, None, ""]]),
    ("ab\bc", [], [["ac", None, None, ""]]),
    (
        f"{ESC}]0;title\x07{ESC}]8;;http://x{ESC}\\link{ESC}]8;;{ESC}\\",
        [],
        [["link", None, None, ""]],
    ),
    (f"cut {ESC}[3", [], [["cut ", None, None, ""]]),
    ("nul\x00bell\x07", [], [["nul\u2400bell\u2407", None, None, ""]]),
    ("tab\there", [], [["tab\there", None, None, ""]]),
    ("carried", [f"{ESC}[4;33mstart"], [["carried", 3, None, "underline"]]),
    ("reset", [f"{ESC}[33mstart{ESC}[m"], [["reset", None, None, ""]]),
    (f"{ESC}[7minv{ESC}[27m", [], [["inv", None, None, "inverse"]]),
    ("emoji 😀\rE", [], [["Emoji 😀", None, None, ""]]),
]


async def test_lines_render_as_a_terminal_shows_them(page: Any) -> None:
    # One browser for the whole table: launching Chromium per case costs seconds.
    got = [(raw, before, await page.evaluate(RUNS, [raw, before])) for raw, before, _ in CASES]
    assert got == CASES
