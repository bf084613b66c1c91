"""Issue 25 req 1 in a real browser against a real `make run`: the door out. A lawyer's case
holds a client letter and two documents of firm work product (uploaded through the API as
the lawyer). The lawyer ticks the three in the review list and chooses Produce: the order
screen says the work product cannot be produced as is; creating the production all the same
is refused and nothing is made. The lawyer includes one memo with a written reason and
withholds the other for the privilege log; the production's page shows the inclusion and the
log; the built volume's zip holds PRIVILEGE_LOG.csv (its row read) and PRIVILEGE_LOG.pdf; the
case's activity tells the inclusion and the withholding. The stamped volume is a document of
origin "Outgoing production" in the list and on its page; a new production of it is refused,
and so is adding it to a packet (its original goes in). Each page is checked with axe-core;
screenshots are kept as artifacts."""

import asyncio
import contextlib
import csv
import io
import re
import time
import zipfile
from pathlib import Path

import httpx
import pymupdf
import pytest
from playwright.async_api import Page

from tests.e2e.steps import ROWS, row, write_pdf
from tests.harness.browser import arrive, goto, shot, sign_in, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

LETTER, MEMO, NOTES = "e2e-door-letter.pdf", "e2e-door-memo.pdf", "e2e-door-notes.pdf"
ORIGINS = {LETTER: "client", MEMO: "work_product", NOTES: "work_product"}
VOLUME, PREFIX = "E2EDOOR1", "E2ED"
REASON = "The memo was sent to the other side in March; its privilege is waived."
DESCRIPTION = "Counsel's notes on the deposition strategy, prepared for trial."
HELD = "No: it is firm work product. A lawyer of the case may include it with a written reason."
# The "Can it be produced?" cell of each picked row, by file name.
VERDICTS = (
    "Object.fromEntries([...document.querySelectorAll('[data-picked] tr')].map(r =>"
    " [r.querySelector('th a').textContent.trim(),"
    " r.querySelectorAll('td')[4].textContent.replace(/\\s+/g, ' ').trim()]))"
)
ERRORS = (
    "[...document.querySelectorAll('.alert--error, .errorlist')]"
    ".map(e => e.textContent.replace(/\\s+/g, ' ').trim()).join(' / ')"
)


def _upload(client: httpx.Client, case_id: int, pdf: Path, origin: str) -> int:
    answer = client.post(
        f"/api/v1/cases/{case_id}/documents",
        files={"files": (pdf.name, pdf.read_bytes(), "application/pdf")},
        data={"origin": origin},
        headers={"X-CSRFToken": client.cookies.get("csrftoken") or ""},
    )
    assert answer.status_code == 201, answer.text[:2000]
    document: int = answer.json()["results"][0]["document"]["id"]
    return document


def _upload_and_read(product: Product, case_id: int, email: str, password: str, folder: Path) -> (
    dict[str, int]
):  # fmt: skip
    """The three documents uploaded by the lawyer through the API, each read and clear."""
    ids = {}
    with contextlib.closing(product.signed_in(email, password)) as client:
        for name, origin in ORIGINS.items():
            pdf = write_pdf(folder / name, [f"{name}, page {n}." for n in (1, 2)])
            ids[name] = _upload(client, case_id, pdf, origin)
        deadline = time.monotonic() + 120
        for document in ids.values():
            path = f"/cases/{case_id}/documents/{document}"
            while True:
                state = product.api(client, "GET", path)
                if state["status"] == "ready" and state["provenance"] == "clear":
                    break
                assert time.monotonic() < deadline, state
                time.sleep(0.5)
    return ids


async def _submit(page: Page, selector: str) -> None:
    async with page.expect_navigation(timeout=60_000):
        await page.click(selector)
    await arrive(page)


