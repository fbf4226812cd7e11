"""The replayed trace of bench/economy.py: a workspace and the calls an agent makes in it.

The story: a test of a small pricing app fails (``bulk_discount`` applies the
rate twice). The agent runs the noisy test suite, reads the code and the test,
searches a 30 MB server log for the failing request, looks at the web
bundle's minified JS and its lock file, wanders into the standard library for
the json, asyncio, logging, email and http code it calls, re-reads the same
files, and re-runs the tests. Every call names its needle: the fact the agent
made the call for, a string the raw output holds.

The workspace (``build_workspace``) is generated into a temporary folder,
deterministically: packages of this interpreter's standard library copied
under ``lib/``, the app and its tests, ``logs/server.log`` (30 MB),
``web/dist/bundle.min.js`` (one 2 MB line), ``web/package-lock.json``, and two
noisy scripts under ``tools/``: a test run printing a coloured progress bar
rewritten with ``\\r`` for each test (about 3 MB of stdout before its verdict),
and an install printing npm spinners and docker-style redraws (cursor up,
erase line) before ``FINISHED OK``.

Pieces:
    Call             one tool call of the trace and its needle
    TRACE            the 48 calls, in order
    build_workspace  writes the workspace into a folder
"""

from __future__ import annotations

import random
import shutil
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOG_BYTES = 30 * 1024 * 1024
STDLIB_PACKAGES = ("json", "asyncio", "logging", "email", "http", "unittest", "importlib")


@dataclass(frozen=True)
class Call:
    """A tool call and the fact (``needle``) it was made for."""

    tool: str
    args: dict[str, Any]
    needle: str

    @property
    def kind(self) -> str:
        return "shell" if self.tool == "Bash" else "read/search"


PRINT_DISCOUNT = "from app.pricing import bulk_discount; print(bulk_discount(100, 10))"

TRACE: list[Call] = [
    Call("Glob", {"pattern": "**/*.py", "path": "app"}, "app/pricing.py"),
    Call("Bash", {"command": "python3 tools/noisy_tests.py"}, "SUMMARY: 1 failed, 57 passed"),
    Call(
        "Bash",
        {"command": "python3 tools/noisy_tests.py"},
        "FAILED tests/test_pricing.py::test_bulk_discount",
    ),
    Call("Read", {"path": "app/pricing.py"}, "def bulk_discount"),
    Call("Read", {"path": "tests/test_pricing.py"}, "assert bulk_discount(100, 10) == 90"),
    Call("Grep", {"pattern": "discount_rate", "path": "app"}, "app/orders.py"),
    Call("Read", {"path": "app/orders.py"}, "discount_rate = rate / 100"),
    Call("Grep", {"pattern": "KeyError", "path": "logs"}, "KeyError: 'discount_rate'"),
    Call("Grep", {"pattern": "ERROR", "path": "logs/server.log"}, "request_id=7f3a9"),
    Call("Read", {"path": "logs/server.log"}, "server started version=4.2.1"),
    Call(
        "Read",
        {"path": "logs/server.log", "offset": 200_000, "limit": 100},
        "checkpoint seq=200050",
    ),
    Call("Bash", {"command": "tail -n 5 logs/server.log"}, "shutdown complete"),
    Call("Bash", {"command": "grep -c ERROR logs/server.log"}, "4113"),
    Call("Bash", {"command": "wc -l logs/server.log"}, "logs/server.log"),
    Call("Read", {"path": "web/dist/bundle.min.js"}, 'apiBase:"https://api.internal.example/v7"'),
    Call(
        "Grep",
        {"pattern": 'apiBase:"[^"]+"', "path": "web/dist"},
        'apiBase:"https://api.internal.example/v7"',
    ),
    Call("Read", {"path": "web/package-lock.json"}, '"node_modules/left-pad"'),
    Call("Grep", {"pattern": '"node_modules/left-pad"', "path": "web", "after": 2}, '"1.3.0"'),
    Call("Glob", {"pattern": "lib/**/*.py"}, "lib/json/decoder.py"),
    Call("Grep", {"pattern": "def loads", "path": "lib/json"}, "lib/json/__init__.py"),
    Call("Read", {"path": "lib/json/__init__.py"}, "def loads("),
    Call("Read", {"path": "lib/json/decoder.py"}, "class JSONDecodeError"),
    Call("Grep", {"pattern": "class JSONDecoder", "path": "lib"}, "lib/json/decoder.py"),
    Call("Read", {"path": "lib/json/decoder.py", "offset": 300, "limit": 80}, "def raw_decode"),
    Call(
        "Grep",
        {"pattern": "^import", "path": "lib/asyncio", "outputMode": "count"},
        "lib/asyncio/base_events.py",
    ),
    Call("Read", {"path": "lib/asyncio/base_events.py"}, "class BaseEventLoop"),
    Call(
        "Read",
        {"path": "lib/asyncio/base_events.py", "offset": 1400},
        "async def create_server",
    ),
    Call("Grep", {"pattern": "def getLogger", "path": "lib/logging"}, "lib/logging/__init__.py"),
    Call("Read", {"path": "lib/logging/__init__.py"}, "class Logger(Filterer)"),
    Call("Read", {"path": "app/pricing.py"}, "def bulk_discount"),
    Call("Read", {"path": "tests/test_pricing.py"}, "def test_bulk_discount"),
    Call(
        "Bash",
        {"command": "python3 tools/noisy_tests.py --only pricing"},
        "SUMMARY: 1 failed, 2 passed",
    ),
    Call(
        "Bash",
        {"command": f"python3 -c '{PRINT_DISCOUNT}'"},
        "81.0",
    ),
    Call("Grep", {"pattern": "bulk_discount"}, "tests/test_pricing.py"),
    Call("Read", {"path": "app/pricing.py"}, "return price * (1 - rate / 100) ** 2"),
    Call("Bash", {"command": "head -c 400 web/package-lock.json"}, '"lockfileVersion": 3'),
    Call("Bash", {"command": "python3 tools/noisy_install.py npm"}, "added 1287 packages"),
    Call("Bash", {"command": "python3 tools/noisy_install.py docker"}, "FINISHED OK"),
    Call("Read", {"path": "lib/email/message.py"}, "class Message"),
    Call("Grep", {"pattern": "def get_payload", "path": "lib/email"}, "lib/email/message.py"),
    Call("Read", {"path": "lib/http/client.py"}, "class HTTPConnection"),
    Call(
        "Grep",
        {"pattern": "HTTPConnection", "path": "lib", "outputMode": "filesWithMatches"},
        "lib/http/client.py",
    ),
    Call("Bash", {"command": "python3 tools/noisy_tests.py"}, "SUMMARY: 1 failed, 57 passed"),
    Call("Read", {"path": "tests/test_pricing.py"}, "assert bulk_discount(100, 10) == 90"),
    Call("Read", {"path": "lib/json/decoder.py"}, "class JSONDecoder(object)"),
    Call(
        "Read",
        {"path": "lib/asyncio/base_events.py", "offset": 1400},
        "def _create_server_getaddrinfo",
    ),
    Call("Bash", {"command": "ls -la logs web/dist"}, "server.log"),
    Call("Glob", {"pattern": "**/*.json"}, "web/package-lock.json"),
]

