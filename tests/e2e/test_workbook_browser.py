"""A real browser against a real `make run`: a workbook's rendering (issue 25 req 6, "an Excel
date cut to 2025-01-0"). A ledger of several pages whose date column is Excel's default width
(dates typed as text beside a filled cell, and real dates) is uploaded; the viewer shows its
rendering to PDF page by page, and each page's text, read from that PDF (what the image
shows), holds every date whole: none cut, none shown as ###. Each page is checked with axe;
screenshots are saved as artifacts."""

import datetime
import re
from pathlib import Path

import openpyxl
import pytest
from playwright.async_api import Page

from tests.e2e.steps import upload_rendered
from tests.e2e.test_viewer_browser import arrived
from tests.harness.browser import shot
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

FILENAME = "e2e-ledger.xlsx"
TEXT = "document.querySelector('.page-text')?.textContent || ''"
ROWS = 150  # three pages or more of LibreOffice's print layout


def _ledger(path: Path) -> list[str]:
    """The workbook, and the dates its cells hold as a person reads them (yyyy-mm-dd)."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["Date", "Item", "Amount"])
    dates = []
    start = datetime.date(2025, 1, 5)
    for n in range(ROWS):
        day = start + datetime.timedelta(days=n)
        # Every other date typed as text (cut by the filled cell beside it when too wide), the
        # others Excel dates (shown as ### when too wide).
        value: object = day.isoformat() if n % 2 == 0 else day
        sheet.append([value, f"Rent instalment {n + 1}, as invoiced", 1250.5 + n])
        dates.append(day.isoformat())
    workbook.save(path)
    return dates


async def test_a_workbooks_rendering_shows_every_date_whole(
    page: Page, product: Product, tmp_path: Path
) -> None:
    ledger = tmp_path / FILENAME
    dates = _ledger(ledger)
    await upload_rendered(page, product, ledger, timeout=90)
    count = int(await page.evaluate("document.querySelector('#viewer-page').max"))
    assert count >= 2, count
    source = await page.evaluate("document.querySelector('.viewer-text-source')?.textContent")
    assert source and source.startswith("the rendering to PDF, page 1"), source
    shown: list[str] = []
    for number in range(1, count + 1):
        if number > 1:
            await page.keyboard.press("j")
            await arrived(page, f"page={number}")
        text = await page.evaluate(TEXT)
        assert "###" not in text, (number, text[:400])
        # Every date on the page is whole: each "2025-" starts a whole yyyy-mm-dd.
        whole = re.findall(r"\b2025-\d\d-\d\d\b", text)
        assert len(whole) == text.count("2025-"), (number, text[:400])
        shown += whole
        await shot(page, f"ledger-page-{number}")
    assert shown == dates, (len(shown), len(dates), [d for d in dates if d not in shown][:5])
