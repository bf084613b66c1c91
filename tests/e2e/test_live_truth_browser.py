"""Live views that stay true (issue 25 req 3), in Chromium against a real `make run`:

- the review list: drawn empty ("0 documents."), then an e-mail with a PDF attachment and a
  PDF uploaded from the page: every live row, the attachment's included, shows what the same
  row shows after a reload (kind, origin, custodian, pages, size, its "attachment of" badge,
  the verdict), and the count line counts the rows; then, with the page's socket dropped, a
  document uploaded elsewhere: on reconnecting the page shows its full row and the new count;
- the job queues page: a worker's jobs change its figures without a reload;
- the run page: the status sentence follows a run from "Queued"/"Running" to "Finished", never
  left saying it is queued, and the refusal of a run names what is missing.

Screenshots of each step are kept as test artifacts; axe checks every page opened.
"""

import asyncio
import contextlib
import json
import re
from email.message import EmailMessage
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, Route

from tests.e2e.steps import (
    ROWS,
    Visits,
    choose_files,
    frozen_packet_of,
    row,
    start_run,
    wait_ready,
    write_pdf,
)
from tests.e2e.test_case_feed_browser import SOCKETS
from tests.faults.product import scanned_pdf
from tests.harness.browser import (
    csp_violations,
    goto,
    listen_for_csp,
    shot,
    sign_in,
    sign_out,
    wait_for,
)
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

COUNT = "document.querySelector('#list-count')?.textContent.trim()"
# Each row's cells as text, the row's own checkbox left out (its state is the reader's).
ROW_TEXTS = f"""Object.fromEntries([...{ROWS}].map((r) => [
  r.querySelector('[data-field=filename]').textContent,
  [...r.cells].slice(1).map((c) => c.textContent.replace(/\\s+/g, ' ').trim()),
]))"""


def _email_with_attachment(path: Path, attachment: Path) -> Path:
    message = EmailMessage()
    message["From"] = "Jane Roe <jane@acme.test>"
    message["To"] = "Counsel <counsel@firm.test>"
    message["Subject"] = "The invoice"
    message["Date"] = "Mon, 06 Jan 2025 10:00:00 +0000"
    message.set_content("The invoice is attached.")
    message.add_attachment(
        attachment.read_bytes(), maintype="application", subtype="pdf", filename=attachment.name
    )
    path.write_bytes(message.as_bytes())
    return path


def _upload(client: httpx.Client, case_id: int, pdf: Path) -> None:
    with pdf.open("rb") as source:
        answer = client.post(
            f"/api/v1/cases/{case_id}/documents",
            files={"files": (pdf.name, source, "application/pdf")},
            data={"origin": "client", "custodian": "Elsewhere"},
            headers={"X-CSRFToken": client.cookies.get("csrftoken") or ""},
        )
    assert answer.status_code == 201, answer.text[:2000]


async def test_the_review_lists_live_rows_and_count_are_those_of_a_reload(
    page: Page, product: Product, tmp_path: Path
) -> None:
    invoice = write_pdf(tmp_path / "e2e-invoice.pdf", ["Invoice 1 of 2", "Invoice 2 of 2"])
    mail = _email_with_attachment(tmp_path / "e2e-letter.eml", invoice)
    ledger = write_pdf(tmp_path / "e2e-ledger-live.pdf", ["Ledger page"])
    late = write_pdf(tmp_path / "e2e-late.pdf", ["Uploaded while the page was away"])
    case = product.new_case()
    await page.add_init_script(SOCKETS)
    await sign_in(page, case.lawyer)
    documents = f"{case.path}documents/"
    await goto(page, documents)
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    assert await page.evaluate(COUNT) == "0 documents."
    await page.evaluate("window.__samePage = true")

    # Uploaded from the page with a custodian: the e-mail, its attachment and the PDF appear
    # live, read, with every column.
    await page.fill("form[data-upload-api] input[name=custodian]", "Jane Roe")
    await choose_files(page, mail, ledger)
    for name in ("e2e-letter.eml", "e2e-invoice.pdf", "e2e-ledger-live.pdf"):
        await wait_ready(page, name)
    await wait_for(page, f"{COUNT} === '3 documents.'")
    await wait_for(
        page,
        f"[...{ROWS}].every((r) => r.querySelector('[data-field=provenance]').dataset.provenance"
        " === 'clear')",
        60,
    )
    await shot(page, "1-live-rows")
    live = await page.evaluate(ROW_TEXTS)
    attachment = await page.evaluate(f"{row('e2e-invoice.pdf')}.outerHTML")
    assert "attachment of" in attachment and "e2e-letter.eml" in attachment
    assert await page.evaluate("window.__samePage === true")  # no reload did it

    # What a reload shows is what the live page showed, cell for cell.
    await goto(page, documents)
    reloaded = await page.evaluate(ROW_TEXTS)
    assert live == reloaded
    kind, origin, custodian = reloaded["e2e-invoice.pdf"][1:4]
    assert (kind, origin, custodian) == ("PDF", "Client", "Jane Roe")
    pages, size = reloaded["e2e-invoice.pdf"][6], reloaded["e2e-invoice.pdf"][8]
    assert pages == "2" and re.fullmatch(r"[\d.]+\s?(bytes|KiB)", size), (pages, size)
    assert await page.evaluate(COUNT) == "3 documents."

    # The socket drops and stays away while a document is uploaded elsewhere; once it is back,
    # the page shows its full row and the new count, without a reload.
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await page.evaluate("window.__samePage = true")
    await page.evaluate("window.__holdSockets = true; window.__sockets.at(-1).close()")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'reconnecting…'")
    with contextlib.closing(product.signed_in(case.lawyer.email, case.lawyer.password)) as client:
        await asyncio.to_thread(_upload, client, case.id, late)
    await page.evaluate("window.__holdSockets = false")
    await wait_ready(page, "e2e-late.pdf")
    await wait_for(page, f"{COUNT} === '4 documents.'")
    await wait_for(
        page,
        f"{row('e2e-late.pdf')}.querySelector('[data-field=custodian]').textContent"
        " === 'Elsewhere'",
    )
    await shot(page, "2-after-reconnect")
    assert await page.evaluate("window.__samePage === true")
    late_row = (await page.evaluate(ROW_TEXTS))["e2e-late.pdf"]
    await goto(page, documents)
    assert (await page.evaluate(ROW_TEXTS))["e2e-late.pdf"] == late_row


