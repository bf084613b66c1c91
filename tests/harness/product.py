"""The product as `make run` starts it (`python -m lexweb.launcher run`: its own embedded
PostgreSQL in a private var folder, migrations, the demo cluster, web, workers), started from the
tests.

`product` is the session's product: one launched product per test session (per xdist worker),
shared by the browser and process tests (`session_product`, registered for every folder by
tests/conftest.py), and stopped as soon as the worker has passed its last test of those tiers.
Each test makes its own case through the product itself (`Product.new_case`: the admin site and
the REST API, as a firm's admin and lawyers would), so tests never depend on one another nor on
the demo's cases. Its mail goes to a real SMTP server in the test process (`Product.mail`,
tests/harness/mail.py), so a test reads what it sent. Tests that need the product started with
settings of their own, or that stop and restart it, start their own with
`running_product(...)`, the same code.
"""

import contextlib
import fcntl
import hashlib
import importlib.metadata
import itertools
import json
import os
import queue
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import django
import httpx
import pytest
from django.conf import settings

if __name__ == "__main__":  # `python -m tests.harness.product` (at the end): Django first
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
    django.setup()

from tests.harness.mail import Inbox, smtp_server
from tests.harness.ports import free_port_below_ephemeral, free_port_run
from tests.harness.waiting import wait_until

BASE_DIR = Path(settings.BASE_DIR)
# A launched product's start (initdb, migrations, the demo, every worker) on a machine that
# may be busy with the rest of the suite: a fuse, not a measure of speed (a fresh `make run`
# took over 120 s on a 2-core machine 4 times slower than others, with the suite beside it).
# Every test that starts the launcher waits this long at most.
START_TIMEOUT = 300
PRODUCT_START_TIMEOUT = START_TIMEOUT
STOP_TIMEOUT = 120
ADMIN_EMAIL = "admin@lexweb.local"
ADMIN_PASSWORD = "Launcher-test-password-1"
# Every account the harness makes signs in with this one.
MEMBER_PASSWORD = "E2e-member-password-1"


# --- Processes started like `make run` ----------------------------------------------------


