"""Backend clients: one interface (`base.BackendClient`) for llama.cpp's llama-server and Ollama.

client = client_for(backend)
try:
    async with client.stream_chat(request) as stream:
        async for event in stream:
            ...
finally:
    await client.aclose()
"""

from typing import TYPE_CHECKING

from apps.cluster.backends.base import (
    BackendAuthError,
    BackendClient,
    BackendError,
    BackendProtocolError,
    BackendRequestError,
    BackendTimeout,
    BackendUnavailable,
    ChatEvent,
    ChatRequest,
    ChatStream,
    ContextOverflow,
    Finished,
    HealthReport,
    Message,
    ModelInfo,
    ModelNotFound,
    StreamFailed,
    Timeouts,
    Token,
)
from apps.cluster.backends.llama_cpp import LlamaCppClient
from apps.cluster.backends.ollama import OllamaClient
from apps.cluster.backends.streams import DEFAULT_TIMEOUTS

if TYPE_CHECKING:
    # Not imported at run time: the clients (and the benchmark) work without Django set up.
    from apps.cluster.models import Backend


def client_for(backend: "Backend", timeouts: Timeouts = DEFAULT_TIMEOUTS) -> BackendClient:
    """A new client for `backend` (its kind, base URL and API key). The caller closes it with
    `aclose()`; it holds a connection pool."""
    if backend.kind == "llama_cpp":
        return LlamaCppClient(backend.base_url, api_key=backend.api_key, timeouts=timeouts)
    if backend.kind == "ollama":
        # Ollama itself has no keys; one set here is for a proxy in front of it.
        return OllamaClient(backend.base_url, api_key=backend.api_key, timeouts=timeouts)
    raise ValueError(f"Backend {backend.name} has an unknown kind {backend.kind!r}.")


__all__ = [
    "BackendAuthError",
    "BackendClient",
    "BackendError",
    "BackendProtocolError",
    "BackendRequestError",
    "BackendTimeout",
    "BackendUnavailable",
    "ChatEvent",
    "ChatRequest",
    "ChatStream",
    "ContextOverflow",
    "Finished",
    "HealthReport",
    "LlamaCppClient",
    "Message",
    "ModelInfo",
    "ModelNotFound",
    "OllamaClient",
    "StreamFailed",
    "Timeouts",
    "Token",
    "client_for",
]
