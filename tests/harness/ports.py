"""Free TCP ports on 127.0.0.1 for the processes the tests start."""

import contextlib
import secrets
import socket


def free_port() -> int:
    """A port free now (the kernel's choice, in the ephemeral range)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def free_port_below_ephemeral() -> int:
    """A free port chosen at random in 20000-32000, below the ephemeral range (32768 up), so that
    no outgoing connection made meanwhile (by this or any process) can take it, for instance
    while a server that listens on it is restarted."""
    start = 20_000 + secrets.randbelow(12_000)
    for offset in range(12_000):
        port = 20_000 + (start - 20_000 + offset) % 12_000
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port in 20000-32000")


def free_port_run(count: int) -> int:
    """The first of `count` consecutive free ports, below the ephemeral range (32768 up) so that
    no outgoing connection of a process running meanwhile can take one of them."""
    for base in range(20_000 + secrets.randbelow(10_000), 32_000, count):
        try:
            with contextlib.ExitStack() as probes:
                for port in range(base, base + count):
                    probe = probes.enter_context(socket.socket())
                    probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise AssertionError("no run of free ports")
