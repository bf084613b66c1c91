"""In Chromium: a page served from another port of the same host cannot open the signed-in
person's case and run streams, although the browser sends their session cookie with the
handshake (cookies are not kept per port). The product's own page, same browser, same cookie,
same script, connects and reads the run's events.

The product is lexweb's ASGI application served by a real uvicorn in this process, on the test
database; the other page by a small http.server on a second port.
"""

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import uvicorn
from asgiref.sync import sync_to_async
from playwright.async_api import Page, async_playwright

from apps.accounts.models import User
from apps.cases.models import Case, Membership
from apps.drafting.models import Run
from apps.drafting.services import events as event_writer
from apps.evidence.models import Packet
from tests.harness.browser import CHROMIUM_ARGS, chromium_path
from tests.harness.ports import free_port

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True, databases="__all__")]

EMAIL = "victim@firm.test"
PASSWORD = "Victim-password-1"
EVENTS = 5

# Opens a websocket from the page it runs in (so with that page's Origin) and reports what
# happened: opened or not, the event numbers received, the close code.
LISTEN = """
([url, expected]) => new Promise((resolve) => {
  const seen = {opened: false, seqs: [], code: null};
  const socket = new WebSocket(url);
  const done = () => { clearTimeout(timer); resolve(seen); };
  const timer = setTimeout(() => { socket.close(); done(); }, 10000);
  socket.onopen = () => { seen.opened = true; if (expected === 0) done(); };
  socket.onmessage = (e) => {
    seen.seqs.push(JSON.parse(e.data).seq);
    if (seen.seqs.length >= expected) done();
  };
  socket.onclose = (e) => { seen.code = e.code; done(); };
})
"""


@pytest.fixture
def product(transactional_db: None) -> Iterator[str]:
    """lexweb.asgi served by uvicorn on a port of its own, with the test database."""
    from lexweb.asgi import application

    port = free_port()
    config = uvicorn.Config(
        application,
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_level="warning",
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=30)


class _OtherSite(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><html lang=en><title>Another site</title><p>Nothing here."
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def other_site() -> Iterator[str]:
    """A page on another port of the same host: another origin, same site for cookies."""
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _OtherSite)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _case_with_a_run() -> tuple[int, int]:
    user = User.objects.create_user(
        email=EMAIL, full_name="Victim Lawyer", password=PASSWORD, role=User.Role.LAWYER
    )
    case = Case.objects.create(
        title="Origin v. Port",
        number="24-cv-0443",
        court="Superior Court",
        client="Origin Corp.",
        created_by=user,
    )
    Membership.objects.create(case=case, user=user, role=Membership.Role.LAWYER)
    packet = Packet.objects.create(
        case=case,
        title="Packet",
        status=Packet.Status.FROZEN,
        content_hash="0" * 64,
        created_by=user,
    )
    run = Run.objects.create(
        case=case, kind=Run.Kind.SUMMARY, packet=packet, instructions="Summarise", created_by=user
    )
    for n in range(EVENTS):
        event_writer.run_event_append(run=run, kind="stage.tokens", payload={"text": f"t{n + 1}"})
    return case.pk, run.pk


async def _listen(page: Page, url: str, expected: int) -> dict[str, Any]:
    seen: dict[str, Any] = await page.evaluate(LISTEN, [url, expected])
    return seen


@pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed")
async def test_another_port_cannot_ride_the_session_cookie_on_the_streams(
    product: str, other_site: str
) -> None:
    case_id, run_id = await sync_to_async(_case_with_a_run)()
    ws = product.replace("http://", "ws://")
    run_stream = f"{ws}/ws/cases/{case_id}/runs/{run_id}/events/?after=0"
    case_stream = f"{ws}/ws/cases/{case_id}/events/"

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        try:
            context = await browser.new_context()
            page = await context.new_page()
            # The victim signs in to the product, as a person does.
            await page.goto(f"{product}/accounts/login/")
            await page.fill("#id_username", EMAIL)
            await page.fill("#id_password", PASSWORD)
            async with page.expect_navigation():
                await page.click("form[method=post] button[type=submit]")
            cookies = {c["name"]: c for c in await context.cookies(product)}
            assert "sessionid" in cookies, await page.content()

            # Then visits another site on the same host (the cookie goes with its requests).
            attacker = await context.new_page()
            await attacker.goto(f"{other_site}/")
            assert await attacker.evaluate("location.origin") == other_site
            stolen_run = await _listen(attacker, run_stream, EVENTS)
            stolen_case = await _listen(attacker, case_stream, 0)

            # The product's own page: same browser, same cookie, same script.
            await page.goto(f"{product}/cases/{case_id}/")
            own_run = await _listen(page, run_stream, EVENTS)
            own_case = await _listen(page, case_stream, 0)
        finally:
            await browser.close()

    assert own_run["opened"] and own_run["seqs"] == list(range(1, EVENTS + 1)), own_run
    assert own_case["opened"], own_case
    for stolen in (stolen_run, stolen_case):
        # Refused at the handshake (403): never open, nothing read.
        assert stolen == {"opened": False, "seqs": [], "code": 1006}, json.dumps(stolen)
