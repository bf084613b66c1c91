"""`make run` is `python -m lexweb.launcher run`: these tests start it for real, in a fresh var
folder with its own embedded PostgreSQL, and talk to it over HTTP."""

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from lexweb.embedded_db import DATABASE_NAME
from tests.harness.product import prepare_var
from tests.running import START_TIMEOUT, free_port_below_ephemeral
from tests.running import free_port as _free_port
from tests.running import launch as _launch
from tests.running import launcher_env as _launcher_env
from tests.running import one_shot as _one_shot
from tests.running import read_until as _read_until

pytestmark = pytest.mark.product  # launches the whole product (make run)


def test_run_serves_the_product_then_ctrl_c_stops_everything_and_data_survives(
    var_dir: Path,
) -> None:
    port = _free_port()
    env = _launcher_env(var_dir, port)
    first = _launch(["run"], env)
    try:
        started = _read_until(
            first, "Starting worker", "running at", DEMO_UPLOADED, timeout=START_TIMEOUT
        )
        assert f"running at http://127.0.0.1:{port}/" in started
        assert "First admin created: admin@lexweb.local" in started
        assert "Traceback" not in started
        _demo_seeded(first, started)

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


DEMO_UPLOADED = "Demo case: 5 documents uploaded"
DEMO_READY = "The demo case DEMO-2026-001 is ready"


def _demo_seeded(launcher: subprocess.Popen[str], started: str) -> None:
    """`make run` with the demo on (the default) seeds the demo case's documents, reads them on
    its cpu worker and freezes their packet, without holding up the start: the documents are
    uploaded before the children start; the worker reads them and freezes the packet while
    the web server starts (either may say so first)."""
    seeded = started if DEMO_READY in started else started + _read_until(launcher, DEMO_READY)
    assert seeded.index(DEMO_UPLOADED) < seeded.index("running at")
    ready = next(line for line in seeded.splitlines() if DEMO_READY in line)
    assert "Bates numbers from ACME000001 (production ACME001)" in ready
    assert "packet “Delivery dispute: the record” frozen (6 pages)" in ready
    before = seeded[: seeded.index(DEMO_READY)]
    assert "Traceback" not in before
    assert "The demo seeding stops" not in before and "seed_demo:" not in before


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


def _processes(var_dir: Path) -> dict[str, Any]:
    try:
        record: dict[str, Any] = json.loads((var_dir / "run" / "processes.json").read_text())
    except (OSError, ValueError):
        return {}
    return record


def _pid(var_dir: Path, child: str) -> int | None:
    pid: int | None = (_processes(var_dir).get("children", {}).get(child) or {}).get("pid")
    return pid


def _environ(pid: int) -> dict[str, str]:
    """The environment process `pid` was started with."""
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


def test_the_web_servers_malloc_arenas_are_the_operators_when_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lexweb import launcher

    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert launcher._web_env() == {"MALLOC_ARENA_MAX": launcher.WEB_MALLOC_ARENA_MAX}
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert launcher._web_env() == {"MALLOC_ARENA_MAX": "4"}


def _poll(what: str, check: Callable[[], Any], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


def _answers(port: int, path: str) -> bool:
    """Whether the launched product's web server answers `path` with 200 now."""
    try:
        response = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10)
    except httpx.TransportError:
        return False
    return response.status_code == 200


def _five_free_ports() -> int:
    for _ in range(50):
        first = free_port_below_ephemeral()
        if first + 5 > 32_000:
            continue
        try:
            with contextlib.ExitStack() as stack:
                for port in range(first, first + 5):
                    probe = stack.enter_context(socket.socket())
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise AssertionError("no run of five free ports")


