"""Personas and real infrastructure for the whole suite.

`lawyer` and `staff` are members of `case`; `outsider` is a lawyer on `other_case` only;
`admin_user` is an admin who belongs to no case. Every client below authenticates for real
(session cookie or a bearer token created through the service).
"""

import asyncio
import gc
import io
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import ProgrammingError, connection, connections
from django.test import Client, TransactionTestCase
from procrastinate.contrib.django import app as procrastinate_app
from procrastinate.contrib.django import procrastinate_app as procrastinate_django
from procrastinate.periodic import PeriodicRegistry
from psycopg.errors import InsufficientPrivilege

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases.models import Case, Membership
from tests.factories import CaseFactory, MembershipFactory, UserFactory
from tests.harness.database import flush_written_tables, migrated_template
from tests.harness.jobs import JobRan, jobs_run_here
from tests.harness.product import product, session_product, session_product_stop, stop_database
from tests.harness.selection import file_marks, never_selected

# The session's launched product, for every folder's tests (tests/harness/product.py).
__all__ = ["product", "session_product"]

BASE_DIR = Path(settings.BASE_DIR)


# The tier of an item's file: its lowest item's (set when the suite is ordered).
FILE_TIER = pytest.StashKey[int]()


def _tier(item: pytest.Item) -> int:
    """0: launches a product (its own or the session's); 1: drives the browser; 2: neither."""
    if item.get_closest_marker("product"):
        return 0
    return 1 if item.get_closest_marker("browser") else 2


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A test file whose own marks the run's `-m` rejects is not even imported
    (tests/harness/selection.py)."""
    expression = config.getoption("markexpr")
    if not expression or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    return True if never_selected(expression, file_marks(collection_path)) else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tiers first (files that launch the product, then the browser's, then those
    with a test marked slow), each file's tests kept together and in order: pytest-xdist
    hands out whole files in this order, so the long files start while the short ones fill
    the other workers, instead of one worker finishing a long file alone at the end. (Runs
    after tests/e2e/conftest.py marks its files.)"""

    def file(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    file_tier: dict[str, int] = {}
    slow_files: set[str] = set()
    for item in items:
        file_tier[file(item)] = min(file_tier.get(file(item), 2), _tier(item))
        if item.get_closest_marker("slow"):
            slow_files.add(file(item))
    position = {id(item): index for index, item in enumerate(items)}
    for item in items:
        item.stash[FILE_TIER] = file_tier[file(item)]
    items.sort(
        key=lambda item: (
            file_tier[file(item)],
            file(item) not in slow_files,
            position[id(item)],
        )
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A worker's tests come in the order above (xdist hands out whole files from the front of
    it), so its first test of a file of neither slow tier means it has run its last browser and
    product test: the session's product (tests/harness/product.py) is stopped then, not at the
    session's end, sparing the CPU an idle product spends (its workers, its GPU agents, its
    health checks) while the rest of the suite runs, and the stop's seconds at the end."""
    if item.stash.get(FILE_TIER, 0) == 2:
        session_product_stop()


# pytest-timeout fails a test that runs past its `timeout` (pyproject.toml) and prints every
# thread's stack; an async test's hang is in a task waiting on something, which no thread's
# stack shows. This long before the timeout, every pending asyncio task's stack is printed
# into the test's captured output too.
TASKS_DUMPED_BEFORE_TIMEOUT_SECONDS = 15


def _test_timeout(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(item.config.getoption("timeout", None) or item.config.getini("timeout") or 0)


def _dump_pending_tasks(nodeid: str) -> None:
    tasks = [o for o in gc.get_objects() if isinstance(o, asyncio.Task) and not o.done()]
    out = io.StringIO()
    out.write(f"\n{len(tasks)} asyncio task(s) pending in {nodeid} near its timeout:\n")
    for task in tasks:
        try:
            task.print_stack(file=out)
        except Exception as exc:  # read from another thread while the loop runs: best effort
            out.write(f"{task!r}: stack not read ({exc!r})\n")
    sys.stderr.write(out.getvalue())
    sys.stderr.flush()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    timeout = _test_timeout(item)
    timer = None
    if timeout > TASKS_DUMPED_BEFORE_TIMEOUT_SECONDS:
        timer = threading.Timer(
            timeout - TASKS_DUMPED_BEFORE_TIMEOUT_SECONDS, _dump_pending_tasks, [item.nodeid]
        )
        timer.daemon = True
        timer.start()
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, django_db_blocker: Any
) -> None:
    """Each test database (one per xdist worker) is a copy of one migrated template
    (tests/harness/database.py), so migrations run once per database server and set of
    migrations, not once per worker and run; the runner's own `migrate` then finds nothing to
    do."""
    with django_db_blocker.unblock():
        template = migrated_template(connection)
    connection.settings_dict.setdefault("TEST", {})["TEMPLATE"] = template


