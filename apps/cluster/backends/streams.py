"""What both backend clients share: the httpx client, error mapping, framing of SSE and NDJSON
bodies, and the streaming call with its timeouts and cancellation. Every token's text is
yielded as `lexweb.text.model_text` leaves it (no controls, noncharacters, lone surrogates or
bidi overrides), so nothing downstream stores or shows a character it cannot handle.

Timeouts (`base.Timeouts`), enforced with asyncio deadlines on each read, not httpx's:
- `connect`: the TCP (and TLS) connection.
- `first_token`: from sending the request until the first Token. It covers the wait for
  response headers, which llama-server withholds from a request queued behind busy slots.
- `between_tokens`: from one event handed to the caller until the next. Keep-alive pings (`:`)
  do not count as progress: llama-server pings an open stream it has stopped generating for
  (after a first SIGTERM, for ten minutes), so a ping-only stream must still time out.
- `probe`: each request of health() and list_models() (and the llama helpers).
"""

import asyncio
import functools
import json
import ssl
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx

from apps.cluster.backends.base import (
    BackendAuthError,
    BackendError,
    BackendProtocolError,
    BackendRequestError,
    BackendTimeout,
    BackendUnavailable,
    ChatEvent,
    Finished,
    Timeouts,
    Token,
)
from lexweb.text import model_text, printable

DEFAULT_TIMEOUTS = Timeouts()
# Longest server error message we repeat; the rest is cut.
MESSAGE_CHARS = 200
# llama-server closes idle kept-alive connections after 5 s; drop ours a little before that so
# a request never goes out on a socket the server is closing.
KEEPALIVE_EXPIRY = 4.0
# llama-server closes a streamed reply's connection right after its last chunk although its
# headers say Keep-Alive, so a request sent next on that connection reads nothing (13 of 40
# health checks right after a stream failed so). A streaming call therefore asks for a
# connection of its own: with `Connection: close` httpx closes it when the reply ends, and it
# never goes back to the pool. One TCP handshake per call is nothing beside a generation.
STREAM_HEADERS = {"Connection": "close"}
DRAIN_SECONDS = 1.0


BASE_URL_QUERY_REFUSED = (
    "A backend's base URL takes no query string or fragment (nothing after '?' or '#'): "
    "lexweb adds its own paths (/health, /v1/chat/completions) to it."
)


def base_url_problem(url: str) -> str | None:
    """Why `url` cannot be a backend's base URL, or None. The clients join their paths to it:
    after a query string they would land inside the query (`/v1?k=1/health`), and a fragment is
    never sent. Checked where a base URL is written (admin form, site file) and again before
    each request (a row written before the rule)."""
    if "?" in url or "#" in url:
        return BASE_URL_QUERY_REFUSED
    return None


def describe(base_url: str) -> str:
    """The backend's name in messages: its base URL without any user:password part."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def server_message(body: bytes, secret: str = "") -> str:
    """The error text in a reply body: `{"error":{"message":..}}` (llama-server, OpenAI),
    `{"error":".."}` (Ollama) or plain text, on one line, cut short, never the API key."""
    text = body.decode("utf-8", errors="replace")
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return error_text(value, secret) if isinstance(value, dict) else clean(text, secret)


def error_text(value: Mapping[str, object], secret: str = "") -> str:
    """The message of a parsed error object, in any of the shapes `server_message` reads."""
    error = value.get("error", value.get("message"))
    if isinstance(error, dict):
        error = error.get("message")
    return clean(error if isinstance(error, str) else json.dumps(value), secret)


def clean(text: str, secret: str = "") -> str:
    """A backend's text made fit to store and show: printable (a NUL would make PostgreSQL
    refuse the health row or call record it goes into), one line, key redacted, bounded."""
    text = " ".join(printable(text).split())
    if secret:
        text = text.replace(secret, "***")
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def json_object(payload: bytes, name: str) -> dict[str, object]:
    try:
        value = json.loads(payload)
    except ValueError:
        raise BackendProtocolError(f"{name} sent a reply that is not valid JSON.") from None
    if not isinstance(value, dict):
        raise BackendProtocolError(f"{name} sent JSON of an unexpected shape.")
    return value


class SseSplitter:
    """Splits a text/event-stream body into the data of its events, across arbitrary chunk
    boundaries. Several events may share a chunk and one event may span chunks; comment lines
    (`:` pings) and fields other than `data:` are dropped."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self._buffer + data
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        blocks = buffer.split(b"\n\n")
        self._buffer = blocks.pop()
        payloads = []
        for block in blocks:
            if block.startswith(b"data: ") and b"\n" not in block:
                payloads.append(block[6:])  # the usual case: one data line
                continue
            lines = [line[5:] for line in block.split(b"\n") if line.startswith(b"data:")]
            if lines:
                payloads.append(b"\n".join(line.removeprefix(b" ") for line in lines))
        return payloads

    @property
    def partial(self) -> bool:
        """Bytes of an event whose end has not arrived (pings do not count)."""
        return any(line and not line.startswith(b":") for line in self._buffer.split(b"\n"))


