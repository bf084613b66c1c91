"""Start `python -m lexweb.launcher ...` (what `make run` runs) from tests, in a private var
folder with its own embedded PostgreSQL and port.

Moved to tests/harness/ (ports.py, product.py); these names stay importable from here."""

from tests.harness.ports import free_port, free_port_below_ephemeral
from tests.harness.product import (
    ADMIN_PASSWORD,
    BASE_DIR,
    START_TIMEOUT,
    launch,
    launcher_env,
    one_shot,
    read_until,
)

__all__ = [
    "ADMIN_PASSWORD",
    "BASE_DIR",
    "START_TIMEOUT",
    "free_port",
    "free_port_below_ephemeral",
    "launch",
    "launcher_env",
    "one_shot",
    "read_until",
]
