"""A case page whose socket drops catches up from the case's feed when it reconnects (issue 22,
issue 24 req 3): the events stored while no socket listened are applied once each, in order,
without a reload and without the page reading its rows again. And a page open across a restart
of the embedded PostgreSQL follows the events stored after it, each once."""

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page

from tests.e2e.steps import row, write_pdf
from tests.harness.browser import Pages, goto, shot, sign_in, wait_for
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

FILENAME = "e2e-while-away.pdf"
ROW = row(FILENAME)

# Every socket the page opens is kept (so the test can drop one) and its address noted; while
# `__holdSockets` is set, new ones ask for a position the server refuses (it closes them, 4400),
# as when the server is out of reach, so the page keeps trying with its back-off.
SOCKETS = """
window.__sockets = []; window.__socketUrls = []; window.__holdSockets = false;
const RealWebSocket = window.WebSocket;
window.WebSocket = class extends RealWebSocket {
  constructor(url, protocols) {
    window.__socketUrls.push(String(url));
    super(window.__holdSockets ? String(url).replace(/after=[^&]*/, 'after=held') : url, protocols);
    window.__sockets.push(this);
  }
};
"""

# What the page's handlers were given: app.js is one module per page, so importing it again
# returns the instance the page uses.
RECORD = """(async () => {
  const src = document.querySelector('script[type=module][src*="/app."]').src;
  const { onCaseEvent } = await import(src);
  window.__applied = []; window.__opens = [];
  onCaseEvent('documents.progress', (e) => window.__applied.push(e.seq));
  onCaseEvent('stream.open', (e) => window.__opens.push(e));
  return true;
})()"""


def _upload(client: httpx.Client, case_id: int, pdf: Path) -> int:
    with pdf.open("rb") as source:
        answer = client.post(
            f"/api/v1/cases/{case_id}/documents",
            files={"files": (pdf.name, source, "application/pdf")},
            data={"origin": "client"},
            headers={"X-CSRFToken": client.cookies.get("csrftoken") or ""},
        )
    assert answer.status_code == 201, answer.text[:2000]
    document: int = answer.json()["results"][0]["document"]["id"]
    return document


def _progress_until_read(client: httpx.Client, case_id: int, after: int, document: int) -> list[
    dict[str, Any]
]:  # fmt: skip
    """The feed's progress events of `document` after `after`, long-polled until the one that
    says it is read and its provenance checked."""
    found: list[dict[str, Any]] = []
    for _ in range(30):
        answer = client.get(
            f"/api/v1/cases/{case_id}/events", params={"after": after, "wait": 10}, timeout=30
        )
        assert answer.status_code == 200, answer.text[:2000]
        for item in answer.json()["items"]:
            after = item["seq"]
            if item["kind"] == "documents.progress" and item["payload"]["document_id"] == document:
                found.append(item)
        if found and found[-1]["payload"].get("provenance") == "clear":
            return found
    raise AssertionError(f"the document was not read: {found}")


