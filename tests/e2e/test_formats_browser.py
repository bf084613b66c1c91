"""A real browser against a real `make run` (issue 13 req. 9 for req. 4): a paralegal types a
custodian, uploads a ZIP holding a Word document and an Outlook message, and sees the archive and
its members read, each with that custodian. Screenshots are saved as artifacts
(LEXWEB_E2E_SCREENSHOTS, else the test's temporary folder)."""

import asyncio
import base64
import os
import signal
from pathlib import Path

import pytest

from tests.documents.test_formats_office import docx_bytes, msg_bytes, zip_bytes
from tests.e2e.cdp import Page, browser_page, chromium_path
from tests.e2e.test_documents_browser import _choose_file, _sign_in
from tests.running import free_port, launch, launcher_env, read_until

pytestmark = pytest.mark.asyncio

if chromium_path() is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
    pytest.skip(
        "Chromium is not installed (make test installs it as root on Debian)",
        allow_module_level=True,
    )

ARCHIVE = "e2e-smith-production.zip"
MEMBERS = ("e2e-smith-memo.docx", "e2e-smith-terms.msg")
CUSTODIAN = "J. Smith (CFO)"


def _row(filename: str) -> str:
    return (
        "[...document.querySelectorAll('#document-rows tr')].find(r => "
        f"r.querySelector('[data-field=filename]')?.textContent === {filename!r})"
    )


async def _reload(page: Page, url: str) -> None:
    """Load `url` afresh: wait for the new document, not the one being left."""
    await page.evaluate("window.__leaving = true")
    await page.goto(url)
    await page.wait_for("window.__leaving === undefined && document.readyState === 'complete'", 30)


async def _shot(page: Page, folder: Path, name: str) -> None:
    shot = await page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    (folder / f"formats-{name}.png").write_bytes(base64.b64decode(shot["data"]))


async def test_zip_of_word_and_outlook_uploaded_with_a_custodian_in_a_browser(
    var_dir: Path, tmp_path: Path
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
    shots = Path(os.environ.get("LEXWEB_E2E_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = launch(["run"], launcher_env(var_dir, port))
    base = f"http://127.0.0.1:{port}"
    try:
        read_until(server, "Starting worker", "running at")
        async with browser_page() as page:
            await _sign_in(page, base)
            case = await page.wait_for(
                'document.querySelector(\'a[href^="/cases/"]:not([href="/cases/new/"])'
                ":not([href=\"/cases/break-glass/\"])')?.getAttribute('href')",
                timeout=10,
            )
            documents = f"{base}{case}documents/"
            await page.goto(documents)
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            await page.evaluate(
                f"document.querySelector('#id_upload_custodian').value = {CUSTODIAN!r};"
                "document.querySelector('form[data-upload-api] [name=origin]').value = 'client';"
            )
            await _choose_file(page, archive)
            result = await page.wait_for(
                "document.querySelector('#upload-progress .upload-item--created')?.textContent",
                timeout=60,
            )
            assert ARCHIVE in result and "Added" in result
            await _shot(page, shots, "uploaded")

            # The archive and both members are read (Ready), each with the custodian typed.
            ready = " && ".join(
                f"{_row(name)}?.querySelector('[data-field=status]').textContent === 'Ready'"
                for name in (ARCHIVE, *MEMBERS)
            )
            for _attempt in range(30):
                await _reload(page, documents)
                if await page.evaluate(ready):
                    break
                await asyncio.sleep(2)  # members are read by the worker; the list is reloaded
            assert await page.evaluate(ready)
            custodians = await page.evaluate(
                "["
                + ", ".join(
                    f"{_row(name)}.querySelector('[data-field=custodian]').textContent"
                    for name in (ARCHIVE, *MEMBERS)
                )
                + "]"
            )
            assert custodians == [CUSTODIAN] * 3
            # The members show where they came from.
            parent = await page.evaluate(
                f"{_row(MEMBERS[0])}.querySelector('.doc-parent')?.textContent || ''"
            )
            assert parent == f"in {ARCHIVE}"
            await _shot(page, shots, "list")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert server.returncode == 0
    print(f"screenshots: {shots}")  # noqa: T201
