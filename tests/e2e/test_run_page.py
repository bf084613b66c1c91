"""A real browser against a real `make run` (web, the workers of the board queues, the demo's
fake backends at the reference speeds): a record PDF is uploaded, read, put in a packet and
frozen; a summary run is started from the case's New run form; the run page shows the stage
timeline and the summarizer's text arriving live, without a reload, until the run succeeds with
the model, board and speed of its stage. No page breaks the Content-Security-Policy.

Screenshots of each step are saved as test artifacts.
"""

import re
from pathlib import Path

import pytest
from playwright.async_api import Page

from tests.e2e.steps import Visits, frozen_packet_of, start_run, write_pdf
from tests.harness.browser import arrive, listen_for_csp, shot, sign_in, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

FILENAME = "e2e-ledger.pdf"
# Enough facts for a summary that streams for a few seconds at the demo's reference speeds.
RECORD = [
    f"On March {day}, 2024 Acme Corp. paid ${1000 + day * 25:,}.00 to Widget Ltd. for rent."
    for day in range(1, 13)
]
# From the first moment of every page: the run's live text length and status, every 25 ms,
# so the test sees text arrive while the stage runs (a reload would start the list again).
SAMPLER = """
window.__samples = [];
setInterval(() => {
  const text = document.querySelector('[data-live-stage]');
  const state = document.querySelector('#run-state');
  if (text && state) window.__samples.push([state.dataset.status, text.textContent.length]);
}, 25);
"""
RUN_STATUS = "document.querySelector('#run-state')?.dataset.status"
LIVE_TEXT = "document.querySelector('[data-live-stage]').textContent"
STAGE = """(() => {
  const li = document.querySelector('#timeline li.stage');
  const facts = {};
  for (const div of li.querySelectorAll('.stage__facts > div')) {
    facts[div.querySelector('dt').textContent] = div.querySelector('dd').textContent.trim();
  }
  return {cls: li.className, status: li.querySelector('.stage__head').textContent, facts};
})()"""


async def test_a_summary_run_streams_live_on_its_page_with_the_stage_timeline(
    page: Page, product: Product, tmp_path: Path
) -> None:
    pdf = write_pdf(tmp_path / FILENAME, ["\n".join(RECORD)], fontsize=10)
    case = product.new_case()
    visits = Visits()
    await listen_for_csp(page)
    await page.add_init_script(SAMPLER)
    await sign_in(page, case.lawyer)
    await frozen_packet_of(page, visits, case.path, pdf, title="Run record", reason="The ledger")

    # The Runs tab, its New run form: a summary of the frozen packet.
    runs = await page.get_attribute('.case-nav a[href$="/runs/"]', "href")
    assert runs
    await visits.go(page, runs)
    await visits.go(page, f"{runs}new/")
    await shot(page, "1-new")
    refusals = await start_run(
        page, visits, runs, packet="Run record", kind="summary",
        instructions="Summarise the payments in the ledger, citing each page.",
    )  # fmt: skip
    # Before the first health checks the form may refuse: for the role's backends only.
    assert all("Summarizer role" in refusal for refusal in refusals), refusals
    # A reload would drop this: its survival proves the page was never reloaded.
    await page.evaluate("window.__samePage = true")

    # The timeline is there at once; the text arrives live; the run succeeds.
    names = await page.evaluate(
        "[...document.querySelectorAll('#timeline .stage__name')].map((h) => h.textContent)"
    )
    assert names == ["1. Summarizer"], names
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await wait_for(
        page,
        "window.__samples.some(([status, length]) => status === 'running' && length > 0)",
        120,
    )
    await shot(page, "2-streaming")
    await wait_for(page, f"{RUN_STATUS} === 'succeeded'", 180)
    await wait_for(page, f"{LIVE_TEXT}.length > 0")
    await shot(page, "3-succeeded")
    await visits.note(page)

    samples = await page.evaluate("window.__samples")
    final = await page.evaluate(f"{LIVE_TEXT}.length")
    running = [length for status, length in samples if status == "running"]
    # Seen growing in place while the stage ran: at least two lengths, never shrinking.
    assert len(set(running)) >= 2, running[:50]
    assert running == sorted(running), running[:50]
    assert max(running) <= final and final > 0
    assert await page.evaluate("window.__samePage === true")  # no reload happened
    assert await page.evaluate("performance.getEntriesByType('navigation').length") == 1
    stage = await page.evaluate(STAGE)
    assert "stage--succeeded" in stage["cls"], stage
    assert stage["facts"].get("Model") and stage["facts"].get("Board"), stage
    assert stage["facts"].get("Speed", "").endswith("tokens/s"), stage
    assert "Tokens" in stage["facts"] and "Duration" in stage["facts"], stage

    # A reload shows the same text, stored.
    text = await page.evaluate(LIVE_TEXT)
    await page.reload()
    await arrive(page)
    await visits.note(page)
    assert await page.evaluate("window.__samePage") is None
    assert text == await page.evaluate(LIVE_TEXT)

    # Documents, packets, the packet and its freezing, the Runs tab, its form, the run page.
    assert len(visits.seen) >= 7, list(visits.seen)
    assert any(re.search(r"/runs/\d+/$", url) for url in visits.seen), list(visits.seen)
    assert visits.violations() == {}
