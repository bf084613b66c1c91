"""The browser tests: every test here drives Chromium (marked `browser` here); those on the
session's launched product are marked `product` here too, and those that launch one of their own
mark themselves. `-m "not browser and not product"` leaves them all out."""

from collections.abc import Generator
from pathlib import Path

import pytest

from tests.harness.browser import browser, page, pages

__all__ = ["browser", "page", "pages"]

HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.browser)
            if "product" in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.product)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep the test's own report on the item: the page fixture saves a screenshot when the
    test failed."""
    report = yield
    if report.when == "call":
        item.lexweb_call_report = report  # type: ignore[attr-defined]
    return report
