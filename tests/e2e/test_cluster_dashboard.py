"""A real browser against a real `make run`: open the cluster dashboard, then have the GPU agent's
write-and-publish happen in another process, and see the GPU's figures change without reload;
then stop the server, change the rows while it is down, start it again, and see the page catch
up on its own once its socket reconnects."""

import os
import signal
from pathlib import Path

import pytest

from tests.e2e.cdp import browser_page, chromium_path
from tests.running import (
    ADMIN_PASSWORD,
    free_port_below_ephemeral,
    launch,
    launcher_env,
    one_shot,
    read_until,
)

pytestmark = pytest.mark.asyncio

if chromium_path() is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("Chromium is required under CI=true: apt-get install chromium")
    pytest.skip(
        "Chromium is not installed (make test installs it as root on Debian)",
        allow_module_level=True,
    )

# Run with `manage.py shell -c` against the launched product's own database, as the GPU agent
# on a host would write its sample and publish it.
SEED = """
from django.utils import timezone
from apps.cluster.models import Backend, Board, Deployment, Gpu, GpuStatus, Host
host = Host.objects.create(name="e2e-host", agent_status="ok", agent_seen_at=timezone.now())
board = Board.objects.create(host=host, name="e2e-board")
gpu = Gpu.objects.create(host=host, index=0, name="Tesla V100", memory_bytes=32 * 2**30,
    board=board)
GpuStatus.objects.create(gpu=gpu, sampled_at=timezone.now(), utilisation_pct=37,
    memory_used_bytes=4 * 2**30, memory_total_bytes=32 * 2**30, temperature_c=50, power_w=90)
backend = Backend.objects.create(name="e2e-llama", kind="llama_cpp", base_url="http://127.0.0.1:9",
    board=board, api_key="sk-e2e-secret")
Deployment.objects.create(backend=backend, model_name="e2e-model", memory_estimate_bytes=2**34)
print("GPU", gpu.pk)
"""

SAMPLE = """
from django.utils import timezone
from apps.cluster.events import publish_cluster
from apps.cluster.models import GpuStatus
now = timezone.now()
GpuStatus.objects.filter(gpu_id={gpu_id}).update(sampled_at=now, utilisation_pct=91,
    memory_used_bytes=24 * 2**30, temperature_c=77, power_w=260)
publish_cluster({{"type": "cluster.gpu_sample", "gpu_id": {gpu_id}, "host": "e2e-host",
    "index": 0, "sampled_at": now.isoformat(), "utilisation_pct": 91,
    "memory_used_bytes": 24 * 2**30, "memory_total_bytes": 32 * 2**30, "temperature_c": 77,
    "power_w": 260.0}})
"""


# While the server is down: nobody is there to hear an event, only the row changes.
DOWN = """
from apps.cluster.models import GpuStatus
GpuStatus.objects.filter(gpu_id={gpu_id}).update(utilisation_pct=12, temperature_c=41)
"""


def _cell(gpu_id: int, name: str) -> str:
    return f"document.querySelector('tr[data-gpu-id=\"{gpu_id}\"] [data-field={name}]')"


async def test_gpu_sample_published_elsewhere_updates_the_dashboard_live(var_dir: Path) -> None:
    # Below the ephemeral range: the server is restarted on the same port further down, and an
    # outgoing connection made meanwhile must not be able to take it.
    port = free_port_below_ephemeral()
    env = launcher_env(var_dir, port)
    server = launch(["run"], env)
    base = f"http://127.0.0.1:{port}"
    try:
        read_until(server, "Starting worker", "running at")
        seeded = one_shot(["manage", "shell", "-c", SEED], env)
        assert seeded.returncode == 0, seeded.stdout + seeded.stderr
        gpu_id = int(seeded.stdout.split("GPU", 1)[1].split()[0])
        async with browser_page() as page:
            await page.goto(f"{base}/")
            await page.evaluate(
                "document.querySelector('#id_username').value = 'admin@lexweb.local';"
                f"document.querySelector('#id_password').value = {ADMIN_PASSWORD!r};"
                "document.querySelector('form[method=post] button[type=submit]').click();"
            )
            await page.wait_for("location.pathname === '/'", timeout=30)
            await page.wait_for("document.readyState === 'complete'", timeout=30)
            await page.evaluate("document.querySelector('.site-nav a[href=\"/cluster/\"]').click()")
            await page.wait_for("location.pathname === '/cluster/'", timeout=30)
            await page.wait_for("document.querySelector('#live-state').textContent === 'live'", 30)
            assert await page.evaluate(f"{_cell(gpu_id, 'utilisation')}.textContent") == "37 %"
            assert "sk-e2e-secret" not in await page.evaluate("document.documentElement.outerHTML")
            # A reload would drop this: its survival proves the page was never reloaded.
            await page.evaluate("window.__lexwebMark = 1")

            sampled = one_shot(["manage", "shell", "-c", SAMPLE.format(gpu_id=gpu_id)], env)
            assert sampled.returncode == 0, sampled.stdout + sampled.stderr

            await page.wait_for(f"{_cell(gpu_id, 'utilisation')}.textContent === '91 %'", 30)
            assert await page.evaluate(f"{_cell(gpu_id, 'memory')}.textContent") == (
                "24.0 of 32.0 GiB"
            )
            assert await page.evaluate(f"{_cell(gpu_id, 'temperature')}.textContent") == "77 °C"
            measured = await page.evaluate(
                "document.querySelector('tr[data-deployment-id] [data-field=board-memory]')"
                ".textContent"
            )
            assert measured == "24.0 of 32.0 GiB"
            # The figures came over the socket: the page never reloaded.
            assert await page.evaluate("window.__lexwebMark") == 1
            assert await page.evaluate("performance.getEntriesByType('navigation').length") == 1

            server.send_signal(signal.SIGINT)
            assert server.wait(timeout=60) == 0
            await page.wait_for("document.querySelector('#live-state').textContent !== 'live'", 30)
            changed = one_shot(["manage", "shell", "-c", DOWN.format(gpu_id=gpu_id)], env)
            assert changed.returncode == 0, changed.stdout + changed.stderr
            server = launch(["run"], env)
            read_until(server, "running at")

            await page.wait_for(f"{_cell(gpu_id, 'utilisation')}.textContent === '12 %'", 60)
            assert await page.evaluate(f"{_cell(gpu_id, 'temperature')}.textContent") == "41 °C"
            assert await page.evaluate("document.querySelector('#live-state').textContent") == (
                "live"
            )
            assert await page.evaluate("window.__lexwebMark") == 1
            assert await page.evaluate("performance.getEntriesByType('navigation').length") == 1
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=60)
    assert server.returncode == 0
