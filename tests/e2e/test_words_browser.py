"""Issue 25 reqs 4 and 6 in a real browser against a real `make run`: a bulk "Produce" of all
the documents the review list matches keeps the list's filter and sort (the order page lists
them as the list did); the case page tells three uploads in a row as one line; the viewer says
where a page's text came from in words; every page names a favicon that is served. Each page
is checked with axe-core; screenshots are kept as artifacts."""

import re
from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.e2e.steps import ROWS, api, choose_files, row, write_pdf
from tests.harness.browser import arrive, goto, shot, sign_in, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

# Uploaded together; by name alpha, bravo, charlie (3, 1 and 2 pages), then the notes (1).
PDFS = {"e2e-words-charlie.pdf": 2, "e2e-words-alpha.pdf": 3, "e2e-words-bravo.pdf": 1}
BY_NAME = sorted(PDFS)
NAMES_ON_PAGE = (
    f"[...{ROWS}].map(r => r.querySelector('[data-field=filename]')?.textContent)"
    ".filter(n => n && n.startsWith('e2e-words-'))"
)
PICKED_NAMES = (
    "[...document.querySelectorAll('[data-picked] tr[data-document-id] th a')]"
    ".map(a => a.textContent.trim())"
)


async def test_bulk_produce_keeps_the_lists_sort_and_the_day_reads_in_words(
    page: Page, product: Product, tmp_path: Path
) -> None:
    paths = [
        write_pdf(tmp_path / name, [f"{name}, page {n}." for n in range(1, pages + 1)])
        for name, pages in PDFS.items()
    ]
    text = write_pdf(tmp_path / "e2e-words-notes.pdf", ["Notes."])
    case = product.new_case()
    await sign_in(page, product.admin)
    await goto(page, f"{case.path}documents/")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await choose_files(page, *paths, text)
    # Read by the workers: asked of the API (this test is not about the list's live rows).
    for path in [*paths, text]:
        await wait_for(page, f"{row(path.name)}", timeout=60)
    for _attempt in range(120):
        listed = await api(page, "GET", f"/api/v1/cases/{case.id}/documents?limit=50")
        statuses = {d["filename"]: d["status"] for d in listed["body"]["items"]}
        if len(statuses) == 4 and set(statuses.values()) == {"ready"}:
            break
        await page.wait_for_timeout(1000)
    assert set(statuses.values()) == {"ready"}, statuses

    # Req 4: the list sorted by name; "All matching" produced: the order page keeps that order.
    await goto(page, f"{case.path}documents/?sort=name")
    everything = [*BY_NAME, "e2e-words-notes.pdf"]
    assert await page.evaluate(NAMES_ON_PAGE) == everything
    help_text = await page.text_content("#bulk-form")
    assert help_text and "the list\u2019s order" in help_text
    await shot(page, "list-by-name")
    # "All matching" brings the toolbar; Produce opens its dialog (nothing is made yet: no
    # confirmation).
    await page.select_option("#id_bulk_scope", "all")
    await page.click("#bulk-open-produce")
    await page.fill("#id_bulk_volume", "E2EWORDS1")
    await page.fill("#id_bulk_bates_prefix", "E2EW")
    await page.click("[data-bulk-submit=produce]")
    await arrive(page, re.compile(r"/productions/new/"))
    picked = await page.evaluate(PICKED_NAMES)
    assert picked == everything, picked
    await shot(page, "produce-in-list-order")

    # The same with the list sorted by most pages: the order page follows that sort instead.
    await goto(page, f"{case.path}documents/?sort=-pages")
    list_order = await page.evaluate(NAMES_ON_PAGE)
    await page.select_option("#id_bulk_scope", "all")
    await page.click("#bulk-open-produce")
    await page.fill("#id_bulk_volume", "E2EWORDS2")
    await page.click("[data-bulk-submit=produce]")
    await arrive(page, re.compile(r"/productions/new/"))
    picked = await page.evaluate(PICKED_NAMES)
    # 3 pages, 2, then the two of one page (by newest id, as the list shows them).
    assert picked[:2] == ["e2e-words-alpha.pdf", "e2e-words-charlie.pdf"], picked
    assert picked == list_order, picked
    await shot(page, "produce-by-most-pages")

    # Req 6: the four uploads in a row are one line of the case's activity, with its count.
    await goto(page, case.path)
    lines = await page.evaluate(
        "[...document.querySelectorAll('ol.activity li')].map(li => li.textContent"
        ".replace(/\\s+/g, ' ').trim())"
    )
    uploads = [line for line in lines if "uploaded" in line]
    assert len(uploads) == 1 and "and 1 more" in uploads[0] and "(4 times since" in uploads[0], (
        lines
    )
    await shot(page, "activity-folded")

    # The viewer says where the page's text came from in words, not a stored code.
    await goto(page, f"{case.path}documents/?sort=name")
    href = await page.evaluate(
        f"[...{ROWS}].find(r => r.querySelector('[data-field=filename]')?.textContent"
        " === 'e2e-words-alpha.pdf').querySelector('[data-field=filename]').href"
    )
    await goto(page, href)
    source = await page.evaluate(
        "[...document.querySelectorAll('dt')].find(dt => dt.textContent === 'Text from')"
        "?.nextElementSibling?.textContent.trim()"
    )
    assert source == "The PDF's text layer", source
    body = await page.evaluate("document.body.textContent")
    assert "text_layer" not in body and "PDF text layer" not in body
    await shot(page, "viewer-text-source")

    # A favicon on every page, served as SVG.
    icon = await page.evaluate(
        "(async () => { const link = document.querySelector('link[rel=icon]');"
        " const r = await fetch(link.href);"
        " return [r.status, r.headers.get('content-type'), (await r.text()).slice(0, 4)]; })()"
    )
    assert icon[0] == 200 and icon[1].startswith("image/svg+xml") and icon[2] == "<svg", icon


# A number of nine or more digits (bytes), or a float's long tail of decimals.
RAW_NUMBER = r"\d{9,}|\d+\.\d{4,}"
CELLS = "[...document.querySelectorAll('#result_list td')].map(td => td.textContent.trim())"


async def test_the_admin_names_things_and_shows_gpu_memory_in_units(
    page: Page, product: Product
) -> None:
    await sign_in(page, product.admin)

    await goto(page, "/admin/")
    index = await page.evaluate("document.querySelector('#content-main').textContent")
    for name in ("GPU statuses", "GPUs", "GPU samples", "API tokens", "Backend health"):
        assert name in index, name
    for wrong in ("statuss", "Gpu", "healths", "Api tokens"):
        assert wrong not in index, wrong
    await shot(page, "admin-index")

    # The demo cluster's GPUs (the fake NVML agent reports them and their status).
    await goto(page, "/admin/cluster/gpu/")
    cells = await page.evaluate(CELLS)
    assert any(cell.endswith(" GiB") for cell in cells), cells
    assert not [cell for cell in cells if re.search(RAW_NUMBER, cell)], cells
    await shot(page, "admin-gpus")
    for _attempt in range(30):
        await goto(page, "/admin/cluster/gpustatus/")
        cells = await page.evaluate(CELLS)
        if cells:
            break
        await page.wait_for_timeout(1000)
    assert any(cell.endswith("GiB") for cell in cells), cells
    assert not [cell for cell in cells if re.search(RAW_NUMBER, cell)], cells
    await shot(page, "admin-gpu-statuses")