PRICING = '''"""Prices and discounts."""


def unit_price(price: float, quantity: int) -> float:
    return price / quantity


def bulk_discount(price: float, rate: float) -> float:
    """The price after a bulk discount of ``rate`` percent."""
    return price * (1 - rate / 100) ** 2
'''

ORDERS = '''"""Orders: totals with the customer's discount."""

from app.pricing import bulk_discount


def order_total(order: dict[str, float]) -> float:
    rate = order["discount_rate"]
    discount_rate = rate / 100
    if discount_rate > 0.5:
        raise ValueError("discount too large")
    return bulk_discount(order["price"], rate)
'''

TEST_PRICING = """from app.pricing import bulk_discount, unit_price


def test_unit_price():
    assert unit_price(10, 2) == 5


def test_bulk_discount():
    assert bulk_discount(100, 10) == 90


def test_no_discount():
    assert bulk_discount(100, 0) == 100
"""

NOISY_TESTS = r'''"""A test run as a terminal shows it: a bar per test, then the verdict."""
import sys

only = sys.argv[2] if len(sys.argv) > 2 else None
tests = [f"tests/test_module_{i:02d}.py::test_case_{i:02d}" for i in range(55)]
tests += ["tests/test_pricing.py::test_unit_price", "tests/test_pricing.py::test_bulk_discount",
          "tests/test_pricing.py::test_no_discount"]
if only:
    tests = [t for t in tests if only in t]
out = sys.stdout
out.write("\x1b[1m============ test session starts ============\x1b[0m\n")
out.write(f"collected {len(tests)} items\n")
failed = []
for test in tests:
    for step in range(0, 601):
        pct = step * 100 // 600
        bar = "\u2588" * (pct // 4)
        out.write(f"\r\x1b[36m{test}\x1b[0m {pct:3d}% |{bar:<25}| {step}/600")
    ok = not test.endswith("test_bulk_discount")
    verdict = " \x1b[32mPASSED\x1b[0m\n" if ok else " \x1b[31mFAILED\x1b[0m\n"
    out.write("\x1b[2K\r" + test + verdict)
    if not ok:
        failed.append(test)
out.write("\n================= FAILURES =================\n")
out.write("____________ test_bulk_discount ____________\n")
out.write("    def test_bulk_discount():\n>       assert bulk_discount(100, 10) == 90\n")
out.write("E       assert 81.0 == 90\n\ntests/test_pricing.py:9: AssertionError\n")
out.write("=========== short test summary info ===========\n")
for test in failed:
    out.write(f"\x1b[31mFAILED\x1b[0m {test} - assert 81.0 == 90\n")
passed = len(tests) - len(failed)
out.write(f"\x1b[31mSUMMARY: {len(failed)} failed, {passed} passed\x1b[0m in 3.21s\n")
sys.stderr.write("DeprecationWarning: pkg_resources is deprecated as an API\n" * 40)
'''

