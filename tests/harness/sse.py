"""Server-Sent Events over real HTTP for the feeds' tests: the product's ASGI application
served by uvicorn in a thread of the test's process, and a reader of the frames it streams."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import uvicorn

from apps.accounts import services as account_services
from apps.accounts.models import ApiToken, User
from tests.harness.ports import free_port
from tests.harness.waiting import wait_until


@contextmanager
def served_asgi() -> Iterator[str]:
    """lexweb.asgi served by uvicorn on a free port of 127.0.0.1: its base URL."""
    from lexweb.asgi import application

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            application,
            host="127.0.0.1",
            port=port,
            lifespan="off",
            log_level="warning",
            timeout_graceful_shutdown=2,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), 30, "uvicorn to start")
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


def token_for(user: User) -> tuple[str, int]:
    """A new API token of `user`: (its secret, its id)."""
    issued = account_services.token_create(user=user, name=f"sse {user.pk}")
    token_id = ApiToken.objects.filter(user=user).order_by("-pk").values_list("pk", flat=True)[0]
    return issued.secret, token_id


@dataclass
class Frame:
    """One Server-Sent Event, or a comment."""

    id: str | None = None
    event: str | None = None
    data: str = ""
    comment: str | None = None
    fields: list[str] = field(default_factory=list)

    @property
    def json(self) -> dict[str, object]:
        loaded: dict[str, object] = json.loads(self.data)
        return loaded


def read_frames(response: httpx.Response) -> Iterator[Frame]:
    frame = Frame()
    for line in response.iter_lines():
        if line == "":
            if frame.fields:
                yield frame
            frame = Frame()
            continue
        frame.fields.append(line)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "":
            frame.comment = value
        elif name == "id":
            frame.id = value
        elif name == "event":
            frame.event = value
        elif name == "data":
            frame.data += value


def open_stream(url: str, secret: str, **headers: str) -> "httpx._client.StreamContextManager":  # type: ignore[name-defined]
    return httpx.stream(
        "GET",
        url,
        headers={"Authorization": f"Bearer {secret}", **headers},
        timeout=httpx.Timeout(10.0),
    )


def events_until(read: Iterator[Frame], count: int) -> list[Frame]:
    """The next `count` events (keep-alive comments skipped)."""
    events: list[Frame] = []
    while len(events) < count:
        frame = next(read)
        if frame.comment is None:
            events.append(frame)
    return events
