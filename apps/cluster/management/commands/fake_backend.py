import asyncio
import errno
import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.cluster.fakebackend import FakeBackend, FakeSettings

KINDS = ("llama_cpp", "ollama")


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise CommandError(f"--port must be a number from 0 to 65535, not {text!r}.")
    return int(text)


class Command(BaseCommand):
    help = (
        "Serve one fake LLM backend (the recorded llama-server or Ollama protocol) on "
        "127.0.0.1 until SIGINT or SIGTERM. One server per invocation: start the command once "
        "per backend to fake. --port 0 picks a free port; the line printed at start names it."
    )
    # Starts in well under a second: it needs no database and no system checks.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kind", choices=KINDS, required=True)
        # Read as text so that a bad value gets one clear line and exit status 1.
        parser.add_argument("--port", required=True)
        parser.add_argument("--tokens-per-second", type=float, default=50.0)
        parser.add_argument("--slots", type=int, default=2)
        parser.add_argument("--loading-seconds", type=float, default=0.0)
        parser.add_argument("--model", default="tiny")
        parser.add_argument("--context", type=int, default=4096, help="context of one slot")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["slots"] < 1 or options["tokens_per_second"] < 0:
            raise CommandError("--slots must be at least 1 and --tokens-per-second not negative.")
        settings = FakeSettings(
            kind=options["kind"],
            model=options["model"],
            tokens_per_second=options["tokens_per_second"],
            slots=options["slots"],
            n_ctx_per_slot=options["context"],
            loading_seconds=options["loading_seconds"],
        )
        asyncio.run(self._serve(FakeBackend(settings, port=_port(options["port"]))))

    async def _serve(self, fake: FakeBackend) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        try:
            await fake.start()
        except OSError as exc:
            reason = "it is in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
            raise CommandError(f"Cannot listen on 127.0.0.1:{fake.port}: {reason}.") from None
        self.stdout.write(f"fake {fake.settings.kind} backend at {fake.base_url}")
        self.stdout.flush()
        await stop.wait()
        await fake.stop()
