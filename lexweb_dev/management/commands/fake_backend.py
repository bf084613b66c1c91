import asyncio
import errno
import math
import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lexweb_dev.fakebackend import FakeBackend, FakeSettings

KINDS = ("llama_cpp", "ollama")


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise CommandError(f"--port must be a number from 0 to 65535, not {text!r}.")
    return int(text)


def _whole(value: object, option: str) -> int:
    """A whole number of at least 1 (slots, context tokens)."""
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise CommandError(f"{option} must be a whole number of at least 1, not {text!r}.")
    return int(text)


def _seconds_or_rate(value: object, option: str, meaning_of_zero: str) -> float:
    """A finite number of at least 0: nan, inf and negatives would stall or never end."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise CommandError(
            f"{option} must be a finite number of at least 0 ({meaning_of_zero}), not {text!r}."
        )
    return number


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
        # Numbers are read as text so that a bad value gets one clear line and exit status 1
        # (argparse's own errors are a usage block and status 2).
        parser.add_argument("--port", required=True)
        parser.add_argument("--tokens-per-second", default="50", help="0: no pacing")
        parser.add_argument("--slots", default="2")
        parser.add_argument("--loading-seconds", default="0")
        parser.add_argument("--model", default="tiny")
        parser.add_argument("--context", default="4096", help="context of one slot")

    def handle(self, *args: Any, **options: Any) -> None:
        settings = FakeSettings(
            kind=options["kind"],
            model=options["model"],
            tokens_per_second=_seconds_or_rate(
                options["tokens_per_second"], "--tokens-per-second", "0: no pacing"
            ),
            slots=_whole(options["slots"], "--slots"),
            n_ctx_per_slot=_whole(options["context"], "--context"),
            loading_seconds=_seconds_or_rate(
                options["loading_seconds"], "--loading-seconds", "0: ready at once"
            ),
        )
        port = _port(str(options["port"]))
        asyncio.run(self._serve(FakeBackend(settings, port=port)))

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
