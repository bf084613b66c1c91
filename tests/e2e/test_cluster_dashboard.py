"""A real browser against a real `make run`: open the cluster dashboard, then have the GPU agent's
write-and-publish happen in another process, and see the GPU's figures change without reload;
then change the rows with no one told (as while the page's socket is away), kill the web server
(the launcher starts it again, as under `make run`), and see the page catch up on its own once
its socket reconnects.

On the session's product: the host, board, GPU and backend it makes are its own (`e2e-host-…`,
which the demo's GPU agent leaves alone)."""

import asyncio
import os
import secrets
import signal

import pytest
from playwright.async_api import Page

from tests.harness.browser import Pages, arrive, shot, sign_in, wait_for
from tests.harness.product import Product
from tests.harness.waiting import wait_until

pytestmark = pytest.mark.asyncio(loop_scope="session")

# Run with `manage.py shell -c` against the launched product's own database, as the GPU agent
# on a host would write its sample and publish it.
SEED = """
from django.utils import timezone
from apps.cluster.models import Backend, Board, Deployment, Gpu, GpuStatus, Host
host = Host.objects.create(name="{host}", agent_status="ok", agent_seen_at=timezone.now())
board = Board.objects.create(host=host, name="{host}-board")
gpu = Gpu.objects.create(host=host, index=0, name="Tesla V100", memory_bytes=32 * 2**30,
    board=board)
GpuStatus.objects.create(gpu=gpu, sampled_at=timezone.now(), utilisation_pct=37,
    memory_used_bytes=4 * 2**30, memory_total_bytes=32 * 2**30, temperature_c=50, power_w=90)
backend = Backend.objects.create(name="{host}-llama", kind="llama_cpp", base_url="http://127.0.0.1:9",
    board=board, api_key="sk-e2e-secret")
Deployment.objects.create(backend=backend, model_name="{host}-model", memory_estimate_bytes=2**34)
print("GPU", gpu.pk)
"""

SAMPLE = """
from django.utils import timezone
from apps.cluster.events import publish_cluster
from apps.cluster.models import GpuStatus
now = timezone.now()
GpuStatus.objects.filter(gpu_id={gpu_id}).update(sampled_at=now, utilisation_pct=91,
    memory_used_bytes=24 * 2**30, temperature_c=77, power_w=260)
publish_cluster({{"type": "cluster.gpu_sample", "gpu_id": {gpu_id}, "host": "{host}",
    "index": 0, "sampled_at": now.isoformat(), "utilisation_pct": 91,
    "memory_used_bytes": 24 * 2**30, "memory_total_bytes": 32 * 2**30, "temperature_c": 77,
    "power_w": 260.0}})
"""


# No event: only the row changes, as while the page's socket is away.
UNHEARD = """
from apps.cluster.models import GpuStatus
GpuStatus.objects.filter(gpu_id={gpu_id}).update(utilisation_pct=12, temperature_c=41)
"""

REFETCHES = """(() => {
  const fetched = window.fetch;
  window.__lexwebRefetches = 0;
  window.fetch = (...args) => { window.__lexwebRefetches += 1; return fetched(...args); };
  return true;
})()"""
LIVE = "document.querySelector('#live-state').textContent"
# Every text the live state shows from now on, so that a socket that dropped and came back
# between two polls of the test is still seen to have dropped.
STATES = """(() => {
  const state = document.querySelector('#live-state');
  window.__liveStates = [];
  new MutationObserver(() => window.__liveStates.push(state.textContent))
    .observe(state, {childList: true, characterData: true, subtree: true});
  return true;
})()"""


def _board_memory(host: str) -> str:
    """Its deployment's row: the memory measured on its board."""
    return (
        "[...document.querySelectorAll('tr[data-deployment-id]')]"
        f".find((row) => row.querySelector('th').textContent.startsWith('{host}-model'))"
        ".querySelector('[data-field=board-memory]').textContent"
    )


def _cell(gpu_id: int, name: str) -> str:
    return f"document.querySelector('tr[data-gpu-id=\"{gpu_id}\"] [data-field={name}]')"


async def _never_reloaded(page: Page) -> None:
    assert await page.evaluate("window.__lexwebMark") == 1
    assert await page.evaluate("performance.getEntriesByType('navigation').length") == 1


async def test_gpu_sample_published_elsewhere_updates_the_dashboard_live(
    pages: Pages, product: Product
) -> None:
    host = f"e2e-host-{secrets.token_hex(3)}"
    gpu_id = int(product.shell(SEED.format(host=host)).split("GPU", 1)[1].split()[0])
    page = await pages.open(product.base_url)
    await sign_in(page, product.admin)
    async with page.expect_navigation():
        await page.click('.site-nav a[href="/cluster/"]')
    await arrive(page, "**/cluster/")
    await wait_for(page, f"{LIVE} === 'live'")
    assert await page.evaluate(f"{_cell(gpu_id, 'utilisation')}.textContent") == "37 %"
    assert "sk-e2e-secret" not in await page.content()
    # A reload would drop this: its survival proves the page was never reloaded.
    await page.evaluate("window.__lexwebMark = 1")

    product.shell(SAMPLE.format(gpu_id=gpu_id, host=host))

    await wait_for(page, f"{_cell(gpu_id, 'utilisation')}.textContent === '91 %'")
    assert await page.evaluate(f"{_cell(gpu_id, 'memory')}.textContent") == ("24.0 of 32.0 GiB")
    assert await page.evaluate(f"{_cell(gpu_id, 'temperature')}.textContent") == "77 °C"
    assert await page.evaluate(_board_memory(host)) == "24.0 of 32.0 GiB"
    # The figures came over the socket: the page never reloaded.
    await _never_reloaded(page)
    await shot(page, "1-sampled")

    # The page fetches itself again on an event about something it does not show (another
    # deployment's health, at most every few seconds): such a refresh reads the row below
    # from the database. Counted, so that only a page nothing told is held to the old figure.
    assert await page.evaluate(REFETCHES)
    product.shell(UNHEARD.format(gpu_id=gpu_id))
    # Nothing told the page: it still shows what it was sent.
    if await page.evaluate("window.__lexwebRefetches") == 0:
        assert await page.evaluate(f"{_cell(gpu_id, 'utilisation')}.textContent") == "91 %"
    assert await page.evaluate(STATES)
    web = product.pid("web")
    assert web is not None
    os.kill(web, signal.SIGKILL)
    await asyncio.to_thread(
        wait_until, lambda: product.pid("web") not in (None, web), 120, "the web server's restart"
    )

    await wait_for(page, f"{_cell(gpu_id, 'utilisation')}.textContent === '12 %'", 60)
    assert await page.evaluate(f"{_cell(gpu_id, 'temperature')}.textContent") == "41 °C"
    await wait_for(page, f"{LIVE} === 'live'")
    # It caught up through a socket that had dropped with the server and opened again.
    states = await page.evaluate("window.__liveStates")
    assert any(state != "live" for state in states) and states[-1] == "live", states
    await _never_reloaded(page)
    await shot(page, "2-caught-up")
