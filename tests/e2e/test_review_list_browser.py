"""A real browser against a real `make run` (issue 13 req. 9 for req. 7 and 2): the case page's
activity feed in words, the worker check on its health page answering live, and the review
list: upload, select all, bulk tag, filter by the tag. Screenshots are saved as artifacts."""

from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.e2e.steps import ROWS, choose_files, wait_ready, write_pdf
from tests.harness.browser import arrive, goto, shot, sign_in, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

FILENAME = "e2e-review.pdf"


async def test_case_feed_health_check_and_review_list_in_a_browser(
    page: Page, product: Product, tmp_path: Path
) -> None:
    pdf = write_pdf(tmp_path / FILENAME, [f"Brief for the browser test, page {n}." for n in (1, 2)])
    case = product.new_case()
    await sign_in(page, product.admin)
    # The review list: upload a PDF and wait for it to be read.
    await goto(page, f"{case.path}documents/")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await choose_files(page, pdf)
    await wait_ready(page, FILENAME, timeout=60)
    await goto(page, f"{case.path}documents/")
    # Select all ticks every row's box and counts them; bulk-tag them.
    await page.click("[data-select-all]")
    rows = await page.evaluate(f"{ROWS}.length")
    counted = await page.text_content("[data-selected-count]")
    assert rows >= 1 and counted == str(rows)
    # The toolbar's Tag opens its dialog; tagging asks no confirmation.
    await page.click("#bulk-open-tag")
    await page.fill("#id_bulk_tag_name", "e2e-hot")
    async with page.expect_navigation():
        await page.click("[data-bulk-submit=tag]")
    await arrive(page)
    assert await page.evaluate("location.search") == ""
    message = await wait_for(
        page,
        "[...document.querySelectorAll('.message, .messages li')]"
        ".map(m => m.textContent).join(' ')",
        10,
    )
    assert "e2e-hot" in message
    await shot(page, "list-tagged")
    # Filter by the tag (in the filter pane): only tagged rows, each with its badge.
    await page.click(".list-filters-pane > summary")
    await page.select_option("#id_tag", label="e2e-hot")
    async with page.expect_navigation():
        await page.evaluate("document.querySelector('form.list-filters').requestSubmit()")
    await arrive(page)
    assert "tag=" in await page.evaluate("location.search")
    badges = await page.evaluate(
        f"[...{ROWS}].every(r => r.querySelector('.doc-tag')?.textContent === 'e2e-hot')"
    )
    assert badges and await page.evaluate(f"{ROWS}.length") == rows
    await shot(page, "list-filtered")

    # The case page: the feed in words, no audit codes, no worker button.
    await goto(page, case.path)
    feed = await page.evaluate("document.querySelector('ol.activity')?.textContent || ''")
    assert "uploaded" in feed and "tagged" in feed
    assert await page.evaluate("document.querySelector('.activity code') === null")
    assert await page.evaluate(
        "document.querySelector('form[action$=\"/worker-check/\"]') === null"
    )
    await shot(page, "case-feed")

    # The health page: the check goes through a worker and answers on the page.
    await goto(page, f"{case.path}health/")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await page.evaluate(
        "document.querySelector('form[action$=\"/worker-check/\"]').requestSubmit()"
    )
    notice = await wait_for(
        page,
        "[...document.querySelectorAll('#live-notices .toast')]"
        ".map(t => t.textContent).find(t => t.includes('ran the live-update check'))",
        60,
    )
    assert "Worker on" in notice
    await shot(page, "health-check")
