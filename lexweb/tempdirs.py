"""Temporary folders owned by one process, so that what a dead process left can be told apart.

Every process writes its temporary files (upload spools, files being received into the blob
store, volumes being stamped or zipped) under a folder of its own,
`<root>/p-<boot>-<pid>-<start>-<host>`: the machine's boot id, the process id, the process's
start time (clock ticks since boot, from /proc) and the host name. The sweeper
(apps/operations/services/sweeper.py) removes a folder only when its owner is provably gone:
same host, and either another boot, or no process with that id, or one started at another time
(the id was reused). A live process's folder, and another host's, are never touched.
"""

import contextlib
import os
import re
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.core.files.uploadhandler import TemporaryFileUploadHandler

from lexweb.errors import FULL_ERRNOS, StorageFull

PREFIX = "p-"
_NAME = re.compile(r"^p-(?P<boot>[0-9a-f]{8}|none)-(?P<pid>\d+)-(?P<start>\d+)-(?P<host>[\w.-]+)$")
_HOST_CHARS = re.compile(r"[^\w.-]")


@dataclass(frozen=True)
class Owner:
    boot: str
    pid: int
    start: int
    host: str


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:8]
    except OSError:
        return "none"


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks since boot) of a running process, None if none."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:  # no /proc (not Linux): existence only
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ("?", 0)
    # The command name (field 2) may contain spaces and parentheses: split after the last ")".
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def host_name() -> str:
    return _HOST_CHARS.sub("_", socket.gethostname())[:64] or "localhost"


def this_process() -> Owner:
    pid = os.getpid()
    stat = _stat(pid)
    return Owner(boot=_boot_id(), pid=pid, start=stat[1] if stat else 0, host=host_name())


def folder_name(owner: Owner) -> str:
    return f"{PREFIX}{owner.boot}-{owner.pid}-{owner.start}-{owner.host}"


def parse(name: str) -> Owner | None:
    match = _NAME.match(name)
    if match is None:
        return None
    return Owner(
        boot=match["boot"], pid=int(match["pid"]), start=int(match["start"]), host=match["host"]
    )


def owner_alive(owner: Owner) -> bool | None:
    """True: the owner runs; False: it is certainly gone; None: another host's, not ours to say."""
    if owner.host != host_name():
        return None
    boot = _boot_id()
    if owner.boot != boot:
        return False if boot != "none" else None
    stat = _stat(owner.pid)
    if stat is None or stat[0] in ("Z", "X"):
        return False
    return stat[1] == owner.start or stat[0] == "?"


def process_dir(root: Path) -> Path:
    """This process's own folder under `root`, created on first use (mode 0700)."""
    path = root / folder_name(this_process())
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


# --- Django uploads ------------------------------------------------------------------------


class _ProcessTemporaryUploadedFile(TemporaryUploadedFile):
    def __init__(
        self,
        name: str,
        content_type: str,
        size: int,
        charset: str | None,
        content_type_extra: dict[str, Any] | None = None,
    ) -> None:
        from django.conf import settings

        ext = Path(name).suffix
        spool: IO[bytes] = tempfile.NamedTemporaryFile(  # noqa: SIM115  (Django closes it)
            suffix=".upload" + ext[:16], dir=process_dir(Path(settings.FILE_UPLOAD_TEMP_DIR))
        )
        UploadedFile.__init__(self, spool, name, content_type, size, charset, content_type_extra)


class ProcessTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """Django's upload spool on disk, in this process's own folder under FILE_UPLOAD_TEMP_DIR,
    so that a web server killed mid-upload leaves files the sweeper can tell are orphaned.

    A full spool (its filesystem out of space or quota) stops the upload with StorageFull
    (507 `storage_full`, also when it is met in a middleware: lexweb/failures.py) and removes
    what it had spooled of the file; nothing of the request is kept."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super(TemporaryFileUploadHandler, self).new_file(*args, **kwargs)
        try:
            self.file = _ProcessTemporaryUploadedFile(
                self.file_name or "",
                self.content_type or "",
                0,
                self.charset,
                self.content_type_extra,
            )
        except OSError as exc:
            self._spool_full(exc)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        try:
            self.file.write(raw_data)
        except OSError as exc:
            self._spool_full(exc)
        return None

    def _spool_full(self, exc: OSError) -> None:
        if exc.errno not in FULL_ERRNOS:
            raise exc
        spool = getattr(self, "file", None)
        if spool is not None:
            with contextlib.suppress(OSError):
                spool.close()  # a named temporary file: closing removes it
        raise StorageFull(
            f"The server's upload spool is full: “{self.file_name}” was not received and nothing "
            "of this upload was kept. Try again later, or ask the firm's IT admin to free space "
            "under the server's temporary folder."
        ) from exc
