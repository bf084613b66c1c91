"""A real browser against a real `make run`: a text file rendered to several PDF pages (one page
of text stored) pages through its rendition by keyboard, each page with its own image and
text, and a search hit opens the rendered page holding the match with the word boxed.
Screenshots are saved as artifacts (LEXWEB_E2E_SCREENSHOTS, else the test's temporary folder)."""

import os
import signal
from pathlib import Path

import pytest

from tests.e2e.cdp import browser_page, chromium_path
from tests.e2e.test_documents_browser import _choose_file, _sign_in
from tests.e2e.test_viewer_browser import IMAGE, _arrived, _press, _shot
from tests.running import free_port, launch, launcher_env, read_until

pytestmark = pytest.mark.asyncio

if chromium_path() is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
    pytest.skip(
        "Chromium is not installed (make test installs it as root on Debian)",
        allow_module_level=True,
    )

FILENAME = "e2e-rendered-memo.txt"
ROWS = "document.querySelectorAll('#document-rows tr')"
ROW = (
    f"[...{ROWS}].find(r => r.querySelector('[data-field=filename]')?.textContent === {FILENAME!r})"
)
TEXT = "document.querySelector('.page-text')?.textContent || ''"


def _write_text(path: Path) -> None:
    lines = [f"Line {n:03d} of the rendered memo, nothing of note." for n in range(1, 241)]
    lines[199] = "Line 200 names the zeppelin contract."
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


async def test_a_rendered_text_file_pages_by_keyboard_and_opens_at_its_search_hit(
    var_dir: Path, tmp_path: Path
) -> None:
    memo = tmp_path / FILENAME
    _write_text(memo)
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
            case_id = int(case.strip("/").split("/")[-1])
            await page.goto(f"{base}{case}documents/")
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            await _choose_file(page, memo)
            await page.wait_for(
                f"{ROW}?.querySelector('[data-field=status]').textContent === 'Ready'", 60
            )
            viewer = await page.evaluate(
                f"{ROW}.querySelector('[data-field=filename]').getAttribute('href')"
            )
            document_id = int(viewer.strip("/").split("/")[-1])
            # The rendering is a job of its own, after the text is read: wait for page 2's image.
            image = f"/api/v1/cases/{case_id}/documents/{document_id}/pages/2/image?thumb=1"
            await page.wait_for(f"fetch({image!r}).then(r => r.ok)", 60)

            await page.goto(f"{base}{viewer}?page=1")
            await page.wait_for(f"{IMAGE}?.complete && {IMAGE}.naturalWidth > 0", 30)
            count = int(await page.evaluate("document.querySelector('#viewer-page').max"))
            thumbs = await page.evaluate("document.querySelectorAll('[data-thumb]').length")
            assert count >= 3 and thumbs == count
            assert "Line 001 " in await page.evaluate(TEXT)
            await _shot(page, shots, "rendered-page-1")

            await _press(page, "j", "KeyJ", 74, "j")
            await _arrived(page, "page=2")
            assert await page.evaluate("!!document.getElementById('page-2')")
            text = await page.evaluate(TEXT)
            assert "Line 001 " not in text and "Line " in text
            src = await page.evaluate(f"{IMAGE}.getAttribute('src')")
            assert f"/documents/{document_id}/pages/2/image" in src
            await _shot(page, shots, "rendered-page-2")

            await _press(page, "ArrowRight", "ArrowRight", 39)
            await _arrived(page, "page=3")
            await _press(page, "k", "KeyK", 75, "k")
            await _arrived(page, "page=2")

            # A search hit opens the rendered page holding the word, boxed on its image.
            await page.goto(f"{base}{viewer}?page=hit&q=zeppelin")
            await page.wait_for(f"{IMAGE}?.complete && {IMAGE}.naturalWidth > 0", 30)
            await page.wait_for("document.querySelectorAll('.viewer-hit').length === 1", 30)
            shown = int(await page.evaluate("document.querySelector('#viewer-page').value"))
            assert shown > 1 and "zeppelin" in await page.evaluate(TEXT)
            await _shot(page, shots, "rendered-search-hit")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert server.returncode == 0
    print(f"screenshots: {shots}")  # noqa: T201
