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


def test_what_a_session_user_catches_or_holds_is_exported() -> None:
    # CONTRACT 5: a store user holds a Session and its CheckpointRecords and
    # catches SessionError, TranscriptError and StoreUnavailable (a store that
    # cannot be reached, opened or migrated), without an internal import.
    from toolbound import store

    held = [
        "CheckpointRecord",
        "Session",
        "SessionError",
        "SessionStore",
        "StoreUnavailable",
        "TranscriptError",
    ]
    exported = {name: getattr(toolbound, name, None) for name in held}
    assert {name for name in held if name in toolbound.__all__} == set(held)
    assert exported == {name: getattr(store, name) for name in held}
