"""The GPU agent's loop, run by `manage.py gpu_agent` on each GPU host.

The command passes the real `open_nvml`; tests pass a factory of fake NVMLs. Everything the
agent knows goes to the database through `apps.cluster.services.gpu`, and what a person at the
console needs is said in one line per change of state (never once per retry).
"""

import math
import threading
import time
from collections.abc import Callable

from django import db
from django.db import DatabaseError
from django.utils import timezone

from apps.cluster import topology
from apps.cluster.models import Host
from apps.cluster.nvml import (
    Nvml,
    NvmlError,
    NvmlUnavailable,
    close_nvml,
    nvml_error_text,
    read_samples,
)
from apps.cluster.services import gpu
from lexweb.errors import DomainError
from lexweb.text import one_line

MIN_INTERVAL_S = 0.5
MAX_INTERVAL_S = 3600.0
# After the database refused or lost a report (PostgreSQL restarting), the next try comes this
# soon, not a whole interval later, so reports reach the cluster page within about a second
# of the database's return (at most the interval, when that is shorter).
DATABASE_RETRY_S = 1.0


def interval_parse(value: str) -> float:
    """Seconds between samples from the command line; ValueError says what is accepted."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not MIN_INTERVAL_S <= seconds <= MAX_INTERVAL_S:  # also false for NaN
        raise ValueError(
            f"--interval must be a number of seconds from {MIN_INTERVAL_S:g} to "
            f"{MAX_INTERVAL_S:g}, not {value[:40]!r}."
        )
    return seconds


class _Console:
    """Says a line only when it differs from the last one said."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.last: str | None = None

    def line(self, text: str) -> None:
        if text != self.last:
            self.say(text)
            self.last = text


def run_agent(
    *,
    host_name: str,
    interval: float,
    nvml_factory: Callable[[], Nvml],
    once: bool,
    stop_event: threading.Event,
    say: Callable[[str], None],
) -> int:
    """Read NVML every `interval` seconds until `stop_event` is set; returns the exit status.

    1. Register the host (a bad name raises DomainError before anything is read).
    2. Open NVML. When it is unavailable: say so (once per distinct reason), set the host's
       status to no_nvml, wait `interval` and try again.
    3. Connected: discover the topology and record the inventory and board proposal.
    4. Every `interval`: read all GPUs (no transaction open), record the samples, status ok.
       If the GPUs' UUIDs change (a card fell off the bus), go back to 3.
    5. An NVML error while connected: status error, say so, shut NVML down, and after
       `interval` go back to 2.
    6. A database error (PostgreSQL restarting) or a reading it refuses: say so once, drop the
       connection, and try again after DATABASE_RETRY_S (or `interval`, if shorter): from 4
       while sampling, else from 2; the host keeps its last status.
    With `once`, one pass of 2-4 and return: 0 when samples were recorded, 1 otherwise.
    """
    if not (interval > 0 and math.isfinite(interval)):
        raise ValueError(f"interval must be a positive number of seconds, not {interval!r}")
    host = gpu.host_register(name=host_name)
    console = _Console(say)
    while not stop_event.is_set():
        try:
            status = _attempt(host, nvml_factory, interval, once, stop_event, console)
        except (DatabaseError, DomainError) as exc:
            # PostgreSQL restarting, or a reading the database refuses: the agent outlives it.
            db.close_old_connections()
            wait = _retry_after(exc, interval)
            console.line(
                f"gpu_agent: cannot record on {host.name}: {_first_line(exc)}"
                + ("" if once else f"; retrying every {wait:g} s")
            )
            status = 1 if once else None
            if not once:
                stop_event.wait(wait)
        if status is not None:
            return status
    return 0


def _retry_after(exc: Exception, interval: float) -> float:
    return min(interval, DATABASE_RETRY_S) if isinstance(exc, DatabaseError) else interval


def _first_line(exc: Exception) -> str:
    # PostgreSQL's detail lines quote the failing values, which change every sample; the
    # first line says what is wrong and stays the same, so it is said once.
    return one_line((str(exc).strip().splitlines() or [type(exc).__name__])[0], 200)


def _attempt(
    host: Host,
    nvml_factory: Callable[[], Nvml],
    interval: float,
    once: bool,
    stop_event: threading.Event,
    console: "_Console",
) -> int | None:
    """One connection's worth of steps 2-5: the exit status to return, or None to go on."""
    every = f"every {interval:g} s"
    try:
        nvml = nvml_factory()
    except NvmlUnavailable as exc:
        # Stored before it is said: whoever reads the line finds the status in place.
        gpu.host_agent_status_set(host=host, status=Host.AgentStatus.NO_NVML, message=str(exc))
        console.line(
            f"gpu_agent: no NVML on {host.name}: {exc.reason}"
            + ("" if once else f"; retrying {every}")
        )
        if once:
            return 1
        stop_event.wait(interval)
        return None
    try:
        _serve(host, nvml, interval, once, stop_event, console)
    except NvmlError as exc:
        reason = nvml_error_text(exc)
        gpu.host_agent_status_set(
            host=host, status=Host.AgentStatus.ERROR, message=f"NVML error: {reason}"
        )
        console.line(
            f"gpu_agent: NVML error on {host.name}: {reason}"
            + ("" if once else f"; reconnecting {every}")
        )
        if once:
            return 1
        stop_event.wait(interval)
    else:
        if once:
            return 0
    finally:
        close_nvml(nvml)
    return None


def _serve(
    host: Host,
    nvml: Nvml,
    interval: float,
    once: bool,
    stop_event: threading.Event,
    console: _Console,
) -> None:
    """Steps 3 and 4 of `run_agent`, until `stop_event` is set (or after one pass with `once`).
    NVML errors are raised to the caller, and so are database errors while taking the
    inventory (the caller retries from step 2)."""
    uuids = _inventory(host, nvml, console)
    due = time.monotonic()
    while True:
        readings = read_samples(nvml)
        at = timezone.now()
        if [r.uuid for r in readings] != uuids:
            # These readings may belong to other rows; take the new inventory, sample next time.
            uuids = _inventory(host, nvml, console)
        else:
            try:
                gpu.gpu_samples_record(host=host, readings=readings, at=at)
                _status_ok(host, len(readings))
            except DatabaseError as exc:
                # A sample the database refuses (or PostgreSQL restarting): keep sampling on
                # this connection to NVML; said once while it lasts.
                if once:
                    raise
                db.close_old_connections()
                wait = _retry_after(exc, interval)
                console.line(
                    f"gpu_agent: cannot record on {host.name}: {_first_line(exc)}; "
                    f"retrying every {wait:g} s"
                )
                due = time.monotonic() + wait - interval  # the next pass after `wait`
            else:
                if once:
                    return
        # A pass slower than the interval starts the next one at once, without a burst after.
        due = max(due + interval, time.monotonic())
        if stop_event.wait(max(0.0, due - time.monotonic())):
            return


def _inventory(host: Host, nvml: Nvml, console: _Console) -> list[str]:
    found = topology.discover(nvml)
    gpu.gpu_inventory_record(host=host, topology=found)
    _status_ok(host, len(found.gpus))
    boards = " | ".join(",".join(map(str, group)) for group in found.proposed_boards())
    console.line(
        f"gpu_agent: reading {len(found.gpus)} GPUs on {host.name}; NVLink groups: {boards}"
    )
    return [g.uuid for g in found.gpus]


def _status_ok(host: Host, gpus: int) -> None:
    gpu.host_agent_status_set(host=host, status=Host.AgentStatus.OK, message=f"Reading {gpus} GPUs")
