"""Issue 29, requirement 9: `make run` starts the demo's backend process only when there is a
backend for it to serve; before, a site without one had it end at once, and the launcher
started it again for ever with a growing backoff."""

from io import StringIO

import pytest
from django.core.management import call_command
from pytest_django.fixtures import Settings

from lexweb import launcher
from tests.conftest import database_url_for_tests
from tests.harness.ports import free_port_below_ephemeral

pytestmark = pytest.mark.django_db(transaction=True)


def _plan() -> list[str]:
    out = StringIO()
    call_command("demo_backends", "--plan", stdout=out)
    return out.getvalue().splitlines()


def test_the_plan_lists_what_would_be_served_and_is_empty_without_a_demo_site(
    settings: Settings,
) -> None:
    assert _plan() == []

    settings.LEXWEB_DEMO_BACKEND_PORT = 18300
    call_command("seed_demo_site")
    lines = _plan()

    assert lines and all(len(line.split("\t")) == 3 for line in lines)
    names = {line.split("\t")[0] for line in lines}
    assert {"llama-board-b", "ollama-epyc"} <= names
    assert "ollama-epyc\tollama\thttp://127.0.0.1:" in "\n".join(lines)


@pytest.mark.slow
def test_the_launcher_leaves_the_demo_backends_out_when_there_is_nothing_to_serve(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The launcher asks `manage.py demo_backends --plan` in a process of its own, which reads
    # this test's database and demo port from its environment.
    port = free_port_below_ephemeral()
    monkeypatch.setenv("DATABASE_URL", database_url_for_tests())
    monkeypatch.setenv("LEXWEB_DEMO_BACKEND_PORT", str(port))

    nothing = launcher._demo_children()

    assert [child.key for child in nothing] == ["demo-gpu-agent"]
    assert "the demo backends are not started" in capsys.readouterr().out

    settings.LEXWEB_DEMO_BACKEND_PORT = port
    call_command("seed_demo_site")
    something = launcher._demo_children()

    assert [child.key for child in something] == ["demo-backends", "demo-gpu-agent"]
    assert something[0].argv[-1] == "demo_backends"
    assert "not started" not in capsys.readouterr().out


def test_the_command_itself_still_says_there_is_nothing_to_do() -> None:
    out = StringIO()
    call_command("demo_backends", stdout=out)
    assert "no demo backend is configured; nothing to do." in out.getvalue()
