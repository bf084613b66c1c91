"""Just enough HTTP/1.1 on asyncio streams to control framing byte by byte: which events share
a chunk, when the headers go out, and how a connection ends."""

import asyncio
import json
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qsl, urlsplit

MAX_BODY = 64 * 1024 * 1024


class BadRequest(Exception):
    """The bytes on the socket are not an HTTP/1.1 request we can read."""


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def wants_close(self) -> bool:
        return self.headers.get("connection", "").lower() == "close"

    def json_or_none(self) -> object | None:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


async def read_request(reader: asyncio.StreamReader, leftover: bytes = b"") -> Request | None:
    """The next request on a kept-alive connection, or None once the client has closed it.
    `leftover`: its first bytes, if they were already read."""
    try:
        line = leftover + await reader.readline()
    except (ConnectionError, asyncio.LimitOverrunError, ValueError) as exc:
        raise BadRequest(str(exc)) from exc
    if not line.strip():
        return None
    try:
        method, target, _version = line.decode("latin-1").split()
    except ValueError:
        raise BadRequest("malformed request line") from None
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await _read_body(reader, headers)
    split = urlsplit(target)
    return Request(method.upper(), split.path, dict(parse_qsl(split.query)), headers, body)


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readline()
    length = int(headers.get("content-length", "0") or "0")
    if length > MAX_BODY:
        raise BadRequest("body too large")
    return await reader.readexactly(length) if length else b""


def status_line(status: int) -> bytes:
    return f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode()


def head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers)
    return status_line(status) + lines.encode("latin-1") + b"\r\n"


def chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


LAST_CHUNK = b"0\r\n\r\n"


class BodyStream:
    """A chunked response whose headers leave with its first bytes.

    llama-server sends the headers of a queued request only when it starts producing: either a
    token once a slot frees, or a `:` ping. Holding them until the first write reproduces both.
    """

    def __init__(self, writer: asyncio.StreamWriter, status: int, headers: list[tuple[str, str]]):
        self._writer = writer
        # `headers` include Transfer-Encoding: chunked, placed where the real server puts it.
        self._head: bytes | None = head(status, headers)
        self.bytes_sent = 0

    @property
    def started(self) -> bool:
        return self._head is None

    async def write(self, *payloads: bytes) -> None:
        """Each payload is one HTTP chunk; all of them go out in one socket write."""
        data = b"".join(chunk(p) for p in payloads if p)
        await self._send(data)

    async def end(self) -> None:
        await self._send(LAST_CHUNK)

    async def _send(self, data: bytes) -> None:
        if self._head is not None:
            data, self._head = self._head + data, None
        if self._writer.is_closing():
            raise ConnectionResetError("client went away")
        self._writer.write(data)
        self.bytes_sent += len(data)
        await self._writer.drain()