def test_supervisor_restarts_every_child_that_ends_and_the_database_and_says_so(
    var_dir: Path,
) -> None:
    prepare_var(var_dir)  # a launch, not a first start: migrated, static files collected
    port = free_port_below_ephemeral()
    env = _launcher_env(var_dir, port, LEXWEB_DEMO_BACKEND_PORT=str(_five_free_ports()))
    env.pop("MALLOC_ARENA_MAX", None)  # the launcher's own choice for the web server, below
    launcher = _launch(["run"], env)
    try:
        _read_until(launcher, "running at", timeout=START_TIMEOUT)
        children = _poll("all four children", lambda: _processes(var_dir).get("children"))
        # And a worker for each GPU host, serving its boards' drafting queues (the demo site
        # has two hosts with boards).
        boards = {key for key in children if key.startswith("host-")}
        assert len(boards) == 2 and all(re.fullmatch(r"host-\d+-worker", key) for key in boards)
        assert set(children) - boards == {
            "web",
            "cpu-worker",
            "cluster-worker",
            "demo-backends",
            "demo-gpu-agent",
        }
        record = _processes(var_dir)
        assert record["launcher"] == launcher.pid
        assert record["database"]["pid"] == int(
            (var_dir / "pgdata" / "postmaster.pid").read_text().splitlines()[0]
        )
        base = os.getpriority(os.PRIO_PROCESS, launcher.pid)
        for key, entry in children.items():
            # A session of its own: the terminal's Ctrl-C reaches only the launcher.
            assert os.getsid(entry["pid"]) == entry["pid"], key
            assert entry["restarts"] == 0
            # Batch work (OCR, stamping, rendering) yields the CPU to streams and pages.
            assert os.getpriority(os.PRIO_PROCESS, entry["pid"]) == (
                min(base + 10, 19) if key == "cpu-worker" else base
            ), key
            # The web server's malloc has two arenas (its threads, one a request, would spread
            # its freed memory over 16 on two cores); the others keep glibc's default.
            assert _environ(entry["pid"]).get("MALLOC_ARENA_MAX") == (
                "2" if key == "web" else None
            ), key

        # Any end, exit status 0 included, is followed by a restart after a backoff.
        ends = {
            "web": (signal.SIGKILL, "web server", "was killed by SIGKILL"),
            "cpu-worker": (signal.SIGKILL, "cpu worker", "was killed by SIGKILL"),
            "cluster-worker": (signal.SIGKILL, "cluster worker", "was killed by SIGKILL"),
            "demo-backends": (signal.SIGTERM, "demo backends", "exited with status 0"),
        }
        board = min(boards)
        ends[board] = (signal.SIGKILL, children[board]["label"], "was killed by SIGKILL")
        for key, (signum, label, how) in ends.items():
            old = children[key]["pid"]
            os.kill(old, signum)
            said = _read_until(launcher, f"{label} started again", timeout=120)
            assert re.search(
                rf"lexweb: {label} \(pid {old}\) {how} at \d\d:\d\d:\d\d after \d+ s; "
                r"restarting it in 1 s\.",
                said,
            ), said

            def replaced(key: str = key, old: int = old) -> bool:
                return _pid(var_dir, key) not in (None, old)

            _poll(f"{key} again", replaced)
            assert _processes(var_dir)["children"][key]["restarts"] == 1
        assert _environ(_pid(var_dir, "web") or 0).get("MALLOC_ARENA_MAX") == "2"  # restarted
        # Dying again soon after: the wait doubles.
        old = _pid(var_dir, "cpu-worker")
        assert old is not None
        os.kill(old, signal.SIGKILL)
        said = _read_until(launcher, "cpu worker started again", timeout=120)
        assert f"cpu worker (pid {old}) was killed by SIGKILL" in said
        assert "restarting it in 2 s." in said
        _poll("the cpu worker again", lambda: _pid(var_dir, "cpu-worker") not in (None, old))
        restarted = _pid(var_dir, "cpu-worker")
        assert restarted is not None
        assert os.getpriority(os.PRIO_PROCESS, restarted) == min(base + 10, 19)
        # The web server said "started again" when it was spawned: it answers once it has
        # loaded Django and bound its port (seconds on a slow, busy machine).
        _poll("/healthz ok after the web server's restart", lambda: _answers(port, "/healthz"))

        # The embedded PostgreSQL, killed, is started again; the product answers /readyz again.
        postgres = _processes(var_dir)["database"]["pid"]
        os.kill(postgres, signal.SIGKILL)
        said = _read_until(launcher, "PostgreSQL is running again", timeout=180)
        assert re.search(
            rf"lexweb: PostgreSQL \(pid {postgres}\) stopped unexpectedly at \d\d:\d\d:\d\d; "
            r"starting it again \(try 1 of 5\)\.",
            said,
        ), said
        _poll(
            "a new PostgreSQL pid",
            lambda: _processes(var_dir).get("database", {}).get("pid") not in (None, postgres),
        )

        _poll(
            "/readyz ok after the database came back",
            lambda: _answers(port, "/readyz"),
            timeout=180,
        )
        assert launcher.poll() is None
    finally:
        launcher.send_signal(signal.SIGINT)
        launcher.wait(timeout=120)
    rest = launcher.stdout.read() if launcher.stdout else ""
    assert launcher.returncode == 0, rest
    assert "lexweb: stopping web, workers and database (running jobs get up to" in rest
    assert "did not stop in time" not in rest
    assert not (var_dir / "run" / "processes.json").exists()
    assert not (var_dir / "pgdata" / "postmaster.pid").exists()


