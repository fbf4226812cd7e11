"""The file tools' results in Chromium: a patch per file, a folder as a tree, an image, a PDF.

Real ApplyPatch, List and Read calls on a real host (an image's session
closed first, so its result comes back from the store) while the page
watches through the real server; every wait is bounded (``WAIT_MS``).
"""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image, ImageDraw

from media_files import make_pdf
from toolbound.host import ToolHost
from toolbound.listeners import CallStart

# One event loop per module: the module shares one Chromium (conftest.py).
pytestmark = pytest.mark.asyncio(loop_scope="module")

Served = Any  # the fixture's type (conftest.py): host, hub, view, server, workspace
WAIT_MS = 15_000

FILES = """() => [...document.querySelectorAll('#list-view .patch-file')].map(f => ({
    path: f.dataset.path,
    head: f.querySelector('h4').textContent,
    hunks: [...f.querySelectorAll('.hunk-grade')].map(h =>
        [Number(h.dataset.line), h.dataset.matched, h.dataset.already || null, h.textContent]),
    diff: [...f.querySelectorAll('.diff > div')].map(d => [d.className, d.textContent]),
    graded: [...f.querySelectorAll('.diff > .hunk')].map(d => d.dataset.matched || null),
    none: f.querySelector('.no-diff')?.textContent ?? null,
}))"""

PATCH = """*** Begin Patch
*** Update File: app.py
@@ def f():
-    return 1
+    return 10
@@ def g():
-    return 2
+    return 20
*** Update File: schema.sql
@@
 create table t (x int);
--- the old note
+-- the new note
*** Update File: old/name.txt
*** Move to: new/name.txt
@@
 keep
-drop
+add
*** Add File: notes/new.md
+# New
*** Delete File: gone.txt
*** End Patch
"""


def session_url(served: Served, session_id: str, call_id: str) -> str:
    return f"{served.url}/#s={session_id}&c={call_id}"


async def test_an_apply_patch_shows_each_file_its_hunks_match_grades_and_its_own_diff(
    served: Served, page: Any, screenshot: Any
) -> None:
    ws = served.workspace
    # g's line ends in spaces the patch does not have: matched ignoring trailing space.
    (ws / "app.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2   \n")
    (ws / "schema.sql").write_text("create table t (x int);\n-- the old note\n")
    (ws / "old").mkdir()
    (ws / "old" / "name.txt").write_text("keep\ndrop\n")
    (ws / "gone.txt").write_text("bye\n")
    result = await served.host.call("ApplyPatch", {"patch": PATCH}, tool_call_id="call_patch")
    assert [(f["path"], f["action"]) for f in result["files"]] == [
        ("app.py", "update"),
        ("schema.sql", "update"),
        ("new/name.txt", "move"),
        ("notes/new.md", "add"),
        ("gone.txt", "delete"),
    ]
    assert [h["matched"] for h in result["files"][0]["hunks"]] == ["exact", "trailing-space"]
    await page.goto(served.call_url("call_patch"))
    await page.wait_for_selector("#detail[data-stream=done]")
    shown = await page.evaluate(FILES)

    assert [f["path"] for f in shown] == [f["path"] for f in result["files"]]
    assert [f["head"] for f in shown] == [
        "updated app.py",
        "updated schema.sql",
        "moved old/name.txt → new/name.txt",
        "added notes/new.md",
        "deleted gone.txt",
    ]
    assert shown[0]["hunks"] == [
        [2, "exact", None, "hunk 1 at line 2 exact"],
        [6, "trailing-space", None, "hunk 2 at line 6 trailing space ignored"],
    ]
    assert shown[0]["graded"] == ["exact", "trailing-space"]
    # Each file's rows are its own part of the diff, in order, coloured by what they are;
    # the removed SQL comment ("--- the old note") stays a line of schema.sql's hunk.
    lines = result["diff"].removesuffix("\n").split("\n")
    rows = [(cls, text) for f in shown for cls, text in f["diff"]]
    assert len(rows) == len(lines)
    for (cls, text), line in zip(rows, lines, strict=True):
        # An updated file's hunk header ends in its grade's badge.
        assert text == line or (cls == "hunk" and text.startswith(f"{line} "))
    per_file = [[text for cls, text in f["diff"] if cls != "hunk"] for f in shown]
    assert per_file[1] == [
        "--- a/schema.sql",
        "+++ b/schema.sql",
        " create table t (x int);",
        "--- the old note",
        "+-- the new note",
    ]
    assert ["del", "--- the old note"] in shown[1]["diff"]
    assert per_file[2][:2] == ["--- a/old/name.txt", "+++ b/new/name.txt"]
    assert per_file[3] == ["--- /dev/null", "+++ b/notes/new.md", "+# New"]
    assert per_file[4] == ["--- a/gone.txt", "+++ /dev/null", "-bye"]
    assert await page.text_content("#list-view .list-title") == (
        "5 files · 4 hunks · 1 matched loosely"
    )
    assert await page.is_hidden("#read-view")
    assert await page.text_content(".call[data-id=call_patch] .args") == (
        "update app.py, update schema.sql, update old/name.txt, move to new/name.txt, "
        "add notes/new.md, delete gone.txt"
    )
    await screenshot(page, "apply-patch")


