"""A real browser against a real `make run` (issue 13 req. 9 for req. 1): productions in the
browser. Upload two PDFs, tick them in the list and choose Produce; on the new production's
page move a row with its Down button and by dragging, type the stamp and watch the preview of
page 1 appear; create it; watch the production's page turn Ready over the case's websocket;
download the stamped PDF; build the volume from the page and download its zip; see it on the
Productions tab. Screenshots are saved as artifacts (LEXWEB_E2E_SCREENSHOTS, else the test's
temporary folder)."""

import base64
import os
import signal
from pathlib import Path

import pymupdf
import pytest

from tests.e2e.cdp import Page, browser_page, chromium_path
from tests.e2e.test_documents_browser import _sign_in
from tests.running import free_port, launch, launcher_env, read_until

pytestmark = pytest.mark.asyncio

if chromium_path() is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
    pytest.skip(
        "Chromium is not installed (make test installs it as root on Debian)",
        allow_module_level=True,
    )

NAMES = ("e2e-prod-first.pdf", "e2e-prod-second.pdf")
ROWS = "document.querySelectorAll('#document-rows tr')"
PICKED = "[...document.querySelectorAll('[data-picked] tr')].map(r => r.dataset.documentId)"


async def _shot(page: Page, folder: Path, name: str) -> None:
    shot = await page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    (folder / f"productions-{name}.png").write_bytes(base64.b64decode(shot["data"]))


def _write_pdfs(folder: Path) -> list[Path]:
    paths = []
    for n, name in enumerate(NAMES, start=1):
        path = folder / name
        with pymupdf.open() as pdf:
            for k in range(n):
                pdf.new_page().insert_text(
                    (72, 72), f"Exhibit {n} for the production, page {k + 1}."
                )
            pdf.save(path)
        paths.append(path)
    return paths


async def _upload(page: Page, paths: list[Path]) -> None:
    root = await page.call("DOM.getDocument", depth=0)
    found = await page.call(
        "DOM.querySelector", nodeId=root["root"]["nodeId"], selector="input[name=files]"
    )
    await page.call("DOM.setFileInputFiles", nodeId=found["nodeId"], files=[str(p) for p in paths])
    await page.evaluate("document.querySelector('form[data-upload-api]').requestSubmit()")
    for name in NAMES:
        await page.wait_for(
            f"[...{ROWS}].find(r => r.querySelector('[data-field=filename]')?.textContent === "
            f"{name!r})?.querySelector('[data-field=status]').textContent === 'Ready'",
            90,
        )


async def _fetch(page: Page, selector: str) -> list[object]:
    """[status, content type, first bytes] of the link's download, fetched by the page."""
    result: list[object] = await page.evaluate(
        f"fetch(document.querySelector({selector!r}).href, {{credentials: 'same-origin'}})"
        ".then(async r => [r.status, r.headers.get('content-type'),"
        " new TextDecoder('latin1').decode((await r.arrayBuffer()).slice(0, 4))])"
    )
    return result


