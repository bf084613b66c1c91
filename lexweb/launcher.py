"""`make run` and `make test` end here: one process that owns the embedded database.

    python -m lexweb.launcher run            web + worker (+ embedded PostgreSQL), until Ctrl-C
    python -m lexweb.launcher test [ARGS]    pytest ARGS against the embedded PostgreSQL
    python -m lexweb.launcher manage ARGS    manage.py ARGS against the embedded PostgreSQL
    python -m lexweb.launcher bench          every bench/bench_*.py, each printing JSON

Every failure a newcomer can meet (port taken, database will not start, migrations fail) ends
in one line that says what to do, and exit status 1.
"""

import contextlib
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
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
    # FILE_UPLOAD_TEMP_DIR: each process's upload spools go in a folder of its own under it.
    (VAR_DIR / "tmp").mkdir(mode=0o700, exist_ok=True)
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


PR_SET_PDEATHSIG = 1
RESET_AFTER_SECONDS = 60  # a child that ran this long starts its backoff again from 1 s
MAX_BACKOFF_SECONDS = 30
DATABASE_PROBE_SECONDS = 5  # how often an external DATABASE_URL is probed
WORKER_STOP_MARGIN_SECONDS = 10  # on top of the workers' own grace, before they are killed
DEFAULT_JOB_GRACE_SECONDS = 30


def _child_setup(nice: int) -> None:
    """In the child, before exec: its session (`_own_session`), then its niceness."""
    _own_session()
    if nice:
        os.nice(min(nice, 19))


def _own_session() -> None:
    """In the child, before exec: a session of its own, so that the terminal's Ctrl-C reaches
    only the launcher (which then stops each child once); and SIGTERM when the launcher itself
    dies, so that no child outlives a killed launcher."""
    os.setsid()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the session alone still shields the child
        pass


def _describe_end(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _clock() -> str:
    return time.strftime("%H:%M:%S")


@dataclass
class Child:
    """One supervised process, started again whenever it ends while we are not stopping."""

    key: str  # its name in processes.json: web, cpu-worker, cluster-worker, demo-backends, ...
    label: str  # its name in what we print
    argv: list[str]
    is_worker: bool
    nice: int = 0  # added to its niceness (and its children's) when it starts
    env: dict[str, str] = field(default_factory=dict)  # added to the launcher's environment
    process: "subprocess.Popen[bytes] | None" = None
    started_at: float = 0.0
    restarts: int = 0
    quick_deaths: int = 0  # ends in a row, each after less than RESET_AFTER_SECONDS of life
    restart_at: float | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(  # noqa: S603  (our own interpreter and modules)
            self.argv,
            cwd=BASE_DIR,
            env={**os.environ, **self.env} if self.env else None,
            preexec_fn=functools.partial(_child_setup, self.nice),  # the launcher has no threads
        )
        self.started_at = time.monotonic()
        self.restart_at = None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def schedule_restart(self) -> None:
        """It ended on its own: say which, how and when it comes back. A worker's jobs are
        queued again at once (its host sees it gone; no need to wait for its heartbeat)."""
        if self.process is None:
            return
        if self.is_worker:
            _worker_gone(self.process.pid)
        lived = time.monotonic() - self.started_at
        self.quick_deaths = self.quick_deaths + 1 if lived < RESET_AFTER_SECONDS else 1
        delay = min(MAX_BACKOFF_SECONDS, 2 ** (self.quick_deaths - 1))
        self.restart_at = time.monotonic() + delay
        _say(
            f"{self.label} (pid {self.process.pid}) {_describe_end(self.process.returncode)} "
            f"at {_clock()} after {lived:.0f} s; restarting it in {delay} s."
        )

    def restart(self) -> None:
        self.restarts += 1
        self.start()
        _say(f"{self.label} started again (pid {self.pid}, restart {self.restarts}).")

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None and self.running() else None

    def kill_group(self) -> None:
        """SIGKILL the child and whatever it started (its session is its process group)."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def _worker_gone(pid: int) -> None:
    """Its worker rows deleted and its running jobs queued again (apps.operations); with the
    database away this waits for the periodic recovery instead."""
    from django.db import connection

    from apps.operations.services import worker_pids

    try:
        outcome = worker_pids.worker_process_gone(pid=pid)
    except Exception as exc:  # the database may be what killed it; recovery comes later
        _say(f"could not queue again the jobs of worker pid {pid} now ({type(exc).__name__}).")
        return
    finally:
        connection.close()
    if outcome is not None and outcome.total:
        _say(f"queued again {outcome.total} job(s) of the worker that ended (pid {pid}).")


class _Signals:
    """Ctrl-C and SIGTERM, counted; the main loop reads the count (nothing runs in the handler)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum: int, frame: object) -> None:
        self.count += 1


