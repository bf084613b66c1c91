"""A real browser against a real `make run` (issue 13 req. 9 for req. 4): a paralegal types a
custodian, uploads a ZIP holding a Word document and an Outlook message, and sees the archive and
its members read, each with that custodian. Screenshots are saved as artifacts."""

import asyncio
from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.documents.test_formats_office import docx_bytes, msg_bytes, zip_bytes
from tests.e2e.steps import choose_files, row
from tests.harness.browser import goto, shot, sign_in, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

ARCHIVE = "e2e-smith-production.zip"
MEMBERS = ("e2e-smith-memo.docx", "e2e-smith-terms.msg")
CUSTODIAN = "J. Smith (CFO)"


async def test_zip_of_word_and_outlook_uploaded_with_a_custodian_in_a_browser(
    page: Page, product: Product, tmp_path: Path
) -> None:
    archive = tmp_path / ARCHIVE
    archive.write_bytes(
        zip_bytes(
            [
                (f"smith/{MEMBERS[0]}", docx_bytes()),
                (f"smith/{MEMBERS[1]}", msg_bytes(subject="E2E settlement terms")),
            ]
        )
    )
    case = product.new_case()
    # The paralegal: the case's staff member.
    await sign_in(page, case.staff)
    documents = f"{case.path}documents/"
    await goto(page, documents)
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await page.fill("#id_upload_custodian", CUSTODIAN)
    await page.select_option("form[data-upload-api] [name=origin]", "client")
    await choose_files(page, archive)
    result = await wait_for(
        page,
        "document.querySelector('#upload-progress .upload-item--created')?.textContent",
        60,
    )
    assert ARCHIVE in result and "Added" in result
    await shot(page, "uploaded")

    # The archive and both members are read (Ready), each with the custodian typed.
    ready = " && ".join(
        f"{row(name)}?.querySelector('[data-field=status]').textContent === 'Ready'"
        for name in (ARCHIVE, *MEMBERS)
    )
    for _attempt in range(30):
        await goto(page, documents)
        if await page.evaluate(ready):
            break
        await asyncio.sleep(2)  # members are read by the worker; the list is reloaded
    assert await page.evaluate(ready)
    custodians = await page.evaluate(
        "["
        + ", ".join(
            f"{row(name)}.querySelector('[data-field=custodian]').textContent"
            for name in (ARCHIVE, *MEMBERS)
        )
        + "]"
    )
    assert custodians == [CUSTODIAN] * 3
    # The members show where they came from.
    parent = await page.evaluate(
        f"{row(MEMBERS[0])}.querySelector('.doc-parent')?.textContent || ''"
    )
    assert parent == f"in {ARCHIVE}"
    await shot(page, "list")