class LineSplitter:
    """Splits an NDJSON body into its lines, across arbitrary chunk boundaries."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[bytes]:
        lines = (self._buffer + data).split(b"\n")
        self._buffer = lines.pop()
        return [line for line in lines if line.strip()]

    def rest(self) -> bytes:
        rest, self._buffer = self._buffer, b""
        return rest

    @property
    def partial(self) -> bool:
        return bool(self._buffer.strip())


class EventDecoder(Protocol):
    """Turns a streamed body into chat events; one per call, so it can keep state."""

    def feed(self, data: bytes) -> list[ChatEvent]:
        """Events complete in the bytes so far. Raises StreamFailed for an error event and
        BackendProtocolError for one that does not parse."""
        ...

    def end(self) -> list[ChatEvent]:
        """At the end of the body: the last events, or BackendProtocolError if the stream
        stopped before its final event."""
        ...

    @property
    def partial(self) -> bool: ...


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context of every backend client: what httpx makes for `verify=True` without the
    environment (certifi's CA bundle, hostnames checked), made once per process. Building it
    loads the whole bundle (tens of milliseconds), which each stage's and each health check's
    new client paid on the worker's shared thread."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class HttpBackend:
    """The httpx client and the request/error plumbing of one backend."""

    kind: Literal["llama_cpp", "ollama"]

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str = "",
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = describe(base_url)
        self.url_problem = base_url_problem(base_url)
        self.timeouts = timeouts
        self._api_key = api_key
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            transport=transport,
            # Reads are bounded by our own deadlines (see the module docstring).
            timeout=httpx.Timeout(connect=timeouts.connect, read=None, write=None, pool=None),
            limits=httpx.Limits(
                max_connections=None,
                max_keepalive_connections=32,
                keepalive_expiry=KEEPALIVE_EXPIRY,
            ),
            # Backends sit on the firm's network: a proxy set in the environment for the outside
            # world must not relay prompts.
            trust_env=False,
            verify=tls_context(),
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    def url_check(self) -> None:
        """Refuse to send anything when the base URL cannot take paths (see base_url_problem);
        the message names the backend without its query, which may hold a secret."""
        if self.url_problem:
            raise BackendUnavailable(f"{self.name}: {self.url_problem} Correct it in the admin.")

    def status_error(self, status: int, body: bytes) -> BackendError:
        """The error for a non-2xx reply; kinds refine it (context overflow, missing model)."""
        message = server_message(body, self._api_key)
        if status == 401:
            return BackendAuthError(
                f"{self.name} refused the API key ({message or 'HTTP 401'}). "
                "Check the key configured for this backend."
            )
        if status >= 500:
            return BackendUnavailable(f"{self.name} answered {status}: {message}")
        return BackendRequestError(f"{self.name} refused the request ({status}: {message}).")

    def transport_error(self, exc: Exception) -> BackendError:
        if isinstance(exc, httpx.ConnectTimeout):
            return BackendTimeout(
                f"Cannot connect to {self.name} within {self.timeouts.connect:g} s."
            )
        if isinstance(exc, httpx.ConnectError):
            return BackendUnavailable(f"Cannot connect to {self.name} ({exc or 'refused'}).")
        if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
            return BackendUnavailable(f"{self.name} is not a valid http(s) URL.")
        return BackendUnavailable(
            f"{self.name} dropped the connection ({type(exc).__name__}: {exc or 'no detail'})."
        )

    async def request(
        self, method: str, path: str, *, json: object = None, timeout: float | None = None
    ) -> httpx.Response:
        """One whole request and reply, within `timeout` (default: probe). Any status."""
        limit = self.timeouts.probe if timeout is None else timeout
        self.url_check()
        try:
            async with asyncio.timeout(limit):
                return await self.http.request(method, path, json=json)
        except TimeoutError:
            raise BackendTimeout(f"{self.name} did not answer {path} within {limit:g} s.") from None
        except httpx.HTTPError as exc:
            raise self.transport_error(exc) from None

    async def get_json(
        self, method: str, path: str, *, json: object = None, timeout: float | None = None
    ) -> object:
        """The JSON of a 200 reply; any other status raises its BackendError."""
        response = await self.request(method, path, json=json, timeout=timeout)
        if response.status_code != 200:
            raise self.status_error(response.status_code, response.content)
        try:
            return response.json()
        except ValueError:
            raise BackendProtocolError(f"{self.name} sent invalid JSON for {path}.") from None


class HttpChatStream:
    """One streaming chat call: `async with` sends it, iterating yields its events.

    The call has a connection of its own, closed when it ends (see STREAM_HEADERS). Leaving the
    `async with` before the end, or `cancel()`, closes the HTTP response, which closes its
    connection: both servers stop generating when their client goes away. After `cancel()` an
    iteration in progress or to come ends quietly.
    """

    def __init__(
        self, backend: HttpBackend, path: str, payload: Mapping[str, object], decoder: EventDecoder
    ) -> None:
        self._backend = backend
        self._name = backend.name
        self._timeouts = backend.timeouts
        self._path = path
        self._payload = payload
        self._decoder = decoder
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._reader: asyncio.Task[object] | None = None
        self._expired = False
        self._started = False
        self._cancelled = False
        self._finished = False

    async def __aenter__(self) -> "HttpChatStream":
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + self._timeouts.first_token
        self._backend.url_check()
        http = self._backend.http
        request = http.build_request("POST", self._path, json=self._payload, headers=STREAM_HEADERS)
        try:
            async with asyncio.timeout_at(self._deadline):
                self._response = await http.send(request, stream=True)
                if self._response.status_code != 200:
                    body = await self._response.aread()
                    raise self._backend.status_error(self._response.status_code, body)
        except TimeoutError:
            await self._close()
            raise BackendTimeout(self._timeout_message()) from None
        except httpx.HTTPError as exc:
            await self._close()
            raise self._backend.transport_error(exc) from None
        except BaseException:
            await self._close()
            raise
        self._chunks = self._response.aiter_raw()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._close()

    async def cancel(self) -> None:
        self._cancelled = True
        await self._close()

    def __aiter__(self) -> AsyncIterator[ChatEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[ChatEvent]:
        if self._chunks is None:
            if self._cancelled:
                return
            raise RuntimeError("open the stream with `async with` before iterating it")
        pending: deque[ChatEvent] = deque()
        loop = asyncio.get_running_loop()
        while not self._finished:
            while not pending:
                if self._cancelled:
                    return
                chunk = await self._read()
                if self._cancelled:
                    return
                if chunk is not None:
                    pending.extend(self._decoder.feed(chunk))
                    continue
                pending.extend(self._decoder.end())
                if not pending:
                    return
            if self._cancelled:
                # Cancelled while events of one chunk were still to be handed out (a slow
                # reader gets several tokens in one chunk): none of them after the cancel.
                return
            event = pending.popleft()
            if isinstance(event, Token):
                # The model-output boundary: what a model writes is data (lexweb.text's rule),
                # whoever reads the stream (dispatch, the pipeline's run events, the relay).
                event = Token(model_text(event.text))
            self._started = True
            self._finished = isinstance(event, Finished)
            yield event
            self._deadline = loop.time() + self._timeouts.between_tokens
        await self._drain()

    async def _read(self) -> bytes | None:
        """The next chunk of the body, or None at its end, within the current deadline.

        One timer per stream rather than an `asyncio.timeout_at` per chunk: a token is one
        chunk, and arming and cancelling a timer for each cost a third of the client's CPU at
        40,000 tokens/s (bench_stream_relay). The timer is re-armed lazily: when it fires
        before the deadline (which moved on with each token) it is set for the new one; it
        cancels this task only while a read is waiting, never the caller's own work between
        tokens."""
        if self._chunks is None:
            return None
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - always read from a task
            raise RuntimeError("a stream is read from an asyncio task")
        if self._timer is None or self._timer.when() > self._deadline:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = asyncio.get_running_loop().call_at(self._deadline, self._on_deadline)
        self._reader, self._expired = task, False
        cancelling = task.cancelling()
        try:
            return await anext(self._chunks)
        except StopAsyncIteration:
            return None
        except asyncio.CancelledError:
            if not self._expired or task.uncancel() > cancelling:
                raise  # cancelled by someone else (also)
            await self._close()
            if self._cancelled:
                return None
            raise BackendTimeout(self._timeout_message()) from None
        except (httpx.HTTPError, httpx.StreamError) as exc:
            await self._close()
            if self._cancelled:
                return None
            if self._decoder.partial:
                raise BackendProtocolError(
                    f"{self._name} cut the stream in the middle of an event."
                ) from None
            raise BackendUnavailable(
                f"{self._name} dropped the connection before the reply was complete "
                f"({type(exc).__name__})."
            ) from None
        finally:
            self._reader = None

    def _on_deadline(self) -> None:
        """The stream's timer: cancel a read still waiting at the deadline, else follow it."""
        self._timer = None
        if self._reader is None:
            return  # between reads: the next read arms the timer again
        loop = asyncio.get_running_loop()
        if loop.time() < self._deadline:
            self._timer = loop.call_at(self._deadline, self._on_deadline)
            return
        self._expired = True
        self._reader.cancel()

    async def _drain(self) -> None:
        """Read the rest of a finished body (llama-server's `[DONE]`, the chunked end), so that
        the server sees its reply read to the end rather than a client going away. Both servers
        end the body right after the final event; one that does not within a second has its
        connection closed instead of holding up the caller."""
        self._deadline = min(self._deadline, asyncio.get_running_loop().time() + DRAIN_SECONDS)
        try:
            while await self._read():
                pass
        except BackendError:
            pass
        await self._close()

    def _timeout_message(self) -> str:
        if self._started:
            return (
                f"{self._name} stopped sending tokens: nothing for "
                f"{self._timeouts.between_tokens:g} s."
            )
        return f"{self._name} sent no first token within {self._timeouts.first_token:g} s."

    async def _close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        response, self._response = self._response, None
        if response is not None:
            await response.aclose()