class Supervisor:
    def __init__(self, children: list[Child], host: str, port: int) -> None:
        self.children = children
        self.host = host
        self.port = port
        self.signals = _Signals()
        self.embedded = not os.environ.get("DATABASE_URL")
        self.pgdata = VAR_DIR / "pgdata"
        self.database_pid: int | None = None
        self.database_down_since: float | None = None
        self.next_probe = 0.0
        self.processes_file = VAR_DIR / "run" / "processes.json"

    def write_processes(self) -> None:
        """var/run/processes.json: who runs under this launcher, replaced whole (atomically)."""
        record = {
            "launcher": os.getpid(),
            "database": {
                "kind": "embedded" if self.embedded else "external",
                "pid": self.database_pid,
            },
            "children": {
                child.key: {
                    "label": child.label,
                    "pid": child.pid,
                    "restarts": child.restarts,
                    "worker": child.is_worker,
                }
                for child in self.children
            },
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        temporary = self.processes_file.with_name(f".{self.processes_file.name}.tmp")
        temporary.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        temporary.replace(self.processes_file)

    def watch_database(self) -> None:
        """Start the embedded PostgreSQL again when it died; wait for an external one. Raises
        LaunchError when it cannot be brought back."""
        if self.embedded:
            if _postmaster_pid(self.pgdata) is None:
                self.restart_embedded_database()
            return
        now = time.monotonic()
        if now < self.next_probe:
            return
        self.next_probe = now + DATABASE_PROBE_SECONDS
        reason = _probe_database()
        if reason is None:
            if self.database_down_since is not None:
                _say(f"the database is reachable again at {_clock()}.")
                self.database_down_since = None
            return
        wait = _database_wait_seconds()
        if self.database_down_since is None:
            self.database_down_since = now
            _say(
                f"the database went away at {_clock()} ({reason}); waiting up to {wait} s for "
                "it to come back."
            )
        elif now - self.database_down_since > wait:
            raise LaunchError(
                f"the database has been unreachable for {wait} s ({reason}); check DATABASE_URL "
                "and the database server. Everything was stopped."
            )

    def restart_embedded_database(self) -> None:
        from lexweb import embedded_db

        waits = _database_restart_seconds()
        tries = len(waits) + 1
        _say(
            f"PostgreSQL (pid {self.database_pid}) stopped unexpectedly at {_clock()}; "
            f"starting it again (try 1 of {tries})."
        )
        reason = ""
        for attempt in range(1, tries + 1):
            if attempt > 1:
                delay = waits[attempt - 2]
                _say(
                    f"PostgreSQL did not start ({reason}); trying again in {delay} s "
                    f"(try {attempt} of {tries})."
                )
                self.sleep(delay)
                if self.signals.count:
                    return
            try:
                self.database_pid = embedded_db.restart()
            except embedded_db.EmbeddedDatabaseError as exc:
                reason = str(exc)
                continue
            _say(f"PostgreSQL is running again (pid {self.database_pid}).")
            self.write_processes()
            return
        raise LaunchError(
            f"PostgreSQL could not be started again after {tries} tries ({reason}); "
            f"read {self.pgdata / 'log'}. Everything was stopped."
        )

    def sleep(self, seconds: float) -> None:
        """Sleep, but wake for Ctrl-C."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.signals.count:
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

    def run(self) -> None:
        """Until Ctrl-C: start again what ended, bring the database back. Raises LaunchError when
        the database cannot be brought back."""
        signal.signal(signal.SIGINT, self.signals)
        signal.signal(signal.SIGTERM, self.signals)
        if self.embedded:
            self.database_pid = _postmaster_pid(self.pgdata)
        for child in self.children:
            child.start()
        self.write_processes()
        web = self.children[0].process
        if web is not None and _wait_until_listening(self.host, self.port, web):
            _say(
                f"running at http://{self.host}:{self.port}/ (web and workers). "
                "Press Ctrl-C to stop."
            )
        while not self.signals.count:
            self.watch_database()
            changed = False
            for child in self.children:
                if self.signals.count:
                    break
                if child.restart_at is None and not child.running():
                    child.schedule_restart()
                    changed = True
                elif (
                    child.restart_at is not None
                    and time.monotonic() >= child.restart_at
                    and self.database_down_since is None
                ):
                    child.restart()
                    changed = True
            if changed:
                self.write_processes()
            self.sleep(0.5)

    def stop(self) -> None:
        """Exactly one SIGTERM to each running child. Workers get their jobs' grace plus a
        margin, the others STOP_GRACE_SECONDS; whatever still runs then is killed, with its
        process group. Ctrl-C meanwhile only says how long it still takes."""
        grace = _job_grace_seconds()
        worker_wait = grace + WORKER_STOP_MARGIN_SECONDS
        _say(f"stopping web, workers and database (running jobs get up to {grace} s to finish)…")
        said = self.signals.count
        started = time.monotonic()
        running = [
            (child, child.process)
            for child in self.children
            if child.process is not None and child.running()
        ]
        for _child, process in running:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        for child, process in running:
            limit = started + (worker_wait if child.is_worker else STOP_GRACE_SECONDS)
            while process.poll() is None and time.monotonic() < limit:
                if self.signals.count > said:
                    said = self.signals.count
                    left = max(1, round(started + worker_wait - time.monotonic()))
                    _say(f"still stopping, waiting up to {left} s for running jobs.")
                time.sleep(0.1)
            if process.poll() is None:
                _say(f"{child.label} (pid {process.pid}) did not stop in time; killing it.")
                child.kill_group()
        self.processes_file.unlink(missing_ok=True)


def _postmaster_pid(pgdata: Path) -> int | None:
    from lexweb import embedded_db

    return embedded_db.postmaster_pid(pgdata)


def _probe_database() -> str | None:
    """None when the database answers, else the first line of why not."""
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any failure to reach it is a reason to say
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    finally:
        connection.close()
    return None


def _database_wait_seconds() -> int:
    from django.conf import settings

    return int(settings.LEXWEB_DATABASE_WAIT_SECONDS)


def _database_restart_seconds() -> list[int]:
    from django.conf import settings

    return list(settings.LEXWEB_DATABASE_RESTART_SECONDS)


def _job_grace_seconds() -> int:
    from django.conf import settings

    # The worker's own setting (`manage.py worker`); Procrastinate's worker has none.
    return int(getattr(settings, "LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS", DEFAULT_JOB_GRACE_SECONDS))


def _worker_argv(queue: str, concurrency: int | None = None) -> list[str]:
    """`manage.py worker` (ours: stalled-job recovery, graceful stop) where it exists, else
    Procrastinate's own."""
    ours = BASE_DIR / "apps" / "operations" / "management" / "commands" / "worker.py"
    command = ["worker"] if ours.exists() else ["procrastinate", "worker"]
    argv = [PYTHON, str(BASE_DIR / "manage.py"), *command, "--queues", queue]
    if concurrency is not None:
        argv += ["--concurrency", str(concurrency)]
    return argv


# How long the web server keeps an idle connection open. Longer than clients keep theirs (httpx
# pools 5 s, browsers about a minute), so the client closes first: with uvicorn's own 5 s, a
# request sent on a connection idle for just over 5 s met the server closing it (a reset; the
# load test's only errors, bench/bench_load.py).
KEEP_ALIVE_SECONDS = 75


def _web_argv(host: str, port: int, trusted_proxies: list[str]) -> list[str]:
    """uvicorn serving lexweb.asgi. X-Forwarded-For and X-Forwarded-Proto are believed only
    from the proxies named in LEXWEB_TRUSTED_PROXIES; with none named, not at all (uvicorn's
    own default would believe them from any local process), so the client address that
    throttles and the audit log see is the connecting peer's. Idle connections are kept
    KEEP_ALIVE_SECONDS."""
    argv = [PYTHON, "-m", "uvicorn", "lexweb.asgi:application", "--host", host]
    argv += ["--port", str(port), "--no-access-log", "--lifespan", "off"]
    argv += ["--timeout-keep-alive", str(KEEP_ALIVE_SECONDS)]
    if trusted_proxies:
        return [*argv, "--proxy-headers", "--forwarded-allow-ips", ",".join(trusted_proxies)]
    return [*argv, "--no-proxy-headers"]


# glibc's malloc arenas in the web process. Django runs each request's sync code on a thread of
# its own (asgiref starts one per request), and glibc gives threads up to 8 arenas a core, each
# keeping the memory freed in it for its next allocations: the web process's freed memory,
# spread over 16 arenas on two cores, grew by about 40 MB over five minutes of the load test
# while what it held stayed the same (bench/bench_load.py; docs/reference/performance.md).
# Two arenas hold it still. An operator's own MALLOC_ARENA_MAX is kept.
WEB_MALLOC_ARENA_MAX = "2"


def _web_env() -> dict[str, str]:
    """What the web server's environment adds to the launcher's."""
    return {"MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", WEB_MALLOC_ARENA_MAX)}


