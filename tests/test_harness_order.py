"""tests/conftest.py and tests/harness/product.py: the slow tiers are handed out first, file by
file, and a worker's session product is stopped at its first file of neither slow tier, once;
a failed stop is kept for the session's end, not raised into an unrelated test."""

import contextlib
from types import SimpleNamespace

import pytest

from tests import conftest
from tests.harness import product as harness


def _item(nodeid: str, *markers: str) -> SimpleNamespace:
    return SimpleNamespace(
        nodeid=nodeid,
        stash=pytest.Stash(),
        get_closest_marker=lambda name: name if name in markers else None,
    )


def test_files_come_in_tier_order_each_whole_and_the_tier_of_a_file_is_its_lowest() -> None:
    items = [
        _item("tests/a.py::one"),
        _item("tests/b.py::one", "browser"),
        _item("tests/c.py::one"),
        _item("tests/c.py::two", "product"),  # a file with one launching test is tier 0
        _item("tests/b.py::two", "browser"),
    ]

    conftest.pytest_collection_modifyitems(items)  # type: ignore[arg-type]

    assert [item.nodeid for item in items] == [
        "tests/c.py::one",
        "tests/c.py::two",
        "tests/b.py::one",
        "tests/b.py::two",
        "tests/a.py::one",
    ]
    assert [item.stash[conftest.FILE_TIER] for item in items] == [0, 0, 1, 1, 2]


def test_among_files_of_neither_tier_those_with_a_slow_test_come_first_each_whole() -> None:
    items = [
        _item("tests/a.py::one"),
        _item("tests/b.py::one"),
        _item("tests/b.py::two", "slow"),
        _item("tests/c.py::one", "browser"),
        _item("tests/d.py::one", "slow"),
    ]

    conftest.pytest_collection_modifyitems(items)  # type: ignore[arg-type]

    assert [item.nodeid for item in items] == [
        "tests/c.py::one",
        "tests/b.py::one",
        "tests/b.py::two",
        "tests/d.py::one",
        "tests/a.py::one",
    ]
    assert [item.stash[conftest.FILE_TIER] for item in items] == [1, 2, 2, 2, 2]


def test_the_session_product_stops_at_the_first_file_of_neither_tier_and_only_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = harness._SessionProduct()
    monkeypatch.setattr(harness, "_SESSION_PRODUCT", session)
    stops: list[str] = []
    session.stack = contextlib.ExitStack()
    session.stack.callback(stops.append, "stopped")

    for tier in (0, 1):
        item = _item(f"tests/tier{tier}.py::t")
        item.stash[conftest.FILE_TIER] = tier
        conftest.pytest_runtest_setup(item)  # type: ignore[arg-type]
    assert stops == [] and not session.stopped_early

    for _ in range(2):
        item = _item("tests/plain.py::t")
        item.stash[conftest.FILE_TIER] = 2
        conftest.pytest_runtest_setup(item)  # type: ignore[arg-type]
    assert stops == ["stopped"] and session.stopped_early and session.stack is None


def test_a_failed_early_stop_is_kept_for_the_sessions_end(monkeypatch: pytest.MonkeyPatch) -> None:
    session = harness._SessionProduct()
    monkeypatch.setattr(harness, "_SESSION_PRODUCT", session)
    session.stack = contextlib.ExitStack()

    def unclean() -> None:
        raise AssertionError("the launcher exited with 1")

    session.stack.callback(unclean)

    harness.session_product_stop()  # not raised here, in whichever test came next

    assert isinstance(session.failure, AssertionError)
    assert "exited with 1" in str(session.failure)
