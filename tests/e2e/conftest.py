"""The browser tests: every test here drives Chromium (`browser`) against a launched product
(`product`); both marks are set here, for `-m "not browser and not product"` to leave them out."""

from collections.abc import Generator
from pathlib import Path

import pytest

from tests.harness.browser import browser, page, pages
from tests.harness.product import product

__all__ = ["browser", "page", "pages", "product"]

HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.browser)
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
