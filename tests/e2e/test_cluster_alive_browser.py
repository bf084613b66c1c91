"""A real browser against a real `make run` with the demo on: the demo's GPU agent reads its fake
NVML and the cluster page follows it live (figures and the last hour's sparklines); a host whose
agent stops reporting turns "stale" with its age without a reload; the admin opens the job
queues and workers. No policy violation on either page.

On the session's product, with its settings as `make run` has them: the GPU agent reports every
5 s, a host is stale after three missed reports (15 s), the backends are checked every 30 s.
Screenshots are saved as test artifacts.
"""

import secrets

import pytest
from playwright.async_api import Page

from tests.harness.browser import (
    Pages,
    arrive,
    check,
    csp_violations,
    goto,
    listen_for_csp,
    shot,
    sign_in,
    wait_for,
)
from tests.harness.product import Product

pytestmark = pytest.mark.asyncio(loop_scope="session")

# A host whose agent reported once, just now, and never again (it exited).
GONE = """
from django.utils import timezone
from apps.cluster.models import Host
host = Host.objects.create(name="e2e-gone-{suffix}", agent_status="no_nvml",
    agent_message="libnvidia-ml.so.1 not found", agent_seen_at=timezone.now())
print("HOST", host.pk)
"""

GPU_ROW = "document.querySelector('article[data-host-name=\"threadripper\"] tr[data-gpu-id]')"
CHECKED = "[...document.querySelectorAll('[data-field=checked]')].map(t => t.textContent).join()"


async def _follows_the_demo_agent(page: Page) -> None:
    """The demo agent's samples arrive: figures, and the sparklines drawn from them."""
    await wait_for(
        page, f"{GPU_ROW}.querySelector('[data-field=utilisation]').textContent.endsWith('%')", 60
    )
    first = await page.evaluate(f"{GPU_ROW}.querySelector('time').textContent")
    await wait_for(page, f"{GPU_ROW}.querySelector('time').textContent !== {first!r}")
    await wait_for(
        page,
        f"{GPU_ROW}.querySelector('svg[data-spark=memory] polyline')"
        ".getAttribute('points').trim().length > 0",
    )
    agent = await page.evaluate(
        'document.querySelector(\'article[data-host-name="threadripper"]'
        " [data-field=agent-status]').textContent"
    )
    assert agent == "Reading NVML"


async def _says_stale(page: Page, host_id: int) -> None:
    """The GPU agent of e2e-gone-… said no NVML once and exited: after three intervals the page
    says it is stale, with the age, instead of "retrying"."""
    article = f"document.querySelector('article[data-host-id=\"{host_id}\"]')"
    await wait_for(
        page, f"{article}.querySelector('[data-field=agent-status]').textContent === 'Stale'", 60
    )
    text = await page.evaluate(f"{article}.querySelector('[data-field=agent-text]').textContent")
    assert text.startswith("Stale, last report ") and "retrying" not in text
    assert "(was: No NVML: libnvidia-ml.so.1 not found)" in text


async def test_the_demo_cluster_page_is_alive_and_the_admin_sees_the_job_queues(
    pages: Pages, product: Product
) -> None:
    page = await pages.open(product.base_url)
    await listen_for_csp(page)
    await sign_in(page, product.admin)
    gone = GONE.format(suffix=secrets.token_hex(3))
    host_id = int(product.shell(gone).split("HOST", 1)[1].split()[0])

    await goto(page, "/cluster/")
    await wait_for(page, "document.querySelector('#live-state').textContent === 'live'")
    # A reload would drop this: its survival proves the page was never reloaded.
    await page.evaluate("window.__lexwebMark = 1")
    await _follows_the_demo_agent(page)
    await _says_stale(page, host_id)
    # Every health check's time arrives live too (the check runs every 30 s), even when
    # nothing else about the backend changed.
    before = await page.evaluate(CHECKED)
    await wait_for(page, f"{CHECKED} !== {before!r}", 75)
    speed_lines = await page.evaluate(
        "document.querySelectorAll('tr[data-deployment-id] svg[data-spark=speed]"
        " line.spark__ref').length"
    )
    assert speed_lines == await page.evaluate(
        "document.querySelectorAll('tr[data-deployment-id]').length"
    )
    # All of it without a reload.
    assert await page.evaluate("window.__lexwebMark") == 1
    assert await page.evaluate("performance.getEntriesByType('navigation').length") == 1
    assert await csp_violations(page) == []
    # Checked again as it is now: the page swapped in fresh content when its socket opened,
    # and its sparklines are drawn.
    await check(page)
    await shot(page, "dashboard")

    async with page.expect_navigation():
        await page.click('a[href="/cluster/jobs/"]')
    await arrive(page, "**/cluster/jobs/")
    queues = await page.evaluate(
        "[...document.querySelectorAll('#job-queues tr[data-queue]')].map(r => r.dataset.queue)"
    )
    assert {"cpu", "cluster"} <= set(queues)
    workers = await page.evaluate(
        "[...document.querySelectorAll('#job-workers tr[data-worker-id]')].map(r => r.textContent)"
    )
    assert workers and any("alive" in row for row in workers)
    assert await csp_violations(page) == []
    await shot(page, "jobs")
