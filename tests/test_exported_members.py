"""The public surface is deliberate: one sorted __all__, every name importable."""

import toolbound


def _isort_style(name: str) -> tuple[int, str]:
    # Constants, then classes, then functions: the order ruff keeps __all__ in.
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


def test_all_is_sorted_and_importable() -> None:
    assert toolbound.__all__ == sorted(toolbound.__all__, key=_isort_style)
    for name in toolbound.__all__:
        assert getattr(toolbound, name) is not None
    public = {n for n in dir(toolbound) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(toolbound, n)).__name__ == "module"}
    assert public - modules == set(toolbound.__all__)
