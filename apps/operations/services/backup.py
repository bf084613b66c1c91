"""Backup and restore of an install: its database and its original store, consistent together.

`backup_create` writes a folder:

    manifest.json      what the backup holds (written last: a folder without it is incomplete)
    database.dump      pg_dump, custom format
    blobs/ab/cd/<sha>  every stored file the database refers to, the store's own layout

Consistency while workers run and uploads arrive: a connection held open in one REPEATABLE READ
transaction exports its snapshot (`pg_export_snapshot()`); pg_dump dumps that snapshot
(`--snapshot`) and the list of stored files (the `Blob` rows, by SHA-256) is read in it too. A
file is stored before the row naming it commits, and stored files never change, so every file
of that list is in the store; files stored after the snapshot belong to rows the dump does not
hold and are not needed. The sweeper (the only thing that removes stored files) is kept out for
the whole backup by holding its advisory lock, taken before the snapshot.

Files are hard-linked into the folder where the filesystem allows (same filesystem: nothing is
copied; stored files are read-only), else copied; either way each one's SHA-256 is checked.

`backup_restore` puts a backup into an empty install: it refuses a database that has any table
and a store that holds any stored file, and a folder whose manifest, dump or files do not match
their SHA-256 (checked before anything is written). It copies the files into the store
(verifying each), runs pg_restore in one transaction, then verifies every stored file the
restored rows name and every frozen packet's content hash, and says what it found. The backed-up
install's worker rows are removed, so the jobs they were running at the snapshot are queued
again by the first worker that starts (recovery at worker start).

pg_dump must be at least the server's major version; pg_restore at least the dumping pg_dump's.
The tools are looked for in `--pg-bin`, on PATH, in /usr/lib/postgresql/*/bin and in the
embedded PostgreSQL's package (pgserver, version 16); the closest fitting version is used.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from django.db import connection

from apps.documents import storage
from apps.documents.models import Blob
from apps.evidence.models import FrozenPage, Packet
from apps.evidence.services import packets as packet_services
from apps.operations.services import sweeper
from lexweb.errors import DomainError

FORMAT = "lexweb-backup"
VERSION = 1
MANIFEST = "manifest.json"
DUMP = "database.dump"
BLOBS = "blobs"
CHUNK = 1024 * 1024

Progress = Callable[[str], None]


class BackupError(DomainError):
    """A backup or restore that cannot go on; the message says why and what to do."""

    code = "backup_refused"


@dataclass
class BackupReport:
    directory: Path
    documents: int = 0
    frozen_packets: int = 0
    blobs: int = 0
    blob_bytes: int = 0
    linked: int = 0
    dump_bytes: int = 0
    seconds: float = 0.0
    pg_dump: str = ""


@dataclass
class RestoreReport:
    directory: Path
    database: str = ""
    blobs: int = 0
    blob_bytes: int = 0
    documents: int = 0
    frozen_packets: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    pg_restore: str = ""
    unapplied_migrations: int = 0
    running_jobs: int = 0  # jobs running at the snapshot: queued again when a worker starts


# --- Backup -----------------------------------------------------------------------------------


def backup_create(
    *, directory: Path, progress: Progress, pg_bin: Path | None = None, copy: bool = False
) -> BackupReport:
    """Write a backup of this install's database and original store into `directory` (new or
    empty). See the module doc for what it holds and why it is consistent."""
    started = time.monotonic()
    directory = _backup_directory(directory)
    report = BackupReport(directory=directory)
    conninfo = _conninfo()
    with psycopg.connect(**conninfo, autocommit=True) as held:
        server_major = held.info.server_version // 10000
        server_version = _server_version(held)
        pg_dump = _pg_tool("pg_dump", at_least=server_major, prefer=server_major, pg_bin=pg_bin)
        report.pg_dump = f"{pg_dump.path} ({pg_dump.version})"
        progress(f"using {report.pg_dump} for PostgreSQL {server_version}")
        # Sweeps remove stored files: none runs from before the snapshot to the end.
        if not _one(held, "SELECT pg_try_advisory_lock(%s)", [sweeper._LOCK_KEY]):
            progress("waiting for a running sweep of the store to finish")
            held.execute("SELECT pg_advisory_lock(%s)", [sweeper._LOCK_KEY])
        held.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot = _one(held, "SELECT pg_export_snapshot()")
        blobs = held.execute(
            f"SELECT sha256, size FROM {Blob._meta.db_table} ORDER BY sha256"  # noqa: S608
        ).fetchall()
        applied = held.execute("SELECT app, name FROM django_migrations ORDER BY id").fetchall()
        report.documents = _one(held, "SELECT count(*) FROM documents_document")
        report.frozen_packets = _one(
            held,
            f"SELECT count(*) FROM {Packet._meta.db_table} WHERE status = %s",  # noqa: S608
            [Packet.Status.FROZEN.value],
        )
        progress(
            f"snapshot {snapshot} taken: {report.documents} document(s), "
            f"{report.frozen_packets} frozen packet(s), {len(blobs)} stored file(s)"
        )
        dump_path = directory / DUMP
        _run_tool(
            [str(pg_dump.path), "--format=custom", f"--snapshot={snapshot}", "--no-owner",
             "--no-privileges", f"--file={dump_path}"],
            conninfo,
        )  # fmt: skip
        dump_sha, report.dump_bytes = _sha256_file(dump_path)
        progress(f"database dumped: {DUMP}, {_mb(report.dump_bytes)}")
        held.execute("COMMIT")
        files = []
        for sha, size in blobs:
            linked = _store_copy(
                storage.blob_path(sha), _blob_in(directory, sha), sha, size, link=not copy
            )
            report.linked += linked
            report.blobs += 1
            report.blob_bytes += size
            files.append([sha, size])
            if report.blobs % 1000 == 0:
                progress(f"stored files: {report.blobs} of {len(blobs)}")
        held.execute("SELECT pg_advisory_unlock(%s)", [sweeper._LOCK_KEY])
    how = (
        "hard-linked" if report.linked == report.blobs
        else "copied" if not report.linked
        else f"{report.linked} hard-linked, the rest copied"
    )  # fmt: skip
    progress(f"stored files: {report.blobs}, {_mb(report.blob_bytes)} ({how}), SHA-256 verified")
    report.seconds = time.monotonic() - started
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(report.seconds, 2),
        "database": {
            "file": DUMP,
            "sha256": dump_sha,
            "bytes": report.dump_bytes,
            "name": conninfo["dbname"],
            "server_version": server_version,
            "pg_dump_version": pg_dump.version,
            "pg_dump_major": pg_dump.major,
            "snapshot": snapshot,
        },
        "migrations": [[app, name] for app, name in applied],
        "counts": {"documents": report.documents, "frozen_packets": report.frozen_packets},
        "blobs": {
            "directory": BLOBS,
            "count": report.blobs,
            "bytes": report.blob_bytes,
            "files": files,
        },
    }
    partial = directory / f".{MANIFEST}.partial"
    partial.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    partial.replace(directory / MANIFEST)
    progress(f"backup written to {directory} in {report.seconds:.1f} s")
    return report


def _backup_directory(directory: Path) -> Path:
    directory = directory.resolve()
    root = storage.blob_root().resolve()
    if directory == root or root in directory.parents:
        raise BackupError(f"{directory} is inside the store ({root}): back up somewhere else.")
    if directory.exists():
        if not directory.is_dir():
            raise BackupError(f"{directory} is not a folder.")
        if any(directory.iterdir()):
            raise BackupError(f"{directory} is not empty: back up into a new or empty folder.")
    else:
        try:
            directory.mkdir(parents=True)
        except OSError as exc:
            raise BackupError(f"Cannot make {directory}: {exc.strerror}.") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise BackupError(f"{directory} is not writable by this user.")
    return directory


# --- Restore ----------------------------------------------------------------------------------


def backup_restore(
    *, directory: Path, progress: Progress, pg_bin: Path | None = None, verify_only: bool = False
) -> RestoreReport:
    """Restore the backup in `directory` into this install's (empty) database and store; with
    `verify_only`, only check the backup's own SHA-256s."""
    started = time.monotonic()
    directory = directory.resolve()
    report = RestoreReport(directory=directory)
    manifest = backup_verify(directory=directory, progress=progress)
    if verify_only:
        report.seconds = time.monotonic() - started
        return report
    _migrations_known(manifest["migrations"], report)
    conninfo = _conninfo()
    report.database = conninfo["dbname"]
    with psycopg.connect(**conninfo, autocommit=True) as conn:
        _database_empty(conn)
        server_major = conn.info.server_version // 10000
        pg_restore = _pg_tool(
            "pg_restore",
            at_least=int(manifest["database"]["pg_dump_major"]),
            prefer=server_major,
            pg_bin=pg_bin,
        )
    report.pg_restore = f"{pg_restore.path} ({pg_restore.version})"
    root = storage.blob_root()
    _store_empty(root)
    files = manifest["blobs"]["files"]
    written: list[Path] = []
    try:
        for sha, size in files:
            target = storage.blob_path(sha)
            _store_copy(
                _blob_in(directory, sha), target, sha, size,
                link=True, written=written, source_verified=True,
            )  # fmt: skip
            report.blobs += 1
            report.blob_bytes += size
            if report.blobs % 1000 == 0:
                progress(f"stored files: {report.blobs} of {len(files)} into the store")
        progress(f"stored files: {report.blobs}, {_mb(report.blob_bytes)} into {root}")
        progress(f"restoring the database into {report.database} with {report.pg_restore}")
        _run_tool(
            [str(pg_restore.path), "--single-transaction", "--exit-on-error", "--no-owner",
             "--no-privileges", f"--dbname={conninfo['dbname']}", str(directory / DUMP)],
            conninfo,
        )  # fmt: skip
    except BackupError:
        # Nothing was restored (one transaction): leave the store as empty as it was.
        for path in written:
            path.unlink(missing_ok=True)
        raise
    progress("database restored; verifying every stored file and frozen packet")
    with psycopg.connect(**conninfo, autocommit=True) as conn:
        _forget_workers(conn, report)
        _verify_restored(conn, report)
    report.seconds = time.monotonic() - started
    return report