def run() -> int:
    """Set up, then supervise web, workers and demo backends until Ctrl-C (or until the database
    cannot be brought back)."""
    host = os.environ.get("LEXWEB_HOST", "127.0.0.1")
    try:
        port = int(os.environ.get("LEXWEB_PORT", "8000"))
    except ValueError:
        raise LaunchError("LEXWEB_PORT must be a port number, e.g. 8000.") from None
    _check_port_free(host, port)
    _start_database()
    _check_database()
    _say("applying database migrations…")
    # Migrations, static files, the first admin and the demo's seeding: one process.
    _manage("prepare", *(["--demo"] if _demo_data_enabled() else []))
    from django.conf import settings

    web = _web_argv(host, port, settings.LEXWEB_TRUSTED_PROXIES)
    children = [
        Child("web", "web server", web, is_worker=False, env=_web_env()),
        Child("cpu-worker", "cpu worker", _worker_argv("cpu"), is_worker=True, nice=_cpu_nice()),
        # Backend calls mostly wait on the network: their own worker, many at once, so that a
        # long call never holds up a health check and different boards work in parallel.
        Child(
            "cluster-worker",
            "cluster worker",
            _worker_argv("cluster", _cluster_worker_concurrency()),
            is_worker=True,
        ),
    ]
    # Drafting stages: one queue per board (`board.<id>`); one worker per GPU host serves its
    # boards' queues, as on a real site.
    children += [
        Child(f"host-{host}-worker", f"{queues} worker", _worker_argv(queues, slots), True)
        for host, queues, slots in _board_queues()
    ]
    if _demo_data_enabled():
        children += _demo_children()
    supervisor = Supervisor(children, host, port)
    try:
        supervisor.run()
    finally:
        supervisor.stop()
    return 0


