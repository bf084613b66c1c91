"""`make run` is `python -m lexweb.launcher run`: these tests start it for real, in a fresh var
folder with its own embedded PostgreSQL, and talk to it over HTTP."""

import signal
import socket
from pathlib import Path

import httpx

from tests.running import free_port as _free_port
from tests.running import launch as _launch
from tests.running import launcher_env as _launcher_env
from tests.running import one_shot as _one_shot
from tests.running import read_until as _read_until

START_TIMEOUT = 120


def test_run_serves_the_product_then_ctrl_c_stops_everything_and_data_survives(
    var_dir: Path,
) -> None:
    port = _free_port()
    env = _launcher_env(var_dir, port)
    first = _launch(["run"], env)
    try:
        started = _read_until(first, "Starting worker", "running at", timeout=START_TIMEOUT)
        assert f"running at http://127.0.0.1:{port}/" in started
        assert "First admin created: admin@lexweb.local" in started
        assert "Traceback" not in started

        login = httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=10)
        assert login.status_code == 200 and "Sign in" in login.text
        css = httpx.get(f"http://127.0.0.1:{port}/static/lexweb/app.css", timeout=10)
        assert css.status_code == 200
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=60)
    rest = first.stdout.read() if first.stdout else ""
    assert first.returncode == 0, rest
    assert "Traceback" not in rest
    assert not (var_dir / "pgdata" / "postmaster.pid").exists(), "PostgreSQL still running"

    second = _launch(["run"], env)
    try:
        again = _read_until(second, "Starting worker", "running at", timeout=START_TIMEOUT)
    finally:
        second.send_signal(signal.SIGINT)
        second.wait(timeout=60)
    assert "First admin created" not in again
    assert "Demo case" not in again
    assert second.returncode == 0


def test_port_in_use_is_one_clear_line(var_dir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]

        result = _one_shot(["run"], _launcher_env(var_dir, port))

    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    assert lines == [
        f"lexweb: error: port {port} on 127.0.0.1 is already in use. Stop the program using it "
        f"(see: ss -ltnp 'sport = :{port}') or choose another with LEXWEB_PORT."
    ]
    assert not (var_dir / "pgdata").exists()


def test_bad_port_setting_is_one_clear_line(var_dir: Path) -> None:
    env = _launcher_env(var_dir, 0)
    env["LEXWEB_PORT"] = "eighty"

    result = _one_shot(["run"], env)

    assert result.returncode == 1
    assert result.stdout.strip() == "lexweb: error: LEXWEB_PORT must be a port number, e.g. 8000."


def test_unreachable_database_is_one_clear_line_not_a_traceback(var_dir: Path) -> None:
    env = _launcher_env(var_dir, _free_port(), DATABASE_URL="postgres://nobody@127.0.0.1:9/none")

    result = _one_shot(["manage", "check"], env)

    assert result.returncode == 1
    output = (result.stdout + result.stderr).strip()
    assert "Traceback" not in output
    assert output.startswith("lexweb: error: cannot reach the database (")
    assert output.endswith("check DATABASE_URL, or unset it to use the embedded PostgreSQL.")
    assert len(output.splitlines()) == 1


def test_database_that_will_not_start_is_one_clear_line(var_dir: Path) -> None:
    # A data folder that is a file: PostgreSQL cannot possibly start there.
    var_dir.mkdir(parents=True)
    (var_dir / "pgdata").write_text("not a folder")

    result = _one_shot(["manage", "check"], _launcher_env(var_dir, _free_port()))

    assert result.returncode == 1
    output = (result.stdout + result.stderr).strip()
    assert len(output.splitlines()) == 1, output
    assert output.startswith("lexweb: error: The embedded PostgreSQL in")
    assert "did not start: initdb: error: could not access directory" in output


def test_unknown_command_prints_usage(var_dir: Path) -> None:
    result = _one_shot(["fly"], _launcher_env(var_dir, 0))

    assert result.returncode == 2
    assert "usage: python -m lexweb.launcher run" in result.stdout
