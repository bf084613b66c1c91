"""Nothing half-left: the sweeper removes what crashed processes leave in the file store.

What it removes, each only when it is certainly no one's:

1. Temporary folders of dead processes. Every process writes its temporaries (Django's upload
   spools under FILE_UPLOAD_TEMP_DIR, files being received into the store, volumes being
   stamped or zipped under `<blob root>/tmp/`) in a folder of its own (lexweb/tempdirs.py); a
   folder goes once its process is gone (same host; another boot, no such process, or the id
   now names a process started later). Live processes' and other hosts' folders stay. Loose
   entries of an older layout go once nothing in them changed for the orphan age.
2. Stored files no row refers to, once untouched for LEXWEB_SWEEP_ORPHAN_SECONDS (an hour): a
   file in the store without a `Blob` row (a web server killed between storing an upload and
   committing its rows), and a `Blob` row, with its file, that no document, production or
   export refers to (a stamping job killed between storing its volume and recording it).

Nothing it removes is referenced by a row, checked in the database at removal time:

- A file without a `Blob` row: the sweeper inserts a placeholder `Blob` row for that hash in
  its own transaction (`ON CONFLICT DO NOTHING`: a row committed or being inserted meanwhile
  wins, and the file is kept), moves the file aside, checks it was not touched since (storing
  the same bytes again touches the file), deletes it and rolls the placeholder back. An upload
  of the same bytes meanwhile waits on the placeholder, then stores its file anew.
- A `Blob` row: locked `FOR UPDATE` (a row being inserted that refers to it holds a key-share
  lock, so the sweeper waits for it), checked again for referents, deleted; the database's
  foreign keys are the last word (a violation at commit keeps row and file).
- A file moved aside lives under `<blob root>/tmp/sweeping/` until the transaction ends; a
  sweeper killed in between is undone by the next run (put back if a row refers to it).

A store is swept only by the database it belongs to: the first sweep writes
`<blob root>/.lexweb-store` naming its database (name and oid; not claimed by a database that
has no stored file while the store has some); a sweep connected to another
database (a test run, a restored copy, a second install pointed at the same folder) removes no
stored file and says so (delete that file to hand the store to the database in use).
Temporaries of dead processes are removed whichever database the sweep talks to.

Runs one at a time (a PostgreSQL advisory lock), at each worker start and as the periodic job
`operations.sweep`; logs one line with what it removed.
"""

import json
import logging
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db import IntegrityError, connection, models, transaction
from django.db.models import Exists, OuterRef

from apps.documents import storage
from apps.documents.models import Blob
from lexweb import tempdirs

logger = logging.getLogger(__name__)

# pg_try_advisory_lock key: b"lexsweep"
_LOCK_KEY = int.from_bytes(b"lexsweep", "big") & 0x7FFF_FFFF_FFFF_FFFF
TRASH = "sweeping"
MARKER = ".lexweb-store"
_HEX = frozenset("0123456789abcdef")


@dataclass
class SweepReport:
    """What one sweep did."""

    orphan_files: int = 0  # stored files without a row, removed
    orphan_rows: int = 0  # Blob rows nothing referred to, removed with their files
    orphan_bytes: int = 0
    dead_temp: int = 0  # temporary folders of dead processes, removed
    stale_temp: int = 0  # loose temporaries of an older layout, removed
    temp_bytes: int = 0
    restored: int = 0  # files a killed sweep had moved aside, put back
    kept_young: int = 0  # orphans younger than the orphan age
    kept_in_use: int = 0  # orphans a row claimed while we looked
    skipped: bool = False  # another sweep was running
    foreign_store: str = ""  # the store belongs to this database, not ours: files left alone

    def line(self) -> str:
        if self.skipped:
            return "sweeper: another sweep is running; skipped"
        parts = [
            f"sweeper: removed {self.orphan_files} stored file(s) without a row, "
            f"{self.orphan_rows} unreferenced blob(s) ({_mb(self.orphan_bytes)}), "
            f"{self.dead_temp} temporary folder(s) of dead processes and "
            f"{self.stale_temp} stale temporary file(s) ({_mb(self.temp_bytes)}); "
            f"kept {self.kept_young} orphan(s) younger than "
            f"{settings.LEXWEB_SWEEP_ORPHAN_SECONDS} s and {self.kept_in_use} claimed meanwhile"
        ]
        if self.restored:
            parts.append(f"put back {self.restored} file(s) moved aside by a killed sweep")
        if self.foreign_store:
            parts.append(
                f"stored files not swept: the store belongs to database {self.foreign_store} "
                f"(its {MARKER} file), not to this one"
            )
        return "; ".join(parts)


