"""Static files: WhiteNoise, with its table of files read once per process and set-up.

WhiteNoise reads every static file's size, date, type and compressed variants when its
middleware is made, and answers from that table. A server makes the middleware once. Django's
test client makes it once per client (each client has its own handler), and with our finders
(the admin's, ninja's and our files, about 150) that cost about 20 ms of CPU a client: a fifth
of the fast test tier went to reading the same table again.

Here the table is read once per process for each set-up (the static and WhiteNoise settings it
depends on) and shared by every middleware made after: what each server already did, since a
table read when a server starts is never read again. Files that change after the first read
are answered as first read, as they are by a server (`collectstatic` runs before the servers
start). With `WHITENOISE_AUTOREFRESH` there is no table to share: files are looked up on each
request, as WhiteNoise does.

A file is sent a block at a time under ASGI too (lexweb/downloads.py): WhiteNoise answers with
Django's FileResponse, which Django's ASGI handler reads whole into memory before sending
(with a warning for every file).
"""

import threading
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from whitenoise.compress import Compressor
from whitenoise.middleware import WhiteNoiseFileResponse, WhiteNoiseMiddleware
from whitenoise.storage import CompressedStaticFilesStorage

from lexweb.downloads import FileDownload

# The settings the table depends on; every WHITENOISE_* setting is added to them.
_TABLE_SETTINGS = (
    "DEBUG",
    "FORCE_SCRIPT_NAME",
    "INSTALLED_APPS",
    "STATIC_ROOT",
    "STATIC_URL",
    "STATICFILES_DIRS",
    "STATICFILES_FINDERS",
)

_tables: dict[str, dict[str, Any]] = {}
_lock = threading.Lock()


def _set_up(settings: Any) -> str:
    names = [*_TABLE_SETTINGS, *sorted(n for n in dir(settings) if n.startswith("WHITENOISE_"))]
    return repr([(name, getattr(settings, name, None)) for name in names])


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise's middleware; its table of files is read once per process and set-up."""

    _shared_table: dict[str, Any] | None = None

    def __init__(self, get_response: Any = None, settings: Any = django_settings) -> None:
        key = _set_up(settings)
        with _lock:
            self._shared_table = _tables.get(key)
            super().__init__(get_response, settings)
            if self._shared_table is not None:
                self.files = self._shared_table
            elif not self.autorefresh:
                _tables[key] = self.files

    def add_files(self, root: Any, prefix: str | None = None) -> None:
        if self._shared_table is None or self.autorefresh:
            super().add_files(root, prefix)

    def add_files_from_finders(self) -> None:
        if self._shared_table is None:
            super().add_files_from_finders()

    @staticmethod
    def serve(static_file: Any, request: Any) -> "StaticFileResponse":
        """WhiteNoise's own `serve`, answering with a response read a block at a time."""
        response = static_file.get_response(request.method, request.META)
        http_response = StaticFileResponse(response.file or (), status=int(response.status))
        del http_response["content-type"]  # WhiteNoise's headers say it
        for key, value in response.headers:
            http_response[key] = value
        return http_response


class StaticFileResponse(FileDownload, WhiteNoiseFileResponse):
    """WhiteNoise's response (no headers of Django's own) read a block at a time under ASGI."""


# --- Compressed copies ---------------------------------------------------------------------

# How far a compressed copy's date may be from its file's and still be its copy (WhiteNoise
# gives the copy the file's date through floats, which may round).
_SAME_DATE_SECONDS = 0.001


class CompressedStaticFiles(CompressedStaticFilesStorage):
    """WhiteNoise's storage that writes Brotli and gzip copies for the server to send, writing
    them again only for the files that changed.

    `collectstatic` (every start of `make run`) hands WhiteNoise every file, changed or not,
    and WhiteNoise compresses each again: Brotli's best level over the ~9 MB of static files
    is about 25 s of CPU on a 2-core machine, at every start. A copy whose date is its file's
    (WhiteNoise dates each copy as its file; `collectstatic` gives a file a new date only when
    it copies a newer one) is kept; a copy of an earlier version is deleted before compressing
    again, so a file that no longer compresses well never leaves a stale copy behind to be
    sent in its place."""

    def create_compressor(self, **kwargs: Any) -> Compressor:
        return _CompressChanged(**kwargs)


class _CompressChanged(Compressor):
    SUFFIXES = (".br", ".gz")

    def compress(self, path: str) -> list[str]:
        copies = [Path(path + suffix) for suffix in self.SUFFIXES]
        copies = [copy for copy in copies if copy.exists()]
        date = Path(path).stat().st_mtime
        if copies and all(abs(c.stat().st_mtime - date) < _SAME_DATE_SECONDS for c in copies):
            return [str(copy) for copy in copies]
        for copy in copies:
            copy.unlink()
        return list(super().compress(path))
