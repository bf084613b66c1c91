"""A fake llama.cpp `llama-server`, per ../shared/protocols/llama-server (recordings NN_ below)."""

import json
import time
from collections.abc import Awaitable, Callable

from lexweb_dev.fakebackend.common import (
    assistant_prefill,
    dumps,
    prompt_tokens_of,
    random_id,
    reply_text,
)
from lexweb_dev.fakebackend.http import BodyStream, head
from lexweb_dev.fakebackend.server import Exchange, FakeBackend, Reply
from lexweb_dev.fakebackend.tokens import apply_template, reply_pieces, token_ids

JSON_TYPE = "application/json; charset=utf-8"
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
PUBLIC_PATHS = {"/health", "/v1/health"}
CHAT_PATHS = {"/v1/chat/completions", "/chat/completions"}
# Fake prompt processing speed, reported in `timings` (the fake does not wait for it).
PROMPT_MS_PER_TOKEN = 0.2


def _error_body(code: int, message: str, kind: str, **extra: object) -> bytes:
    # Key order varies in the recordings: the router's own errors (404, 401, loading) put the
    # code last, errors from request handling put it first.
    if code in (401, 404) or message == "Loading model":
        return dumps({"error": {"message": message, "type": kind, "code": code}}).encode()
    return dumps({"error": {"code": code, "message": message, "type": kind, **extra}}).encode()


ERRORS = {
    401: ("Invalid API Key", "authentication_error"),
    404: ("File Not Found", "not_found_error"),
    500: ("an internal error occurred in the fake llama-server", "server_error"),
    502: ("bad gateway", "server_error"),
    503: ("Loading model", "unavailable_error"),
}


