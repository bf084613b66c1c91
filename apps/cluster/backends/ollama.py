"""Client for Ollama's native API (/api/chat as NDJSON, /api/version, /api/tags, /api/ps).

What the recordings in ../shared/protocols/ollama show and this client relies on: durations are
integer nanoseconds; every metric is omitempty (a zero is missing, not 0); an over-long prompt
is truncated to num_ctx silently, so the caller compares `Finished.prompt_tokens` with what it
sent; an unknown model is a 404 `{"error":"model 'x' not found"}` even for stream:true; an error
after streaming began is one `{"error":..}` line under status 200, with no done:true frame.
"""

import re
from typing import Literal

from apps.cluster.backends.base import (
    BackendError,
    BackendProtocolError,
    ChatEvent,
    ChatRequest,
    Finished,
    HealthReport,
    Message,
    ModelInfo,
    ModelNotFound,
    ServedModel,
    StreamFailed,
    Token,
    backend_answered,
)
from apps.cluster.backends.streams import (
    HttpBackend,
    HttpChatStream,
    LineSplitter,
    error_text,
    json_object,
    server_message,
)

CHAT_PATH = "/api/chat"
# Ollama's blobs are named by the SHA-256 of their bytes; the weights are the FROM blob (05).
_BLOB = re.compile(r"(?:^|/)sha256-([0-9a-f]{64})$")


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _rate(count: int | None, nanoseconds: int | None) -> float | None:
    if not count or not nanoseconds:
        return None
    return count / nanoseconds * 1e9


def _ms(nanoseconds: int | None) -> float | None:
    return None if not nanoseconds else nanoseconds / 1e6


class _NdjsonChatDecoder:
    """One JSON object per line: `done:false` frames carry `message.content`, the `done:true`
    frame carries the counts and durations."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._splitter = LineSplitter()
        self._done = False

    @property
    def partial(self) -> bool:
        return self._splitter.partial

    def feed(self, data: bytes) -> list[ChatEvent]:
        events: list[ChatEvent] = []
        for line in self._splitter.feed(data):
            if self._done:
                break
            event = self._read(json_object(line, self._name))
            if event is not None:
                events.append(event)
        return events

    def end(self) -> list[ChatEvent]:
        rest = self._splitter.rest()
        if self._done:
            return []
        if rest.strip():
            # A last line without its newline is complete if it parses; cut, it does not.
            try:
                event = self._read(json_object(rest, self._name))
            except BackendProtocolError:
                raise BackendProtocolError(
                    f"{self._name} cut the stream in the middle of a line."
                ) from None
            if self._done and event is not None:
                return [event]
        raise BackendProtocolError(f"{self._name} ended the stream before the reply was done.")

    def _read(self, frame: dict[str, object]) -> ChatEvent | None:
        if "error" in frame:
            raise StreamFailed(f"{self._name} failed while generating: {error_text(frame)}")
        if frame.get("done") is True:
            self._done = True
            return self._finished(frame)
        message = frame.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return Token(content) if isinstance(content, str) and content else None

    def _finished(self, frame: dict[str, object]) -> Finished:
        # Metrics are omitempty. A missing eval_count is a true zero (nothing generated); a
        # missing prompt_eval_count is reported as unknown (None), never as a prompt of 0
        # tokens, which would look like truncation to the context guard.
        prompt = _count(frame.get("prompt_eval_count"))
        completion = _count(frame.get("eval_count")) or 0
        prompt_ns = _count(frame.get("prompt_eval_duration"))
        eval_ns = _count(frame.get("eval_duration"))
        reason = frame.get("done_reason")
        return Finished(
            finish_reason=reason if isinstance(reason, str) and reason else "stop",
            prompt_tokens=prompt,
            completion_tokens=completion,
            prefill_tokens_per_second=_rate(prompt, prompt_ns),
            decode_tokens_per_second=_rate(completion, eval_ns),
            prompt_ms=_ms(prompt_ns),
            decode_ms=_ms(eval_ns),
        )


def ollama_tag(name: str) -> str:
    """A model name as Ollama lists it: `llama3` is `llama3:latest`."""
    name = name.strip()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _trained_context(show: object) -> int | None:
    """`<architecture>.context_length` of an /api/show reply's model_info, or None."""
    info = show.get("model_info") if isinstance(show, dict) else None
    if not isinstance(info, dict):
        return None
    architecture = info.get("general.architecture")
    value = info.get(f"{architecture}.context_length") if isinstance(architecture, str) else None
    if value is None:
        value = next((v for k, v in info.items() if k.endswith(".context_length")), None)
    return _count(value) or None


def weights_sha256(show: dict[str, object]) -> str | None:
    """The weights blob's SHA-256 named by an /api/show reply (its Modelfile's FROM line, else
    `details.parent_model`), or None."""
    candidates: list[str] = []
    modelfile = show.get("modelfile")
    if isinstance(modelfile, str):
        candidates += [
            line[5:].strip() for line in modelfile.splitlines() if line.startswith("FROM ")
        ]
    details = show.get("details")
    if isinstance(details, dict) and isinstance(details.get("parent_model"), str):
        candidates.append(details["parent_model"])
    for candidate in candidates:
        match = _BLOB.search(candidate)
        if match:
            return match.group(1)
    return None