def launcher_env(var_dir: Path, port: int, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "XDG_RUNTIME_DIR", "LEXWEB_VAR_DIR", "REDIS_URL"}
    }
    env.update(
        LEXWEB_VAR_DIR=str(var_dir),
        LEXWEB_PORT=str(port),
        LEXWEB_ADMIN_PASSWORD=ADMIN_PASSWORD,
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def launch(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """`python -m lexweb.launcher ARGS`, its output on a pipe (read it with `read_until`)."""
    return subprocess.Popen(
        [sys.executable, "-m", "lexweb.launcher", *args],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def read_until(
    process: subprocess.Popen[str], *needles: str, timeout: float = START_TIMEOUT
) -> str:
    """Read the launcher's output until every needle has appeared (each on some line); fail on
    exit or timeout."""
    missing = set(needles)
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = _next_line(process, timeout=max(0.0, deadline - time.monotonic()))
        if not line:  # timed out (None) or the output ended ("")
            break
        seen.append(line)
        missing = {needle for needle in missing if needle not in line}
        if not missing:
            return "".join(seen)
    raise AssertionError(f"{sorted(missing)!r} not seen; output was:\n{''.join(seen)}")


# A line being read for a process when its read_until timed out: the next call takes it over.
_pending: "weakref.WeakKeyDictionary[subprocess.Popen[str], queue.Queue[str]]" = (
    weakref.WeakKeyDictionary()
)


def _next_line(process: subprocess.Popen[str], *, timeout: float) -> str | None:
    """The next line of the process's output, "" at its end, None if none came in time.

    A blocking readline on a thread rather than select() on the pipe: the text wrapper reads
    ahead, so lines it already holds would never make the pipe readable again, and a launcher
    that printed two lines at once would seem to have printed one.
    """
    box = _pending.pop(process, None)
    if box is None:
        box = queue.Queue(maxsize=1)
        stdout = process.stdout
        assert stdout is not None
        threading.Thread(target=lambda: box.put(stdout.readline()), daemon=True).start()
    try:
        return box.get(timeout=timeout)
    except queue.Empty:
        _pending[process] = box
        return None


def one_shot(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lexweb.launcher", *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def stop_database(var_dir: Path) -> None:
    """Whatever happened, no embedded PostgreSQL of `var_dir` may outlive the test."""
    pid_file = var_dir / "pgdata" / "postmaster.pid"
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError, IndexError):
            os.kill(int(pid_file.read_text().splitlines()[0]), signal.SIGTERM)


# --- A var folder as a first `make run` left it ------------------------------------------

_PREPARED_PARTS = ("pgdata", "static")


def prepare_var(var_dir: Path) -> Path:
    """Put into `var_dir` what a first `make run` leaves there before its children start: the
    embedded PostgreSQL's data folder with every migration applied (stopped cleanly) and the
    collected static files with their compressed copies. Returns `var_dir`.

    A launch in an empty var folder spends most of its set-up on the database's creation and
    migrations (about 10 s of CPU) and on compressing the static files (about 10 s more): a
    product launched by the suite starts from a copy instead, made once per set of migrations
    and PostgreSQL build (shared by every xdist worker and kept between runs under the system's
    temporary folder), so it starts as `make run` does on an install that ran before. The
    launch still runs `manage.py prepare` (its migrations find nothing to do, `collectstatic`
    copies and compresses only what changed since the copy was made, the first admin and the
    demo are made as on a first start). Tests of a first start in an empty folder use
    `var_dir` without this."""
    from tests.harness.database import migrations_digest

    build = f"{migrations_digest()} pgserver {importlib.metadata.version('pgserver')}"
    key = hashlib.sha256(build.encode()).hexdigest()[:12]
    root = Path(tempfile.gettempdir())
    made = root / f"lexweb-test-var-{key}"
    with (root / "lexweb-test-var.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (made / "complete").exists():
            for old in root.glob("lexweb-test-var-*"):
                if old.is_dir():
                    stop_database(old / "var")
                    shutil.rmtree(old, ignore_errors=True)
            made.mkdir()
            made.chmod(0o755)  # the embedded PostgreSQL runs as another user
            env = launcher_env(made / "var", 0)
            for step in (["migrate", "-v0"], ["collectstatic", "--noinput", "-v0"]):
                done = subprocess.run(
                    [sys.executable, "-m", "lexweb.launcher", "manage", *step],
                    cwd=BASE_DIR,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=PRODUCT_START_TIMEOUT,
                    check=False,
                )
                assert done.returncode == 0, f"preparing a var folder: {step}: {done.stdout}"
            assert not (made / "var" / "pgdata" / "postmaster.pid").exists()
            (made / "complete").write_text("")
    var_dir.mkdir(parents=True, exist_ok=True)
    for part in _PREPARED_PARTS:
        # cp -a: the data folder stays its owner's (PostgreSQL's user), dates stay (what
        # collectstatic and the compressed copies compare).
        subprocess.run(
            ["cp", "-a", str(made / "var" / part), str(var_dir / part)],
            check=True,
        )
    return var_dir


# --- The launched product -----------------------------------------------------------------


@dataclass(frozen=True)
class Account:
    email: str
    password: str
    full_name: str
    role: str  # the account's role: admin, lawyer or staff
    token: str = ""  # an API token of theirs, when one was made


@dataclass(frozen=True)
class CaseSetup:
    """A case made for one test: the admin opened it (so the admin is on it as staff, as a
    firm's admin who opens a case is), with a lawyer and a staff member of its own."""

    id: int
    number: str
    title: str
    lawyer: Account
    staff: Account

    @property
    def path(self) -> str:
        """The case page's path, "/cases/<id>/"."""
        return f"/cases/{self.id}/"


_serial = itertools.count(1)


@dataclass
class Product:
    """One launched product: `python -m lexweb.launcher run` in `var_dir`, on `port`."""

    var_dir: Path
    port: int
    env: dict[str, str]
    log: Path  # everything the launcher and its children printed (a test artifact)
    process: subprocess.Popen[bytes] | None = None
    # What its mail server received, where the test process runs the one it sends to.
    mail: Inbox | None = None
    admin: Account = field(
        default_factory=lambda: Account(ADMIN_EMAIL, ADMIN_PASSWORD, "Administrator", "admin")
    )
    _log_start: int = 0
    _admin_client: httpx.Client | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        """What the launcher printed since it was last started."""
        with self.log.open("rb") as log:
            log.seek(self._log_start)
            return log.read().decode("utf-8", "replace")

    # Starting and stopping.

    def start(self, *needles: str, timeout: float = PRODUCT_START_TIMEOUT) -> None:
        """Start the launcher and wait until its output shows every needle (by default: the web
        server and a worker are up)."""
        assert self.process is None or self.process.poll() is not None, "already running"
        self._log_start = self.log.stat().st_size
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "lexweb.launcher", "run"],
                cwd=BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.wait_for_output(*(needles or ("Starting worker", "running at")), timeout=timeout)

    def wait_for_output(self, *needles: str, timeout: float = START_TIMEOUT) -> str:
        """Wait until each needle is in the output since the last start; fail early if the
        launcher exits."""

        def seen() -> str | bool:
            text = self.output()
            if all(needle in text for needle in needles):
                return text
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(
                    f"the launcher exited ({self.process.returncode}) before "
                    f"{list(needles)!r}; its output was:\n{text[-6000:]}"
                )
            return False

        try:
            return str(wait_until(seen, timeout, f"{list(needles)!r} in the launcher's output"))
        except AssertionError as exc:
            if "timed out" in str(exc):
                raise AssertionError(f"{exc}; its output was:\n{self.output()[-6000:]}") from None
            raise

    def stop(self) -> int:
        """Ctrl-C, as a person at `make run` would; the launcher's exit status."""
        if self._admin_client is not None:
            self._admin_client.close()
            self._admin_client = None
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise AssertionError(
                    f"the launcher did not stop in {STOP_TIMEOUT} s:\n{self.output()[-6000:]}"
                ) from None
        return self.process.returncode

    def pid(self, process: str) -> int | None:
        """The pid the launcher recorded for `process` (`database`, or a child: `web`,
        `cpu-worker`, ...) in var/run/processes.json; None while none is recorded."""
        try:
            record = json.loads((self.var_dir / "run" / "processes.json").read_text())
        except (OSError, ValueError):
            return None
        entry = record.get("database") if process == "database" else None
        entry = entry or record.get("children", {}).get(process) or {}
        pid = entry.get("pid")
        return int(pid) if pid else None

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`python -m lexweb.launcher manage ARGS` on this product's own database."""
        return one_shot(["manage", *args], self.env)

    def shell(self, code: str) -> str:
        """Run `manage.py shell -c CODE` on this product's database; its output."""
        done = self.manage("shell", "-c", code)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    # Talking to it as people and agents do.

    def signed_in(self, email: str, password: str) -> httpx.Client:
        """An HTTP client signed in through the sign-in page (a browser session, with its CSRF
        cookie); call `api()` with it."""
        client = httpx.Client(base_url=self.base_url, timeout=60)
        page = client.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token, page.text[:2000]
        answer = client.post(
            "/accounts/login/",
            data={"username": email, "password": password, "csrfmiddlewaretoken": token[1]},
        )
        assert answer.status_code == 302, (answer.status_code, answer.text[:2000])
        return client

    @property
    def admin_client(self) -> httpx.Client:
        if self._admin_client is None:
            self._admin_client = self.signed_in(self.admin.email, self.admin.password)
        return self._admin_client

    @staticmethod
    def api(client: httpx.Client, method: str, path: str, body: Any = None) -> Any:
        """A call of /api/v1 from a signed-in session; its JSON answer (2xx or fail)."""
        answer = client.request(
            method,
            f"/api/v1{path}",
            json=body,
            headers={"X-CSRFToken": client.cookies.get("csrftoken") or ""},
        )
        assert answer.is_success, (method, path, answer.status_code, answer.text[:2000])
        return answer.json() if answer.content else None

    def new_account(self, role: str, *, label: str = "") -> Account:
        """An account made by the admin on the admin site's Add user form, as a firm does."""
        serial = f"{os.getpid()}-{next(_serial)}-{secrets.token_hex(3)}"
        name = f"E2E {role.title()} {label or serial}".strip()
        account = Account(f"e2e-{role}-{serial}@firm.test", MEMBER_PASSWORD, name, role)
        client = self.admin_client
        answer = client.post(
            "/admin/accounts/user/add/",
            data={
                "email": account.email,
                "full_name": account.full_name,
                "role": role,
                "password": account.password,
                "_save": "Save",
                "csrfmiddlewaretoken": client.cookies.get("csrftoken") or "",
            },
            headers={"Referer": f"{self.base_url}/admin/accounts/user/add/"},
        )
        assert answer.status_code == 302, (answer.status_code, answer.text[-3000:])
        return account

    def _issue_token(self, client: httpx.Client, account: Account) -> Account:
        """The account with an API token of its own, issued from its signed-in session (the
        product issues tokens only so)."""
        issued = self.api(client, "POST", "/tokens", {"name": "e2e harness"})
        return Account(**{**account.__dict__, "token": issued["secret"]})

    def new_case(self, title: str = "E2E matter", *, tokens: bool = False) -> CaseSetup:
        """A fresh case, through the REST API as a firm's people would make it: the admin opens
        it (and is on it as staff) and adds a new lawyer; the lawyer, who manages its members,
        adds a new staff member. With `tokens`, each of the two issues an API token."""
        number = f"E2E-{os.getpid()}-{next(_serial)}-{secrets.token_hex(3)}"
        made = self.api(
            self.admin_client,
            "POST",
            "/cases",
            {"title": title, "number": number, "client": "E2E Client Ltd."},
        )
        members = f"/cases/{made['id']}/members"
        lawyer, staff = self.new_account("lawyer"), self.new_account("staff")
        self.api(self.admin_client, "POST", members, {"email": lawyer.email, "role": "lawyer"})
        with contextlib.closing(self.signed_in(lawyer.email, lawyer.password)) as client:
            self.api(client, "POST", members, {"email": staff.email, "role": "staff"})
            if tokens:
                lawyer = self._issue_token(client, lawyer)
        if tokens:
            with contextlib.closing(self.signed_in(staff.email, staff.password)) as client:
                staff = self._issue_token(client, staff)
        return CaseSetup(id=made["id"], number=number, title=title, lawyer=lawyer, staff=staff)


def artifacts_root() -> Path:
    """Where the tests leave what a person may want to look at afterwards (CI uploads it)."""
    return Path(os.environ.get("LEXWEB_TEST_ARTIFACTS") or BASE_DIR / "var" / "test-artifacts")


@contextlib.contextmanager
def running_product(name: str, **extra_env: str) -> Iterator[Product]:
    """A product launched in a var folder of its own (with its own demo backend ports, and a
    port below the ephemeral range so that it can be restarted on it), stopped at the end, its
    clean stop (exit status 0) checked. Its output goes to
    `$LEXWEB_TEST_ARTIFACTS/products/<name>-<pid>.log`.

    The var folder is made directly under the system's temporary folder, not under pytest's:
    the embedded PostgreSQL runs as another user, who must be able to reach it, and pytest
    makes its own folders private again whenever a session starts."""
    port = free_port_below_ephemeral()
    extra_env.setdefault("LEXWEB_DEMO_BACKEND_PORT", str(free_port_run(5)))
    home = Path(tempfile.mkdtemp(prefix=f"lexweb-{name}-"))
    home.chmod(0o755)
    var_dir = prepare_var(home / "var")
    log = artifacts_root() / "products" / f"{name}-{os.getpid()}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"")
    product = Product(
        var_dir=var_dir, port=port, env=launcher_env(var_dir, port, **extra_env), log=log
    )
    try:
        product.start()
        yield product
        assert product.stop() == 0, product.output()[-6000:]
    finally:
        if product.process is not None and product.process.poll() is None:
            product.process.kill()
            product.process.wait()
        stop_database(var_dir)
        shutil.rmtree(home, ignore_errors=True)


class _SessionProduct:
    """The session's launched product, which `session_product_stop` may stop before the
    session ends: once a worker has passed its last browser and product test (the suite hands
    them out first, tests/conftest.py), an idle product would only spend CPU the rest of the
    suite needs, and its stop would hold up the worker's end."""

    def __init__(self) -> None:
        self.stack: contextlib.ExitStack | None = None
        self.stopped_early = False
        self.failure: BaseException | None = None

    def stop(self) -> None:
        stack, self.stack = self.stack, None
        if stack is None:
            return
        try:
            stack.close()  # the launcher's clean stop is checked here (running_product)
        except BaseException as exc:  # reported at the session's end, by the fixture
            self.failure = exc


_SESSION_PRODUCT = _SessionProduct()


def session_product_stop() -> None:
    """Stop the session's product now if it runs; a test that asks for it afterwards fails
    saying so (never a product stopped under it). What went wrong in its stop is raised at the
    session's end, where its stop is checked otherwise."""
    if _SESSION_PRODUCT.stack is not None:
        _SESSION_PRODUCT.stopped_early = True
        _SESSION_PRODUCT.stop()


@pytest.fixture(scope="session")
def session_product() -> Iterator[Product]:
    """The product launched once for the test session (once per xdist worker), demo cluster
    on (its fake backends serve the runs) but not the demo's case, its mail sent to an SMTP
    server in the test process (plain SMTP on 127.0.0.1; what it received is `product.mail`);
    stopped, and its clean stop checked, at the end, or earlier by `session_product_stop`.

    With LEXWEB_TEST_PRODUCT_URL set, the product already running there is used instead (one
    started by `python -m tests.harness.product`, for working on the browser tests); its mail is
    not readable (`product.mail` is None)."""
    running = os.environ.get("LEXWEB_TEST_PRODUCT_URL")
    if running:
        port = int(running.rstrip("/").rsplit(":", 1)[1])
        yield Product(var_dir=Path(), port=port, env={}, log=Path(os.devnull))
        return
    with contextlib.ExitStack() as stack:
        inbox, smtp_port = stack.enter_context(smtp_server(Inbox()))
        # The demo cluster (its fake backends serve the runs), not the demo's case: each test
        # makes its own cases, and only the tests about the demo see the demo's.
        launched = stack.enter_context(
            running_product("session", LEXWEB_DEMO_CASE="false", **mail_env(smtp_port))
        )
        launched.mail = inbox
        _SESSION_PRODUCT.stack = stack.pop_all()
    try:
        yield launched
    finally:
        _SESSION_PRODUCT.stop()
        failure, _SESSION_PRODUCT.failure = _SESSION_PRODUCT.failure, None
        if failure is not None:
            raise failure


@pytest.fixture
def product(session_product: Product) -> Product:
    """The session's launched product (`session_product`), for one test."""
    if _SESSION_PRODUCT.stopped_early and not os.environ.get("LEXWEB_TEST_PRODUCT_URL"):
        raise AssertionError(
            "the session's product was stopped when this worker passed its last browser and "
            "product test (tests/conftest.py): a test asking for it must be marked `browser` "
            "or `product`, so that the suite hands it out before the others"
        )
    return session_product


def mail_env(smtp_port: int) -> dict[str, str]:
    """The launcher's settings for sending mail to the tests' SMTP server on `smtp_port`."""
    return {
        "LEXWEB_EMAIL_HOST": "127.0.0.1",
        "LEXWEB_EMAIL_PORT": str(smtp_port),
        "LEXWEB_EMAIL_USE_TLS": "false",
        "LEXWEB_EMAIL_TIMEOUT_SECONDS": "10",
        "LEXWEB_EMAIL_FROM": "lexweb <lexweb@firm.test>",
    }


if __name__ == "__main__":
    # `python -m tests.harness.product`: start the product as the session fixture does and keep
    # it until Ctrl-C; give its address to the tests in LEXWEB_TEST_PRODUCT_URL.
    with running_product("dev") as started:
        print(f"LEXWEB_TEST_PRODUCT_URL={started.base_url}", flush=True)  # noqa: T201
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
