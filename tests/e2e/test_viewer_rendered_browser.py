"""A real browser against a real `make run`: a text file rendered to several PDF pages (one page
of text stored) pages through its rendition by keyboard, each page with its own image and
text, and a search hit opens the rendered page holding the match with the word boxed.
Screenshots are saved as artifacts."""

from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.e2e.steps import upload_rendered
from tests.e2e.test_viewer_browser import IMAGE, arrived
from tests.harness.browser import goto, shot, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

FILENAME = "e2e-rendered-memo.txt"
TEXT = "document.querySelector('.page-text')?.textContent || ''"


def _write_text(path: Path) -> None:
    lines = [f"Line {n:03d} of the rendered memo, nothing of note." for n in range(1, 241)]
    lines[199] = "Line 200 names the zeppelin contract."
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


async def test_a_rendered_text_file_pages_by_keyboard_and_opens_at_its_search_hit(
    page: Page, product: Product, tmp_path: Path
) -> None:
    memo = tmp_path / FILENAME
    _write_text(memo)
    viewer, document_id = await upload_rendered(page, product, memo, timeout=60)
    count = int(await page.evaluate("document.querySelector('#viewer-page').max"))
    thumbs = await page.evaluate("document.querySelectorAll('[data-thumb]').length")
    assert count >= 3 and thumbs == count
    assert "Line 001 " in await page.evaluate(TEXT)
    await shot(page, "rendered-page-1")

    await page.keyboard.press("j")
    await arrived(page, "page=2")
    assert await page.evaluate("!!document.getElementById('page-2')")
    text = await page.evaluate(TEXT)
    assert "Line 001 " not in text and "Line " in text
    src = await page.get_attribute("#viewer-image", "src")
    assert f"/documents/{document_id}/pages/2/image" in (src or "")
    await shot(page, "rendered-page-2")

    await page.keyboard.press("ArrowRight")
    await arrived(page, "page=3")
    await page.keyboard.press("k")
    await arrived(page, "page=2")

    # A search hit opens the rendered page holding the word, boxed on its image.
    await goto(page, f"{viewer}?page=hit&q=zeppelin")
    await wait_for(page, f"{IMAGE}?.complete && {IMAGE}.naturalWidth > 0")
    await wait_for(page, "document.querySelectorAll('.viewer-hit').length === 1")
    shown = int(await page.evaluate("document.querySelector('#viewer-page').value"))
    assert shown > 1 and "zeppelin" in await page.evaluate(TEXT)
    await shot(page, "rendered-search-hit")
