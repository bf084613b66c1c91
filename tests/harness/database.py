"""The test database between transactional tests, emptied in a fraction of Django's time.

After a test that commits (`transactional_db`, `django_db(transaction=True)`), Django's
TransactionTestCase runs `flush`: one TRUNCATE of every table of every model (about 0.7 s on
this 2-core machine: PostgreSQL makes new files for each table and index), then re-creates the
content types and permissions that the TRUNCATE removed. `flush_written_tables` empties the
same tables, and Procrastinate's (unmanaged, so not in Django's list, yet a job a test
committed must not reach the next test), but only those that hold a row: a test writes to a
handful. Content types and permissions are left as migrations made them (nothing in the suite
writes them), so nothing has to be re-created. It needs a database role that may set
`session_replication_role` (the embedded PostgreSQL's, or a superuser's DATABASE_URL);
tests/conftest.py falls back to Django's flush otherwise.
"""

import fcntl
import hashlib
import tempfile
from pathlib import Path

from django.apps import apps
from django.core.management import call_command
from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper

# Procrastinate's tables: their models are unmanaged, so Django's flush does not know them.
JOB_TABLES = (
    "procrastinate_jobs",
    "procrastinate_events",
    "procrastinate_periodic_defers",
    "procrastinate_workers",
)
# As migrations left them; emptying them would mean re-creating them after every test.
KEPT_TABLES = frozenset({"django_content_type", "auth_permission", "django_migrations"})

_probes: dict[str, str] = {}  # per database alias: the one query that finds written tables


def _probe(connection: BaseDatabaseWrapper) -> str:
    if connection.alias not in _probes:
        names = connection.introspection.django_table_names(only_existing=True, include_views=False)
        existing = set(connection.introspection.table_names(include_views=False))
        tables = sorted(
            {name for name in names if name not in KEPT_TABLES}
            | {name for name in JOB_TABLES if name in existing}
        )
        quote = connection.ops.quote_name
        _probes[connection.alias] = " UNION ALL ".join(
            # Names from Django's own introspection, quoted: no input reaches this.
            f"SELECT '{table}' WHERE EXISTS (SELECT FROM {quote(table)})"  # noqa: S608
            for table in tables
        )
    return _probes[connection.alias]


def flush_written_tables(connection: BaseDatabaseWrapper) -> list[str]:
    """Empty every table of the test database that holds a row: one query finds them, and
    they are emptied by DELETE in one transaction with triggers and foreign-key checks off
    (`session_replication_role = replica`, for this transaction only), since a test writes a
    handful of small tables and TRUNCATE costs far more per table than DELETE of a few rows.
    The append-only guards (audit log, frozen packets) are triggers, so they stay off only
    here. The tables emptied, for tests of this."""
    with connection.cursor() as cursor:
        cursor.execute(_probe(connection))
        written = [row[0] for row in cursor.fetchall()]
    if written:
        quote = connection.ops.quote_name
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = replica")
            for name in written:
                cursor.execute(f"DELETE FROM {quote(name)}")  # noqa: S608 (as above)
    return written


# --- One migrated template for every test database -------------------------------------------

TEMPLATE_PREFIX = "test_lexweb_template_"


def migrations_digest() -> str:
    """What the migrated schema depends on: every app's migration files (Procrastinate's and
    Django's own included)."""
    digest = hashlib.sha256()
    for app in sorted(apps.get_app_configs(), key=lambda config: config.label):
        for path in sorted((Path(app.path) / "migrations").glob("*.py")):
            digest.update(f"{app.label}/{path.name}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def migrated_template(connection: BaseDatabaseWrapper) -> str:
    """The name of a database with every migration applied, made once per database server and
    set of migrations, for test databases to be copied from (`CREATE DATABASE ... TEMPLATE`).

    Migrating a new database costs about 7 s of CPU (Django renders the models' states again
    for each operation); each xdist worker used to pay it, and every run. The first process
    to get the lock builds it under another name and renames it when it is complete; the
    others wait, then find it. Templates of other migrations are dropped."""
    name = TEMPLATE_PREFIX + migrations_digest()
    building = f"{name}_building"
    server = f"{connection.settings_dict.get('HOST')}:{connection.settings_dict.get('PORT')}"
    key = hashlib.sha256(server.encode()).hexdigest()[:12]
    quote = connection.ops.quote_name
    with (Path(tempfile.gettempdir()) / f"lexweb-test-template-{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with connection._nodb_cursor() as cursor:
            cursor.execute(
                "SELECT datname FROM pg_database WHERE starts_with(datname, %s)", [TEMPLATE_PREFIX]
            )
            existing = {row[0] for row in cursor.fetchall()}
            if name in existing:
                return name
            for stale in sorted(existing):  # names read back from pg_database, quoted
                cursor.execute(f"DROP DATABASE IF EXISTS {quote(stale)}")
            cursor.execute(f"CREATE DATABASE {quote(building)}")
        saved = connection.settings_dict["NAME"]
        connection.close()
        connection.settings_dict["NAME"] = building
        try:
            call_command("migrate", verbosity=0, interactive=False)
        finally:
            connection.close()
            connection.settings_dict["NAME"] = saved
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"ALTER DATABASE {quote(building)} RENAME TO {quote(name)}")
    return name