async def test_a_patch_applied_again_says_which_hunks_were_already_there(
    served: Served, page: Any
) -> None:
    (served.workspace / "twice.py").write_text("a = 1\nb = 2\n")
    patch = "*** Begin Patch\n*** Update File: twice.py\n@@\n-a = 1\n+a = 10\n*** End Patch\n"
    await served.host.call("ApplyPatch", {"patch": patch}, tool_call_id="first")
    again = await served.host.call("ApplyPatch", {"patch": patch}, tool_call_id="again")
    assert again["files"][0]["alreadyApplied"] is True
    await page.goto(served.call_url("again"))
    await page.wait_for_selector("#detail[data-stream=done]")
    (shown,) = await page.evaluate(FILES)
    assert shown["head"] == "updated twice.py already as the patch makes it"
    assert shown["hunks"] == [[1, "exact", "true", "hunk 1 at line 1 already applied"]]
    assert shown["none"] == "No diff: nothing written."
    assert await page.text_content("#result .notice") == again["notice"]


TREE = """() => {
    const walk = (ul) => [...ul.children].map(li => [
        li.dataset.path, li.dataset.type, li.querySelector(':scope > .name').textContent,
        li.querySelector(':scope > .size, :scope > .badge')?.textContent ?? null,
        li.querySelector(':scope > ul') ? walk(li.querySelector(':scope > ul')) : [],
    ]);
    return walk(document.querySelector('#list-view ul.tree'));
}"""


async def test_a_list_is_a_tree_of_folders_first_with_counts_and_sizes(
    served: Served, page: Any, screenshot: Any
) -> None:
    tree = served.workspace / "tree"
    (tree / "src" / "pkg").mkdir(parents=True)
    (tree / "src" / "pkg" / "deep.py").write_text("x = 1\n")
    (tree / "src" / "main.py").write_text("print('hi')\n" * 200)
    (tree / "docs").mkdir()
    (tree / "docs" / "guide.md").write_text("# Guide\n")
    (tree / "README.md").write_text("readme\n")
    (tree / "link").symlink_to("README.md")
    result = await served.host.call("List", {"path": "tree"}, tool_call_id="call_list")
    paths = [e["path"] for e in result["entries"]]
    assert "tree/src/pkg" in paths
    await page.goto(served.call_url("call_list"))
    await page.wait_for_selector("#detail[data-stream=done]")
    shown = await page.evaluate(TREE)

    sizes = {e["path"]: e.get("size") for e in result["entries"]}
    by_path = {node[0]: node for node in shown}
    assert set(by_path) == {p for p in paths if p.count("/") == 1}
    assert by_path["tree/src"][1:4] == ["dir", "src/", "2 entries"]
    src_children = {node[0]: node for node in by_path["tree/src"][4]}
    assert set(src_children) == {"tree/src/pkg", "tree/src/main.py"}
    assert src_children["tree/src/pkg"][1:4] == ["dir", "pkg/", "1 entry"]
    assert src_children["tree/src/main.py"][1:4] == [
        "file",
        "main.py",
        f"{sizes['tree/src/main.py'] / 1024:.1f} KiB",
    ]
    assert by_path["tree/README.md"][1:4] == ["file", "README.md", "7 bytes"]
    assert by_path["tree/link"][1:4] == ["link", "link", "link"]
    # Folders first, then files and links, in the result's order.
    assert [node[1] for node in shown] == sorted(
        (node[1] for node in shown), key=lambda kind: kind != "dir"
    )
    assert await page.text_content("#list-view .list-title") == (
        f"tree · {result['count']} entries"
    )
    assert await page.text_content(".call[data-id=call_list] .args") == "tree"
    await screenshot(page, "list-tree")


def picture(width: int, height: int) -> bytes:
    """A PNG with shapes to see: a sky, a sun, hills."""
    image = Image.new("RGB", (width, height), (120, 180, 235))
    draw = ImageDraw.Draw(image)
    draw.ellipse((width * 0.7, height * 0.1, width * 0.85, height * 0.4), fill=(250, 210, 60))
    draw.polygon([(0, height), (width * 0.35, height * 0.45), (width * 0.7, height)], (40, 130, 60))
    draw.polygon(
        [(width * 0.4, height), (width * 0.75, height * 0.55), (width, height)], (30, 100, 50)
    )
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


