"""A real browser against a real `make run` with the demo on: the demo's GPU agent reads its fake
NVML and the cluster page follows it live (figures and the last hour's sparklines); a host whose
agent stops reporting turns "stale" with its age without a reload; the admin opens the job
queues and workers. No policy violation on either page.

Screenshots are saved as test artifacts: under $LEXWEB_E2E_SCREENSHOTS when set (CI uploads
that folder), else under the test's own temporary folder, and the test prints where they are.
"""

import base64
import os
import signal
from pathlib import Path

import pytest

from tests.cluster.test_demo import _free_port_run
from tests.e2e.cdp import Page, browser_page, chromium_path
from tests.e2e.test_csp_browser import LISTEN, _violations
from tests.e2e.test_documents_browser import _sign_in
from tests.running import free_port_below_ephemeral, launch, launcher_env, one_shot, read_until

pytestmark = pytest.mark.asyncio

if chromium_path() is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
    pytest.skip(
        "Chromium is not installed (make test installs it as root on Debian)",
        allow_module_level=True,
    )

# A host whose agent reported once, just now, and never again (it exited).
GONE = """
from django.utils import timezone
from apps.cluster.models import Host
host = Host.objects.create(name="e2e-gone", agent_status="no_nvml",
    agent_message="libnvidia-ml.so.1 not found", agent_seen_at=timezone.now())
print("HOST", host.pk)
"""

GPU_ROW = "document.querySelector('article[data-host-name=\"threadripper\"] tr[data-gpu-id]')"


def _screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("LEXWEB_E2E_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def _shot(page: Page, folder: Path, name: str) -> None:
    shot = await page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    (folder / f"cluster-{name}.png").write_bytes(base64.b64decode(shot["data"]))


async def test_the_demo_cluster_page_is_alive_and_the_admin_sees_the_job_queues(
    var_dir: Path, tmp_path: Path
) -> None:
    shots = _screenshots(tmp_path)
    port = free_port_below_ephemeral()
    env = launcher_env(
        var_dir,
        port,
        LEXWEB_DEMO_BACKEND_PORT=str(_free_port_run(5)),
        LEXWEB_GPU_AGENT_INTERVAL_SECONDS="1",
        LEXWEB_GPU_AGENT_STALE_INTERVALS="3",
    )
    server = launch(["run"], env)
    base = f"http://127.0.0.1:{port}"
    try:
        read_until(server, "running at", "gpu_agent: reading 12 GPUs on threadripper")
        async with browser_page() as page:
            await page.call("Page.addScriptToEvaluateOnNewDocument", source=LISTEN)
            await _sign_in(page, base)
            gone = one_shot(["manage", "shell", "-c", GONE], env)
            assert gone.returncode == 0, gone.stdout + gone.stderr
            host_id = int(gone.stdout.split("HOST", 1)[1].split()[0])

            await page.goto(f"{base}/cluster/")
            await page.wait_for("document.readyState === 'complete'", timeout=30)
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            await page.evaluate("window.__lexwebMark = 1")
            # The demo agent's samples arrive: figures, and the sparklines drawn from them.
            await page.wait_for(
                f"{GPU_ROW}.querySelector('[data-field=utilisation]').textContent.endsWith('%')",
                timeout=60,
            )
            first = await page.evaluate(f"{GPU_ROW}.querySelector('time').textContent")
            await page.wait_for(
                f"{GPU_ROW}.querySelector('time').textContent !== {first!r}", timeout=30
            )
            await page.wait_for(
                f"{GPU_ROW}.querySelector('svg[data-spark=memory] polyline')"
                ".getAttribute('points').trim().length > 0",
                timeout=30,
            )
            agent = await page.evaluate(
                'document.querySelector(\'article[data-host-name="threadripper"]'
                " [data-field=agent-status]').textContent"
            )
            assert agent == "Reading NVML"
            # The GPU agent of e2e-gone said no NVML once and exited: after three intervals the
            # page says it is stale, with the age, instead of "retrying".
            article = f"document.querySelector('article[data-host-id=\"{host_id}\"]')"
            await page.wait_for(
                f"{article}.querySelector('[data-field=agent-status]').textContent === 'Stale'",
                timeout=30,
            )
            text = await page.evaluate(f"{article}.querySelector('[data-field=agent-text]')"
                                       ".textContent")  # fmt: skip
            assert text.startswith("Stale, last report ") and "retrying" not in text
            assert "(was: No NVML: libnvidia-ml.so.1 not found)" in text
            # Every health check's time arrives live too (the check runs every 30 s), even
            # when nothing else about the backend changed.
            checked = (
                "[...document.querySelectorAll('[data-field=checked]')]"
                ".map(t => t.textContent).join()"
            )
            before = await page.evaluate(checked)
            await page.wait_for(f"{checked} !== {before!r}", timeout=75)
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
            assert await _violations(page) == []
            await _shot(page, shots, "dashboard")

            await page.evaluate("document.querySelector('a[href=\"/cluster/jobs/\"]').click()")
            await page.wait_for("location.pathname === '/cluster/jobs/'", timeout=30)
            await page.wait_for("document.readyState === 'complete'", timeout=30)
            queues = await page.evaluate(
                "[...document.querySelectorAll('#job-queues tr[data-queue]')]"
                ".map(r => r.dataset.queue)"
            )
            assert {"cpu", "cluster"} <= set(queues)
            workers = await page.evaluate(
                "[...document.querySelectorAll('#job-workers tr[data-worker-id]')]"
                ".map(r => r.textContent)"
            )
            assert workers and any("alive" in row for row in workers)
            assert await _violations(page) == []
            await _shot(page, shots, "jobs")
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=90)
    print(f"screenshots: {shots}")  # noqa: T201
    assert server.returncode == 0
