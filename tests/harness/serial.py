"""One test at a time across the xdist workers, for tests that check a state of the machine
they share (the eval command's temporary databases and folders on the one PostgreSQL server
and /tmp): `serial(name)` holds an exclusive lock on a file of that name in the system's
temporary folder for as long as the test runs."""

import contextlib
import fcntl
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def serial(name: str) -> Iterator[None]:
    path = Path(tempfile.gettempdir()) / f"lexweb-tests-{name}.lock"
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