class OllamaClient(HttpBackend):
    kind: Literal["llama_cpp", "ollama"] = "ollama"

    def status_error(self, status: int, body: bytes) -> BackendError:
        message = server_message(body, self._api_key)
        if status == 404 and message.startswith("model ") and message.endswith("not found"):
            model = message.removeprefix("model ").removesuffix("not found").strip(" '\"")
            return ModelNotFound(
                f"Model '{model}' is not on {self.name}: an administrator must pull it there "
                f"(ollama pull {model})."
            )
        return super().status_error(status, body)

    async def health(self) -> HealthReport:
        """Never raises a BackendError: an unreachable or failing server is state "down"."""
        try:
            await self.get_json("GET", "/api/version")
            loaded = await self.get_json("GET", "/api/ps")
        except BackendError as exc:
            return HealthReport(state="down", message=str(exc), answered=backend_answered(exc))
        models = loaded.get("models") if isinstance(loaded, dict) else None
        names = tuple(str(m["name"]) for m in models or [] if isinstance(m, dict) and "name" in m)
        # Ollama has no slots to report and no loading state: it loads on the first request.
        return HealthReport(state="ok", models_loaded=names)

    async def list_models(self) -> list[ModelInfo]:
        """The pulled models. context_per_slot stays None: Ollama's context is the num_ctx of
        each request, not a property of the server."""
        body = await self.get_json("GET", "/api/tags")
        models = body.get("models") if isinstance(body, dict) else None
        if not isinstance(models, list):
            raise BackendProtocolError(f"{self.name} sent a model list without `models`.")
        return [
            ModelInfo(name=str(m["name"]), size_bytes=_count(m.get("size")))
            for m in models
            if isinstance(m, dict) and isinstance(m.get("name"), str)
        ]

    async def served(self, model: str, *, num_ctx: int | None = None) -> ServedModel:
        """The pulled models (/api/tags), and the context a request for `model` with `num_ctx`
        gets: the smallest of `num_ctx`, the model's own context length (/api/show
        `model_info["<architecture>.context_length"]`: Ollama cuts a larger num_ctx to it), and
        the context it is loaded with now (/api/ps `context_length`, when it is in memory).
        A model that is not pulled gets no context (None)."""
        names = tuple(m.name for m in await self.list_models())
        wanted = ollama_tag(model)
        if wanted not in {ollama_tag(name) for name in names}:
            return ServedModel(names=names, loaded=False)
        limits: list[tuple[int, str]] = []
        if num_ctx:
            limits.append((num_ctx, "num_ctx"))
        trained = _trained_context(await self.get_json("POST", "/api/show", json={"model": model}))
        if trained:
            limits.append((trained, "/api/show"))
        running = await self._loaded_context(wanted)
        if running:
            limits.append((running, "/api/ps"))
        limits = [(tokens, where) for tokens, where in limits if tokens > 0]
        context, source = min(limits) if limits else (None, "")
        return ServedModel(
            names=names, context_per_slot=context, context_source=source, loaded=bool(running)
        )

    async def _loaded_context(self, tag: str) -> int | None:
        """The context the model `tag` is loaded with (/api/ps), or None when not loaded."""
        body = await self.get_json("GET", "/api/ps")
        models = body.get("models") if isinstance(body, dict) else None
        for entry in models if isinstance(models, list) else []:
            if isinstance(entry, dict) and ollama_tag(str(entry.get("name", ""))) == tag:
                return _count(entry.get("context_length")) or None
        return None

    def stream_chat(self, request: ChatRequest) -> HttpChatStream:
        options: dict[str, object] = {**request.sampling, "num_predict": request.max_tokens}
        if request.num_ctx is not None:
            options["num_ctx"] = request.num_ctx
        payload: dict[str, object] = {
            "model": request.model,
            "messages": list(request.messages),
            "stream": True,
            "options": options,
        }
        if request.json_schema is not None:
            payload["format"] = request.json_schema
        if request.keep_alive is not None:
            payload["keep_alive"] = request.keep_alive
        return HttpChatStream(self, CHAT_PATH, payload, _NdjsonChatDecoder(self.name))

    async def count_tokens(self, messages: list[Message]) -> int | None:
        """Ollama cannot tokenize before the call; the caller sends num_ctx and compares
        prompt_eval_count afterwards."""
        return None

    async def count_text_tokens(self, text: str) -> int | None:
        """Ollama has no tokenizer endpoint (its /api/show leaves the vocabulary out), and a
        generation to learn prompt_eval_count would take a slot and could reload the model."""
        return None

    async def model_file_sha256(self, model: str) -> str | None:
        """The weights blob's digest from /api/show: its Modelfile's FROM line names
        `.../blobs/sha256-<hex>` (so does `details.parent_model` for a model created from a
        local file). Not /api/tags' `digest`, which is the manifest's. None if neither names a
        blob."""
        body = await self.get_json("POST", "/api/show", json={"model": model})
        if not isinstance(body, dict):
            raise BackendProtocolError(f"{self.name} sent /api/show of an unexpected shape.")
        return weights_sha256(body)
