"""A real browser against a real `make run` (issue 13 req. 9 for req. 1): productions in the
browser. Upload two PDFs, tick them in the list and choose Produce; on the new production's
page move a row with its Down button and by dragging, type the stamp and watch the preview of
page 1 appear; create it; watch the production's page turn Ready over the case's websocket;
download the stamped PDF; build the volume from the page and download its zip; see it on the
Productions tab. Screenshots are saved as artifacts."""

import re
from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.e2e.steps import ROWS, choose_files, wait_ready, write_pdf
from tests.harness.browser import arrive, check, goto, shot, sign_in, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

NAMES = ("e2e-prod-first.pdf", "e2e-prod-second.pdf")
PICKED = "[...document.querySelectorAll('[data-picked] tr')].map(r => r.dataset.documentId)"


def _write_pdfs(folder: Path) -> list[Path]:
    return [
        write_pdf(
            folder / name,
            [f"Exhibit {n} for the production, page {k + 1}." for k in range(n)],
            fontsize=11,
        )
        for n, name in enumerate(NAMES, start=1)
    ]


async def _fetch(page: Page, selector: str) -> list[object]:
    """[status, content type, first bytes] of the link's download, fetched by the page."""
    result: list[object] = await page.evaluate(
        f"fetch(document.querySelector({selector!r}).href, {{credentials: 'same-origin'}})"
        ".then(async r => [r.status, r.headers.get('content-type'),"
        " new TextDecoder('latin1').decode((await r.arrayBuffer()).slice(0, 4))])"
    )
    return result


async def test_pick_order_preview_commit_watch_and_download_a_production(
    page: Page, product: Product, tmp_path: Path
) -> None:
    paths = _write_pdfs(tmp_path)
    case = product.new_case()
    await sign_in(page, product.admin)
    await goto(page, f"{case.path}documents/")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await choose_files(page, *paths)
    for name in NAMES:
        await wait_ready(page, name, timeout=90)

    # Pick: tick the two documents in the list and choose the bulk action Produce.
    await goto(page, f"{case.path}documents/?sort=name")
    ids = await page.evaluate(
        f"[...{ROWS}].filter(r => r.querySelector('[data-field=filename]')?.textContent"
        ".startsWith('e2e-prod-')).map(r => r.dataset.documentId)"
    )
    for document_id in ids:
        await page.check(f'#document-rows tr[data-document-id="{document_id}"] input[name=ids]')
    assert len(ids) == 2
    await page.click("#bulk-open-produce")
    await page.fill("#id_bulk_volume", "E2EPROD1")
    await page.fill("#id_bulk_bates_prefix", "E2EP")
    await page.click("[data-bulk-submit=produce]")
    await arrive(page, re.compile(r"/productions/new/"))
    assert await page.evaluate(PICKED) == ids
    assert await page.input_value("#id_volume") == "E2EPROD1"

    # Order: Down on the first row swaps the two, without a round trip; a drag of the
    # (now) second row above the first swaps them back.
    await page.click("[data-picked] [data-move=down]")
    assert await page.evaluate(PICKED) == ids[::-1]
    assert await page.evaluate("document.querySelector('[data-order]').value") == ",".join(
        ids[::-1]
    )
    await page.evaluate(
        "(() => { const rows = [...document.querySelectorAll('[data-picked] tr')];"
        " const data = new DataTransfer();"
        " const fire = (el, type, y) => el.dispatchEvent(new DragEvent(type,"
        " {bubbles: true, cancelable: true, dataTransfer: data, clientY: y}));"
        " fire(rows[1], 'dragstart', 0);"
        " fire(rows[0], 'dragover', rows[0].getBoundingClientRect().top + 1);"
        " fire(rows[1], 'drop', 0); fire(rows[1], 'dragend', 0); })()"
    )
    assert await page.evaluate(PICKED) == ids
    assert await page.evaluate("document.querySelector('[data-order]').value") == ",".join(ids)
    # Stamp: a legend, typed; the preview of page 1 follows.
    await page.fill("#id_legend", "CONFIDENTIAL")
    await wait_for(
        page,
        "(() => { const img = document.querySelector('[data-preview-image]');"
        " return !img.hidden && img.complete && img.naturalWidth > 500"
        " && img.src.includes('legend=CONFIDENTIAL')"
        f" && img.src.includes('/preview/{ids[0]}.png'); }})()",
    )
    await shot(page, "new-preview")
    # The Preview press names page 1's number.
    async with page.expect_navigation():
        await page.click("button[name=op][value=preview]:not([tabindex])")
    await arrive(page)
    caption = await wait_for(
        page,
        "document.querySelector('[data-preview-caption]')?.textContent"
        ".includes('will carry') && document.querySelector('[data-preview-caption]')"
        ".textContent",
    )
    assert "E2EP000001" in caption

    # Commit: the production's page, which turns Ready live.
    await page.click("button[value=commit]")
    await arrive(page, re.compile(r"/productions/\d+/$"))
    await wait_for(
        page,
        "document.querySelector('[data-production-status]')?.textContent === 'Ready'"
        " && !!document.querySelector('[data-download-pdf]')",
        90,
    )
    await check(page)  # the page reloads itself when the stamping ends: check what it shows
    text = await page.text_content("main")
    assert text is not None
    assert "E2EP000001–E2EP000003" in text  # noqa: RUF001  (the page's en dash)
    assert "queued for stamping" in text or "Ready" in text
    status, kind, head = await _fetch(page, "[data-download-pdf]")
    assert (status, kind, head) == (200, "application/pdf", "%PDF")
    await shot(page, "detail-ready")

    # Export: build the volume from the page; its zip link appears when it is built.
    await page.fill("#id_image_dpi", "100")
    async with page.expect_navigation():
        await page.evaluate("document.querySelector('form[action$=\"/exports/\"]').requestSubmit()")
    await arrive(page)
    await wait_for(page, "document.querySelector('.export-list a[href$=\"/zip\"]') !== null", 120)
    status, kind, head = await _fetch(page, ".export-list a[href$='/zip']")
    assert (status, kind, head[:2]) == (200, "application/zip", "PK")  # type: ignore[index]
    await shot(page, "detail-exported")

    # The Productions tab lists it with its range and its export.
    await page.click(".case-nav a:text-is('Productions')")
    await arrive(page, re.compile(r"/productions/$"))
    row = await page.evaluate(
        "[...document.querySelectorAll('.productions-table tbody tr')]"
        ".find(r => r.textContent.includes('E2EPROD1'))?.textContent"
    )
    assert row and "E2EP000001" in row and "Ready" in row and "zip" in row
    await shot(page, "tab")