NAMES = f"[...{ROWS}].map((r) => r.querySelector('[data-field=filename]').textContent)"


# The page's own event handlers, imported again (one module per page): the ids of the documents
# whose "ready" event the page has applied (handlers run in the order they were added).
READY_APPLIED = """(async () => {
  const src = document.querySelector('script[type=module][src*="/app."]').src;
  const { onCaseEvent } = await import(src);
  window.__readyApplied = [];
  onCaseEvent('documents.progress', (e) => {
    if (e.status === 'ready') window.__readyApplied.push(Number(e.document_id));
  });
  return true;
})()"""


async def test_a_view_sorted_by_name_shows_a_new_document_where_a_reload_would(
    page: Page, product: Product, tmp_path: Path
) -> None:
    names = ["e2e-bravo.pdf", "e2e-charlie.pdf", "e2e-delta.pdf"]
    bravo, charlie, delta = (write_pdf(tmp_path / name, [f"Page of {name}"]) for name in names)
    charlie.write_bytes(scanned_pdf(2))  # read by OCR: seconds, so its first rows are not ready
    case = product.new_case()
    held: list[str] = []

    async def hold_the_first_read(route: Route) -> None:
        """The first read of rows that brings the new row before it is ready is answered only
        once the page has applied its "ready" event: the row the page then puts in is older
        than what the page was told, and must be read again (the race a busy machine makes)."""
        answer = await route.fetch()
        body = await answer.text()
        if not held and "e2e-charlie.pdf" in body:
            held.append(body)
            await wait_for(page, "(window.__readyApplied || []).length > 0", 90)
        await route.fulfill(response=answer, body=body)

    with contextlib.closing(product.signed_in(case.lawyer.email, case.lawyer.password)) as client:
        for pdf in (bravo, delta):
            await asyncio.to_thread(_upload, client, case.id, pdf)
        await sign_in(page, case.lawyer)
        sorted_view = f"{case.path}documents/?sort=name"
        await goto(page, sorted_view)
        await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
        await wait_ready(page, "e2e-delta.pdf")
        await page.evaluate("window.__samePage = true")
        assert await page.evaluate(READY_APPLIED)
        await page.route(f"**{case.path}documents/rows/*", hold_the_first_read)

        # Uploaded elsewhere: its row appears between the two, as the name sort puts it.
        await asyncio.to_thread(_upload, client, case.id, charlie)
    await wait_ready(page, "e2e-charlie.pdf")
    await wait_for(
        page, f"JSON.stringify({NAMES}) === {json.dumps(json.dumps(names, separators=(',', ':')))}"
    )
    # Sorted, not filtered: the count says how many, not "match these filters".
    await wait_for(page, f"{COUNT} === '3 documents.'")
    await shot(page, "3-sorted-view-live")
    assert held, "no read of rows brought the new row"
    assert 'data-field="status">Ready<' not in held[0].split("e2e-charlie.pdf", 1)[1], held[0]
    assert await page.evaluate("window.__samePage === true")  # no reload did it
    await page.unroute(f"**{case.path}documents/rows/*")
    await goto(page, sorted_view)
    assert await page.evaluate(NAMES) == names


