"""``toolbound serve`` on the command line, and what ``toolbound call`` does not load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolbound.cli import build_parser, main


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_toolbound_call_never_imports_the_mcp_sdk(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    args = ["call", "Read", '{"path": "a.txt"}', "--data-dir", "d"]
    script = (
        "import sys\n"
        "from toolbound.cli import main\n"
        f"code = main({args!r})\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types'))\n"
        "print(code, loaded, file=sys.stderr)\n"
    )
    out = run("-c", script, cwd=tmp_path)
    assert out.stderr == "0 []\n"
    assert '"content": "hello\\n"' in out.stdout


def test_serve_refuses_a_malformed_http_address(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--http", "localhost"]) == 2
    assert capsys.readouterr() == (
        "",
        "toolbound: --http takes HOST:PORT, e.g. 127.0.0.1:8765 (got 'localhost')\n",
    )


def test_serve_refuses_a_workspace_that_is_not_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    assert main(["serve", "--stdio", "--workspace", str(missing)]) == 2
    assert capsys.readouterr() == ("", f"toolbound: workspace {missing} is not a directory\n")


def test_serve_stdio_and_http_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--stdio", "--http", "127.0.0.1:1"])
    assert exit_.value.code == 2
    assert "argument --http: not allowed with argument --stdio" in capsys.readouterr().err


def test_serve_defaults_to_the_economy_profile_and_call_to_the_exact_one() -> None:
    parser = build_parser()
    assert parser.parse_args(["serve"]).profile == "economy"
    assert parser.parse_args(["serve", "--profile", "exact"]).profile == "exact"
    assert parser.parse_args(["call", "Read", "{}"]).profile == "exact"