def test_database_that_cannot_be_brought_back_stops_everything_with_one_line(
    var_dir: Path,
) -> None:
    prepare_var(var_dir)  # a launch, not a first start: migrated, static files collected
    env = _launcher_env(
        var_dir,
        free_port_below_ephemeral(),
        LEXWEB_DEMO_DATA="false",
        # Four tries after the first, a second apart (the default waits 2, 4, 8 and 16 s).
        LEXWEB_DATABASE_RESTART_SECONDS="1,1,1,1",
    )
    launcher = _launch(["run"], env)
    try:
        _read_until(launcher, "running at", timeout=START_TIMEOUT)
        children = _poll("the children", lambda: _processes(var_dir).get("children"))
        pids = [entry["pid"] for entry in children.values()]
        # A configuration PostgreSQL refuses: it cannot start again once it is killed.
        with (var_dir / "pgdata" / "postgresql.conf").open("a") as conf:
            conf.write("\nthis is not a setting\n")
        os.kill(_processes(var_dir)["database"]["pid"], signal.SIGKILL)
        launcher.wait(timeout=240)
    finally:
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGINT)
            launcher.wait(timeout=120)
    output = launcher.stdout.read() if launcher.stdout else ""
    assert launcher.returncode == 1, output
    errors = [line for line in output.splitlines() if line.startswith("lexweb: error:")]
    assert len(errors) == 1, output
    assert errors[0].startswith(
        "lexweb: error: PostgreSQL could not be started again after 5 tries"
    )
    assert errors[0].endswith(
        f"read {var_dir.resolve() / 'pgdata' / 'log'}. Everything was stopped."
    )
    assert "(try 5 of 5)" in output
    assert output.count("trying again in 1 s") == 4, output
    for pid in pids:
        assert not _alive(pid), f"child {pid} outlived the launcher"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")


def test_external_database_that_goes_away_is_waited_for_then_given_up_on(
    var_dir: Path,
) -> None:
    """With DATABASE_URL the launcher cannot start the database: it says when it went away and
    when it is back, and after LEXWEB_DATABASE_WAIT_SECONDS stops everything with one line."""
    import pgserver
    from pgserver import _commands

    # Beside var_dir, not under pytest's folders: another pytest session starting meanwhile
    # makes those private again, out of the reach of PostgreSQL's own user. The other server's
    # data folder is a prepared one (its lexweb database migrated, as another install's would
    # be): the launch does not spend its time on initdb and every migration.
    external = prepare_var(var_dir.parent / "external") / "pgdata"
    server = pgserver.get_server(external, cleanup_mode="stop")
    try:
        socket_dir = server.get_postmaster_info().socket_dir
        url = f"postgres://postgres@{quote(str(socket_dir), safe='')}/{DATABASE_NAME}"
        env = _launcher_env(
            var_dir,
            free_port_below_ephemeral(),
            DATABASE_URL=url,
            LEXWEB_DEMO_DATA="false",
            LEXWEB_DATABASE_WAIT_SECONDS="10",
        )
        launcher = _launch(["run"], env)
        try:
            _read_until(launcher, "running at", timeout=START_TIMEOUT)

            def stop_database() -> None:
                _commands.pg_ctl(  # type: ignore[attr-defined]
                    ["-m", "immediate", "-w", "stop"],
                    pgdata=server.pgdata,
                    user=server.system_user,
                )

            stop_database()
            said = _read_until(launcher, "lexweb: the database went away at", timeout=60)
            assert "waiting up to 10 s for it to come back." in said
            with server._lock:
                server.ensure_postgres_running()
            _read_until(launcher, "lexweb: the database is reachable again at", timeout=60)
            assert launcher.poll() is None

            stop_database()
            launcher.wait(timeout=120)
        finally:
            if launcher.poll() is None:
                launcher.send_signal(signal.SIGINT)
                launcher.wait(timeout=120)
        output = launcher.stdout.read() if launcher.stdout else ""
        assert launcher.returncode == 1, output
        errors = [line for line in output.splitlines() if line.startswith("lexweb: error:")]
        assert len(errors) == 1, output
        assert errors[0].startswith("lexweb: error: the database has been unreachable for 10 s (")
        assert errors[0].endswith(
            "check DATABASE_URL and the database server. Everything was stopped."
        )
    finally:
        server.cleanup()
