"""Content-addressed storage of originals: `<blob root>/ab/cd/<sha256>`, written once, read-only.

Files land under a temporary name first and are renamed into place, so a crash never leaves a
half-written original where a reader could find it; leftover temporaries are only ever in
`<blob root>/tmp/`, in a folder of the process that wrote them (lexweb/tempdirs.py), which the
sweeper removes once that process is gone.
"""

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from django.conf import settings

from lexweb import tempdirs
from lexweb.errors import FULL_ERRNOS, DomainError, StorageFull

CHUNK = 1024 * 1024


class UploadTooLargeError(DomainError):
    code = "too_large"


_FULL_MESSAGES = tuple(os.strerror(number) for number in FULL_ERRNOS)


def storage_full(exc: BaseException) -> bool:
    """True when `exc`, or an exception it came from, says the disk is full: an OSError with
    ENOSPC or EDQUOT, or a library's own error quoting it (MuPDF's "cannot fwrite: No space
    left on device")."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StorageFull):
            return True
        if isinstance(current, OSError) and current.errno in FULL_ERRNOS:
            return True
        if any(message in str(current) for message in _FULL_MESSAGES):
            return True
        current = current.__cause__ or current.__context__
    return False


def storage_full_message(what: str) -> str:
    """`what` could not be written: the store is full. Says how much is free and what to do."""
    try:
        free = shutil.disk_usage(blob_root()).free
        room = f" ({free:,} bytes free)"
    except OSError:
        room = ""
    return (
        f"The document store is full{room}: {what} was not written and nothing of it was kept. "
        "An administrator must free space on the store's disk (LEXWEB_BLOB_ROOT); then try again."
    )


@contextlib.contextmanager
def full_store_refused(what: str) -> Iterator[None]:
    """Turn a full disk met inside the block into StorageFull (with `what` in its message)."""
    try:
        yield
    except StorageFull:
        raise
    except Exception as exc:
        if storage_full(exc):
            raise StorageFull(storage_full_message(what)) from exc
        raise


@dataclass(frozen=True)
class StoredFile:
    sha256: str
    size: int
    path: Path


def blob_root() -> Path:
    return Path(settings.LEXWEB_BLOB_ROOT)


def blob_tmp_dir() -> Path:
    """This process's own temporary folder in the store (same filesystem: adopting is a rename)."""
    return tempdirs.process_dir(blob_root() / "tmp")


def blob_path(sha256: str) -> Path:
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ValueError("not a SHA-256 hex digest")
    return blob_root() / sha256[:2] / sha256[2:4] / sha256


class ReceivedFile:
    """An upload written to a temporary file and hashed. `commit()` moves it into the store;
    leaving the `with` block without committing deletes it."""

    def __init__(self, path: Path, sha256: str, size: int) -> None:
        self.path = path
        self.sha256 = sha256
        self.size = size
        self._committed = False

    def __enter__(self) -> "ReceivedFile":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._committed:
            self.path.unlink(missing_ok=True)

    def commit(self) -> StoredFile:
        final = blob_path(self.sha256)
        with full_store_refused("the file"):  # a new folder needs a block on most filesystems
            final.parent.mkdir(parents=True, exist_ok=True)
        try:
            # Already stored: touch it, so the sweeper (which removes only files no row refers
            # to and untouched for an hour) sees it is in use again, and drop our copy.
            os.utime(final)
            self.path.unlink(missing_ok=True)
        except FileNotFoundError:
            self.path.chmod(0o440)
            self.path.replace(final)
        except PermissionError:  # stored by another user: theirs to keep fresh
            self.path.unlink(missing_ok=True)
        self._committed = True
        self.path = final
        return StoredFile(sha256=self.sha256, size=self.size, path=final)


def blob_receive(*, source: IO[bytes], max_bytes: int) -> ReceivedFile:
    """Copy `source` to a temporary file, hashing as it goes. Raises UploadTooLargeError (and
    keeps nothing) past `max_bytes`, and StorageFull (keeping nothing either) when the store's
    disk fills up."""
    digest = hashlib.sha256()
    size = 0
    with full_store_refused("the file"):
        handle, tmp_name = tempfile.mkstemp(dir=blob_tmp_dir())
    try:
        with full_store_refused("the file"), os.fdopen(handle, "wb") as out:
            while chunk := source.read(CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise UploadTooLargeError(f"The file is larger than {max_bytes:,} bytes.")
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return ReceivedFile(Path(tmp_name), digest.hexdigest(), size)


def blob_adopt(path: Path) -> StoredFile:
    """Move a file we wrote ourselves (under `<blob root>/tmp/`) into the store by its hash,
    without copying it: a rename on the same filesystem."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return ReceivedFile(path, digest.hexdigest(), size).commit()


def blob_open(sha256: str) -> IO[bytes]:
    return blob_path(sha256).open("rb")
