import asyncio
import signal
from typing import Any
from urllib.parse import urlsplit

from django.core.management.base import BaseCommand

from apps.cluster.fakebackend.config import FakeSettings
from apps.cluster.fakebackend.server import FakeBackend
from apps.cluster.models import Backend

# Decode speeds that DESIGN.md reports for the reference site (tokens/s); others get DEFAULT.
DEMO_SPEEDS = {
    "qwen3.5-122b-a10b": 50.0,
    "gemma-4-26b-a4b": 113.0,
    "gemma4:26b": 113.0,
    "qwen3.6-35b-a3b": 80.0,
    "qwen3-4b": 150.0,
}
DEFAULT_SPEED = 60.0


def demo_settings(backend: Backend) -> FakeSettings | None:
    """The fake that plays `backend`: its kind, slots, first model and that model's context."""
    deployment = backend.deployments.order_by("pk").first()
    if deployment is None:
        return None
    return FakeSettings(
        kind=backend.kind,  # type: ignore[arg-type]  # Backend.Kind values are the fake's kinds
        model=deployment.model_name,
        tokens_per_second=DEMO_SPEEDS.get(deployment.model_name, DEFAULT_SPEED),
        slots=backend.slots,
        n_ctx_per_slot=deployment.context_per_slot,
        max_tokens_default=256,
    )


class Command(BaseCommand):
    help = (
        "Serve every backend configured on 127.0.0.1 with a local fake that speaks its "
        "protocol (the demo cluster), until Ctrl-C. Other backends are left alone."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        plan: list[tuple[str, int, FakeSettings]] = []
        for backend in Backend.objects.filter(enabled=True).order_by("name"):
            url = urlsplit(backend.base_url)
            fake = demo_settings(backend)
            if url.hostname != "127.0.0.1" or url.port is None or fake is None:
                continue
            plan.append((backend.name, url.port, fake))
        if not plan:
            self.stdout.write("demo_backends: no backend on 127.0.0.1 to play; nothing to do.")
            return
        asyncio.run(self._serve(plan))

    async def _serve(self, plan: list[tuple[str, int, FakeSettings]]) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        running: list[FakeBackend] = []
        for name, port, fake_settings in plan:
            fake = FakeBackend(fake_settings, port=port)
            try:
                await fake.start()
            except (OSError, OverflowError) as exc:
                # One busy port must not take the others down; the health registry shows it.
                self.stderr.write(f"demo_backends: cannot serve {name} on port {port}: {exc}")
                continue
            running.append(fake)
            self.stdout.write(f"demo_backends: {name} ({fake_settings.kind}) at {fake.base_url}")
        if running:
            await stop.wait()
        for fake in running:
            await fake.stop()
