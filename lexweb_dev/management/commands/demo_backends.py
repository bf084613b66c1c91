import asyncio
import signal
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from lexweb_dev import demo
from lexweb_dev.fakebackend.config import FakeSettings
from lexweb_dev.fakebackend.server import FakeBackend


class Command(BaseCommand):
    help = (
        "Serve the demo cluster's backends (as seed_demo_site configured them, on 127.0.0.1) "
        "with local fakes that speak their protocols, until Ctrl-C. Other backends are left "
        "alone."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--plan",
            action="store_true",
            help="Print what would be served, one backend a line (name, kind, address, "
            "tab-separated; nothing when no backend is configured as the demo made it), and "
            "exit. The launcher starts this command only when there is something to serve.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        plan = demo.demo_backend_plan(
            text=demo.REFERENCE_SITE.read_text(encoding="utf-8"),
            port_base=settings.LEXWEB_DEMO_BACKEND_PORT,
        )
        if options["plan"]:
            for name, port, fake_settings in plan:
                self.stdout.write(f"{name}\t{fake_settings.kind}\thttp://127.0.0.1:{port}")
            return
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
