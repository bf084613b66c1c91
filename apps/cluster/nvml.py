"""NVML access for the GPU agent: opening it, and reading one sample of every GPU.

Everything here talks to NVML through the `Nvml` protocol, the subset of pynvml's functions we
call (same names, same arguments). On a GPU host that is the `pynvml` module itself, returned by
`open_nvml()`; tests pass a recorded fake of the reference site (tests/cluster/fake_nvml.py).

Importing pynvml loads no native code: libnvidia-ml is opened by `nvmlInit()`, so this module
imports on machines without a driver, and `open_nvml()` turns that absence into one
`NvmlUnavailable` whose reason a person can act on.
"""

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, TypeVar

import pynvml

T = TypeVar("T")
_MAX_PROCESS_NAME = 300


class Nvml(Protocol):
    """The part of pynvml we use (same names and argument order)."""

    def nvmlShutdown(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetUUID(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any: ...
    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> tuple[int, int]: ...
    def nvmlDeviceGetNvLinkState(self, handle: Any, link: int) -> int: ...
    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: Any, link: int) -> Any: ...
    def nvmlDeviceGetTopologyCommonAncestor(self, device1: Any, device2: Any) -> int: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...
    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any: ...
    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int: ...
    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int: ...
    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int: ...
    def nvmlDeviceGetClockInfo(self, handle: Any, clock_type: int) -> int: ...
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]: ...
    def nvmlSystemGetProcessName(self, pid: int) -> str | bytes: ...


# Every NVML failure is an instance of this class (pynvml makes one subclass per error code).
NvmlError = pynvml.NVMLError


class NvmlUnavailable(Exception):
    """NVML cannot be used on this machine: no library, no driver, no permission or no GPU."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"No NVML: {reason}")
        self.reason = reason


# What a person should read for the failures of nvmlInit() that mean "nothing to read here".
_INIT_REASONS: dict[int, str] = {
    pynvml.NVML_ERROR_LIBRARY_NOT_FOUND: "libnvidia-ml.so.1 not found (no NVIDIA driver installed)",
    pynvml.NVML_ERROR_DRIVER_NOT_LOADED: "the NVIDIA kernel driver is not loaded",
    pynvml.NVML_ERROR_NO_PERMISSION: "no permission to open the NVIDIA driver",
    pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH: (
        "NVML library and kernel driver versions differ (reboot after a driver update)"
    ),
}


def open_nvml() -> Nvml:
    """Initialise NVML and return it, or raise `NvmlUnavailable`.

    A machine whose driver works but sees no GPU counts as unavailable ("no GPU"); NVML is shut
    down again before raising. The caller owns the returned handle and calls `nvmlShutdown()`.
    """
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise NvmlUnavailable(nvml_error_text(exc, _INIT_REASONS)) from None
    try:
        count = pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError as exc:
        close_nvml(pynvml)
        raise NvmlUnavailable(f"cannot count GPUs ({nvml_error_text(exc)})") from None
    if count == 0:
        close_nvml(pynvml)
        raise NvmlUnavailable("no GPU")
    nvml: Nvml = pynvml
    return nvml


def nvml_error_text(exc: Exception, known: dict[int, str] | None = None) -> str:
    """One line for an NVML error. pynvml's own text needs the library for codes it does not
    know, so a failure to produce it falls back to the code."""
    value = getattr(exc, "value", None)
    if known and isinstance(value, int) and value in known:
        return known[value]
    try:
        text = str(exc)
    except Exception:
        text = ""
    text = " ".join(text.split())
    return text or f"NVML error {value}"


def close_nvml(nvml: Nvml) -> None:
    """Shut NVML down; a driver that already fell over is not a second error."""
    with contextlib.suppress(pynvml.NVMLError):
        nvml.nvmlShutdown()


# --- Samples --------------------------------------------------------------------------------


class GpuProcess(TypedDict):
    pid: int
    name: str
    # None where the driver cannot attribute memory (Windows WDDM, some containers).
    used_memory_bytes: int | None


@dataclass(frozen=True)
class GpuReading:
    """One sample of one GPU. A field is None when this GPU does not support reading it."""

    index: int
    uuid: str
    utilisation_pct: int | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    temperature_c: int | None
    power_w: float | None
    power_limit_w: float | None
    sm_clock_mhz: int | None
    memory_clock_mhz: int | None
    processes: list[GpuProcess]


def read_samples(nvml: Nvml) -> list[GpuReading]:
    """Read every GPU once. A field this GPU does not support (NVMLError_NotSupported) is left
    None; any other NVML error (GPU lost, driver gone) is raised for the caller to reconnect."""
    return [
        _read_one(nvml, index, nvml.nvmlDeviceGetHandleByIndex(index))
        for index in range(nvml.nvmlDeviceGetCount())
    ]


def _read_one(nvml: Nvml, index: int, handle: Any) -> GpuReading:
    utilisation = optional(lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
    memory = optional(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
    power_mw = optional(lambda: nvml.nvmlDeviceGetPowerUsage(handle))
    limit_mw = optional(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
    return GpuReading(
        index=index,
        uuid=text(nvml.nvmlDeviceGetUUID(handle)),
        utilisation_pct=None if utilisation is None else int(utilisation.gpu),
        memory_used_bytes=None if memory is None else int(memory.used),
        memory_total_bytes=None if memory is None else int(memory.total),
        temperature_c=optional(
            lambda: int(nvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU))
        ),
        power_w=None if power_mw is None else power_mw / 1000,
        power_limit_w=None if limit_mw is None else limit_mw / 1000,
        sm_clock_mhz=optional(
            lambda: int(nvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
        ),
        memory_clock_mhz=optional(
            lambda: int(nvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM))
        ),
        processes=_processes(nvml, handle),
    )


def _processes(nvml: Nvml, handle: Any) -> list[GpuProcess]:
    running = optional(lambda: nvml.nvmlDeviceGetComputeRunningProcesses(handle)) or []
    found: list[GpuProcess] = []
    for process in running:
        used = getattr(process, "usedGpuMemory", None)
        found.append(
            GpuProcess(
                pid=int(process.pid),
                name=_process_name(nvml, int(process.pid)),
                used_memory_bytes=None if used is None else int(used),
            )
        )
    return found


def _process_name(nvml: Nvml, pid: int) -> str:
    try:
        return text(nvml.nvmlSystemGetProcessName(pid))[:_MAX_PROCESS_NAME]
    except pynvml.NVMLError:
        # The process may have exited since it was listed, or belong to another container.
        return ""


def optional(read: Callable[[], T]) -> T | None:
    """`read()`, or None where this GPU does not support it."""
    try:
        return read()
    except pynvml.NVMLError_NotSupported:
        return None


def text(value: str | bytes) -> str:
    """pynvml returns str, older versions bytes; names come from the driver, so decode leniently."""
    return value.decode(errors="replace") if isinstance(value, bytes) else value
