"""The demo of `make run` (lexweb_dev): the demo case, and the reference site as the demo cluster
with its backends played by local fakes."""

import contextlib
import secrets
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from django.core.management import call_command
from pytest_django.fixtures import Settings

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import Backend, Board, Host, RoleRoute
from lexweb_dev import demo
from tests.conftest import BASE_DIR, database_url_for_tests
from tests.running import free_port

pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_demo_cluster_is_the_reference_site_on_local_fakes(settings: Settings) -> None:
    settings.LEXWEB_DEMO_BACKEND_PORT = 20100

    call_command("seed_demo_site")

    assert Board.objects.count() == 5
    assert RoleRoute.objects.filter(role="drafter").count() == 2
    urls = sorted(Backend.objects.values_list("base_url", flat=True))
    assert urls == [f"http://127.0.0.1:{20100 + n}" for n in range(5)]
    assert not Backend.objects.exclude(api_key="").exists()


def test_demo_cluster_is_loaded_once_and_never_over_a_configured_one(
    settings: Settings,
) -> None:
    Host.objects.create(name="the-firms-own-host")

    call_command("seed_demo_site")

    assert list(Host.objects.values_list("name", flat=True)) == ["the-firms-own-host"]


def test_no_demo_cluster_when_demo_data_is_off(settings: Settings) -> None:
    settings.LEXWEB_DEMO_DATA = False

    call_command("seed_demo_site")

    assert not Host.objects.exists()


def _free_port_run(count: int) -> int:
    """The first of `count` consecutive free ports, below the ephemeral range (32768 up) so that
    no outgoing connection of a process running meanwhile can take one of them."""
    for base in range(20_000 + secrets.randbelow(10_000), 32_000, count):
        try:
            with contextlib.ExitStack() as probes:
                for port in range(base, base + count):
                    probe = probes.enter_context(socket.socket())
                    probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise AssertionError("no run of free ports")


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_demo_backends_serve_each_demo_backend_in_its_own_protocol_and_nothing_else(
    settings: Settings,
) -> None:
    base = _free_port_run(5)
    settings.LEXWEB_DEMO_BACKEND_PORT = base
    call_command("seed_demo_site")
    # A firm's own server on this machine, and a demo backend an admin has since repointed:
    # neither may be impersonated by a fake.
    own = Backend.objects.get(name="llama-gate")
    own.base_url = f"http://127.0.0.1:{free_port()}"
    own.save()
    ports = {
        name: int(url.rsplit(":", 1)[1])
        for name, url in Backend.objects.exclude(pk=own.pk).values_list("name", "base_url")
    }
    process = subprocess.Popen(
        [sys.executable, str(BASE_DIR / "manage.py"), "demo_backends"],
        cwd=BASE_DIR,
        env={
            "DATABASE_URL": database_url_for_tests(),
            "PATH": "/usr/bin:/bin",
            "PYTHONUNBUFFERED": "1",
            "LEXWEB_DEMO_BACKEND_PORT": str(base),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # Each fake answers once it listens (polled: the output may come in one burst).
        for port in ports.values():
            answering(process, f"http://127.0.0.1:{port}/", deadline=time.monotonic() + 60)

        llama = httpx.get(f"http://127.0.0.1:{ports['llama-board-b']}/health", timeout=10)
        assert (llama.status_code, llama.json()) == (200, {"status": "ok"})
        assert llama.headers["server"] == "llama.cpp"
        ollama = httpx.get(f"http://127.0.0.1:{ports['ollama-epyc']}/api/tags", timeout=10)
        assert [m["name"] for m in ollama.json()["models"]] == ["gemma4:26b"]
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{own.base_url}/health", timeout=5)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=20)
    assert process.returncode == 0
    for name, port in ports.items():
        assert f"demo_backends: {name} " in output and f"at http://127.0.0.1:{port}" in output
    assert "llama-gate" not in output


def answering(process: subprocess.Popen[str], url: str, *, deadline: float) -> None:
    """Return once something answers HTTP at `url`; fail at `deadline` (time.monotonic()) or
    as soon as `process` exits."""
    while True:
        try:
            httpx.get(url, timeout=5)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
        # Between polls, wait on the process: one that exits fails the test at once.
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = process.wait(timeout=0.2)
            raise AssertionError(f"demo_backends exited ({code}): {process.communicate()[0]}")


def test_the_demo_plan_leaves_out_backends_no_longer_as_the_demo_made_them(
    settings: Settings,
) -> None:
    settings.LEXWEB_DEMO_BACKEND_PORT = 20100
    call_command("seed_demo_site")
    # A firm's server that kept a reference-site name, at a port no socket can have.
    Backend.objects.filter(name="llama-gate").update(base_url="http://127.0.0.1:99999")
    Backend.objects.filter(name="ollama-epyc").update(enabled=False)

    plan = demo.demo_backend_plan(
        text=demo.REFERENCE_SITE.read_text(encoding="utf-8"), port_base=20100
    )

    assert {(name, port, fake.kind) for name, port, fake in plan} == {
        ("llama-board-a", 20100, "llama_cpp"),
        ("llama-board-b", 20101, "llama_cpp"),
        ("llama-adversary", 20103, "llama_cpp"),
    }
    speeds = {name: fake.tokens_per_second for name, _, fake in plan}
    assert speeds["llama-board-b"] == 50.0  # DESIGN.md: the 122B on a 4-GPU board


def test_demo_case_is_made_once_with_the_first_admin_and_a_demo_lawyer(
    admin_user: User, settings: Settings
) -> None:
    call_command("seed_demo")
    call_command("seed_demo")

    case = Case.objects.get(number=demo.DEMO_NUMBER)
    members = set(case.memberships.values_list("user__email", "role"))
    assert members >= {(demo.DEMO_LAWYER, "lawyer")}
    assert admin_user.email in {email for email, _ in members}
    assert Case.objects.count() == 1


def test_no_demo_case_when_demo_data_is_off(admin_user: User, settings: Settings) -> None:
    settings.LEXWEB_DEMO_DATA = False

    call_command("seed_demo")

    assert not Case.objects.exists()
