"""Rows for the health, admission and dispatch tests: a host with boards, backends pointing at
real fake servers (or at a closed port), deployments and role routes. Plain functions, so an
async test can call them through sync_to_async."""

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from channels.layers import get_channel_layer

from apps.cluster.events import CLUSTER_GROUP
from apps.cluster.models import Backend, Board, Deployment, Host, RoleRoute


def board_make(name: str = "board-a", host: str = "gpu-host-1") -> Board:
    host_row, _ = Host.objects.get_or_create(name=host)
    board, _ = Board.objects.get_or_create(host=host_row, name=name)
    return board


def backend_make(
    *,
    base_url: str,
    kind: str = Backend.Kind.LLAMA_CPP,
    board: str = "board-a",
    slots: int = 2,
    api_key: str = "",
    name: str | None = None,
) -> Backend:
    return Backend.objects.create(
        name=name or f"{kind}-{board}-{Backend.objects.count() + 1}",
        kind=kind,
        base_url=base_url,
        board=board_make(board),
        slots=slots,
        api_key=api_key,
    )


def deployment_make(
    backend: Backend,
    *,
    model: str = "tiny",
    context_size: int = 8192,
    parallel_slots: int = 2,
    sampling: dict[str, Any] | None = None,
    enabled: bool = True,
) -> Deployment:
    return Deployment.objects.create(
        backend=backend,
        model_name=model,
        context_size=context_size,
        parallel_slots=parallel_slots,
        sampling=sampling or {},
        enabled=enabled,
    )


def route_make(role: str, *deployments: Deployment) -> None:
    for position, deployment in enumerate(deployments, start=1):
        RoleRoute.objects.create(role=role, position=position, deployment=deployment)


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (the port was just free, and is closed again)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@asynccontextmanager
async def silent_server() -> AsyncIterator[str]:
    """A real TCP server that accepts connections and never answers: a hung backend."""
    held: list[asyncio.StreamWriter] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


@asynccontextmanager
async def cluster_events() -> AsyncIterator[Callable[[], Any]]:
    """Subscribe to the dashboard's channel group; yields `receive()` (one event, 10 s max)."""
    layer = get_channel_layer()
    assert layer is not None
    channel = await layer.new_channel()
    await layer.group_add(CLUSTER_GROUP, channel)

    async def receive() -> dict[str, Any]:
        async with asyncio.timeout(10):
            message: dict[str, Any] = await layer.receive(channel)
            return message

    try:
        yield receive
    finally:
        await layer.group_discard(CLUSTER_GROUP, channel)


def chat_requests(fake: Any) -> list[dict[str, Any]]:
    """Bodies of the generation requests a fake received (either kind)."""
    paths = {"/v1/chat/completions", "/chat/completions", "/api/chat"}
    return [body for method, path, body in fake.requests if method == "POST" and path in paths]


async def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until `condition()` holds, looking again every few milliseconds of loop time
    (for state the fake's own `wait_until` does not watch: our queue, our callbacks)."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)
