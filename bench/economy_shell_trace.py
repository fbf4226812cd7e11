"""The shell-heavy trace of bench/economy.py (``--trace shell``): builds, test runs, find.

The story: the same pricing bug as bench/economy_trace.py's, met the way a
shell-first agent meets it. It builds a small C extension (``make``: compiler
warnings, then an error in one file), runs a pytest-style suite of 400 tests
(one failure, its traceback, the summary), lists the tree (``find``, ``ls -R``,
``du``), reads the history (``git log`` of 120 commits, one of them the
change that broke the discount), dumps JSON (a 600-key config, the lock
file through ``json.tool``), installs (npm-style spinners), and re-runs the
build and the tests after a look at the code. 25 of its 30 calls are Bash;
each names its needle: the fact the agent ran it for.

The workspace is bench/economy_trace.py's, plus ``csrc/`` (a Makefile and
C files), ``tools/run_tests.py``, ``config/app.json`` and a git repository
with the history, all generated deterministically.

Pieces:
    TRACE            the 30 calls, in order
    build_workspace  writes the workspace into a folder
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import economy_trace
from economy_trace import Call

BROKEN_COMMIT = "pricing: apply the bulk rate per unit as well (#4127)"
C_FILES = 12

RUN_TESTS = r"""
import sys
only = sys.argv[1] if len(sys.argv) > 1 else ""
names = [f"tests/test_mod{m:02d}.py::test_case_{i:03d}" for m in range(20) for i in range(20)]
names[137] = "tests/test_pricing.py::test_bulk_discount"
names = [n for n in names if only in n]
print("============================= test session starts ==============================")
print("platform linux -- Python 3.11.7, pytest-8.3.3, pluggy-1.5.0")
print(f"collected {len(names)} items\n")
for n in names:
    print(f"{n} {'FAILED' if 'bulk' in n else 'PASSED'}")
failed = [n for n in names if "bulk" in n]
if failed:
    print("\n=================================== FAILURES ===================================")
    print("_______________________________ test_bulk_discount _______________________________")
    print("\n    def test_bulk_discount():\n>       assert bulk_discount(100, 10) == 90")
    print("E       assert 81.0 == 90")
    print("E        +  where 81.0 = bulk_discount(100, 10)\n")
    print("tests/test_pricing.py:9: AssertionError")
    print("=========================== short test summary info ============================")
    print("FAILED tests/test_pricing.py::test_bulk_discount - assert 81.0 == 90")
