"""A real browser against a real `make run` (issue 13 req. 9 for req. 3): the document viewer.
Keys move between pages and documents, a thumbnail opens its page, zoom sizes the page, a
search's word is boxed on the page image, the stamped/original toggle swaps in the produced
page, and Bates lookup shows the stamped page. Screenshots are saved as artifacts."""

from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.e2e.steps import api, choose_files, row, wait_ready, write_pdf
from tests.harness.browser import arrive, check, goto, shot, sign_in, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

FILENAME = "e2e-viewer.pdf"
# A second document of the case, for the keys that move between documents.
OTHER = "e2e-viewer-other.pdf"
ROW = row(FILENAME)
IMAGE = "document.querySelector('#viewer-image')"
ZOOMED = 595 / 72 * 96 * 2  # CSS pixels across the page at 200%
# What the zoom did, for the message of a failed wait.
STATE = (
    f"JSON.stringify({{width: {IMAGE}.getBoundingClientRect().width, style: {IMAGE}.style.width,"
    f"src: {IMAGE}.getAttribute('src'), natural: {IMAGE}.naturalWidth,"
    f"complete: {IMAGE}.complete, zoom: {IMAGE}.parentElement.dataset.zoom,"
    f"classes: {IMAGE}.parentElement.className}})"
)


def _write_pdf(path: Path) -> Path:
    return write_pdf(
        path,
        [
            f"Viewer test page {n}: "
            f"{'the zygomatic indemnity clause' if n == 2 else 'nothing of note'}."
            for n in (1, 2, 3)
        ],
        fontsize=14,
    )


async def arrived(page: Page, fragment: str) -> None:
    """After a key or a click in the viewer: its next page has loaded (address holding
    `fragment`, image drawn), and is checked."""
    await wait_for(
        page, f"location.search.includes({fragment!r}) && document.readyState === 'complete'"
    )
    await wait_for(page, f"{IMAGE}?.complete && {IMAGE}.naturalWidth > 0")
    await check(page)


async def test_viewer_keys_thumbnails_zoom_hits_and_stamped_pages(
    page: Page, product: Product, tmp_path: Path
) -> None:
    pdf = _write_pdf(tmp_path / FILENAME)
    other = write_pdf(tmp_path / OTHER, ["Another document of the case."])
    case = product.new_case()
    await sign_in(page, product.admin)
    await goto(page, f"{case.path}documents/")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await choose_files(page, pdf, other)
    await wait_ready(page, FILENAME, timeout=60)
    await wait_ready(page, OTHER, timeout=60)
    viewer = await page.evaluate(
        f"{ROW}.querySelector('[data-field=filename]').getAttribute('href')"
    )
    document_id = int(viewer.strip("/").split("/")[-1])

    # Produce it, through the API the browser session may use.
    made = await api(
        page,
        "POST",
        f"/api/v1/cases/{case.id}/productions",
        {"volume": "VWR001", "prefix": "VWR", "document_ids": [document_id]},
    )
    assert made["status"] == 201, made
    production = made["body"]["id"]
    ready = (
        f"fetch('/api/v1/cases/{case.id}/productions/{production}')"
        ".then(r => r.json()).then(p => p.status === 'ready')"
    )
    await wait_for(page, ready, 60)

    # Keys: j / ArrowRight next page, k previous.
    await goto(page, f"{viewer}?page=1")
    await wait_for(page, f"{IMAGE}?.complete && {IMAGE}.naturalWidth > 0")
    assert "VWR000001" in (await page.text_content(".viewer-bates") or "")
    await page.keyboard.press("j")
    await arrived(page, "page=2")
    await page.keyboard.press("ArrowRight")
    await arrived(page, "page=3")
    await page.keyboard.press("k")
    await arrived(page, "page=2")
    await shot(page, "keyboard-page-2")

    # A thumbnail opens its page.
    await page.click('[data-thumb="3"]')
    await arrived(page, "page=3")
    assert await page.get_attribute("[aria-current=page][data-thumb]", "data-thumb") == "3"
    await shot(page, "thumbnail-page-3")

    # Zoom: 200% is twice the printed width (A4, 595 points, at 96 CSS px to the inch);
    # fit width is the column's width.
    await page.click('button[data-zoom="200"]')
    try:
        await wait_for(page, f"Math.abs({IMAGE}.getBoundingClientRect().width - {ZOOMED}) < 3")
    except AssertionError:
        raise AssertionError(await page.evaluate(STATE)) from None
    await shot(page, "zoom-200")
    await page.click('button[data-zoom="width"]')
    await wait_for(
        page,
        f"Math.abs({IMAGE}.getBoundingClientRect().width - "
        f"{IMAGE}.closest('.viewer-figure').clientWidth) < 3",
    )
    await check(page)
    await shot(page, "zoom-fit-width")

    # From search: the hit's page opens with the word boxed on the image.
    await goto(page, f"{case.path}search/?q=zygomatic")
    link = await wait_for(
        page, "document.querySelector('.search-hit a[href*=\"q=zygomatic\"]')?.href", 10
    )
    assert "page=2" in link
    await page.click('.search-hit a[href*="q=zygomatic"]')
    await arrived(page, "q=zygomatic")
    await wait_for(page, "document.querySelectorAll('.viewer-hit').length === 1")
    inside = await page.evaluate(
        "(() => { const b = document.querySelector('.viewer-hit').getBoundingClientRect();"
        f"const i = {IMAGE}.getBoundingClientRect();"
        "return b.width > 20 && b.left > i.left && b.right < i.right && b.top > i.top"
        " && b.bottom < i.top + i.height / 4; })()"
    )
    assert inside
    await shot(page, "search-hit")

    # Stamped / original: "s" swaps in page 2 of the stamped volume, and back.
    await page.keyboard.press("s")
    await arrived(page, f"stamped={production}")
    source = await page.get_attribute("#viewer-image", "src")
    assert source is not None
    assert f"/documents/{document_id}/" not in source and "/pages/2/image" in source
    assert "VWR000002" in (await page.text_content(".viewer-figure figcaption") or "")
    await shot(page, "stamped")
    await page.keyboard.press("s")
    await wait_for(
        page, "!location.search.includes('stamped=') && document.readyState === 'complete'"
    )
    await check(page)
    assert f"/documents/{document_id}/pages/2/image" in (
        await page.get_attribute("#viewer-image", "src") or ""
    )

    # Bates lookup shows the stamped page.
    await goto(page, f"{case.path}bates/?ref=VWR000002")
    stamped = await wait_for(
        page,
        "document.querySelector('.bates-stamped img')?.complete && "
        "document.querySelector('.bates-stamped img').naturalWidth > 0 && "
        "document.querySelector('.bates-stamped img').getAttribute('src')",
    )
    assert f"/documents/{document_id}/" not in stamped
    await shot(page, "bates-lookup")

    # n / p: the next and previous document in the case's order (the case has two, so the
    # viewer's document has one or the other).
    await goto(page, f"{viewer}?page=1")
    before = await page.evaluate("location.pathname")
    keys = (
        ("n", "p")
        if await page.evaluate("!!document.querySelector('a[data-key=\"next-document\"]')")
        else ("p", "n")
    )
    assert await page.evaluate(
        '!!document.querySelector(\'a[data-key="next-document"], a[data-key="previous-document"]\')'
    )
    await page.keyboard.press(keys[0])
    await wait_for(page, f"location.pathname !== {before!r} && document.readyState === 'complete'")
    await arrive(page)
    await page.keyboard.press(keys[1])
    await wait_for(page, f"location.pathname === {before!r} && document.readyState === 'complete'")
    await arrive(page)
