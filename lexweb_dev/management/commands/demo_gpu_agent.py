import signal
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


class Command(BaseCommand):
    help = (
        "The demo's GPU agents: one per demo host, each reading a fake NVML whose figures "
        "follow the load on the demo backends (lexweb_dev.fake_nvml), until Ctrl-C. Only with "
        "the demo on (LEXWEB_DEMO_DATA and LEXWEB_DEV_TOOLS), and only for hosts whose "
        "backends are all still the demo's."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--interval",
            default=str(settings.LEXWEB_GPU_AGENT_INTERVAL_SECONDS),
            help="seconds between samples (default LEXWEB_GPU_AGENT_INTERVAL_SECONDS)",
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
            with httpx.Client(timeout=1.0, trust_env=False) as client:
                self._run(client, interval, stop)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _run(self, client: httpx.Client, interval: float, stop: threading.Event) -> None:
        urls = demo.demo_backend_urls(
            text=demo.REFERENCE_SITE.read_text(encoding="utf-8"),
            port_base=settings.LEXWEB_DEMO_BACKEND_PORT,
        )
        probe = http_probe(client)
        fakes: dict[str, DemoNvml] = {}
        for host in Host.objects.order_by("name"):
            fake = demo_nvml_for(
                host,
                demo_urls=urls,
                speeds=demo.DEMO_SPEEDS,
                default_speed=demo.DEMO_DEFAULT_SPEED,
                probe=probe,
                refresh_s=interval / 2,
            )
            if fake is None:
                self._say(f"demo_gpu_agent: {host.name} is not the demo's; left alone.")
            else:
                fakes[host.name] = fake
        if not fakes:
            self._say("demo_gpu_agent: no demo host to play; nothing to do.")
            stop.wait()
            return
        threads = [
            threading.Thread(
                target=self._agent,
                args=(name, fake, interval, stop),
                name=f"demo-gpu-agent-{name}",
                daemon=True,
            )
            for name, fake in fakes.items()
        ]
        for thread in threads:
            thread.start()
        stop.wait()
        for thread in threads:
            thread.join(timeout=interval + 5)

    def _agent(self, name: str, fake: DemoNvml, interval: float, stop: threading.Event) -> None:
        from django import db

        try:
            agent.run_agent(
                host_name=name,
                interval=interval,
                nvml_factory=lambda: fake,
                once=False,
                stop_event=stop,
                say=self._say,
            )
        finally:
            db.connection.close()

    _lock = threading.Lock()

    def _say(self, line: str) -> None:
        with self._lock:
            self.stdout.write(line)
            self.stdout.flush()