def _mb(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


# Other housekeeping of the apps above, run by each periodic sweep after the files' (the API's
# expired Idempotency-Key answers). Filled by the apps' AppConfig.ready.
SWEEP_HOOKS: list[Callable[[], object]] = []


def files_sweep(*, orphan_seconds: int | None = None) -> SweepReport:
    """Remove orphaned stored files and dead processes' temporaries (see the module doc)."""
    age = settings.LEXWEB_SWEEP_ORPHAN_SECONDS if orphan_seconds is None else orphan_seconds
    report = SweepReport()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK_KEY])
        if not cursor.fetchone()[0]:
            report.skipped = True
            logger.info(report.line())
            return report
    try:
        cutoff = time.time() - age
        root = storage.blob_root()
        for tmp_root in (root / "tmp", Path(settings.FILE_UPLOAD_TEMP_DIR)):
            _sweep_temp(tmp_root, cutoff, report)
        report.foreign_store = _claim_store(root)
        if not report.foreign_store:
            _undo_killed_sweep(root, report)
            _sweep_files_without_row(root, cutoff, report)
            _sweep_unreferenced_rows(root, cutoff, report)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_LOCK_KEY])
    logger.info(report.line())
    return report


def _claim_store(root: Path) -> str:
    """'' when the store is this database's (claimed now if nobody had), else its owner."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_database(), oid FROM pg_database WHERE datname = current_database()"
        )
        name, oid = cursor.fetchone()
    ours = {"database": name, "oid": int(oid)}
    marker = root / MARKER
    try:
        theirs = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        # Unclaimed: ours if it is empty or we have rows (a store written before this marker);
        # a database with no stored file at all facing a store full of files is not its owner.
        if not Blob.objects.exists() and any(files for _, files in _stored_files(root)):
            return "unknown (no marker, and this database has no stored file)"
        root.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps(ours) + "\n", encoding="utf-8")
        return ""
    except (OSError, ValueError):
        return f"unknown (unreadable {marker})"
    if theirs == ours:
        return ""
    return f"{theirs.get('database')!r} (oid {theirs.get('oid')})"


# --- Temporaries ---------------------------------------------------------------------------


def _sweep_temp(tmp_root: Path, cutoff: float, report: SweepReport) -> None:
    try:
        entries = list(os.scandir(tmp_root))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name == TRASH:
            continue
        owner = tempdirs.parse(entry.name)
        if owner is not None:
            if entry.is_dir(follow_symlinks=False) and tempdirs.owner_alive(owner) is False:
                report.temp_bytes += _remove_tree(Path(entry.path))
                report.dead_temp += 1
        elif _newest_mtime(Path(entry.path)) < cutoff:
            report.temp_bytes += _remove_tree(Path(entry.path))
            report.stale_temp += 1


def _newest_mtime(path: Path) -> float:
    newest = path.lstat().st_mtime
    if path.is_dir() and not path.is_symlink():
        for base, dirs, files in os.walk(path):
            for name in dirs + files:
                try:
                    newest = max(newest, (Path(base) / name).lstat().st_mtime)
                except FileNotFoundError:
                    continue
    return newest


def _remove_tree(path: Path) -> int:
    size = 0
    if path.is_dir() and not path.is_symlink():
        for base, _dirs, files in os.walk(path):
            for name in files:
                try:
                    size += (Path(base) / name).lstat().st_size
                except FileNotFoundError:
                    continue
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            size = path.lstat().st_size
            path.unlink()
        except FileNotFoundError:
            return 0
    return size


# --- Stored files --------------------------------------------------------------------------


def _trash_dir(root: Path) -> Path:
    path = root / "tmp" / TRASH
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def _undo_killed_sweep(root: Path, report: SweepReport) -> None:
    """Files a sweep killed mid-way had moved aside: back if a row refers to them, else gone."""
    trash = root / "tmp" / TRASH
    if not trash.is_dir():
        return
    for entry in os.scandir(trash):
        sha = entry.name
        final = storage.blob_path(sha) if _is_sha(sha) else None
        if final is not None and Blob.objects.filter(sha256=sha).exists() and not final.exists():
            final.parent.mkdir(parents=True, exist_ok=True)
            Path(entry.path).replace(final)
            report.restored += 1
        else:
            Path(entry.path).unlink(missing_ok=True)


def _is_sha(name: str) -> bool:
    return len(name) == 64 and set(name) <= _HEX


def _stored_files(root: Path) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
    """(two-character prefix, files under it) for each first-level folder of the store."""
    try:
        tops = sorted(
            (e for e in os.scandir(root) if len(e.name) == 2 and set(e.name) <= _HEX),
            key=lambda e: e.name,
        )
    except FileNotFoundError:
        return
    for top in tops:
        files: list[os.DirEntry[str]] = []
        for second in os.scandir(top.path):
            if len(second.name) == 2 and second.is_dir(follow_symlinks=False):
                files.extend(
                    e
                    for e in os.scandir(second.path)
                    if _is_sha(e.name) and e.name.startswith(top.name + second.name)
                )
        yield top.name, files


def _sweep_files_without_row(root: Path, cutoff: float, report: SweepReport) -> None:
    for prefix, files in _stored_files(root):
        if not files:
            continue
        known = set(Blob.objects.filter(sha256__startswith=prefix).values_list("sha256", flat=True))
        for entry in files:
            if entry.name in known:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            if info.st_mtime >= cutoff:
                report.kept_young += 1
                continue
            _remove_file_without_row(root, entry.name, info.st_size, cutoff, report)


_CLAIM_SQL = """
INSERT INTO documents_blob (sha256, size, created_at) VALUES (%s, %s, NOW())
ON CONFLICT (sha256) DO NOTHING RETURNING id
"""


def _remove_file_without_row(
    root: Path, sha: str, size: int, cutoff: float, report: SweepReport
) -> None:
    final = storage.blob_path(sha)
    aside = _trash_dir(root) / sha
    with transaction.atomic():
        # The placeholder row is never committed: it makes a concurrent insert of this hash
        # wait for us, and makes us wait for one already under way (then we see it and keep).
        with connection.cursor() as cursor:
            cursor.execute(_CLAIM_SQL, [sha, max(size, 1)])
            claimed = cursor.fetchone() is not None
        try:
            if not claimed:
                report.kept_in_use += 1
                return
            try:
                final.replace(aside)
            except FileNotFoundError:
                return
            if aside.stat().st_mtime >= cutoff:  # stored again just now: it stays
                aside.replace(final)
                report.kept_in_use += 1
                return
            aside.unlink()
            report.orphan_files += 1
            report.orphan_bytes += size
        finally:
            transaction.set_rollback(True)


def _references() -> list[tuple[type[models.Model], str]]:
    """Every foreign key to Blob, in every installed app (a new one is covered by itself)."""
    found: list[tuple[type[models.Model], str]] = []
    for model in apps.get_models(include_auto_created=True):
        for field in model._meta.get_fields():
            if (
                getattr(field, "concrete", False)
                and field.is_relation
                and (field.many_to_one or field.one_to_one)
                and field.related_model is Blob
            ):
                found.append((model, field.name))
    return found


def _unreferenced(queryset: models.QuerySet[Blob]) -> models.QuerySet[Blob]:
    for model, name in _references():
        queryset = queryset.filter(~Exists(model._base_manager.filter(**{name: OuterRef("pk")})))
    return queryset


def _sweep_unreferenced_rows(root: Path, cutoff: float, report: SweepReport) -> None:
    old = datetime.fromtimestamp(cutoff, tz=UTC)
    candidates = list(
        _unreferenced(Blob.objects.filter(created_at__lt=old)).values_list("pk", flat=True)
    )
    for pk in candidates:
        aside: Path | None = None
        final: Path | None = None
        try:
            with transaction.atomic():
                blob = Blob.objects.select_for_update().filter(pk=pk).first()
                # Checked again under the row lock, in a new snapshot.
                if blob is None or not _unreferenced(Blob.objects.filter(pk=pk)).exists():
                    report.kept_in_use += blob is not None
                    continue
                Blob.objects.filter(pk=pk).delete()
                final = storage.blob_path(blob.sha256)
                if final.exists():
                    aside = _trash_dir(root) / blob.sha256
                    final.replace(aside)
        except IntegrityError:  # referred to after all: the database's foreign keys say so
            if aside is not None and final is not None:
                aside.replace(final)
            report.kept_in_use += 1
            continue
        report.orphan_rows += 1
        if aside is not None:
            report.orphan_bytes += aside.stat().st_size
            aside.unlink(missing_ok=True)
