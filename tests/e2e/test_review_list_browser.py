"""A real browser against a real `make run` (issue 13 req. 9 for req. 7 and 2): the case page's
activity feed in words, the worker check on its health page answering live, and the review
list: upload, select all, bulk tag, filter by the tag. Screenshots are saved as artifacts
(LEXWEB_E2E_SCREENSHOTS, else the test's temporary folder)."""

import base64
import os
import signal
from pathlib import Path

import pytest

from tests.e2e.cdp import Page, browser_page, chromium_path
from tests.e2e.test_documents_browser import _choose_file, _sign_in, _write_pdf
from tests.running import free_port, launch, launcher_env, read_until

pytestmark = pytest.mark.asyncio

if chromium_path() is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
    pytest.skip(
        "Chromium is not installed (make test installs it as root on Debian)",
        allow_module_level=True,
    )

FILENAME = "e2e-review.pdf"
ROWS = "document.querySelectorAll('#document-rows tr')"


async def _shot(page: Page, folder: Path, name: str) -> None:
    shot = await page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    (folder / f"review-{name}.png").write_bytes(base64.b64decode(shot["data"]))


async def test_case_feed_health_check_and_review_list_in_a_browser(
    var_dir: Path, tmp_path: Path
) -> None:
    pdf = tmp_path / FILENAME
    _write_pdf(pdf)
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
            # The review list: upload a PDF and wait for it to be read.
            await page.goto(f"{base}{case}documents/")
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            await _choose_file(page, pdf)
            row = (
                f"[...{ROWS}].find(r => r.querySelector('[data-field=filename]')"
                f"?.textContent === {FILENAME!r})"
            )
            await page.wait_for(
                f"{row}?.querySelector('[data-field=status]').textContent === 'Ready'", 60
            )
            await page.goto(f"{base}{case}documents/")
            # Select all ticks every row's box and counts them; bulk-tag them.
            await page.evaluate("document.querySelector('[data-select-all]').click()")
            rows = await page.evaluate(f"{ROWS}.length")
            counted = await page.evaluate(
                "document.querySelector('[data-selected-count]').textContent"
            )
            assert rows >= 1 and counted == str(rows)
            await page.evaluate(
                "window.confirm = () => true;"
                "document.querySelector('#id_bulk_action').value = 'tag';"
                "document.querySelector('#id_bulk_tag_name').value = 'e2e-hot';"
                "document.querySelector('#bulk-form').requestSubmit();"
            )
            await page.wait_for("document.readyState === 'complete' && location.search === ''", 30)
            message = await page.wait_for(
                "[...document.querySelectorAll('.message, .messages li')]"
                ".map(m => m.textContent).join(' ')",
                10,
            )
            assert "e2e-hot" in message
            await _shot(page, shots, "list-tagged")
            # Filter by the tag: only tagged rows, each with its badge.
            await page.evaluate(
                "const tag = document.querySelector('#id_tag');"
                "tag.value = [...tag.options].find(o => o.textContent === 'e2e-hot').value;"
                "document.querySelector('form.list-filters').requestSubmit();"
            )
            await page.wait_for("location.search.includes('tag=')", 30)
            await page.wait_for("document.readyState === 'complete'", 30)
            badges = await page.evaluate(
                f"[...{ROWS}].every(r => r.querySelector('.doc-tag')?.textContent === 'e2e-hot')"
            )
            assert badges and await page.evaluate(f"{ROWS}.length") == rows
            await _shot(page, shots, "list-filtered")

            # The case page: the feed in words, no audit codes, no worker button.
            await page.goto(base + case)
            feed = await page.evaluate("document.querySelector('ol.activity')?.textContent || ''")
            assert "uploaded" in feed and "tagged" in feed
            assert await page.evaluate("document.querySelector('.activity code') === null")
            assert await page.evaluate(
                "document.querySelector('form[action$=\"/worker-check/\"]') === null"
            )
            await _shot(page, shots, "case-feed")

            # The health page: the check goes through a worker and answers on the page.
            await page.goto(f"{base}{case}health/")
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            await page.evaluate(
                "document.querySelector('form[action$=\"/worker-check/\"]').requestSubmit()"
            )
            notice = await page.wait_for(
                "[...document.querySelectorAll('#live-notices .toast')]"
                ".map(t => t.textContent).find(t => t.includes('ran the live-update check'))",
                60,
            )
            assert "Worker on" in notice
            await _shot(page, shots, "health-check")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert server.returncode == 0
    print(f"screenshots: {shots}")  # noqa: T201