async def test_work_product_is_held_back_included_with_a_reason_or_logged_and_the_volume_is_outgoing(  # noqa: E501
    page: Page, product: Product, tmp_path: Path
) -> None:
    case = product.new_case("E2E door matter")
    lawyer = case.lawyer
    ids = await asyncio.to_thread(
        _upload_and_read, product, case.id, lawyer.email, lawyer.password, tmp_path
    )
    await sign_in(page, lawyer)

    # The review list: the two memos are firm work product.
    await goto(page, f"{case.path}documents/?sort=name")
    origins = await page.evaluate(
        f"[...{ROWS}].filter(r => r.querySelector('[data-field=filename]')?.textContent"
        ".startsWith('e2e-door-')).map(r => [r.querySelector('[data-field=filename]')"
        ".textContent, r.querySelector('[data-field=origin]').textContent])"
    )
    assert origins == [
        [LETTER, "Client"],
        [MEMO, "Firm work product"],
        [NOTES, "Firm work product"],
    ], origins
    await shot(page, "list-work-product")

    # The lawyer ticks the three and chooses Produce.
    for document in ids.values():
        await page.check(f'#document-rows tr[data-document-id="{document}"] input[name=ids]')
    await page.click("#bulk-open-produce")
    await page.fill("#id_bulk_volume", VOLUME)
    await page.fill("#id_bulk_bates_prefix", PREFIX)
    await page.click("[data-bulk-submit=produce]")
    await arrive(page, re.compile(r"/productions/new/"))
    verdicts = await page.evaluate(VERDICTS)
    assert verdicts[LETTER].startswith("Yes"), verdicts
    for name in (MEMO, NOTES):
        assert verdicts[name].startswith(HELD), verdicts
    # A lawyer of the case gets the field for the reason.
    assert await page.is_visible(f"#include-{ids[MEMO]}")
    await shot(page, "order-held-back")

    # Created as it is: refused, nothing made.
    await _submit(page, "button[name=op][value=commit]")
    assert re.search(r"/productions/new/$", page.url), page.url
    refusal = await page.evaluate(ERRORS)
    assert "Nothing was produced: 2 documents may not leave the firm by accident." in refusal
    assert f"{MEMO} (document {ids[MEMO]}): it is firm work product." in refusal, refusal
    assert "a lawyer of the case may include it with a written reason" in refusal, refusal
    await shot(page, "refused")

    # The memo included with a reason; the notes withheld for the privilege log.
    await page.fill(f"#include-{ids[MEMO]}", REASON)
    await page.click(f'tr[data-document-id="{ids[NOTES]}"] details.withhold summary')
    await page.select_option(f"#withhold-{ids[NOTES]}", "work_product")
    await page.fill(f"#withhold-description-{ids[NOTES]}", DESCRIPTION)
    await page.fill(f"#withhold-date-{ids[NOTES]}", "2026-03-02")
    await page.fill(f"#withhold-author-{ids[NOTES]}", "A. Counsel")
    await page.fill(f"#withhold-recipients-{ids[NOTES]}", "Trial team")
    await shot(page, "include-and-withhold")
    await _submit(page, "button[name=op][value=commit]")
    assert re.search(r"/productions/\d+/$", page.url), (page.url, await page.evaluate(ERRORS))
    production_path = re.sub(r"^https?://[^/]+", "", page.url)
    await wait_for(
        page,
        "document.querySelector('[data-production-status]')?.textContent === 'Ready'"
        " && !!document.querySelector('[data-download-pdf]')",
        90,
    )
    await goto(page, production_path)  # as it is once stamped (the page reloads itself)
    produced = await page.evaluate(
        "[...document.querySelectorAll('#documents-heading + .table-wrap tbody th a')]"
        ".map(a => a.textContent.trim())"
    )
    assert produced == [LETTER, MEMO], produced
    included = await page.text_content("[data-included]")
    assert included == f"Held back (it is firm work product); included by a lawyer: “{REASON}”"
    log = await page.evaluate(
        "[...document.querySelectorAll('#privilege-heading ~ .table-wrap tbody tr')]"
        ".map(r => [...r.children].map(c => c.textContent.trim()))"
    )
    assert log == [
        [NOTES, "2 Mar 2026", "A. Counsel", "Trial team", "Attorney work product", DESCRIPTION]
    ], log
    await shot(page, "production-included-and-logged")

    # The volume, built from the page: its zip holds the privilege log as CSV and PDF.
    await page.fill("#id_image_dpi", "100")
    async with page.expect_navigation():
        await page.evaluate("document.querySelector('form[action$=\"/exports/\"]').requestSubmit()")
    await arrive(page)
    await wait_for(page, "document.querySelector('.export-list a[href$=\"/zip\"]') !== null", 120)
    await goto(page, production_path)
    zip_href = await page.get_attribute(".export-list a[href$='/zip']", "href")
    assert zip_href
    answer = await page.request.get(zip_href)  # with the page's own session
    assert answer.status == 200 and answer.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(await answer.body())) as volume_zip:
        names = volume_zip.namelist()
        log_csv = volume_zip.read(next(n for n in names if n.endswith("PRIVILEGE_LOG.csv")))
        log_pdf = volume_zip.read(next(n for n in names if n.endswith("PRIVILEGE_LOG.pdf")))
    rows = list(csv.reader(io.StringIO(log_csv.decode("utf-8-sig"))))
    assert rows == [
        ["Bates range or document", "Date", "Author", "Recipients", "Privilege", "Description"],
        [
            f"{NOTES} (document {ids[NOTES]})",
            "2026-03-02",
            "A. Counsel",
            "Trial team",
            "Attorney work product",
            DESCRIPTION,
        ],
    ], rows
    assert log_pdf.startswith(b"%PDF")
    with pymupdf.open(stream=log_pdf, filetype="pdf") as pdf:
        text = " ".join(p.get_text() for p in pdf)
    assert f"Privilege log of production {VOLUME}" in text and NOTES in text, text
    await shot(page, "volume-exported")

    # The case's activity tells the inclusion and the withholding (audited).
    await goto(page, case.path)
    lines = await page.evaluate(
        "[...document.querySelectorAll('ol.activity li')].map(li => li.textContent"
        ".replace(/\\s+/g, ' ').trim())"
    )
    assert any("in a production, with a reason" in line for line in lines), lines
    assert any("from a production (privilege log)" in line for line in lines), lines
    await shot(page, "activity")

    # The stamped volume is a document of the firm's outgoing productions.
    volume_name = f"{VOLUME}.pdf"
    await goto(page, f"{case.path}documents/?sort=name")
    volume_row = await page.evaluate(
        f"(() => {{ const r = {row(volume_name)}; return r && [r.dataset.documentId,"
        " r.querySelector('[data-field=origin]').textContent,"
        " r.querySelector('.doc-volume')?.textContent]; })()"
    )
    assert volume_row and volume_row[1:] == [
        "Outgoing production",
        f"production volume {VOLUME}",
    ], volume_row
    volume_id = volume_row[0]
    await shot(page, "list-volume")
    await goto(page, f"{case.path}documents/{volume_id}/")
    facts = await page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('dt')].map(dt =>"
        " [dt.textContent.trim(), dt.nextElementSibling?.textContent.replace(/\\s+/g, ' ')"
        ".trim()]))"
    )
    assert facts["Origin"] == "Outgoing production", facts
    assert facts["Production volume"].startswith(VOLUME), facts
    await shot(page, "volume-document")

    # Never produced again: the order screen refuses it as is, with no reason to give.
    await goto(page, f"{case.path}productions/new/?ids={volume_id}")
    verdicts = await page.evaluate(VERDICTS)
    assert verdicts[volume_name] == (
        f"{volume_name} is a production volume (the firm's outgoing production); produce its "
        "originals instead."
    ), verdicts
    assert not await page.query_selector(f"#include-{volume_id}")
    await shot(page, "volume-not-produced-again")

    # Never added to a packet beside the pages it repeats; its original goes in.
    await goto(page, f"{case.path}packets/")
    await page.fill("#id_title", "E2E door packet")
    await _submit(page, f'form[action="{case.path}packets/"] button[type=submit]')
    assert re.search(r"/packets/\d+/$", page.url), page.url
    await page.select_option("#id_document", volume_id)
    await page.fill("#id_reason", "The produced pages, for the hearing.")
    await _submit(page, 'form[action$="/items/"] button[type=submit]')
    refused = await page.evaluate(ERRORS)
    assert "it is a production volume (the firm's outgoing production)" in refused, refused
    assert "add the originals instead" in refused, refused
    await shot(page, "packet-refuses-volume")
    await page.select_option("#id_document", str(ids[LETTER]))
    await page.fill("#id_reason", "The client's letter, for the hearing.")
    await _submit(page, 'form[action$="/items/"] button[type=submit]')
    items = await page.evaluate(
        "[...document.querySelectorAll('.packet-items .packet-item__head h3 a')]"
        ".map(a => a.textContent.trim())"
    )
    assert items == [LETTER], items
    await shot(page, "packet-takes-original")
