"""The browser harness itself: axe-core's serious and critical violations fail the page they are
on, a clean page passes, and a page opened and left without its check fails the test."""

import re

import pytest
from playwright.async_api import Page, Route

from tests.harness.browser import Pages, arrive, goto

pytestmark = pytest.mark.asyncio(loop_scope="session")

BASE = "http://harness.test"
CLEAN = (
    "<!doctype html><html lang=en><head><title>Clean</title></head><body><main>"
    "<h1>Clean</h1><p><a href=/next>Next</a></p></main></body></html>"
)
# An image without a text alternative (image-alt, critical), a button without a name
# (button-name, critical).
BROKEN = (
    "<!doctype html><html lang=en><head><title>Broken</title></head><body><main>"
    "<h1>Broken</h1><img src=/x.png><button></button></main></body></html>"
)


async def _serve(page: Page) -> None:
    async def answer(route: Route) -> None:
        path = route.request.url.removeprefix(BASE)
        body = BROKEN if path.startswith("/broken") else CLEAN
        await route.fulfill(status=200, content_type="text/html", body=body)

    await page.route(re.compile(r"^http://harness\.test/.*"), answer)


async def test_a_serious_or_critical_violation_fails_the_page(pages: Pages) -> None:
    page = await pages.open(BASE)
    await _serve(page)
    await goto(page, "/clean")
    with pytest.raises(AssertionError) as failed:
        await goto(page, "/broken")
    assert "image-alt (critical)" in str(failed.value)
    assert "button-name (critical)" in str(failed.value)
    await goto(page, "/clean")


async def test_a_page_left_unchecked_fails_the_test(
    request: pytest.FixtureRequest, pages: Pages
) -> None:
    own = Pages(request, pages.browser)
    page = await own.open(BASE)
    await _serve(page)
    await goto(page, "/clean")
    async with page.expect_navigation():
        await page.click("a")  # /next: opened, never checked
    await page.goto(f"{BASE}/clean")  # left without a check
    await arrive(page)
    with pytest.raises(AssertionError, match=r"without their accessibility check.*/next"):
        await own.close()