class LlamaApp:
    def __init__(self, fake: FakeBackend) -> None:
        self.fake = fake
        self.settings = fake.settings
        self.prompt_tokens_total = 0
        self.tokens_predicted_total = 0
        self.created = int(time.time())

    # -- responses ---------------------------------------------------------------------------

    def _headers(self, content_type: str, length: int | None, *, ok: bool) -> list[tuple[str, str]]:
        headers = [("Server", "llama.cpp"), ("Access-Control-Allow-Origin", "")]
        headers.append(("Content-Type", content_type))
        if length is not None:
            headers.append(("Content-Length", str(length)))
        # Errors close the connection (`Connection: close`), successes keep it for 5 s.
        headers.append(("Keep-Alive", "timeout=5, max=100") if ok else ("Connection", "close"))
        return headers

    def json_reply(self, status: int, value: object) -> Reply:
        body = dumps(value).encode()
        ok = status < 400
        return Reply(status, self._headers(JSON_TYPE, len(body), ok=ok), body, close=not ok)

    def error(self, status: int, message: str | None = None, kind: str | None = None,
              **extra: object) -> Reply:  # fmt: skip
        default_message, default_kind = ERRORS.get(status, ("error", "server_error"))
        body = _error_body(status, message or default_message, kind or default_kind, **extra)
        return Reply(status, self._headers(JSON_TYPE, len(body), ok=False), body, close=True)

    # -- routing -----------------------------------------------------------------------------

    async def handle(self, exchange: Exchange) -> Reply | None:
        request = exchange.request
        if request.method == "OPTIONS":
            return self._preflight()
        if request.path in PUBLIC_PATHS and request.method == "GET":
            return (
                self.error(503) if self.fake.loading() else self.json_reply(200, {"status": "ok"})
            )
        key = self.settings.api_key
        if key and request.headers.get("authorization", "") != f"Bearer {key}":
            return self.error(401)
        if self.fake.loading():
            return self.error(503)
        route = self._routes().get((request.method, request.path))
        if route is None:
            # There is no 405: a GET on a POST route is a 404 too (47_).
            return self.error(404)
        return await route(exchange)

    def _routes(self) -> dict[tuple[str, str], Callable[[Exchange], Awaitable[Reply | None]]]:
        routes: dict[tuple[str, str], Callable[[Exchange], Awaitable[Reply | None]]] = {
            ("GET", "/v1/models"): self.models,
            ("GET", "/models"): self.models,
            ("GET", "/props"): self.props,
            ("GET", "/slots"): self.slots,
            ("GET", "/metrics"): self.metrics,
            ("POST", "/tokenize"): self.tokenize,
            ("POST", "/apply-template"): self.apply_template,
        }
        for path in CHAT_PATHS:
            routes[("POST", path)] = self.chat
        return routes

    def _preflight(self) -> Reply:
        headers = [
            ("Server", "llama.cpp"),
            ("Access-Control-Allow-Origin", ""),
            ("Access-Control-Allow-Credentials", "true"),
            ("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"),
            ("Access-Control-Allow-Headers", "*"),
            ("Content-Type", "text/html"),
            ("Keep-Alive", "timeout=5, max=100"),
            ("Content-Length", "0"),
        ]
        return Reply(200, headers, b"")

    def _body(self, exchange: Exchange) -> dict[str, object] | Reply:
        """The JSON object of a POST, or the 500 that llama-server gives a malformed one (43_)."""
        try:
            value = json.loads(exchange.request.body or b"null")
        except ValueError as exc:
            position = getattr(exc, "colno", 1)
            return self.error(
                500,
                f"[json.exception.parse_error.101] parse error at line 1, column {position}: "
                "syntax error while parsing value - unexpected end of input",
                "server_error",
            )
        return value if isinstance(value, dict) else {}

    # -- read-only endpoints -----------------------------------------------------------------

    async def models(self, exchange: Exchange) -> Reply:
        name = self.settings.served_name()
        details = {"parent_model": "", "format": "gguf", "family": "", "families": [""],
                   "parameter_size": "", "quantization_level": ""}  # fmt: skip
        meta = {"vocab_type": 2, "n_vocab": 151936, "n_ctx": self.settings.n_ctx_per_slot,
                "n_ctx_train": 32768, "n_embd": 64, "n_params": 19530048, "size": 78120192,
                "ftype": "all F32"}  # fmt: skip
        return self.json_reply(200, {
            "models": [{"name": name, "model": name, "modified_at": "", "size": "", "digest": "",
                        "type": "model", "description": "", "tags": [""],
                        "capabilities": ["completion"], "parameters": "", "details": details}],
            "object": "list",
            "data": [{"id": name, "aliases": [name], "tags": [], "object": "model",
                      "created": self.created, "owned_by": "llamacpp", "meta": meta}],
        })  # fmt: skip

    async def props(self, exchange: Exchange) -> Reply:
        n_ctx = self.settings.n_ctx_per_slot
        generation: dict[str, object] = {"params": None, "n_ctx": n_ctx}
        if self.settings.props_without_n_ctx:
            del generation["n_ctx"]
        params = {"seed": 4294967295, "temperature": 0.8, "top_k": 40, "top_p": 0.95,
                  "min_p": 0.05, "repeat_penalty": 1.0, "max_tokens": -1, "n_predict": -1,
                  "stream": False, "timings_per_token": False}  # fmt: skip
        generation["params"] = params
        return self.json_reply(200, {
            "default_generation_settings": generation,
            "total_slots": self.settings.slots,
            "model_alias": self.settings.served_name(),
            "model_ftype": "all F32",
            "model_path": self.settings.gguf_path(),
            "modalities": {"vision": False, "video": False, "audio": False},
            "endpoint_slots": True, "endpoint_props": False, "endpoint_metrics": True,
            "chat_template": CHAT_TEMPLATE,
            "chat_template_caps": {"supports_system_role": True, "supports_tools": False},
            "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
            "build_info": "b0-fake", "is_sleeping": False,
        })  # fmt: skip

    async def slots(self, exchange: Exchange) -> Reply:
        busy = self.fake.slots.busy
        total = self.settings.slots
        if exchange.request.query.get("fail_on_no_slot") == "1" and len(busy) >= total:
            return self.error(503, "no slot available", "unavailable_error")
        return self.json_reply(200, [
            {"id": n, "n_ctx": self.settings.n_ctx_per_slot, "speculative": False,
             "is_processing": n in busy}
            for n in range(total)
        ])  # fmt: skip

    async def metrics(self, exchange: Exchange) -> Reply:
        values = [
            ("prompt_tokens_total", "counter", "Number of prompt tokens processed, excluding "
             "cached tokens", self.prompt_tokens_total),
            ("tokens_predicted_total", "counter", "Number of generation tokens processed",
             self.tokens_predicted_total),
            ("requests_processing", "gauge", "Number of requests processing",
             self.fake.generating),
            ("requests_deferred", "gauge", "Number of requests deferred", self.fake.queued),
        ]  # fmt: skip
        text = "".join(
            f"# HELP llamacpp:{name} {help_text}\n# TYPE llamacpp:{name} {kind}\n"
            f"llamacpp:{name} {value}\n"
            for name, kind, help_text, value in values
        )
        body = text.encode()
        headers = self._headers("text/plain; version=0.0.4", len(body), ok=True)
        headers.insert(2, ("Process-Start-Time-Unix", str(self.created)))
        return Reply(200, headers, body)

    async def tokenize(self, exchange: Exchange) -> Reply:
        body = self._body(exchange)
        if isinstance(body, Reply):
            return body
        content = body.get("content")
        return self.json_reply(
            200, {"tokens": token_ids(content if isinstance(content, str) else "")}
        )

    async def apply_template(self, exchange: Exchange) -> Reply:
        body = self._body(exchange)
        if isinstance(body, Reply):
            return body
        messages = body.get("messages")
        if not isinstance(messages, list):
            return self.error(400, "'messages' is required", "invalid_request_error")
        return self.json_reply(
            200, {"prompt": apply_template(m for m in messages if isinstance(m, dict))}
        )

    # -- chat --------------------------------------------------------------------------------

    async def chat(self, exchange: Exchange) -> Reply | None:
        body = self._body(exchange)
        if isinstance(body, Reply):
            return body
        messages = body.get("messages")
        if messages is None:
            return self.error(400, "'messages' is required", "invalid_request_error")
        if not isinstance(messages, list):
            return self.error(400, "Expected 'messages' to be an array", "invalid_request_error")
        if self.settings.status_error is not None:
            return self.error(self.settings.status_error)
        # The limit is checked before the prompt is counted: a bad limit on an over-long prompt
        # is refused for its limit.
        wanted = _reply_limit(body)
        if isinstance(wanted, str):
            return self.error(400, wanted, "invalid_request_error")
        if wanted is None:
            wanted = self.settings.max_tokens_default
        prompt_tokens = prompt_tokens_of(messages)
        n_ctx = self.settings.n_ctx_per_slot
        if prompt_tokens > n_ctx:
            return self.error(
                400,
                f"request ({prompt_tokens} tokens) exceeds the available context size "
                f"({n_ctx} tokens), try increasing it",
                "exceed_context_size_error",
                n_prompt_tokens=prompt_tokens,
                n_ctx=n_ctx,
            )
        # A slot stops generating when its context is full, with no error (53_); -1 is "until
        # then".
        room = n_ctx - prompt_tokens
        limit = room if wanted == -1 else min(wanted, room)
        pieces, finish = reply_pieces(reply_text(self.settings, body), limit)
        chat = _ChatRun(self, exchange, pieces, finish, prompt_tokens)
        # A continued assistant message: the whole reply repeats it, the stream does not.
        chat.prefill = assistant_prefill(body)
        if body.get("stream") is True:
            options = body.get("stream_options")
            chat.include_usage = isinstance(options, dict) and options.get("include_usage") is True
            await self.fake.guarded(exchange, chat.stream())
            # llama-server closes a streamed reply's connection right after its last chunk,
            # although the headers said Keep-Alive (protocols/llama-server/README.md): a
            # request a client sends on it next reads nothing.
            exchange.keep_alive = False
        else:
            await self.fake.guarded(exchange, chat.whole())
        return None


