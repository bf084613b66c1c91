"""Client for llama.cpp's `llama-server` (OpenAI-compatible chat over SSE, plus its own
/health, /slots, /props, /metrics, /tokenize and /apply-template).

What the recordings in ../shared/protocols/llama-server show and this client relies on:
`n_ctx` is per slot; /health is 503 "Loading model" while loading and public even with an API
key; a prompt over the slot's context is a 400 `exceed_context_size_error` with
`n_prompt_tokens` and `n_ctx`; an error after streaming began is a `data: {"error":..}` event.
"""

from collections.abc import Mapping
from typing import Literal

from apps.cluster.backends.base import (
    BackendError,
    BackendProtocolError,
    BackendUnavailable,
    ChatEvent,
    ChatRequest,
    ContextOverflow,
    Finished,
    HealthReport,
    Message,
    ModelInfo,
    ServedModel,
    StreamFailed,
    Token,
    backend_answered,
)
from apps.cluster.backends.grammar import schema_to_gbnf
from apps.cluster.backends.streams import (
    HttpBackend,
    HttpChatStream,
    SseSplitter,
    error_text,
    json_object,
    server_message,
)

CHAT_PATH = "/v1/chat/completions"
# Status codes of an endpoint the server was started without (`--no-slots`, no `--metrics`).
ABSENT = (404, 501)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _count(value: object) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _error_detail(body: bytes) -> dict[str, object]:
    try:
        error = json_object(body, "").get("error")
    except BackendError:
        return {}
    return error if isinstance(error, dict) else {}


