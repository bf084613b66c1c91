"""`make run` and `make test` end here: one process that owns the embedded database.

    python -m lexweb.launcher run            web + worker (+ embedded PostgreSQL), until Ctrl-C
    python -m lexweb.launcher test [ARGS]    pytest ARGS against the embedded PostgreSQL
    python -m lexweb.launcher manage ARGS    manage.py ARGS against the embedded PostgreSQL
    python -m lexweb.launcher bench          every bench/bench_*.py, each printing JSON

Every failure a newcomer can meet (port taken, database will not start, migrations fail) ends
in one line that says what to do, and exit status 1.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("LEXWEB_VAR_DIR") or BASE_DIR / "var").resolve()
PYTHON = sys.executable
STOP_GRACE_SECONDS = 15


class LaunchError(Exception):
    """Something the person at the keyboard must fix; the message says what."""


def _say(message: str) -> None:
    print(f"lexweb: {message}", flush=True)  # noqa: T201  (this is the user interface)


def _prepare_environment() -> None:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    run_dir = VAR_DIR / "run"
    run_dir.mkdir(mode=0o700, exist_ok=True)
    run_dir.chmod(0o700)
    # pgserver keeps its lock file under the runtime dir; give it one that always exists.
    os.environ.setdefault("XDG_RUNTIME_DIR", str(run_dir))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
    os.environ["LEXWEB_VAR_DIR"] = str(VAR_DIR)


def _start_database() -> None:
    if os.environ.get("DATABASE_URL"):
        return
    from lexweb import embedded_db

    try:
        embedded_db.start(VAR_DIR / "pgdata")
    except embedded_db.EmbeddedDatabaseError as exc:
        raise LaunchError(str(exc)) from None


def _stop_database() -> None:
    from lexweb import embedded_db  # a no-op when this process started none

    embedded_db.stop()


def _check_database() -> None:
    import django
    from django.db import connection

    django.setup()
    try:
        connection.ensure_connection()
    except Exception as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        hint = (
            "check DATABASE_URL, or unset it to use the embedded PostgreSQL"
            if os.environ.get("DATABASE_URL")
            else f"read {VAR_DIR / 'pgdata' / 'log'}"
        )
        raise LaunchError(f"cannot reach the database ({reason}); {hint}.") from None
    finally:
        connection.close()


def _manage(*args: str, quiet: bool = False) -> None:
    result = subprocess.run(  # noqa: S603  (our own interpreter and manage.py)
        [PYTHON, str(BASE_DIR / "manage.py"), *args],
        cwd=BASE_DIR,
        stdout=subprocess.DEVNULL if quiet else None,
        check=False,
    )
    if result.returncode != 0:
        raise LaunchError(
            f"'manage.py {' '.join(args)}' failed (exit {result.returncode}); its output is above."
        )


def _check_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            raise LaunchError(
                f"port {port} on {host} is already in use. Stop the program using it "
                f"(see: ss -ltnp 'sport = :{port}') or choose another with LEXWEB_PORT."
            ) from None


def _wait_until_listening(host: str, port: int, web: subprocess.Popen[bytes]) -> bool:
    """Wait (bounded) until the web server accepts connections, so the URL we print works."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and web.poll() is None:
        try:
            with socket.create_connection((host, port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def _terminate(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run() -> int:
    """Set up, then serve web and worker until Ctrl-C or until either of them dies."""
    host = os.environ.get("LEXWEB_HOST", "127.0.0.1")
    try:
        port = int(os.environ.get("LEXWEB_PORT", "8000"))
    except ValueError:
        raise LaunchError("LEXWEB_PORT must be a port number, e.g. 8000.") from None
    _check_port_free(host, port)
    _start_database()
    _check_database()
    _say("applying database migrations…")
    _manage("migrate", "--noinput", quiet=True)
    _manage("collectstatic", "--noinput", quiet=True)
    _manage("ensure_admin")
    _manage("seed_demo")
    _manage("seed_demo_site")
    web = subprocess.Popen(  # noqa: S603
        [
            PYTHON,
            "-m",
            "uvicorn",
            "lexweb.asgi:application",
            "--host",
            host,
            "--port",
            str(port),
            "--no-access-log",
            "--proxy-headers",
            "--lifespan",
            "off",
        ],
        cwd=BASE_DIR,
    )
    worker = subprocess.Popen(  # noqa: S603
        [PYTHON, str(BASE_DIR / "manage.py"), "procrastinate", "worker", "--queues", "cpu"],
        cwd=BASE_DIR,
    )
    # Backend calls mostly wait on the network: their own worker, many at once, so that a long
    # call never holds up a health check and different boards work in parallel.
    cluster_worker = subprocess.Popen(  # noqa: S603
        [
            PYTHON,
            str(BASE_DIR / "manage.py"),
            "procrastinate",
            "worker",
            "--queues",
            "cluster",
            "--concurrency",
            str(_cluster_worker_concurrency()),
        ],
        cwd=BASE_DIR,
    )
    children = [web, worker, cluster_worker]
    # The demo cluster's backends, played by local fakes. Not vital: if it stops, the
    # dashboard shows those backends down and everything else goes on.
    extras = [_start_demo_backends()] if _demo_data_enabled() else []
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    if _wait_until_listening(host, port, web):
        _say(f"running at http://{host}:{port}/ (web and workers). Press Ctrl-C to stop.")
    while not stopping and all(child.poll() is None for child in children):
        time.sleep(0.5)
    _say("stopping web, worker and database…")
    died = [child for child in children if child.returncode not in (None, 0)]
    _terminate(children + extras)
    if died and not stopping:
        raise LaunchError(
            f"the {'web server' if died[0] is web else 'worker'} stopped unexpectedly "
            f"(exit {died[0].returncode}); its output is above. Everything else was stopped."
        )
    return 0


def _cluster_worker_concurrency() -> int:
    from django.conf import settings

    return int(settings.LEXWEB_CLUSTER_WORKER_CONCURRENCY)


def _demo_data_enabled() -> bool:
    from django.conf import settings

    return bool(settings.LEXWEB_DEMO_DATA)


def _start_demo_backends() -> subprocess.Popen[bytes]:
    return subprocess.Popen(  # noqa: S603
        [PYTHON, str(BASE_DIR / "manage.py"), "demo_backends"], cwd=BASE_DIR
    )


def _bench() -> int:
    """Every bench/bench_*.py, on a database of its own (never the product's data)."""
    if not os.environ.get("DATABASE_URL"):
        from lexweb import embedded_db

        os.environ["DATABASE_URL"] = embedded_db.ensure_database("lexweb_bench")
    _manage("migrate", "--noinput", quiet=True)
    failed = 0
    for script in sorted((BASE_DIR / "bench").glob("bench_*.py")):
        module = f"bench.{script.stem}"
        failed |= subprocess.call([PYTHON, "-m", module], cwd=BASE_DIR)  # noqa: S603
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "manage", "bench"}:
        _say("usage: python -m lexweb.launcher run | test [pytest args] | manage ARGS | bench")
        return 2
    _prepare_environment()
    command, rest = argv[0], argv[1:]
    try:
        if command == "run":
            return run()
        _start_database()
        if command == "bench":
            return _bench()
        _check_database()
        tool = (
            [PYTHON, "-m", "pytest", *rest]
            if command == "test"
            else [PYTHON, str(BASE_DIR / "manage.py"), *rest]
        )
        return subprocess.call(tool, cwd=BASE_DIR)  # noqa: S603
    except LaunchError as exc:
        _say(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        _stop_database()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