async def test_the_job_queues_page_and_the_run_page_follow_what_happens(
    page: Page, product: Product, tmp_path: Path
) -> None:
    pdf = write_pdf(tmp_path / "e2e-run-live.pdf", ["On March 1, 2024 Acme paid $1,000.00."])
    busy = write_pdf(tmp_path / "e2e-jobs-live.pdf", ["A page for the workers to read."])
    case = product.new_case()
    visits = Visits()

    # The admin's job queues page: figures change as workers take and finish jobs.
    await listen_for_csp(page)
    await sign_in(page, product.admin)
    await goto(page, "/cluster/jobs/")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    await page.evaluate(
        "window.__samePage = true; window.__swaps = 0;"
        "new MutationObserver(() => window.__swaps++).observe("
        "document.querySelector('.cluster-jobs'), {childList: true});"
    )
    with contextlib.closing(product.signed_in(case.lawyer.email, case.lawyer.password)) as client:
        await asyncio.to_thread(_upload, client, case.id, busy)
    await wait_for(page, "window.__swaps > 0", 60)
    await shot(page, "1-jobs-live")
    assert await csp_violations(page) == []
    assert await page.evaluate("window.__samePage === true")
    assert await page.evaluate("document.querySelector('#job-queues tbody tr') !== null")

    # A lawyer's run: its status sentence follows it to the end.
    await sign_out(page)
    await sign_in(page, case.lawyer)
    await frozen_packet_of(page, visits, case.path, pdf, title="Live record", reason="Ledger")
    runs = f"{case.path}runs/"
    refusals = await start_run(
        page, visits, runs, packet="Live record", kind="summary",
        instructions="Summarise the payment.",
    )  # fmt: skip
    # Before the first health check: the role is routed, its backends not healthy yet.
    for refusal in refusals:
        assert "Summarizer role is routed, but no backend" in refusal, refusal
        assert "an admin must route one" not in refusal
    line = "document.querySelector('#run-status-line').textContent"
    first = await page.evaluate(line)
    # A summary may be done before its page has loaded: then the page says so at once.
    assert first.startswith(("Queued: waiting", "Running", "Finished: succeeded")), first
    assert re.search(r"Run \d+ created\.", await page.evaluate("document.body.textContent"))
    await page.evaluate("window.__samePage = true")
    await wait_for(page, "document.querySelector('#run-state').dataset.status === 'succeeded'", 180)
    await shot(page, "3-run-finished")
    text = await page.evaluate("document.querySelector('main').textContent")
    assert "queued: this page follows it live" not in text.lower()
    assert (await page.evaluate(line)).startswith("Finished: succeeded")
    assert await page.evaluate("window.__samePage === true")
    await visits.note(page)

    # A stage that fell back says so and why. The demo's backends do not fail, so the
    # summarizer stage is given what dispatch stores when the registry had left a deployment
    # ahead of it out (tests/drafting/test_stage_retries.py runs that for real); the page,
    # read again, says it beside the stage.
    found = re.search(r"/runs/(\d+)/$", page.url)
    assert found
    passed = [{"deployment": "big-model on gpu-1", "reason": "its backend is down"}]
    await asyncio.to_thread(
        product.shell,
        "from apps.drafting.models import Stage; "
        f"Stage.objects.filter(run_id={int(found[1])}, name='summarizer')"
        f".update(passed_over={passed!r})",
    )
    await goto(page, page.url)
    note = await page.evaluate("document.querySelector('[data-fallback-for]')?.textContent")
    assert note and note.startswith("Fell back to "), note
    assert note.endswith("big-model on gpu-1 was left out of routing: its backend is down")
    await shot(page, "3b-stage-fell-back")

    # A motion: the page follows the running stage down the timeline, and the gate's JSON
    # answer is shown as a list of its fields once the gate has answered.
    await start_run(
        page, visits, runs, packet="Live record", kind="motion",
        instructions="Move for summary judgment.",
    )  # fmt: skip
    await page.evaluate("window.__samePage = true")
    await wait_for(
        page,
        "(() => { const s = document.querySelector('#run-state [aria-current=step]');"
        " if (!s || s === document.querySelector('#timeline li.stage')) return false;"
        " const top = s.getBoundingClientRect().top;"
        " const line = document.querySelector('#run-status-line').textContent;"
        " return line.startsWith('Running: the ') && window.scrollY > 0"
        " && top >= -1 && top < innerHeight; })()",
        120,
    )
    await shot(page, "4-motion-following")
    await wait_for(
        page, "document.querySelector('#timeline li.stage [data-structured-for] dl') !== null", 120
    )
    await wait_for(
        page,
        "!['queued', 'running'].includes(document.querySelector('#run-state').dataset.status)",
        240,
    )
    assert (await page.evaluate(line)).startswith("Finished: ")
    await page.evaluate(
        "const d = document.querySelector('#timeline li.stage details.stage__output');"
        " d.open = true; d.scrollIntoView();"
    )
    await shot(page, "5-motion-gate-answer")
    gate = await page.evaluate(
        "(() => { const li = document.querySelector('#timeline li.stage');"
        " return {terms: [...li.querySelectorAll('[data-structured-for] dt')]"
        ".map((d) => d.textContent), raw: li.querySelector('pre.stage-text').hidden}; })()"
    )
    assert "Answer" in gate["terms"] and gate["raw"], gate
    assert await page.evaluate("window.__samePage === true")
    await visits.note(page)
    assert visits.violations() == {}
