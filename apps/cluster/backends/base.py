"""One interface for both kinds of backend (llama.cpp `llama-server` and Ollama).

A caller builds a `ChatRequest`, opens `client.stream_chat(request)` and iterates the events:
`Token` pieces of text as they arrive, then exactly one `Finished` with the counts and
timings. Leaving the `async with` early (or calling `cancel()`) closes the HTTP stream, which
makes both servers stop generating. Every failure is a `BackendError` subclass whose message is
safe to show to a user or admin (never the API key, never a prompt).
"""

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypedDict

import httpx


class Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Timeouts:
    """Seconds. `first_token` covers the time a request waits for a free slot: llama-server
    withholds even the response headers of a queued request until a slot frees."""

    connect: float = 5.0
    first_token: float = 600.0
    between_tokens: float = 60.0
    # Liveness checks (health registry): short, so a dead host is noticed quickly.
    probe: float = 3.0


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: list[Message]
    max_tokens: int
    # Admin-enforced presets: temperature, top_p, top_k, min_p, repeat_penalty, seed.
    sampling: Mapping[str, float | int] = field(default_factory=dict)
    # A JSON schema the output must follow (llama-server response_format, Ollama format).
    json_schema: Mapping[str, object] | None = None
    # Ollama only: always sent, so that its silent truncation can be detected.
    num_ctx: int | None = None
    keep_alive: str | None = None


@dataclass(frozen=True)
class Token:
    text: str


@dataclass(frozen=True)
class Finished:
    finish_reason: str  # "stop", "length", ...
    prompt_tokens: int | None  # tokens the backend evaluated for the prompt (incl. cached)
    completion_tokens: int | None
    prefill_tokens_per_second: float | None
    decode_tokens_per_second: float | None
    prompt_ms: float | None = None
    decode_ms: float | None = None


ChatEvent = Token | Finished


@dataclass(frozen=True)
class ModelInfo:
    name: str
    # Context per slot as the backend reports it (llama-server meta.n_ctx), if it does.
    context_per_slot: int | None = None
    size_bytes: int | None = None
    # Other names the backend answers to for it (llama-server's `aliases`).
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class HealthReport:
    state: Literal["ok", "loading", "down"]
    message: str = ""
    slots_total: int | None = None
    slots_busy: int | None = None
    models_loaded: tuple[str, ...] = ()
    # False when no HTTP answer came at all (nothing listening, the connection refused or
    # dropped, no reply in time): the server is gone, not failing.
    answered: bool = True


@dataclass(frozen=True)
class ServedModel:
    """What a backend says it serves, asked about one configured model."""

    # Every name the server gives for what it serves: llama-server its model id, aliases and
    # file path (a server started without --alias names its model by the path); Ollama its
    # pulled models.
    names: tuple[str, ...]
    # Tokens one request gets (llama-server: n_ctx of a slot; Ollama: the num_ctx sent, within
    # the model's own context length), or None when the server does not say.
    context_per_slot: int | None = None
    # Where context_per_slot was read: "/props", "/slots", "/v1/models", "/api/show", "/api/ps".
    context_source: str = ""
    # Ollama: whether the model is in memory now (/api/ps). llama-server: always.
    loaded: bool = True


class BackendError(Exception):
    """A backend could not do what was asked. `str(error)` is safe to show."""


class BackendUnavailable(BackendError):
    """Cannot connect, connection dropped, 5xx, or the model is still loading."""


class BackendTimeout(BackendUnavailable):
    """No connection, no first token, or too long a gap between tokens, within the limits."""


class BackendAuthError(BackendError):
    """401: the backend's API key is missing or wrong."""


class BackendProtocolError(BackendError):
    """The reply did not follow the recorded protocol (invalid JSON, a stream cut mid-event,
    a stream that ends without its final event)."""


class BackendRequestError(BackendError):
    """4xx: the backend refused the request as malformed."""


class ModelNotFound(BackendRequestError):
    """The model is not on the backend (Ollama: not pulled)."""


class ContextOverflow(BackendRequestError):
    """The prompt does not fit one slot's context (llama-server exceed_context_size_error),
    or the backend evaluated fewer prompt tokens than were sent (silent truncation)."""

    def __init__(self, message: str, *, prompt_tokens: int | None, context: int | None) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.context = context


class StreamFailed(BackendError):
    """The backend reported an error after streaming had begun (under status 200)."""


# Transport failures in which the server did say something (a read or write deadline of
# httpx's own; ours are asyncio deadlines, which chain nothing).
_ANSWERED_TRANSPORT = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout)


def backend_answered(error: BaseException) -> bool:
    """False when the error is that no HTTP answer came at all: the connection was refused,
    could not be made in time, or dropped (a server killed or restarting). True for every
    answer that was an error (a status, an error event, a reply too slow or malformed).

    The clients raise their errors `from None` inside the `except` for httpx's error, so the
    transport error is the error's `__context__` (hidden from tracebacks, kept for this)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, httpx.TransportError) and not isinstance(cause, _ANSWERED_TRANSPORT):
            return False
        cause = cause.__cause__ or cause.__context__
    return True


class ChatStream(Protocol):
    """An open streaming call; use as `async with client.stream_chat(r) as stream:`."""

    def __aiter__(self) -> AsyncIterator[ChatEvent]: ...
    async def cancel(self) -> None: ...
    async def __aenter__(self) -> "ChatStream": ...
    async def __aexit__(self, *exc: object) -> None: ...


class BackendClient(Protocol):
    kind: Literal["llama_cpp", "ollama"]

    async def list_models(self) -> list[ModelInfo]: ...
    async def health(self) -> HealthReport: ...
    def stream_chat(self, request: ChatRequest) -> ChatStream: ...
    async def count_tokens(self, messages: list[Message]) -> int | None:
        """Tokens the prompt will take, or None where the backend cannot say before the call
        (Ollama: the caller sends num_ctx and checks prompt_eval_count afterwards)."""
        ...

    async def count_text_tokens(self, text: str) -> int | None:
        """Tokens `text` takes in the model's tokenizer (no chat template, no BOS), or None
        where the backend has no tokenizer endpoint (Ollama)."""
        ...

    async def served(self, model: str, *, num_ctx: int | None = None) -> ServedModel:
        """What the server serves and the context one request of `model` gets there (`num_ctx`:
        what calls send, Ollama only). Raises BackendError when the server cannot say."""
        ...

    async def model_file_sha256(self, model: str) -> str | None:
        """The SHA-256 of the model's weights file where the backend reports it (Ollama: the
        digest of the model blob, from /api/show), else None (llama-server reports only the
        file's path)."""
        ...

    async def aclose(self) -> None: ...
