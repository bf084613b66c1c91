"""A real browser against a real `make run`: upload a PDF on the demo case's documents page and
watch its row reach "Ready" over the websocket, without reloading the page."""

import os
import signal
from pathlib import Path

import pymupdf
import pytest

from tests.e2e.cdp import Page, browser_page, chromium_path
from tests.running import ADMIN_PASSWORD, free_port, launch, launcher_env, read_until

pytestmark = pytest.mark.asyncio

if chromium_path() is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
    pytest.skip(
        "Chromium is not installed (make test installs it as root on Debian)",
        allow_module_level=True,
    )

FILENAME = "e2e-brief.pdf"
ROW = (
    "[...document.querySelectorAll('#document-rows tr')].find(r => "
    f"r.querySelector('[data-field=filename]').textContent === {FILENAME!r})"
)


def _write_pdf(path: Path) -> None:
    with pymupdf.open() as pdf:
        for n in (1, 2):
            pdf.new_page().insert_text((72, 72), f"Brief for the browser test, page {n}.")
        pdf.save(path)


async def _sign_in(page: Page, base: str) -> None:
    await page.goto(f"{base}/")
    await page.evaluate(
        "document.querySelector('#id_username').value = 'admin@lexweb.local';"
        f"document.querySelector('#id_password').value = {ADMIN_PASSWORD!r};"
        "document.querySelector('form[method=post] button[type=submit]').click();"
    )
    await page.wait_for("location.pathname === '/'", timeout=30)
    await page.wait_for("document.readyState === 'complete'", timeout=30)


async def _choose_file(page: Page, path: Path) -> None:
    """Set the file input as a person choosing a file would, then press Upload (which sends
    nothing more if choosing the file already started its upload)."""
    root = await page.call("DOM.getDocument", depth=0)
    found = await page.call(
        "DOM.querySelector", nodeId=root["root"]["nodeId"], selector="input[name=files]"
    )
    await page.call("DOM.setFileInputFiles", nodeId=found["nodeId"], files=[str(path)])
    await page.evaluate("document.querySelector('form[data-upload-api]').requestSubmit()")


async def test_uploaded_pdf_row_turns_ready_live_without_reload(
    var_dir: Path, tmp_path: Path
) -> None:
    pdf = tmp_path / FILENAME
    _write_pdf(pdf)
    port = free_port()
    server = launch(["run"], launcher_env(var_dir, port))
    base = f"http://127.0.0.1:{port}"
    try:
        read_until(server, "Starting worker", "running at")
        async with browser_page() as page:
            await _sign_in(page, base)
            case_link = await page.wait_for(
                'document.querySelector(\'a[href^="/cases/"]:not([href="/cases/new/"])\')'
                "?.getAttribute('href')",
                timeout=10,
            )
            await page.goto(base + case_link)
            documents = await page.evaluate(
                "document.querySelector('.case-nav a[href$=\"/documents/\"]').getAttribute('href')"
            )
            await page.goto(base + documents)
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            await page.evaluate("window.__sameDocument = true")

            await _choose_file(page, pdf)

            result = await page.wait_for(
                "document.querySelector('#upload-progress .upload-item--created')?.textContent",
                timeout=30,
            )
            assert FILENAME in result and "Added" in result
            status = await page.wait_for(
                f"{ROW}?.querySelector('[data-field=status]').textContent === 'Ready' && "
                f"{ROW}.querySelector('[data-field=pages]').textContent",
                timeout=60,
            )
            assert status == "2 of 2 pages"
            # The registry's verdict came with the last event: checked once the text was read.
            verdict = await page.wait_for(
                f"{ROW}.querySelector('[data-field=provenance]').dataset.provenance === 'clear' && "
                f"{ROW}.querySelector('[data-field=provenance]').textContent",
                timeout=30,
            )
            assert verdict == "Clear"
            # One upload, and the row came over the socket: the page never reloaded.
            assert (
                await page.evaluate("document.querySelectorAll('#upload-progress li').length") == 1
            )
            assert await page.evaluate("window.__sameDocument === true")
            assert await page.evaluate("location.pathname") == documents
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert server.returncode == 0
