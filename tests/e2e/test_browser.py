"""A real browser against a real `make run`: sign in, open the demo case and its "Workers and
live updates" page, press the button, and see the worker's notice arrive over the websocket
without reloading the page."""

import os
import signal
from pathlib import Path

import pytest

from tests.e2e.cdp import browser_page, chromium_path
from tests.running import ADMIN_PASSWORD, free_port, launch, launcher_env, read_until

pytestmark = pytest.mark.asyncio

if chromium_path() is None:
    # `make test` installs Chromium where it can; CI must never silently skip this.
    if os.environ.get("CI") == "true":
        raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
    pytest.skip(
        "Chromium is not installed (make test installs it as root on Debian)",
        allow_module_level=True,
    )


async def test_sign_in_open_case_and_receive_a_worker_notice_live(var_dir: Path) -> None:
    port = free_port()
    server = launch(["run"], launcher_env(var_dir, port))
    base = f"http://127.0.0.1:{port}"
    try:
        read_until(server, "Starting worker", "running at")
        async with browser_page() as page:
            await page.goto(f"{base}/")
            assert await page.evaluate("location.pathname") == "/accounts/login/"

            await page.evaluate(
                "document.querySelector('#id_username').value = 'admin@lexweb.local';"
                f"document.querySelector('#id_password').value = {ADMIN_PASSWORD!r};"
                "document.querySelector('form[method=post] button[type=submit]').click();"
            )
            await page.wait_for("location.pathname === '/'", timeout=30)
            await page.wait_for("document.readyState === 'complete'", timeout=30)
            case_link = await page.wait_for(
                'document.querySelector(\'a[href^="/cases/"]:not([href="/cases/new/"])\')'
                "?.getAttribute('href')",
                timeout=10,
            )
            # The case's "Workers and live updates" page (linked from the case page) has the
            # check; its answer arrives over the case's socket.
            await page.goto(base + case_link)
            health = await page.wait_for(
                "document.querySelector('a[href$=\"/health/\"]')?.getAttribute('href')",
                timeout=10,
            )
            await page.goto(base + health)
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)

            await page.evaluate("document.querySelector('[data-submit-in-place] button').click()")

            notice = await page.wait_for(
                "[...document.querySelectorAll('#live-notices .toast')]"
                ".map(t => t.textContent).find(t => t.includes('ran the live-update check'))",
                timeout=60,
            )
            assert notice.startswith("Worker on ")
            # The notice came over the socket: the page never reloaded.
            assert await page.evaluate("performance.getEntriesByType('navigation').length") == 1
            assert await page.evaluate("location.pathname") == health
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert server.returncode == 0