def _board_queues() -> list[tuple[str, str, int]]:
    """(host id, its boards' queues comma-separated, concurrency) of every GPU host with boards,
    from `manage.py board_queues`. A board added later is served from the next start."""
    result = subprocess.run(  # noqa: S603  (our own interpreter and manage.py)
        [PYTHON, str(BASE_DIR / "manage.py"), "board_queues"],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise LaunchError(f"'manage.py board_queues' failed: {result.stderr.strip()[-500:]}")
    queues = []
    for line in result.stdout.splitlines():
        host, names, slots = line.split("\t", 2)
        queues.append((host, names, int(slots)))
    return queues


def _demo_children() -> list[Child]:
    """The demo's processes. Its backends, played by local fakes: only those still configured
    as the demo made them; with none, the command would end at once and be started again for
    ever, so it is not started at all. Their GPUs: the GPU agent on a fake NVML that follows
    their load (never on a real site: only with the demo backends, and only for hosts whose
    backends are the demo's; with none it waits, and is not restarted)."""
    manage = [PYTHON, str(BASE_DIR / "manage.py")]
    children = []
    if _demo_backends_planned():
        children.append(
            Child("demo-backends", "demo backends", [*manage, "demo_backends"], is_worker=False)
        )
    else:
        _say("no backend is as the demo configured it: the demo backends are not started.")
    agent = [*manage, "demo_gpu_agent"]
    children.append(Child("demo-gpu-agent", "demo GPU agent", agent, is_worker=False))
    return children


def _demo_backends_planned() -> list[str]:
    """The names of the backends `manage.py demo_backends` would serve now (its --plan)."""
    result = subprocess.run(  # noqa: S603  (our own interpreter and manage.py)
        [PYTHON, str(BASE_DIR / "manage.py"), "demo_backends", "--plan"],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise LaunchError(
            f"'manage.py demo_backends --plan' failed: {result.stderr.strip()[-500:]}"
        )
    return [line.split("\t", 1)[0] for line in result.stdout.splitlines() if line.strip()]


def _cpu_nice() -> int:
    from django.conf import settings

    return int(settings.LEXWEB_CPU_WORKER_NICE)


def _cluster_worker_concurrency() -> int:
    from django.conf import settings

    return int(settings.LEXWEB_CLUSTER_WORKER_CONCURRENCY)


def _demo_data_enabled() -> bool:
    from django.conf import settings

    # The demo lives in the dev package (lexweb_dev); a product install without it has none.
    return bool(settings.LEXWEB_DEMO_DATA and settings.LEXWEB_DEV_TOOLS)


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