@pytest.fixture(scope="session", autouse=True)
def _close_stray_connections(django_db_setup: None, django_db_blocker: object) -> Iterator[None]:
    """The channel layer keeps a connection pool and a LISTEN connection open; end them before
    pytest-django drops the test database, which PostgreSQL refuses while anyone is connected."""
    yield
    with django_db_blocker.unblock(), connection.cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture(scope="session", autouse=True)
def _test_database_may_truncate_the_audit_log(
    django_db_setup: None, django_db_blocker: object
) -> None:
    """The runner resets every table between transactional tests with one TRUNCATE, which the
    audit log refuses (apps/accounts/migrations/0005) unless the session says
    `lexweb.audit_truncate = 'allowed'`: this test database says so for every session.
    tests/accounts/test_audit.py turns it off again to show the refusal."""
    from django.db import connections

    with django_db_blocker.unblock(), connection.cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET lexweb.audit_truncate = %L', "
            "current_database(), 'allowed'); END $$"
        )
        # A test database need not survive a crash: commits (and the flush after every
        # transactional test) do not wait for the disk.
        cursor.execute(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', "
            "current_database()); END $$"
        )
    # Sessions read a database's settings when they start: open new ones.
    connections.close_all()


@pytest.fixture(scope="session", autouse=True)
def _flush_only_written_tables() -> Iterator[None]:
    """After each transactional test, the test database is emptied by
    tests/harness/database.py (the tables written, Procrastinate's included) instead of
    Django's flush of every table."""

    django_teardown = TransactionTestCase._fixture_teardown

    def teardown(case: TransactionTestCase) -> None:
        try:
            for alias in case._databases_names(include_mirrors=False):  # type: ignore[attr-defined]
                flush_written_tables(connections[alias])
        except ProgrammingError as exc:
            if not isinstance(exc.__cause__, InsufficientPrivilege):
                raise
            django_teardown(case)  # a DATABASE_URL role that is not a superuser

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", teardown)
        yield


