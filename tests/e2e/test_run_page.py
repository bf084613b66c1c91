"""A real browser against a real `make run` (web, the workers of the board queues, the demo's
fake backends at the reference speeds): a record PDF is uploaded, read, put in a packet and
frozen; a summary run is started from the case's New run form; the run page shows the stage
timeline and the summarizer's text arriving live, without a reload, until the run succeeds with
the model, board and speed of its stage. No page breaks the Content-Security-Policy.

Screenshots are saved under $LEXWEB_E2E_SCREENSHOTS when set, else the test's own folder.
"""

import base64
import os
import re
import signal
import threading
from pathlib import Path

import pymupdf
import pytest

from tests.e2e.cdp import Page, browser_page, chromium_path
from tests.e2e.test_csp_browser import LISTEN
from tests.e2e.test_documents_browser import _choose_file, _sign_in
from tests.e2e.test_draft_view import SEEN, _go, _note, _submit
from tests.running import free_port, launch, launcher_env, read_until

pytestmark = pytest.mark.asyncio

if chromium_path() is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
    pytest.skip(
        "Chromium is not installed (make test installs it as root on Debian)",
        allow_module_level=True,
    )

FILENAME = "e2e-ledger.pdf"
ROW = (
    "[...document.querySelectorAll('#document-rows tr')].find(r => "
    f"r.querySelector('[data-field=filename]').textContent === {FILENAME!r})"
)
# Enough facts for a summary that streams for a few seconds at the demo's reference speeds.
RECORD = [
    f"On March {day}, 2024 Acme Corp. paid ${1000 + day * 25:,}.00 to Widget Ltd. for rent."
    for day in range(1, 13)
]
# From the first moment of every page: the run's live text length and status, every 25 ms,
# so the test sees text arrive while the stage runs (a reload would start the list again).
SAMPLER = """
window.__samples = [];
window.__samePage = true;
setInterval(() => {
  const text = document.querySelector('[data-live-stage]');
  const state = document.querySelector('#run-state');
  if (text && state) window.__samples.push([state.dataset.status, text.textContent.length]);
}, 25);
"""


def _write_record(path: Path) -> None:
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        for n, line in enumerate(RECORD):
            page.insert_text((72, 72 + 16 * n), line, fontsize=10)
        pdf.save(path)


async def _shot(page: Page, folder: Path, name: str) -> None:
    shot = await page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    (folder / f"run-page-{name}.png").write_bytes(base64.b64decode(shot["data"]))