class _SseChatDecoder:
    """OpenAI-style chat chunks: `delta.content` pieces, a chunk with `finish_reason`, then
    (with include_usage) one with `usage` and `timings`, then `data: [DONE]`."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._splitter = SseSplitter()
        self._finish_reason: str | None = None
        self._usage: Mapping[str, object] = {}
        self._timings: Mapping[str, object] = {}
        self._done = False

    @property
    def partial(self) -> bool:
        return self._splitter.partial

    def feed(self, data: bytes) -> list[ChatEvent]:
        events: list[ChatEvent] = []
        for payload in self._splitter.feed(data):
            if self._done:
                break
            if payload == b"[DONE]":
                self._done = True
                events.append(self._finished())
                break
            self._read(json_object(payload, self._name), events)
        return events

    def end(self) -> list[ChatEvent]:
        if self._done:
            return []
        if self._splitter.partial:
            raise BackendProtocolError(f"{self._name} cut the stream in the middle of an event.")
        if self._finish_reason is None:
            raise BackendProtocolError(f"{self._name} ended the stream before the reply was done.")
        # The finish_reason chunk came but not [DONE]: the reply itself is complete.
        self._done = True
        return [self._finished()]

    def _read(self, chunk: dict[str, object], events: list[ChatEvent]) -> None:
        error = chunk.get("error")
        if error is not None:
            message = error_text(chunk)
            raise StreamFailed(f"{self._name} failed while generating: {message}")
        choices = chunk.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            choice = choices[0]
            delta = choice.get("delta")
            if isinstance(delta, dict):
                content = delta.get("content")
                if isinstance(content, str) and content:
                    events.append(Token(content))
            reason = choice.get("finish_reason")
            if isinstance(reason, str):
                self._finish_reason = reason
        usage, timings = chunk.get("usage"), chunk.get("timings")
        if isinstance(usage, dict):
            self._usage = usage
        if isinstance(timings, dict):
            self._timings = timings

    def _finished(self) -> Finished:
        usage, timings = self._usage, self._timings
        prompt = _count(usage.get("prompt_tokens"))
        if prompt is None and "prompt_n" in timings:
            # Without usage: evaluated plus cached prompt tokens.
            prompt = (_count(timings.get("prompt_n")) or 0) + (_count(timings.get("cache_n")) or 0)
        completion = _count(usage.get("completion_tokens"))
        if completion is None:
            completion = _count(timings.get("predicted_n"))
        return Finished(
            finish_reason=self._finish_reason or "unknown",
            prompt_tokens=prompt,
            completion_tokens=completion,
            prefill_tokens_per_second=_number(timings.get("prompt_per_second")),
            decode_tokens_per_second=_number(timings.get("predicted_per_second")),
            prompt_ms=_number(timings.get("prompt_ms")),
            decode_ms=_number(timings.get("predicted_ms")),
        )


class LlamaCppClient(HttpBackend):
    kind: Literal["llama_cpp", "ollama"] = "llama_cpp"

    def status_error(self, status: int, body: bytes) -> BackendError:
        detail = _error_detail(body)
        message = server_message(body, self._api_key)
        if status == 400 and detail.get("type") == "exceed_context_size_error":
            prompt, context = _count(detail.get("n_prompt_tokens")), _count(detail.get("n_ctx"))
            return ContextOverflow(
                f"The prompt ({prompt} tokens) does not fit the context of one slot of "
                f"{self.name} ({context} tokens).",
                prompt_tokens=prompt,
                context=context,
            )
        if status == 503 and "loading" in message.lower():
            return BackendUnavailable(f"{self.name} is still loading its model.")
        return super().status_error(status, body)

    # -- the interface -------------------------------------------------------------------------

    async def health(self) -> HealthReport:
        """Never raises a BackendError: an unreachable, failing or misconfigured server is
        reported as state "down" with a message, a loading one as "loading"."""
        try:
            response = await self.request("GET", "/health")
        except BackendError as exc:
            return HealthReport(state="down", message=str(exc), answered=backend_answered(exc))
        if response.status_code != 200:
            error = self.status_error(response.status_code, response.content)
            loading = response.status_code == 503 and "loading" in str(error)
            return HealthReport(state="loading" if loading else "down", message=str(error))
        try:
            slots = await self.slots()
            models = await self.list_models()
        except BackendError as exc:
            # /health is public: a wrong API key shows only here.
            return HealthReport(state="down", message=str(exc))
        busy = None if slots is None else sum(1 for s in slots if s.get("is_processing") is True)
        return HealthReport(
            state="ok",
            slots_total=None if slots is None else len(slots),
            slots_busy=busy,
            models_loaded=tuple(m.name for m in models),
        )

    async def list_models(self) -> list[ModelInfo]:
        body = await self.get_json("GET", "/v1/models")
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise BackendProtocolError(f"{self.name} sent a model list without `data`.")
        models = []
        for entry in data:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                meta = entry.get("meta")
                meta = meta if isinstance(meta, dict) else {}
                aliases = entry.get("aliases")
                models.append(
                    ModelInfo(
                        name=str(entry["id"]),
                        context_per_slot=_count(meta.get("n_ctx")),
                        size_bytes=_count(meta.get("size")),
                        aliases=tuple(
                            a
                            for a in (aliases if isinstance(aliases, list) else [])
                            if isinstance(a, str)
                        ),
                    )
                )
        return models

    async def served(self, model: str, *, num_ctx: int | None = None) -> ServedModel:
        """The one model this server serves (`model` and `num_ctx` do not change it: a
        llama-server answers every request with its own model, whatever the request names).

        Names: /v1/models' ids and aliases, /props' `model_alias` and `model_path` (without
        --alias, the id and alias are the file's path). The context of one slot: /props
        `default_generation_settings.n_ctx`, else (older builds leave it out of /props) the
        first slot's `n_ctx` in /slots, else /v1/models' `meta.n_ctx`, else None."""
        props = await self._props_if_any()
        models = await self.list_models()
        names = [name for m in models for name in (m.name, *m.aliases)]
        names += [
            v for v in (props.get("model_alias"), props.get("model_path")) if isinstance(v, str)
        ]
        settings = props.get("default_generation_settings")
        context = _count(settings.get("n_ctx")) if isinstance(settings, dict) else None
        source = "/props"
        if not context:
            slots = await self.slots()
            context = next((_count(s.get("n_ctx")) for s in slots or [] if s.get("n_ctx")), None)
            source = "/slots"
        if not context:
            context = next((m.context_per_slot for m in models if m.context_per_slot), None)
            source = "/v1/models"
        return ServedModel(
            names=tuple(dict.fromkeys(n for n in names if n)),
            context_per_slot=context if context and context > 0 else None,
            context_source=source if context and context > 0 else "",
        )

    async def _props_if_any(self) -> dict[str, object]:
        """/props, or {} from a server that has no such endpoint."""
        response = await self.request("GET", "/props")
        if response.status_code in ABSENT:
            return {}
        if response.status_code != 200:
            raise self.status_error(response.status_code, response.content)
        return json_object(response.content, self.name)

    def stream_chat(self, request: ChatRequest) -> HttpChatStream:
        payload: dict[str, object] = {
            **request.sampling,
            "model": request.model,
            "messages": list(request.messages),
            "max_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.json_schema is not None:
            # Our own compact grammar, not `response_format`: the server's schema grammar lets
            # whitespace fill the reply's budget (see grammar.py).
            payload["grammar"] = schema_to_gbnf(request.json_schema)
        return HttpChatStream(self, CHAT_PATH, payload, _SseChatDecoder(self.name))

    async def count_tokens(self, messages: list[Message]) -> int | None:
        """The templated prompt's length in the model's own tokens (/apply-template, then
        /tokenize); None if the server has neither endpoint."""
        limit = self.timeouts.between_tokens
        templated = await self.request(
            "POST", "/apply-template", json={"messages": messages}, timeout=limit
        )
        if templated.status_code in ABSENT:
            return None
        if templated.status_code != 200:
            raise self.status_error(templated.status_code, templated.content)
        prompt = json_object(templated.content, self.name).get("prompt")
        if not isinstance(prompt, str):
            raise BackendProtocolError(f"{self.name} sent no prompt from /apply-template.")
        tokens = await self.get_json("POST", "/tokenize", json={"content": prompt}, timeout=limit)
        ids = tokens.get("tokens") if isinstance(tokens, dict) else None
        if not isinstance(ids, list):
            raise BackendProtocolError(f"{self.name} sent no tokens from /tokenize.")
        return len(ids)

    async def count_text_tokens(self, text: str) -> int | None:
        """`text` through /tokenize (special markers parsed, nothing added: `add_special` is
        off by default, 24_); None if the server has no such endpoint."""
        limit = self.timeouts.between_tokens
        response = await self.request("POST", "/tokenize", json={"content": text}, timeout=limit)
        if response.status_code in ABSENT:
            return None
        if response.status_code != 200:
            raise self.status_error(response.status_code, response.content)
        ids = json_object(response.content, self.name).get("tokens")
        if not isinstance(ids, list):
            raise BackendProtocolError(f"{self.name} sent no tokens from /tokenize.")
        return len(ids)

    async def model_file_sha256(self, model: str) -> str | None:
        """llama-server names its file (/props `model_path`) but never hashes it."""
        return None

    # -- llama-server's own endpoints ------------------------------------------------------------

    async def props(self) -> dict[str, object]:
        body = await self.get_json("GET", "/props")
        if not isinstance(body, dict):
            raise BackendProtocolError(f"{self.name} sent /props of an unexpected shape.")
        return body

    async def slots(self) -> list[dict[str, object]] | None:
        """Each slot's state (`is_processing`, `n_ctx`, ...), or None when the server was started
        without the endpoint."""
        response = await self.request("GET", "/slots")
        if response.status_code in ABSENT:
            return None
        if response.status_code != 200:
            raise self.status_error(response.status_code, response.content)
        try:
            body = response.json()
        except ValueError:
            raise BackendProtocolError(f"{self.name} sent invalid JSON for /slots.") from None
        if not isinstance(body, list):
            raise BackendProtocolError(f"{self.name} sent /slots of an unexpected shape.")
        return [slot for slot in body if isinstance(slot, dict)]

    async def metrics(self) -> dict[str, float] | None:
        """The `llamacpp:` Prometheus values by short name (`requests_processing`,
        `requests_deferred`, ...), or None when the server runs without `--metrics`."""
        response = await self.request("GET", "/metrics")
        if response.status_code in ABSENT:
            return None
        if response.status_code != 200:
            raise self.status_error(response.status_code, response.content)
        values = {}
        for line in response.text.splitlines():
            if not line.startswith("llamacpp:"):
                continue
            name, _, value = line.partition(" ")
            try:
                values[name.removeprefix("llamacpp:")] = float(value.split()[0])
            except (ValueError, IndexError):
                continue
        return values