def _reply_limit(body: dict[str, object]) -> int | str | None:
    """The reply's token limit as the real server reads it: `n_predict`, else
    `max_completion_tokens`, else `max_tokens`; -1 means until the slot is full, 0 gives one
    token, a fraction is cut. None when the request names none; an error message when the
    value is no number or below -1 (the server's 400)."""
    for field in ("n_predict", "max_completion_tokens", "max_tokens"):
        value = body.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            kind = "string" if isinstance(value, str) else type(value).__name__
            return (
                f"Field '{field}': [json.exception.type_error.302] type must be number, "
                f"but is {kind}"
            )
        if value < -1:
            return (
                f"Field '{field}': Value must be between -1 <= value <= 2147483647, but got {value}"
            )
        return max(int(value), 1) if value != -1 else -1
    return None


class _ChatRun:
    """One /v1/chat/completions generation."""

    def __init__(self, app: LlamaApp, exchange: Exchange, pieces: list[str], finish: str,
                 prompt_tokens: int) -> None:  # fmt: skip
        self.app = app
        self.fake = app.fake
        self.exchange = exchange
        self.pieces = pieces
        self.finish = finish
        # What usage and timings report: fewer than evaluated when a test plays a server that
        # cut the prompt without saying so.
        self.prompt_tokens = max(0, prompt_tokens - app.settings.prompt_tokens_unreported)
        self.include_usage = False
        self.prefill = ""
        self.id = f"chatcmpl-{random_id(32)}"
        self.created = int(time.time())
        self.started = 0.0
        model = app.settings.model
        self._tail = (
            f'}}],"created":{self.created},"id":"{self.id}","model":{dumps(model)},'
            f'"system_fingerprint":"b0-unknown","object":"chat.completion.chunk"}}\n\n'
        )

    def _event(self, finish_reason: str | None, delta: str) -> bytes:
        reason = "null" if finish_reason is None else f'"{finish_reason}"'
        head = f'data: {{"choices":[{{"finish_reason":{reason},"index":0,"delta":'
        return (head + delta + self._tail).encode()

    def _token(self, n: int) -> bytes:
        return self._event(None, '{"content":' + dumps(self.pieces[n]) + "}")

    def _timings(self, generated: int) -> dict[str, object]:
        prompt_ms = self.prompt_tokens * PROMPT_MS_PER_TOKEN
        predicted_ms = max((time.monotonic() - self.started) * 1000, 0.001)
        return {
            "cache_n": 0, "prompt_n": self.prompt_tokens, "prompt_ms": prompt_ms,
            "prompt_per_token_ms": PROMPT_MS_PER_TOKEN,
            "prompt_per_second": 1000 / PROMPT_MS_PER_TOKEN,
            "predicted_n": generated, "predicted_ms": predicted_ms,
            "predicted_per_token_ms": predicted_ms / generated if generated else 0.0,
            "predicted_per_second": generated * 1000 / predicted_ms,
        }  # fmt: skip

    def _usage(self, generated: int) -> dict[str, object]:
        return {
            "completion_tokens": generated,
            "prompt_tokens": self.prompt_tokens,
            "total_tokens": generated + self.prompt_tokens,
            "prompt_tokens_details": {"cached_tokens": 0},
        }

    def _final_events(self, generated: int) -> bytes:
        timings = self._timings(generated)
        finish = self._event(self.finish, "{}")
        if not self.include_usage:
            # Without include_usage the timings ride on the finish_reason chunk (12_).
            return finish[: -len(b"}\n\n")] + (',"timings":' + dumps(timings) + "}\n\n").encode()
        usage = (
            f'data: {{"choices":[],"created":{self.created},"id":"{self.id}",'
            f'"model":{dumps(self.app.settings.model)},"system_fingerprint":"b0-unknown",'
            f'"object":"chat.completion.chunk","usage":{dumps(self._usage(generated))},'
            f'"timings":{dumps(timings)}}}\n\n'
        )
        return finish + usage.encode()

    def _account(self, generated: int) -> None:
        self.app.prompt_tokens_total += self.prompt_tokens
        self.app.tokens_predicted_total += generated

    async def stream(self) -> None:
        settings = self.app.settings
        stream = self.exchange.stream(200, [
            ("Server", "llama.cpp"), ("Access-Control-Allow-Origin", ""),
            ("X-Accel-Buffering", "no"), ("Content-Type", "text/event-stream"),
            ("Transfer-Encoding", "chunked"), ("Keep-Alive", "timeout=5, max=100"),
        ])  # fmt: skip

        async def ping() -> None:
            await stream.write(b":\n\n")

        pinging = ping if settings.ping_interval else None
        async with self.fake.slot(pinging):
            self.started = time.monotonic()
            plan = self.fake.plan_faults(len(self.pieces))
            pending = [self._event(None, '{"role":"assistant","content":null}')]

            async def send(first: int, stop: int) -> None:
                for n in range(first, stop):
                    if n == plan.garble_at:
                        pending.append(b'data: {"choices":[{"finish_reason":null,"delta":{"con\n\n')
                    pending.append(self._token(n))
                # One HTTP chunk carries every event that is due (13_).
                await stream.write(b"".join(pending))
                pending.clear()

            await self.fake.pace(plan.tokens, send)
            if pending:
                await stream.write(b"".join(pending))
            self._account(plan.tokens)
            if plan.fault is not None:
                await self._fault(plan.fault, plan.tokens, stream, pinging)
                return
            await stream.write(self._final_events(plan.tokens))
            await stream.write(b"data: [DONE]\n\n")
            await stream.end()
            self.fake.stats.streams_finished += 1

    async def _fault(self, fault: str, sent: int, stream: BodyStream,
                     ping: Callable[[], Awaitable[None]] | None) -> None:  # fmt: skip
        if fault == "fail":
            # An error after the headers: one `data: {"error":...}` event ends the stream.
            error = {"code": 500, "message": "an error occurred while generating (fake)",
                     "type": "server_error"}  # fmt: skip
            await stream.write(b"data: " + dumps({"error": error}).encode() + b"\n\n")
            await stream.end()
        elif fault == "disconnect":
            following = self._token(sent) if sent < len(self.pieces) else self._final_events(sent)
            await stream.write(following[: len(following) // 2])
            self.exchange.keep_alive = False
            self.exchange.writer.close()
        else:
            await self.fake.hang(ping)

    async def whole(self) -> None:
        async with self.fake.slot():
            self.started = time.monotonic()

            async def send(first: int, stop: int) -> None:
                return None

            await self.fake.pace(len(self.pieces), send)
        generated = len(self.pieces)
        self._account(generated)
        reply = self.app.json_reply(200, {
            "choices": [{"finish_reason": self.finish, "index": 0,
                         "message": {"role": "assistant",
                                     "content": self.prefill + "".join(self.pieces)}}],
            "created": self.created, "model": self.app.settings.model,
            "system_fingerprint": "b0-unknown", "object": "chat.completion",
            "usage": self._usage(generated), "id": self.id, "timings": self._timings(generated),
        })  # fmt: skip
        writer = self.exchange.writer
        writer.write(head(reply.status, reply.headers) + reply.body)
        await writer.drain()
        self.fake.stats.streams_finished += 1