NOISY_INSTALL = r'''"""An install as a terminal shows it: npm spinners or docker's redraws."""
import sys

out = sys.stdout
if sys.argv[1] == "npm":
    for i in range(20000):
        spin = "|/-\\"[i % 4]
        out.write(f"\x1b[1G\x1b[0K{spin} \x1b[90mreify:fetch\x1b[0m http fetch GET 200 "
                  f"https://registry.npmjs.org/pkg-{i % 1287} {i % 90}ms (cache miss)")
    out.write("\x1b[1G\x1b[0K\nadded 1287 packages, and audited 1288 packages in 14s\n")
    out.write("found 0 vulnerabilities\n")
else:
    steps = [f"[{n}/6] RUN step {n}" for n in range(1, 7)]
    out.write("".join(s + "\n" for s in steps))
    for t in range(3000):
        out.write(f"\x1b[{len(steps)}A")
        for n, s in enumerate(steps):
            state = "DONE" if t == 2999 else f"{(t * (n + 1)) % 100}%"
            out.write(f"\x1b[2K\x1b[34m=>\x1b[0m {s} {state} {t / 10:.1f}s\n")
    out.write("FINISHED OK\n")
'''


def _server_log(path: Path) -> None:
    rng = random.Random(13)
    lines = ["2026-01-01T00:00:00Z INFO server started version=4.2.1\n"]
    size = len(lines[0])
    seq = 1
    errors = 0
    while size < LOG_BYTES:
        if seq == 200_050:
            line = f"2026-01-01T02:13:20Z INFO checkpoint seq={seq}\n"
        elif seq == 150_001:
            line = (
                "2026-01-01T01:40:00Z ERROR request_id=7f3a9 order_total failed: "
                "KeyError: 'discount_rate'\n"
            )
            errors += 1
        elif rng.random() < 0.01 and errors < 4112:
            request = f"{rng.getrandbits(20):05x}"
            line = f"2026-01-01T01:00:00Z ERROR request_id={request} upstream timeout\n"
            errors += 1
        else:
            line = (
                f"2026-01-01T01:00:00Z INFO request_id={rng.getrandbits(20):05x} "
                f"GET /api/v7/orders/{seq} 200 {rng.randint(1, 900)}ms\n"
            )
        lines.append(line)
        size += len(line)
        seq += 1
    while errors < 4113:
        lines.append("2026-01-01T03:00:00Z ERROR request_id=00000 late failure\n")
        errors += 1
    lines.append("2026-01-01T03:59:59Z INFO shutdown complete\n")
    path.write_text("".join(lines))


def _bundle(path: Path) -> None:
    parts = [f"function m{i}(a,b){{return a*{i}+b}}" for i in range(40_000)]
    parts.insert(20_000, 'var cfg={apiBase:"https://api.internal.example/v7",retries:3}')
    path.write_text("!function(){" + ";".join(parts) + "}();\n")


def _lock(path: Path) -> None:
    entries = [
        f'    "node_modules/pkg-{i}": {{\n      "version": "1.{i % 10}.{i % 7}",\n'
        f'      "resolved": "https://registry.npmjs.org/pkg-{i}/-/pkg-{i}-1.0.0.tgz",\n'
        f'      "integrity": "sha512-{"x" * 40}{i}"\n    }}'
        for i in range(6000)
    ]
    entries.insert(
        5000,
        '    "node_modules/left-pad": {\n      "version": "1.3.0",\n'
        '      "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz"\n    }',
    )
    body = ",\n".join(entries)
    path.write_text(
        '{\n  "name": "web",\n  "lockfileVersion": 3,\n  "requires": true,\n'
        f'  "packages": {{\n{body}\n  }}\n}}\n'
    )


def build_workspace(root: Path) -> Path:
    """Write the trace's workspace into ``root`` (created); returns it."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for package in STDLIB_PACKAGES:
        shutil.copytree(
            stdlib / package, root / "lib" / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    files = {
        "app/__init__.py": "",
        "app/pricing.py": PRICING,
        "app/orders.py": ORDERS,
        "tests/test_pricing.py": TEST_PRICING,
        "tools/noisy_tests.py": NOISY_TESTS,
        "tools/noisy_install.py": NOISY_INSTALL,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for folder in ("logs", "web/dist"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    _server_log(root / "logs/server.log")
    _bundle(root / "web/dist/bundle.min.js")
    _lock(root / "web/package-lock.json")
    return root
