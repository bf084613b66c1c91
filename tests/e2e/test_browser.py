"""A real browser against a real `make run`: sign in, open a case and its "Workers and live
updates" page, press the button, and see the worker's notice arrive over the websocket without
reloading the page."""

from urllib.parse import urlparse

import pytest
from playwright.async_api import Page

from tests.harness.browser import arrive, check, goto, shot, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_sign_in_open_case_and_receive_a_worker_notice_live(
    page: Page, product: Product
) -> None:
    case = product.new_case()
    await goto(page, "/")
    assert urlparse(page.url).path == "/accounts/login/"

    await page.fill("#id_username", case.lawyer.email)
    await page.fill("#id_password", case.lawyer.password)
    await page.click("form[method=post] button[type=submit]")
    await page.wait_for_url(lambda url: urlparse(url).path == "/")
    await arrive(page)
    await page.click(f'a[href="{case.path}"]')
    await arrive(page, f"**{case.path}")
    # The case's "Workers and live updates" page (linked from the case page) has the check;
    # its answer arrives over the case's socket.
    health = await page.get_attribute('a[href$="/health/"]', "href")
    assert health
    await goto(page, health)
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")

    await page.click("[data-submit-in-place] button")

    notice = await wait_for(
        page,
        "[...document.querySelectorAll('#live-notices .toast')]"
        ".map(t => t.textContent).find(t => t.includes('ran the live-update check'))",
        timeout=60,
    )
    assert notice.startswith("Worker on ")
    # The notice came over the socket: the page never reloaded.
    assert await page.evaluate("performance.getEntriesByType('navigation').length") == 1
    assert urlparse(page.url).path == health
    await check(page)
    await shot(page, "notice")