async def test_pick_order_preview_commit_watch_and_download_a_production(
    var_dir: Path, tmp_path: Path
) -> None:
    paths = _write_pdfs(tmp_path)
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
            await page.goto(f"{base}{case}documents/")
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            await _upload(page, paths)

            # Pick: tick the two documents in the list and choose the bulk action Produce.
            await page.goto(f"{base}{case}documents/?sort=name")
            ids = await page.evaluate(
                f"[...{ROWS}].filter(r => r.querySelector('[data-field=filename]')?.textContent"
                ".startsWith('e2e-prod-')).map(r => { r.querySelector('input[name=ids]').click();"
                " return r.dataset.documentId; })"
            )
            assert len(ids) == 2
            await page.evaluate(
                "window.confirm = () => true;"
                "document.querySelector('#id_bulk_action').value = 'produce';"
                "document.querySelector('#id_bulk_volume').value = 'E2EPROD1';"
                "document.querySelector('#id_bulk_bates_prefix').value = 'E2EP';"
                "document.querySelector('#bulk-form').requestSubmit();"
            )
            await page.wait_for("location.pathname.endsWith('/productions/new/')", 30)
            await page.wait_for("document.readyState === 'complete'", 30)
            assert await page.evaluate(PICKED) == ids
            assert await page.evaluate("document.querySelector('#id_volume').value") == "E2EPROD1"

            # Order: Down on the first row swaps the two, without a round trip; a drag of the
            # (now) second row above the first swaps them back.
            await page.evaluate("document.querySelector('[data-picked] [data-move=down]').click()")
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
            assert await page.evaluate("document.querySelector('[data-order]').value") == ",".join(
                ids
            )
            # Stamp: a legend, typed; the preview of page 1 follows.
            await page.evaluate(
                "const legend = document.querySelector('#id_legend');"
                "legend.value = 'CONFIDENTIAL';"
                "legend.dispatchEvent(new Event('input', {bubbles: true}));"
            )
            await page.wait_for(
                "(() => { const img = document.querySelector('[data-preview-image]');"
                " return !img.hidden && img.complete && img.naturalWidth > 500"
                " && img.src.includes('legend=CONFIDENTIAL')"
                f" && img.src.includes('/preview/{ids[0]}.png'); }})()",
                30,
            )
            await _shot(page, shots, "new-preview")
            # The Preview press names page 1's number.
            await page.evaluate(
                "document.querySelector('button[name=op][value=preview]:not([tabindex])').click()"
            )
            caption = await page.wait_for(
                "document.readyState === 'complete' &&"
                " document.querySelector('[data-preview-caption]')?.textContent"
                ".includes('will carry') && document.querySelector('[data-preview-caption]')"
                ".textContent",
                30,
            )
            assert "E2EP000001" in caption

            # Commit: the production's page, which turns Ready live.
            await page.evaluate("document.querySelector('button[value=commit]').click()")
            await page.wait_for("/\\/productions\\/\\d+\\/$/.test(location.pathname)", 30)
            await page.wait_for("document.readyState === 'complete'", 30)
            await page.wait_for(
                "document.querySelector('[data-production-status]')?.textContent === 'Ready'"
                " && !!document.querySelector('[data-download-pdf]')",
                90,
            )
            text = await page.evaluate("document.querySelector('main').textContent")
            assert "E2EP000001–E2EP000003" in text  # noqa: RUF001  (the page's en dash)
            assert "queued for stamping" in text or "Ready" in text
            status, kind, head = await _fetch(page, "[data-download-pdf]")
            assert (status, kind, head) == (200, "application/pdf", "%PDF")
            await _shot(page, shots, "detail-ready")

            # Export: build the volume from the page; its zip link appears when it is built.
            await page.evaluate(
                "document.querySelector('#id_image_dpi').value = '100';"
                "document.querySelector('form[action$=\"/exports/\"]').requestSubmit();"
            )
            await page.wait_for("document.readyState === 'complete'", 30)
            await page.wait_for(
                "document.querySelector('.export-list a[href$=\"/zip\"]') !== null", 120
            )
            status, kind, head = await _fetch(page, ".export-list a[href$='/zip']")
            assert (status, kind, head[:2]) == (200, "application/zip", "PK")  # type: ignore[index]
            await _shot(page, shots, "detail-exported")

            # The Productions tab lists it with its range and its export.
            await page.evaluate(
                "[...document.querySelectorAll('.case-nav a')]"
                ".find(a => a.textContent === 'Productions').click()"
            )
            await page.wait_for("location.pathname.endsWith('/productions/')", 30)
            await page.wait_for("document.readyState === 'complete'", 30)
            row = await page.evaluate(
                "[...document.querySelectorAll('.productions-table tbody tr')]"
                ".find(r => r.textContent.includes('E2EPROD1'))?.textContent"
            )
            assert row and "E2EP000001" in row and "Ready" in row and "zip" in row
            await _shot(page, shots, "tab")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert server.returncode == 0
    print(f"screenshots: {shots}")  # noqa: T201
