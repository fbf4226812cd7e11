"""No racing symlink swap moves an ApplyPatch outside the workspace (CONTRACT 16).

The swapper of ``test_isolation_fs`` exchanges the workspace folder ``d`` with
a symlink ``dl`` to an outside folder while patches add files below ``d`` (in
a folder the patch makes) and delete a file only the outside folder holds:
nothing is ever written or removed outside, and every call answers (a clear
TOOL_ error when the path changed under it).
"""

from __future__ import annotations

import collections
from pathlib import Path

from test_isolation_fs import CALLS, EDIT_HOLD_S, _code, places, swapping, walk_mode
from toolbound.host import ToolHost

# The swapping fixtures, shared with the other tools' race tests.
__all__ = ["places", "walk_mode"]


def _patch(*sections: str) -> dict[str, str]:
    return {"patch": "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"}


async def test_no_apply_patch_writes_or_deletes_outside_while_a_folder_is_swapped(
    places: tuple[Path, Path], tmp_path: Path, walk_mode: str
) -> None:
    ws, outside = places
    codes: collections.Counter[str] = collections.Counter()
    async with ToolHost(workspace=ws, data_dir=tmp_path / "data") as host:
        # Held a moment each, as for Edit: a patch's steps by name take longer than a
        # tight loop holds one state, so a clean CI run once caught none (0 adds ok).
        with swapping(ws / "d", ws / "dl", hold_s=EDIT_HOLD_S) as swaps:
            for i in range(CALLS):
                adds = _patch(
                    f"*** Add File: d/new{i}/pwn-{i}.txt\n+x\n",
                    f"*** Add File: d/pwn-{i}.txt\n+y\n",
                )
                codes["add " + _code(await host.call("ApplyPatch", adds))] += 1
                delete = _patch("*** Delete File: d/only-outside.txt\n")
                codes["delete " + _code(await host.call("ApplyPatch", delete))] += 1
    escaped = sorted(p.name for p in outside.rglob("*pwn-*"))
    assert (len(escaped), escaped[:3]) == (0, []), (codes, swaps)
    assert (outside / "only-outside.txt").read_text() == "OUTSIDE\n", codes
    assert sorted(p.name for p in outside.iterdir()) == ["e.txt", "only-outside.txt", "secret.txt"]
    assert codes["add ok"] > 0, codes
    assert swaps[0] > CALLS, swaps
