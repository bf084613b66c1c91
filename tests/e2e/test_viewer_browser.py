"""A real browser against a real `make run` (issue 13 req. 9 for req. 3): the document viewer.
Keys move between pages and documents, a thumbnail opens its page, zoom sizes the page, a
search's word is boxed on the page image, the stamped/original toggle swaps in the produced
page, and Bates lookup shows the stamped page. Screenshots are saved as artifacts
(LEXWEB_E2E_SCREENSHOTS, else the test's temporary folder)."""

import base64
import json
import os
import signal
from pathlib import Path

import pymupdf
import pytest

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

FILENAME = "e2e-viewer.pdf"
ROWS = "document.querySelectorAll('#document-rows tr')"
ROW = (
    f"[...{ROWS}].find(r => r.querySelector('[data-field=filename]')?.textContent === {FILENAME!r})"
)
IMAGE = "document.querySelector('#viewer-image')"
ZOOMED = 595 / 72 * 96 * 2  # CSS pixels across the page at 200%
# What the zoom did, for the message of a failed wait.
STATE = (
    f"JSON.stringify({{width: {IMAGE}.getBoundingClientRect().width, style: {IMAGE}.style.width,"
    f"src: {IMAGE}.getAttribute('src'), natural: {IMAGE}.naturalWidth,"
    f"complete: {IMAGE}.complete, zoom: {IMAGE}.parentElement.dataset.zoom,"
    f"classes: {IMAGE}.parentElement.className}})"
)


def _write_pdf(path: Path) -> None:
    with pymupdf.open() as pdf:
        for n in (1, 2, 3):
            words = "the zygomatic indemnity clause" if n == 2 else "nothing of note"
            pdf.new_page().insert_text((72, 100), f"Viewer test page {n}: {words}.", fontsize=14)
        pdf.save(path)


async def _shot(page: Page, folder: Path, name: str) -> None:
    shot = await page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    (folder / f"viewer-{name}.png").write_bytes(base64.b64decode(shot["data"]))


async def _press(page: Page, key: str, code: str, key_code: int, text: str = "") -> None:
    for kind in ("keyDown", "keyUp"):
        await page.call(
            "Input.dispatchKeyEvent",
            type=kind if text or kind == "keyUp" else "rawKeyDown",
            key=key,
            code=code,
            windowsVirtualKeyCode=key_code,
            **({"text": text} if text and kind == "keyDown" else {}),
        )


async def _arrived(page: Page, fragment: str) -> None:
    await page.wait_for(
        f"location.search.includes({fragment!r}) && document.readyState === 'complete'", 30
    )
    await page.wait_for(f"{IMAGE}?.complete && {IMAGE}.naturalWidth > 0", 30)


async def _api(page: Page, method: str, path: str, body: object | None = None) -> dict:
    """Call the API as the signed-in browser does (session and CSRF token of the page)."""
    script = (
        "(async () => { const token = document.querySelector('[name=csrfmiddlewaretoken]')"
        "?.value || '';"
        f"const r = await fetch({path!r}, {{method: {method!r}, credentials: 'same-origin',"
        "headers: {'Content-Type': 'application/json', 'X-CSRFToken': token},"
        f"body: {json.dumps(json.dumps(body)) if body is not None else 'undefined'}}});"
        "return {status: r.status, body: await r.json()}; })()"
    )
    result: dict = await page.evaluate(script)
    return result


