"""Line clipping and the binary test shared by Read and Grep."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolbound.bounds import clip_line, is_binary_file, sniff_binary
from toolbound.limits import Limits


def test_clip_line_counts_characters_not_bytes() -> None:
    bodies = ["short", "é" * 2000, "é" * 2500, "😀" * 2001]
    assert [clip_line(b, 2000) for b in bodies] == [
        ("short", False),
        ("é" * 2000, False),
        ("é" * 2000, True),
        ("😀" * 2000, True),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "plain ascii source code\n" * 200,
        "中文文本，没有问题。\n" * 300,
        "emoji 😀🎉🚀 and accents: café, naïve, Ærøskøbing\n" * 100,
        "\x1b[31mred\x1b[0m log line\twith tabs\r\n" * 100,
    ],
)
def test_text_in_any_script_is_not_binary(text: str) -> None:
    assert sniff_binary("notes.txt", text.encode()) is None


def test_a_nul_byte_makes_content_binary() -> None:
    verdict = sniff_binary("data.txt", b"hello\x00world")
    assert verdict is not None
    assert verdict.reason == "nul"


def test_mostly_nonprintable_content_is_binary() -> None:
    head = bytes(range(1, 8)) * 100 + b"text" * 10
    verdict = sniff_binary("blob", head)
    assert verdict is not None
    assert verdict.reason == "nonprintable"


def test_the_30_percent_threshold_is_the_limit_in_force() -> None:
    head = b"\x01" * 25 + b"a" * 75  # 25% non-printable
    assert sniff_binary("x", head) is None
    assert sniff_binary("x", head, limits=Limits(binary_nonprintable_ratio=0.2)) is not None


def test_a_multibyte_character_split_by_the_sniff_window_is_not_counted() -> None:
    head = ("中" * 1400).encode()[:4096]  # ends mid-character
    assert sniff_binary("x.txt", head) is None


def test_extension_list_and_magic_name_a_likely_type(tmp_path: Path) -> None:
    png = tmp_path / "pic.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    verdict = sniff_binary(png.name, png.read_bytes())
    assert verdict is not None
    assert (verdict.reason, verdict.likely_type) == ("extension", "PNG image")
    assert is_binary_file(png)
    elf = tmp_path / "tool"
    elf.write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 64)
    assert is_binary_file(elf)
    assert sniff_binary("tool", elf.read_bytes()) == sniff_binary("tool", b"\x7fELF\x00")


def test_empty_file_is_text(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert not is_binary_file(empty)