rule = "=" * 25
print(f"{rule} {len(failed)} failed, {len(names) - len(failed)} passed in 2.31s {rule}")
sys.exit(1 if failed else 0)
"""

MAKEFILE = """CFLAGS = -Wall -Wextra -O0 -c
SRC = $(wildcard *.c)
OBJ = $(SRC:.c=.o)
all: libpricing.a
libpricing.a: $(OBJ)
\tar rcs $@ $(OBJ)
%.o: %.c
\tcc $(CFLAGS) $< -o $@
clean:
\trm -f *.o libpricing.a
"""


def _c_file(i: int) -> str:
    body = [f"/* module {i} of the pricing extension */", "#include <stdio.h>", ""]
    for j in range(6):
        # An unused variable: one -Wunused-variable warning per function.
        body.append(f"int m{i}_f{j}(int x) {{ int unused_{j}; return x * {j + 1}; }}")
    if i == 7:
        body.append("double bulk_rate(double price) { return price * discount_rate; }")
    return "\n".join(body) + "\n"


def _config() -> str:
    flags = {f"feature_{i:03d}": i % 3 == 0 for i in range(600)}
    flags["feature_300"] = "bulk_discount_v2"
    config = {"service": "pricing", "version": "4.2.1", "flags": flags, "regions": ["eu", "us"]}
    return json.dumps(config)


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def _history(root: Path) -> None:
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "app", "tests")
    _git(root, "commit", "-q", "-m", "initial import of the pricing app")
    notes = root / "CHANGES.md"
    for i in range(120):
        notes.write_text(f"change {i}\n")
        _git(root, "add", "CHANGES.md")
        message = BROKEN_COMMIT if i == 60 else f"chore: routine change number {i} to the notes"
        _git(root, "commit", "-q", "-m", message)


def build_workspace(root: Path) -> Path:
    economy_trace.build_workspace(root)
    (root / "tools/run_tests.py").write_text(RUN_TESTS)
    (root / "csrc").mkdir()
    (root / "csrc/Makefile").write_text(MAKEFILE)
    for i in range(C_FILES):
        (root / "csrc" / f"mod{i:02d}.c").write_text(_c_file(i))
    (root / "config").mkdir()
    (root / "config/app.json").write_text(_config())
    _history(root)
    return root


TRACE: list[Call] = [
    Call("Bash", {"command": "ls -R lib | head -200"}, "decoder.py"),
    Call(
        "Bash", {"command": "find . -name '*.py' -not -path './lib/*' | sort"}, "./app/pricing.py"
    ),
    Call("Bash", {"command": "python3 tools/run_tests.py"}, "1 failed, 399 passed"),
    Call(
        "Bash",
        {"command": "python3 tools/run_tests.py"},
        "FAILED tests/test_pricing.py::test_bulk_discount - assert 81.0 == 90",
    ),
    Call("Bash", {"command": "make -C csrc 2>&1"}, "undeclared (first use in this function)"),
    Call("Bash", {"command": "make -C csrc -k 2>&1 | tail -n 15"}, "Error 1"),
    Call("Bash", {"command": "git log"}, BROKEN_COMMIT),
    Call("Bash", {"command": "git log -3 --stat"}, "CHANGES.md"),
    Call("Read", {"path": "app/pricing.py"}, "def bulk_discount"),
    Call(
        "Bash", {"command": "git log --format='%h %s' -- app"}, "initial import of the pricing app"
    ),
    Call("Bash", {"command": "find lib -type d | sort"}, "lib/email/mime"),
    Call("Bash", {"command": "find lib -name '*.py' | wc -l"}, "2"),
    Call("Bash", {"command": "du -sh lib/* | sort -h"}, "lib/asyncio"),
    Call(
        "Bash",
        {"command": "python3 -m json.tool config/app.json"},
        '"feature_300": "bulk_discount_v2"',
    ),
    Call(
        "Bash",
        {"command": "python3 -c \"import json; print(json.load(open('config/app.json')))\""},
        "4.2.1",
    ),
    Call(
        "Bash",
        {"command": "python3 -m json.tool web/package-lock.json | head -c 2000"},
        '"lockfileVersion": 3',
    ),
    Call("Grep", {"pattern": "discount_rate", "path": "csrc"}, "csrc/mod07.c"),
    Call("Bash", {"command": "cat csrc/mod07.c"}, "price * discount_rate"),
    Call("Bash", {"command": "python3 tools/noisy_install.py npm"}, "added 1287 packages"),
    Call("Bash", {"command": "ls -R lib/email"}, "mime"),
    Call("Bash", {"command": "wc -l app/*.py tests/*.py"}, "total"),
    Call("Read", {"path": "tests/test_pricing.py"}, "assert bulk_discount(100, 10) == 90"),
    Call("Bash", {"command": "python3 tools/run_tests.py test_pricing"}, "1 failed, 0 passed"),
    Call("Bash", {"command": "git show --stat HEAD~59"}, BROKEN_COMMIT),
    Call("Bash", {"command": "git log --oneline | wc -l"}, "121"),
    Call("Glob", {"pattern": "csrc/*.c"}, "csrc/mod07.c"),
    Call("Bash", {"command": "make -C csrc 2>&1"}, "undeclared (first use in this function)"),
    Call("Bash", {"command": "python3 tools/run_tests.py"}, "1 failed, 399 passed"),
    Call("Grep", {"pattern": "def bulk_discount", "path": "app"}, "app/pricing.py"),
    Call(
        "Bash",
        {"command": "git status --short && git log -1 --format=%s"},
        "routine change number 119",
    ),
]