async def test_an_image_read_shows_the_image_the_model_got_from_the_stored_result(
    served: Served, page: Any, screenshot: Any
) -> None:
    (served.workspace / "photo.png").write_bytes(picture(2400, 1200))
    async with ToolHost(served.workspace, data_dir=served.host.data_dir, session_id="img") as host:
        result = await host.call("Read", {"path": "photo.png"}, tool_call_id="call_img")
    image = result["image"]
    assert (image["originalWidth"], image["width"]) == (2400, 1516)
    response = await page.goto(f"{served.url}/")  # the page itself, for its headers
    assert response is not None
    csp = response.headers["content-security-policy"].split("; ")
    assert "img-src 'self' data:" in csp
    assert [d for d in csp if "data:" in d] == ["img-src 'self' data:"]
    await page.goto(session_url(served, "img", "call_img"))
    await page.wait_for_selector("#detail[data-stream=done]")
    await page.wait_for_function(
        "() => document.querySelector('#list-view figure img')?.complete === true"
    )
    shown = await page.evaluate(
        """() => { const img = document.querySelector('#list-view figure img');
            return [img.getAttribute('src'), img.naturalWidth, img.naturalHeight]; }"""
    )
    # The very bytes the model got, decoded by the browser at the size sent.
    assert shown == [f"data:image/png;base64,{image['data']}", image["width"], image["height"]]
    sent_bytes = base64.b64decode(image["data"])
    sent = Image.open(io.BytesIO(sent_bytes))
    assert sent.size == (image["width"], image["height"])
    assert await page.text_content("#list-view figcaption") == (
        f"photo.png (workspace) · image/png · {image['width']:,}×{image['height']:,} px, "
        f"scaled from 2,400×1,200 · sent {len(sent_bytes) / 1024:.1f} KiB · "
        f"file {result['fileBytes'] / 1024:.1f} KiB"
    )
    tokens = -(-image["width"] * image["height"] // 750)
    assert await page.text_content("#list-view .list-title") == (
        f"photo.png · image · about {tokens:,} tokens (width × height ÷ 750)"
    )
    assert await page.is_hidden("#read-view")
    assert await page.locator("#outputs button").count() == 0  # no window of lines to page
    await screenshot(page, "read-image")


@pytest.mark.parametrize("mime", ["image/svg+xml", "text/html"])
async def test_an_image_result_of_another_type_is_described_never_shown(
    served: Served, page: Any, mime: str
) -> None:
    # A result no Read makes (a forged or damaged record): the page trusts only the four types.
    svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode()
    result = {
        "path": "x.svg",
        "root": "workspace",
        "image": {
            "mimeType": mime,
            "data": svg,
            "width": 10,
            "height": 10,
            "originalWidth": 10,
            "originalHeight": 10,
        },
        "fileBytes": 40,
    }
    call = CallStart("web-s1", "forged", "Read", {"path": "x.svg"})
    served.hub.call_started(call)
    served.hub.call_event(call, {"type": "result", "seq": 0, "result": result, "text": "x"})
    served.hub.call_ended(call, None)
    await page.goto(served.call_url("forged"))
    await page.wait_for_selector("#detail[data-stream=done]")
    assert await page.locator("#detail img").count() == 0
    assert await page.text_content("#list-view .image-refused") == (
        f"Not shown: {mime} is not png, jpeg, gif or webp."
    )


async def test_a_pdf_read_shows_each_pages_text_under_its_number_and_the_range(
    served: Served, page: Any
) -> None:
    pages = ["Intro\nfirst page", "Body\n--- Page 9 ---\nmore", "End\nlast words", "Appendix"]
    (served.workspace / "paper.pdf").write_bytes(make_pdf(pages))
    result = await served.host.call(
        "Read", {"path": "paper.pdf", "pages": "2-3"}, tool_call_id="call_pdf"
    )
    assert (result["pages"], result["totalPages"]) == ("2-3", 4)
    await page.goto(served.call_url("call_pdf"))
    await page.wait_for_selector("#detail[data-stream=done]")
    shown = await page.evaluate(
        """() => [...document.querySelectorAll('#list-view .pdf-page')].map(p => [
            p.dataset.page, p.querySelector('h4').textContent,
            [...p.querySelectorAll('.rows > div')].map(d => d.textContent)])"""
    )
    assert [(number, head) for number, head, _ in shown] == [("2", "page 2"), ("3", "page 3")]
    # A page's own line that looks like a header stays its text.
    assert "--- Page 9 ---" in shown[0][2]
    headers = ("--- Page 2 ---", "--- Page 3 ---")
    content = result["content"].removesuffix("\n").split("\n")
    assert [line for _, _, text in shown for line in text] == [
        line for line in content if line not in headers
    ]
    assert "last words" in shown[1][2]
    assert await page.text_content("#list-view .list-title") == (
        f"paper.pdf (workspace) · PDF · pages 2–3 of 4 · {result['fileBytes'] / 1024:.1f} KiB"
    )
    assert await page.text_content("#result .notice") == result["notice"]
    assert await page.text_content(".call[data-id=call_pdf] .args") == "paper.pdf pages=2-3"
