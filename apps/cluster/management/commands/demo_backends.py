import asyncio
import signal
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand

from apps.cluster.fakebackend.config import FakeSettings
from apps.cluster.fakebackend.server import FakeBackend
from apps.cluster.management.commands.seed_demo_site import REFERENCE_SITE
from apps.cluster.models import Backend
from apps.cluster.services import site

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
        "Serve the demo cluster's backends (as seed_demo_site configured them, on 127.0.0.1) "
        "with local fakes that speak their protocols, until Ctrl-C. Other backends are left "
        "alone."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        demo_urls = site.demo_backend_urls(
            text=REFERENCE_SITE.read_text(encoding="utf-8"),
            port_base=settings.LEXWEB_DEMO_BACKEND_PORT,
        )
        plan: list[tuple[str, int, FakeSettings]] = []
        for backend in Backend.objects.filter(name__in=demo_urls, enabled=True).order_by("name"):
            port = urlsplit(backend.base_url).port
            fake = demo_settings(backend)
            # Only a backend still configured as the demo made it: a fake must never answer in
            # place of one of the firm's own servers.
            if backend.base_url != demo_urls[backend.name] or port is None or fake is None:
                continue
            plan.append((backend.name, port, fake))
        if not plan:
            self.stdout.write("demo_backends: no demo backend is configured; nothing to do.")
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
