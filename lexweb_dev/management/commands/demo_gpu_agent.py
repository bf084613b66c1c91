import contextlib
import signal
import subprocess
import sys
import threading
from types import FrameType
from typing import Any

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.cluster import agent
from apps.cluster.models import Host
from lexweb_dev import demo
from lexweb_dev.fake_nvml import DemoNvml, demo_nvml_for, http_probe

STOP_GRACE_S = 10.0
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In a host's process, before exec: SIGTERM when this command dies, however it dies."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Command(BaseCommand):
    help = (
        "The demo's GPU agents: one process per demo host, each the product's GPU agent loop "
        "on a fake NVML whose figures follow the load on the demo backends "
        "(lexweb_dev.fake_nvml), until Ctrl-C or SIGTERM. Only with the demo on "
        "(LEXWEB_DEMO_DATA and LEXWEB_DEV_TOOLS), and only for hosts whose backends are all "
        "still the demo's."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--interval",
            default=str(settings.LEXWEB_GPU_AGENT_INTERVAL_SECONDS),
            help="seconds between samples (default LEXWEB_GPU_AGENT_INTERVAL_SECONDS)",
        )
        parser.add_argument(
            "--host", default=None, help="play this demo host only, in this process"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not (settings.LEXWEB_DEMO_DATA and settings.LEXWEB_DEV_TOOLS):
            raise CommandError(
                "demo_gpu_agent plays the demo's GPUs only with LEXWEB_DEMO_DATA and "
                "LEXWEB_DEV_TOOLS on; on a real site run `manage.py gpu_agent` on each host."
            )
        try:
            interval = agent.interval_parse(options["interval"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        stop = threading.Event()

        def request_stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            if options["host"] is None:
                self._supervise(options["interval"], stop)
            else:
                self._play(options["host"], interval, stop)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _playable(self, client: httpx.Client, interval: float) -> dict[str, DemoNvml]:
        urls = demo.demo_backend_urls(
            text=demo.REFERENCE_SITE.read_text(encoding="utf-8"),
            port_base=settings.LEXWEB_DEMO_BACKEND_PORT,
        )
        fakes: dict[str, DemoNvml] = {}
        for host in Host.objects.order_by("name"):
            fake = demo_nvml_for(
                host,
                demo_urls=urls,
                speeds=demo.DEMO_SPEEDS,
                default_speed=demo.DEMO_DEFAULT_SPEED,
                probe=http_probe(client),
                refresh_s=interval / 2,
            )
            if fake is not None:
                fakes[host.name] = fake
        return fakes

    def _supervise(self, interval: str, stop: threading.Event) -> None:
        """One process per demo host (the channel layer is not shared across threads), until
        told to stop; a host's process that ends is said and not started again here (the
        launcher starts this command again when it ends)."""
        with httpx.Client(timeout=1.0, trust_env=False) as client:
            names = list(self._playable(client, agent.interval_parse(interval)))
        for host in Host.objects.exclude(name__in=names).order_by("name"):
            self._say(f"demo_gpu_agent: {host.name} is not the demo's; left alone.")
        if not names:
            self._say("demo_gpu_agent: no demo host to play; nothing to do.")
            while not stop.wait(1.0):
                pass
            return
        manage = str(settings.BASE_DIR / "manage.py")
        children = {
            name: subprocess.Popen(  # noqa: S603  (our own interpreter and manage.py)
                [sys.executable, manage, "demo_gpu_agent", "--host", name, "--interval", interval],
                preexec_fn=_die_with_parent,
            )
            for name in names
        }
        try:
            while not stop.wait(0.5):
                if all(child.poll() is not None for child in children.values()):
                    break
        finally:
            for child in children.values():
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in children.values():
                try:
                    child.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()

    def _play(self, name: str, interval: float, stop: threading.Event) -> None:
        with httpx.Client(timeout=1.0, trust_env=False) as client:
            fake = self._playable(client, interval).get(name)
            if fake is None:
                raise CommandError(f"{name[:100]!r} is not a demo host; nothing played.")
            agent.run_agent(
                host_name=name,
                interval=interval,
                nvml_factory=lambda: fake,
                once=False,
                stop_event=stop,
                say=self._say,
            )

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()