async def test_a_page_whose_socket_dropped_catches_up_from_the_feed_without_reloading(
    page: Page, product: Product, tmp_path: Path
) -> None:
    pdf = write_pdf(
        tmp_path / FILENAME, [f"Read while the page was away, page {n}." for n in (1, 2)]
    )
    case = product.new_case()
    await page.add_init_script(SOCKETS)
    await sign_in(page, case.lawyer)
    documents = f"{case.path}documents/"
    await goto(page, documents)
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    assert await page.evaluate(RECORD)
    await page.evaluate("window.__sameDocument = true")
    # The first socket opened at the feed's newest number (the page's rows are read once).
    assert (await page.evaluate("window.__socketUrls"))[0].endswith("?after=latest")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))

    # The socket drops and the server stays out of reach while the document is uploaded (not
    # from this page) and read by the worker: its events are stored, and no socket hears them.
    await page.evaluate("window.__holdSockets = true; window.__sockets.at(-1).close()")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'reconnecting…'")
    with contextlib.closing(product.signed_in(case.lawyer.email, case.lawyer.password)) as client:
        before = client.get(f"/api/v1/cases/{case.id}/events")
        assert before.status_code == 200
        start = max([item["seq"] for item in before.json()["items"]], default=0)
        document = await asyncio.to_thread(_upload, client, case.id, pdf)
        missed = await asyncio.to_thread(_progress_until_read, client, case.id, start, document)
    assert await page.evaluate(f"!{ROW}")  # nothing reached the page meanwhile
    assert await page.evaluate("window.__applied.length") == 0

    # The server is back: the page reconnects after the last number it applied and applies the
    # missed events, in order, once each: the row appears and reaches "Ready".
    await page.evaluate("window.__holdSockets = false")
    status = await wait_for(
        page,
        f"{ROW}?.querySelector('[data-field=status]').textContent === 'Ready' && "
        f"{ROW}.querySelector('[data-field=provenance]').dataset.provenance === 'clear' && "
        f"{ROW}.querySelector('[data-field=pages]').textContent",
        timeout=60,
    )
    assert status == "2 of 2 pages"
    await wait_for(page, "window.__opens.length === 1")
    opens = await page.evaluate("window.__opens")
    assert opens == [{"type": "stream.open", "reconnected": True, "caughtUp": True}]
    applied = await page.evaluate("window.__applied")
    assert applied == [item["seq"] for item in missed]  # each once, in the feed's order
    urls = await page.evaluate("window.__socketUrls")
    assert urls[-1].endswith(f"?after={start}")
    # The state came from the feed: the page read no rows and did not reload.
    assert [u for u in requests if "/api/v1/" in u and "/documents" in u] == []
    assert any(f"/cases/{case.id}/events/?after={start}" in u for u in urls)
    assert await page.evaluate("window.__sameDocument === true")
    await shot(page, "caught-up")


def _ready_again(product: Product, killed: int, timeout: float = 180) -> None:
    """Wait for a new PostgreSQL and for /readyz to answer ok."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fresh = product.pid("database") not in (None, killed)
            ready = httpx.get(f"{product.base_url}/readyz", timeout=10).status_code == 200
        except (OSError, ValueError, KeyError, httpx.TransportError):
            fresh = ready = False
        if fresh and ready:
            return
        time.sleep(0.5)
    raise AssertionError(f"the product did not come back: {product.output()[-4000:]}")


async def test_a_page_open_across_a_database_restart_follows_the_events_after_it(
    pages: Pages, product: Product, tmp_path: Path
) -> None:
    """On the session's product: its PostgreSQL is killed and the launcher starts it again (as
    under `make run`); every process of it carries on (tests/faults/test_database_restart.py),
    so the tests after this one find it whole."""
    pdf = write_pdf(tmp_path / FILENAME, ["Read after the database came back."])
    case = product.new_case()
    page = await pages.open(product.base_url)
    await page.add_init_script(SOCKETS)
    await sign_in(page, case.lawyer)
    await goto(page, f"{case.path}documents/")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    assert await page.evaluate(RECORD)
    await page.evaluate("window.__sameDocument = true")

    killed = product.pid("database")
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    await asyncio.to_thread(_ready_again, product, killed)
    with contextlib.closing(product.signed_in(case.lawyer.email, case.lawyer.password)) as client:
        document = await asyncio.to_thread(_upload, client, case.id, pdf)
        stored = await asyncio.to_thread(_progress_until_read, client, case.id, 0, document)

    await wait_for(
        page,
        f"{ROW}?.querySelector('[data-field=status]').textContent === 'Ready' && "
        f"{ROW}.querySelector('[data-field=provenance]').dataset.provenance === 'clear'",
        timeout=90,
    )
    applied = await page.evaluate("window.__applied")
    assert applied == [item["seq"] for item in stored]  # each once, in the feed's order
    assert await page.evaluate("window.__sameDocument === true")
    await shot(page, "after-restart")