@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Iterator[None]:
    """A channel layer made on each test's own event loop.

    Each async test runs on a new event loop; a layer kept from an earlier test would still
    hold that test's channels, queues and listener.
    """
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """Argon2 costs a quarter second per persona on two cores; hashing itself is tested in
    tests/accounts/test_passwords.py with the real settings."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_lawyer() -> User:
    return UserFactory(email="lawyer@firm.test", full_name="Laura Lawyer", role=User.Role.LAWYER)


def make_staff() -> User:
    return UserFactory(email="staff@firm.test", full_name="Sam Staff", role=User.Role.STAFF)


def make_case(lawyer: User, staff: User) -> Case:
    case = CaseFactory(created_by=lawyer, number="CV-2026-0001", title="Acme v. Widget")
    MembershipFactory(case=case, user=lawyer, role=Membership.Role.LAWYER)
    MembershipFactory(case=case, user=staff, role=Membership.Role.STAFF)
    return case


@pytest.fixture
def lawyer(db: None) -> User:
    return make_lawyer()


@pytest.fixture
def staff(db: None) -> User:
    return make_staff()


@pytest.fixture
def outsider(db: None) -> User:
    return UserFactory(email="outsider@firm.test", full_name="Otto Outsider", role=User.Role.LAWYER)


@pytest.fixture
def admin_user(db: None) -> User:
    return UserFactory(
        email="admin@firm.test",
        full_name="Ada Admin",
        role=User.Role.ADMIN,
        is_staff=True,
        is_superuser=True,
    )


@pytest.fixture
def case(lawyer: User, staff: User) -> Case:
    return make_case(lawyer, staff)


@pytest.fixture
def other_case(outsider: User) -> Case:
    case = CaseFactory(created_by=outsider, number="CV-2026-0999", title="Other v. Matter")
    MembershipFactory(case=case, user=outsider, role=Membership.Role.LAWYER)
    return case


def session_client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def token_client(user: User) -> Client:
    issued = account_services.token_create(user=user, name=f"test token {user.pk}")
    return Client(headers={"authorization": f"Bearer {issued.secret}"})


@pytest.fixture
def lawyer_client(lawyer: User) -> Client:
    return session_client(lawyer)


@pytest.fixture
def staff_client(staff: User) -> Client:
    return session_client(staff)


@pytest.fixture
def outsider_client(outsider: User, other_case: Case) -> Client:
    return session_client(outsider)


@pytest.fixture
def admin_client_(admin_user: User) -> Client:
    return session_client(admin_user)


@pytest.fixture
def lawyer_api(lawyer: User) -> Client:
    return token_client(lawyer)


@pytest.fixture
def staff_api(staff: User) -> Client:
    return token_client(staff)


@pytest.fixture
def outsider_api(outsider: User, other_case: Case) -> Client:
    return token_client(outsider)


# --- Jobs ---------------------------------------------------------------------------------


@pytest.fixture
def run_jobs(db: None) -> Callable[[], list[JobRan]]:
    """Run the queued jobs in this thread until none is due, inside the test's transaction
    (tests/harness/jobs.py; a test that commits runs them in autocommit)."""
    return jobs_run_here


@pytest.fixture
def run_jobs_worker(transactional_db: None) -> Callable[[], None]:
    """Run a real Procrastinate worker in this process until the queue is empty: for tests
    about what a worker does (its threads and connections, periodic jobs, live events)."""

    def run() -> None:
        # A worker defers the periodic jobs (the cluster health check) when it starts; tests
        # that run jobs must see only the jobs they queued.
        # (`procrastinate_app` is a proxy; the registry belongs to the app behind it.)
        real_app = procrastinate_django.current_app
        periodic, real_app.periodic_registry = real_app.periodic_registry, PeriodicRegistry()
        try:
            with procrastinate_app.replace_connector(
                procrastinate_app.connector.get_worker_connector()
            ):
                procrastinate_app.run_worker(
                    wait=False, install_signal_handlers=False, listen_notify=False
                )
        finally:
            real_app.periodic_registry = periodic

    return run


def database_url_for_tests() -> str:
    """A DATABASE_URL for the test database, for processes started by a test."""
    conf = connection.settings_dict
    host = conf["HOST"]
    netloc = quote(host, safe="") if host.startswith("/") else host
    if conf["PORT"]:
        netloc += f":{conf['PORT']}"
    auth = quote(conf["USER"], safe="")
    if conf["PASSWORD"]:
        auth += ":" + quote(conf["PASSWORD"], safe="")
    return f"postgres://{auth}@{netloc}/{quote(conf['NAME'], safe='')}"


@pytest.fixture
def worker_process(transactional_db: None) -> Iterator[subprocess.Popen[bytes]]:
    """A real `manage.py procrastinate worker` process on the test database."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_tests(),
        "LEXWEB_LOG_LEVEL": "WARNING",
        # No periodic health checks queued behind the tests' backs.
        "LEXWEB_CLUSTER_HEALTH_CRON": "",
    }
    process = subprocess.Popen(
        [sys.executable, str(BASE_DIR / "manage.py"), "procrastinate", "worker", "--queues", "cpu"],
        cwd=BASE_DIR,
        env=env,
    )
    yield process
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# --- Processes started like `make run` ----------------------------------------------------


@pytest.fixture
def var_dir() -> Iterator[Path]:
    """A private var folder for a launched lexweb; its PostgreSQL is stopped afterwards.

    Made directly under the system's temporary folder, as running_product's: the embedded
    PostgreSQL runs as another user, and pytest makes its own folders private again whenever
    a session starts, which another xdist worker may do while this one's initdb writes."""
    home = Path(tempfile.mkdtemp(prefix="lexweb-var-"))
    home.chmod(0o755)
    path = home / "var"
    try:
        yield path
    finally:
        # Whatever happened in the test, no PostgreSQL may outlive it (it may be gone already).
        stop_database(path)
        shutil.rmtree(home, ignore_errors=True)


# --- Websockets ---------------------------------------------------------------------------


async def ws_connect(
    path: str,
    *,
    cookie_user: User | None = None,
    bearer: str | None = None,
    origin: str | None = "http://127.0.0.1",
) -> tuple[WebsocketCommunicator, tuple[bool, int | None]]:
    """Open a websocket on the real ASGI application (real auth middleware and routing)."""
    from asgiref.sync import sync_to_async

    from lexweb.asgi import application

    # A browser always names the host it connects to; the origin check compares with it.
    headers: list[tuple[bytes, bytes]] = [(b"host", b"127.0.0.1")]
    if origin:
        headers.append((b"origin", origin.encode()))
    if cookie_user is not None:
        client = await sync_to_async(session_client)(cookie_user)
        sessionid = client.cookies[settings.SESSION_COOKIE_NAME].value
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={sessionid}".encode()))
    if bearer is not None:
        headers.append((b"authorization", f"Bearer {bearer}".encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect(timeout=10)
    return communicator, (connected, code)
