"""A real browser against a real `make run`: upload a PDF on a case's documents page and watch
its row reach "Ready" over the websocket, without reloading the page."""

from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.async_api import Page

from tests.e2e.steps import choose_files, row, write_pdf
from tests.harness.browser import goto, shot, sign_in, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

FILENAME = "e2e-brief.pdf"
ROW = row(FILENAME)


async def test_uploaded_pdf_row_turns_ready_live_without_reload(
    page: Page, product: Product, tmp_path: Path
) -> None:
    pdf = write_pdf(tmp_path / FILENAME, [f"Brief for the browser test, page {n}." for n in (1, 2)])
    case = product.new_case()
    await sign_in(page, case.lawyer)
    await goto(page, case.path)
    documents = await page.get_attribute('.case-nav a[href$="/documents/"]', "href")
    assert documents
    await goto(page, documents)
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await page.evaluate("window.__sameDocument = true")

    await choose_files(page, pdf)

    result = await wait_for(
        page, "document.querySelector('#upload-progress .upload-item--created')?.textContent"
    )
    assert FILENAME in result and "Added" in result
    status = await wait_for(
        page,
        f"{ROW}?.querySelector('[data-field=status]').textContent === 'Ready' && "
        f"{ROW}.querySelector('[data-field=pages]').textContent",
        timeout=60,
    )
    assert status == "2 of 2 pages"
    # The registry's verdict came with the last event: checked once the text was read.
    verdict = await wait_for(
        page,
        f"{ROW}.querySelector('[data-field=provenance]').dataset.provenance === 'clear' && "
        f"{ROW}.querySelector('[data-field=provenance]').textContent.trim()",
    )
    assert verdict == "Clear"
    # One upload, and the row came over the socket: the page never reloaded.
    assert await page.evaluate("document.querySelectorAll('#upload-progress li').length") == 1
    assert await page.evaluate("window.__sameDocument === true")
    assert urlparse(page.url).path == documents
    await shot(page, "ready")