def backup_verify(*, directory: Path, progress: Progress) -> dict[str, Any]:
    """Check a backup folder against its manifest (the dump's and every file's SHA-256 and
    size); return the manifest. Raises BackupError naming the first problem."""
    manifest = _manifest_read(directory)
    dump = directory / manifest["database"]["file"]
    dump_sha, _ = _sha256_file(dump) if dump.is_file() else ("", 0)
    if dump_sha != manifest["database"]["sha256"]:
        raise BackupError(f"{dump} is missing or does not match its SHA-256 in {MANIFEST}.")
    for sha, size in manifest["blobs"]["files"]:
        path = _blob_in(directory, sha)
        if not path.is_file():
            raise BackupError(f"{path} is missing: the backup is incomplete.")
        digest, actual = _sha256_file(path)
        if (digest, actual) != (sha, size):
            raise BackupError(
                f"{path} does not match its SHA-256 in {MANIFEST} ({size} bytes expected, "
                f"{actual} found): the backup is damaged."
            )
    progress(
        f"backup of {manifest['created_at']} verified: {DUMP} and "
        f"{len(manifest['blobs']['files'])} stored file(s) match their SHA-256"
    )
    return manifest


def _manifest_read(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not directory.is_dir():
        raise BackupError(f"{directory} is not a folder.")
    if not path.is_file():
        raise BackupError(
            f"{path} is missing: {directory} is not a lexweb backup, or an incomplete one."
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if manifest["format"] != FORMAT:
            raise ValueError("not a lexweb backup")
        if manifest["version"] != VERSION:
            raise ValueError(f"version {manifest['version']}, this lexweb reads {VERSION}")
        for sha, size in manifest["blobs"]["files"]:
            storage.blob_path(sha)  # a SHA-256 hex digest, nothing else
            if not isinstance(size, int) or size <= 0:
                raise ValueError(f"bad size for {sha}")
        int(manifest["database"]["pg_dump_major"]), str(manifest["database"]["sha256"])
        if Path(manifest["database"]["file"]).name != manifest["database"]["file"]:
            raise ValueError("dump file outside the backup")
    except (ValueError, KeyError, TypeError) as exc:
        raise BackupError(f"{path} is not a valid backup manifest: {exc}.") from None
    return dict(manifest)


def _migrations_known(applied: list[list[str]], report: RestoreReport) -> None:
    from django.db.migrations.loader import MigrationLoader

    known = set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
    backup = {(app, name) for app, name in applied}
    unknown = sorted(backup - known)
    if unknown:
        names = ", ".join(f"{app}.{name}" for app, name in unknown[:5])
        raise BackupError(
            f"The backup was made by a newer lexweb: {len(unknown)} migration(s) this code does "
            f"not have ({names}). Restore it with that version or a later one."
        )
    report.unapplied_migrations = len(known - backup)


def _database_empty(conn: psycopg.Connection[Any]) -> None:
    rows = conn.execute(
        "SELECT n.nspname || '.' || c.relname FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') "
        "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
        "AND n.nspname NOT LIKE 'pg_toast%%' AND n.nspname NOT LIKE 'pg_temp%%' "
        "ORDER BY 1"
    ).fetchall()
    if rows:
        names = ", ".join(row[0] for row in rows[:3])
        name = conn.info.dbname
        raise BackupError(
            f"Database {name} is not empty: it has {len(rows)} table(s) or sequence(s) "
            f"({names}, ...). Restore needs an empty database: create a new one and point "
            "DATABASE_URL at it (or, with the embedded database, use a new LEXWEB_VAR_DIR), "
            "and restore before the first `make run`."
        )


def _store_empty(root: Path) -> None:
    if not root.is_dir():
        return
    for first in root.iterdir():
        if len(first.name) == 2 and first.is_dir() and any(first.rglob("*")):
            raise BackupError(
                f"The store {root} already holds files: restore needs an empty store "
                "(a new LEXWEB_BLOB_ROOT, or move this one aside)."
            )


def _forget_workers(conn: psycopg.Connection[Any], report: RestoreReport) -> None:
    """The backed-up install's worker rows go: none of its workers works for this install. The
    jobs they were running at the snapshot (`doing`; the foreign key sets their worker to NULL)
    are then stalled by recovery's first rule, so the first worker of this install to start
    queues them again at once, instead of taking them for running until the restored
    heartbeats grow LEXWEB_JOB_STALLED_SECONDS old."""
    report.running_jobs = _one(
        conn, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'"
    )
    conn.execute("DELETE FROM procrastinate_workers")


def _verify_restored(conn: psycopg.Connection[Any], report: RestoreReport) -> None:
    table = Blob._meta.db_table
    rows = conn.execute(f"SELECT sha256, size FROM {table}").fetchall()  # noqa: S608
    for sha, size in rows:
        path = storage.blob_path(sha)
        if not path.is_file():
            report.problems.append(f"stored file {sha} is missing")
            continue
        digest, actual = _sha256_file(path)
        if (digest, actual) != (sha, size):
            report.problems.append(f"stored file {sha} does not match its SHA-256 or size")
    report.documents = _one(conn, "SELECT count(*) FROM documents_document")
    columns = [
        "packet_id", "position", "document_id", "page_number", "bates", "text_sha256", "source",
        "ocr_confidence", "origin", "untrusted",
    ]  # fmt: skip
    packets = conn.execute(
        f"SELECT id, content_hash FROM {Packet._meta.db_table} WHERE status = %s ORDER BY id",  # noqa: S608
        [Packet.Status.FROZEN.value],
    ).fetchall()
    for packet_id, stored_hash in packets:
        pages = [
            FrozenPage(**dict(zip(columns, row, strict=True)))
            for row in conn.execute(
                f"SELECT {', '.join(columns)} FROM {FrozenPage._meta.db_table} "  # noqa: S608
                "WHERE packet_id = %s ORDER BY position",
                [packet_id],
            )
        ]
        if packet_services.content_hash(pages) != stored_hash:
            report.problems.append(f"frozen packet {packet_id} does not match its content hash")
    report.frozen_packets = len(packets)


# --- Files ------------------------------------------------------------------------------------


def _blob_in(directory: Path, sha: str) -> Path:
    return directory / BLOBS / sha[:2] / sha[2:4] / sha


def _sha256_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _store_copy(
    source: Path,
    target: Path,
    sha: str,
    size: int,
    *,
    link: bool,
    written: list[Path] | None = None,
    source_verified: bool = False,
) -> bool:
    """Put `source` at `target` (hard link, else a copy) and check it is `sha` of `size` bytes
    (a link to a `source_verified` needs no second reading). True when linked."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if not source.is_file():
        raise BackupError(f"{source} is missing (stored file {sha}).")
    linked = False
    if link:
        try:
            os.link(source, target)
            linked = True
        except OSError:
            pass
    if not linked:
        partial = target.with_name(f".{sha}.partial")
        shutil.copyfile(source, partial)
        partial.chmod(0o440)
        partial.replace(target)
    if written is not None:
        written.append(target)
    if linked and source_verified:
        return True
    digest, actual = _sha256_file(target)
    if (digest, actual) != (sha, size):
        raise BackupError(
            f"{source} does not match its SHA-256 ({sha[:12]}…, {size} bytes): "
            f"it hashes to {digest[:12]}…, {actual} bytes."
        )
    return linked


def _mb(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


# --- PostgreSQL -------------------------------------------------------------------------------


def _conninfo() -> dict[str, Any]:
    conf = connection.settings_dict
    info: dict[str, Any] = {"dbname": conf["NAME"], "user": conf["USER"] or None}
    if conf["HOST"]:
        info["host"] = conf["HOST"]
    if conf["PORT"]:
        info["port"] = int(conf["PORT"])
    if conf["PASSWORD"]:
        info["password"] = conf["PASSWORD"]
    sslmode = (conf.get("OPTIONS") or {}).get("sslmode")
    if sslmode:
        info["sslmode"] = sslmode
    return info


def _one(conn: psycopg.Connection[Any], sql: str, params: list[Any] | None = None) -> Any:
    row = conn.execute(sql, params).fetchone()
    if row is None:
        raise BackupError(f"PostgreSQL returned no row for {sql!r}.")
    return row[0]


def _server_version(conn: psycopg.Connection[Any]) -> str:
    return str(_one(conn, "SHOW server_version")).split()[0]


@dataclass(frozen=True)
class _Tool:
    path: Path
    version: str
    major: int


def _tool_candidates(name: str, pg_bin: Path | None) -> Iterator[Path]:
    if pg_bin is not None:
        yield pg_bin / name
        return
    on_path = shutil.which(name)
    if on_path:
        yield Path(on_path)
    yield from sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    try:
        import pgserver

        yield Path(pgserver.__file__).parent / "pginstall" / "bin" / name
    except ImportError:
        pass


def _pg_tool(name: str, *, at_least: int, prefer: int, pg_bin: Path | None) -> _Tool:
    found: list[_Tool] = []
    for path in _tool_candidates(name, pg_bin):
        try:
            out = subprocess.run(  # noqa: S603
                [str(path), "--version"], capture_output=True, text=True, timeout=30, check=True
            ).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        match = re.search(r"(\d+)(?:\.(\d+))?", out)
        if match:
            found.append(_Tool(path, match.group(0), int(match.group(1))))
    fitting = [tool for tool in found if tool.major >= at_least]
    if not fitting:
        seen = ", ".join(f"{tool.path} ({tool.version})" for tool in found) or "none"
        raise BackupError(
            f"No {name} of PostgreSQL {at_least} or later was found (found: {seen}). Install "
            f"the PostgreSQL {at_least} client tools, or name their folder with --pg-bin."
        )
    # The server's own version when there is one, else the oldest that is new enough.
    return min(fitting, key=lambda tool: (tool.major != prefer, tool.major))


def _run_tool(argv: list[str], conninfo: dict[str, Any]) -> None:
    env = {**os.environ, "PGDATABASE": conninfo["dbname"]}
    for key, var in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"),
                     ("password", "PGPASSWORD"), ("sslmode", "PGSSLMODE")):  # fmt: skip
        if conninfo.get(key):
            env[var] = str(conninfo[key])
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        raise BackupError(
            f"{Path(argv[0]).name} failed (exit {result.returncode}): "
            f"{lines[-1] if lines else 'no message'}"
        )