async def test_viewer_keys_thumbnails_zoom_hits_and_stamped_pages(
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
            case_id = int(case.strip("/").split("/")[-1])
            await page.goto(f"{base}{case}documents/")
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            await _choose_file(page, pdf)
            await page.wait_for(
                f"{ROW}?.querySelector('[data-field=status]').textContent === 'Ready'", 60
            )
            viewer = await page.evaluate(
                f"{ROW}.querySelector('[data-field=filename]').getAttribute('href')"
            )
            document_id = int(viewer.strip("/").split("/")[-1])

            # Produce it, through the API the browser session may use.
            made = await _api(
                page,
                "POST",
                f"/api/v1/cases/{case_id}/productions",
                {"volume": "VWR001", "prefix": "VWR", "document_ids": [document_id]},
            )
            assert made["status"] == 201, made
            production = made["body"]["id"]
            ready = (
                f"fetch('/api/v1/cases/{case_id}/productions/{production}')"
                ".then(r => r.json()).then(p => p.status === 'ready')"
            )
            await page.wait_for(ready, 60)

            # Keys: j / ArrowRight next page, k previous.
            await page.goto(f"{base}{viewer}?page=1")
            await page.wait_for(f"{IMAGE}?.complete && {IMAGE}.naturalWidth > 0", 30)
            assert "VWR000001" in await page.evaluate(
                "document.querySelector('.viewer-bates').textContent"
            )
            await _press(page, "j", "KeyJ", 74, "j")
            await _arrived(page, "page=2")
            await _press(page, "ArrowRight", "ArrowRight", 39)
            await _arrived(page, "page=3")
            await _press(page, "k", "KeyK", 75, "k")
            await _arrived(page, "page=2")
            await _shot(page, shots, "keyboard-page-2")

            # A thumbnail opens its page.
            await page.evaluate("document.querySelector('[data-thumb=\"3\"]').click()")
            await _arrived(page, "page=3")
            assert (
                await page.evaluate(
                    "document.querySelector('[aria-current=page][data-thumb]').dataset.thumb"
                )
                == "3"
            )
            await _shot(page, shots, "thumbnail-page-3")

            # Zoom: 200% is twice the printed width (A4, 595 points, at 96 CSS px to the inch);
            # fit width is the column's width.
            await page.evaluate("document.querySelector('[data-zoom=\"200\"]').click()")
            try:
                await page.wait_for(
                    f"Math.abs({IMAGE}.getBoundingClientRect().width - {ZOOMED}) < 3", 30
                )
            except AssertionError:
                raise AssertionError(await page.evaluate(STATE)) from None
            await _shot(page, shots, "zoom-200")
            await page.evaluate("document.querySelector('[data-zoom=\"width\"]').click()")
            await page.wait_for(
                f"Math.abs({IMAGE}.getBoundingClientRect().width - "
                f"{IMAGE}.closest('.viewer-figure').clientWidth) < 3",
                30,
            )
            await _shot(page, shots, "zoom-fit-width")

            # From search: the hit's page opens with the word boxed on the image.
            await page.goto(f"{base}{case}search/?q=zygomatic")
            link = await page.wait_for(
                "document.querySelector('.search-hit a[href*=\"q=zygomatic\"]')?.href", 10
            )
            assert "page=2" in link
            await page.evaluate(
                "document.querySelector('.search-hit a[href*=\"q=zygomatic\"]').click()"
            )
            await _arrived(page, "q=zygomatic")
            await page.wait_for("document.querySelectorAll('.viewer-hit').length === 1", 30)
            inside = await page.evaluate(
                "(() => { const b = document.querySelector('.viewer-hit').getBoundingClientRect();"
                f"const i = {IMAGE}.getBoundingClientRect();"
                "return b.width > 20 && b.left > i.left && b.right < i.right && b.top > i.top"
                " && b.bottom < i.top + i.height / 4; })()"
            )
            assert inside
            await _shot(page, shots, "search-hit")

            # Stamped / original: "s" swaps in page 2 of the stamped volume, and back.
            await _press(page, "s", "KeyS", 83, "s")
            await _arrived(page, f"stamped={production}")
            source = await page.evaluate(f"{IMAGE}.getAttribute('src')")
            assert f"/documents/{document_id}/" not in source and "/pages/2/image" in source
            assert "VWR000002" in await page.evaluate(
                "document.querySelector('.viewer-figure figcaption').textContent"
            )
            await _shot(page, shots, "stamped")
            await _press(page, "s", "KeyS", 83, "s")
            await page.wait_for(
                "!location.search.includes('stamped=') && document.readyState === 'complete'", 30
            )
            assert f"/documents/{document_id}/pages/2/image" in await page.evaluate(
                f"{IMAGE}.getAttribute('src')"
            )

            # Bates lookup shows the stamped page.
            await page.goto(f"{base}{case}bates/?ref=VWR000002")
            stamped = await page.wait_for(
                "document.querySelector('.bates-stamped img')?.complete && "
                "document.querySelector('.bates-stamped img').naturalWidth > 0 && "
                "document.querySelector('.bates-stamped img').getAttribute('src')",
                30,
            )
            assert f"/documents/{document_id}/" not in stamped
            await _shot(page, shots, "bates-lookup")

            # n / p: the next and previous document in the case's order.
            await page.goto(f"{base}{viewer}?page=1")
            before = await page.evaluate("location.pathname")
            has_next = await page.evaluate(
                "!!document.querySelector('a[data-key=\"next-document\"]')"
            )
            if has_next:
                await _press(page, "n", "KeyN", 78, "n")
                await page.wait_for(
                    f"location.pathname !== {before!r} && document.readyState === 'complete'", 30
                )
                await _press(page, "p", "KeyP", 80, "p")
                await page.wait_for(
                    f"location.pathname === {before!r} && document.readyState === 'complete'", 30
                )
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert server.returncode == 0
    print(f"screenshots: {shots}")  # noqa: T201