async def test_a_summary_run_streams_live_on_its_page_with_the_stage_timeline(
    var_dir: Path, tmp_path: Path
) -> None:
    pdf = tmp_path / FILENAME
    _write_record(pdf)
    shots = Path(os.environ.get("LEXWEB_E2E_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = launch(["run"], launcher_env(var_dir, port))
    base = f"http://127.0.0.1:{port}"
    SEEN.clear()
    try:
        read_until(server, "Starting worker", "running at")
        # The workers log every stage job: read the output as it comes, so that a full pipe
        # never blocks the launcher (and its clean stop at the end).
        threading.Thread(
            target=lambda: [None for _line in server.stdout or ()], daemon=True
        ).start()
        async with browser_page() as page:
            await page.call("Page.addScriptToEvaluateOnNewDocument", source=LISTEN + SAMPLER)
            # The admin opened the demo case and is on it (as staff: runs are theirs to start).
            await _sign_in(page, base)
            case = await page.evaluate(
                'document.querySelector(\'a[href^="/cases/"]:not([href="/cases/new/"])'
                ":not([href=\"/cases/break-glass/\"])').getAttribute('href')"
            )

            # The record: uploaded and read by the worker, put in a packet, frozen.
            await _go(page, f"{base}{case}documents/")
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            await _choose_file(page, pdf)
            await page.wait_for(
                f"{ROW}?.querySelector('[data-field=status]').textContent === 'Ready' && "
                f"{ROW}.querySelector('[data-field=provenance]').dataset.provenance === 'clear'",
                timeout=120,
            )
            await _go(page, f"{base}{case}packets/")
            await _submit(page, f'form[action="{case}packets/"]', {"title": "Run record"})
            document = await page.evaluate(
                "[...document.querySelectorAll('#id_document option')]"
                f".find((o) => o.textContent.startsWith({FILENAME!r})).value"
            )
            await _submit(
                page, 'form[action$="/items/"]', {"document": document, "reason": "The ledger"}
            )
            freeze = await page.evaluate(
                "document.querySelector('a[href$=\"/freeze/\"]').getAttribute('href')"
            )
            await _go(page, base + freeze)
            await _submit(page, 'form[action$="/freeze/"]', {})
            assert "Frozen" in await page.evaluate("document.body.textContent")

            # The Runs tab, its New run form: a summary of the frozen packet.
            runs = await page.evaluate(
                "document.querySelector('.case-nav a[href$=\"/runs/\"]').getAttribute('href')"
            )
            await _go(page, base + runs)
            # Until the first health checks of the demo's backends have run (every 30 s), the
            # form says no deployment is available: a person would try again a little later.
            started, refusal = False, ""
            for _attempt in range(40):
                await _go(page, f"{base}{runs}new/")
                packet = await page.evaluate(
                    "[...document.querySelectorAll('#id_packet option')]"
                    ".find((o) => o.textContent.startsWith('Run record')).value"
                )
                if not _attempt:
                    await _shot(page, shots, "1-new")
                await _submit(
                    page,
                    f'form[action="{runs}new/"]',
                    {
                        "kind": "summary",
                        "packet": packet,
                        "instructions": "Summarise the payments in the ledger, citing each page.",
                    },
                )
                started = await page.evaluate(r"/\/runs\/\d+\/$/.test(location.pathname)")
                if started:
                    break
                refusal = await page.evaluate(
                    "[...document.querySelectorAll('.alert, .errorlist')].map((e) => "
                    "e.textContent.trim()).join(' / ')"
                )
                assert "No deployment for the Summarizer role" in refusal, refusal
                await page.evaluate("new Promise((r) => setTimeout(r, 3000))")
            assert started, refusal

            # The timeline is there at once; the text arrives live; the run succeeds.
            names = await page.evaluate(
                "[...document.querySelectorAll('#timeline .stage__name')].map((h) => h.textContent)"
            )
            assert names == ["1. Summarizer"], names
            await page.wait_for(
                "document.querySelector('#live-state').textContent === 'live'", timeout=30
            )
            await page.wait_for(
                "(window.__samples || []).some(([status, length]) => status === 'running' && "
                "length > 0)",
                timeout=120,
            )
            await _shot(page, shots, "2-streaming")
            await page.wait_for(
                "document.querySelector('#run-state')?.dataset.status === 'succeeded'",
                timeout=180,
            )
            await page.wait_for(
                "document.querySelector('[data-live-stage]').textContent.length > 0", timeout=30
            )
            await _shot(page, shots, "3-succeeded")
            await _note(page)

            samples = await page.evaluate("window.__samples")
            final = await page.evaluate(
                "document.querySelector('[data-live-stage]').textContent.length"
            )
            running = [length for status, length in samples if status == "running"]
            # Seen growing in place while the stage ran: at least two lengths, never shrinking.
            assert len(set(running)) >= 2, running[:50]
            assert running == sorted(running), running[:50]
            assert max(running) <= final and final > 0
            assert await page.evaluate("window.__samePage === true")  # no reload happened
            stage = await page.evaluate(
                """(() => {
                  const li = document.querySelector('#timeline li.stage');
                  const facts = {};
                  for (const div of li.querySelectorAll('.stage__facts > div')) {
                    facts[div.querySelector('dt').textContent] = div.querySelector('dd')
                      .textContent.trim();
                  }
                  return {cls: li.className, status: li.querySelector('.stage__head')
                    .textContent, facts};
                })()"""
            )
            assert "stage--succeeded" in stage["cls"], stage
            assert stage["facts"].get("Model") and stage["facts"].get("Board"), stage
            assert stage["facts"].get("Speed", "").endswith("tokens/s"), stage
            assert "Tokens" in stage["facts"] and "Duration" in stage["facts"], stage

            # A reload shows the same text, stored.
            text = await page.evaluate("document.querySelector('[data-live-stage]').textContent")
            await page.evaluate("window.__leaving = true; location.reload()")
            await page.wait_for("!window.__leaving && document.readyState === 'complete'", 30)
            await _note(page)
            assert text == await page.evaluate(
                "document.querySelector('[data-live-stage]').textContent"
            )
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=120)
    print(f"screenshots: {shots}")  # noqa: T201
    # Documents, packets, the packet and its freezing, the Runs tab, its form, the run page.
    assert len(SEEN) >= 7, list(SEEN)
    assert any(re.search(r"/runs/\d+/$", url) for url in SEEN), list(SEEN)
    assert {url: found for url, found in SEEN.items() if found} == {}
    assert server.returncode == 0
