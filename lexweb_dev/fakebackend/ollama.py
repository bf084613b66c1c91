"""A fake Ollama server, per ../shared/protocols/ollama (v0.24.0 recordings NN_ below)."""

import asyncio
import hashlib
import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import formatdate

from lexweb_dev.fakebackend.common import as_int, dumps, prompt_tokens_of, reply_text
from lexweb_dev.fakebackend.http import BodyStream, head
from lexweb_dev.fakebackend.server import Exchange, FakeBackend, Reply
from lexweb_dev.fakebackend.tokens import apply_template, reply_pieces, token_ids

JSON_TYPE = "application/json; charset=utf-8"
TEMPLATE = (
    "{{- if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}{{- range .Messages }}"
    "<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n"
)
DEFAULT_KEEP_ALIVE = timedelta(minutes=5)
INTEGER_OPTIONS = ("num_ctx", "num_predict", "seed", "top_k", "num_keep")
STATUS_ERRORS = {
    500: "error starting llama-server: llama-server binary not found (fake)",
    502: "bad gateway (fake)",
    503: "server busy, please try again. maximum pending requests exceeded",
}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
ROUTES = {
    "/": ("GET", "HEAD"),
    "/api/version": ("GET",),
    "/api/tags": ("GET",),
    "/api/ps": ("GET",),
    "/api/show": ("POST",),
    "/api/chat": ("POST",),
    "/api/generate": ("POST",),
}


def go_json(value: object) -> bytes:
    # Go's encoder escapes <, > and & (a reply such as "<!--" arrives as "\u003c!--", 12_).
    text = dumps(value)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def full_name(model: str) -> str:
    return model if ":" in model else f"{model}:latest"


def blob_digest(model: str) -> str:
    """The fake's stand-in for the SHA-256 of a model's weights file (its blob's name)."""
    return hashlib.sha256(f"weights of {full_name(model)}".encode()).hexdigest()


def parse_keep_alive(value: object) -> timedelta | None:
    """A keep_alive as Ollama accepts it: "10m", "1h30m", seconds as a number, 0 or -1
    (negative: forever). None when it is absent or unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return timedelta(days=36500) if value < 0 else timedelta(seconds=value)
    if isinstance(value, str):
        if value.startswith("-"):
            return timedelta(days=36500)
        parts = _DURATION.findall(value)
        if parts:
            return timedelta(seconds=sum(float(n) * _UNITS[unit] for n, unit in parts))
    return None


@dataclass
class Loaded:
    context_length: int
    keep_alive: timedelta
    expires_at: datetime


class OllamaApp:
    def __init__(self, fake: FakeBackend) -> None:
        self.fake = fake
        self.settings = fake.settings
        self.loaded: dict[str, Loaded] = {}
        self._load_lock = asyncio.Lock()

    # -- responses ---------------------------------------------------------------------------

    def reply(self, status: int, body: bytes, content_type: str = JSON_TYPE,
              allow: str | None = None) -> Reply:  # fmt: skip
        headers = [("Allow", allow)] if allow else []
        headers += [
            ("Content-Type", content_type),
            ("Date", formatdate(usegmt=True)),
            ("Content-Length", str(len(body))),
        ]
        return Reply(status, headers, body)

    def json_reply(self, status: int, value: object) -> Reply:
        return self.reply(status, go_json(value))

    def error(self, status: int, message: str) -> Reply:
        return self.json_reply(status, {"error": message})

    # -- routing -----------------------------------------------------------------------------

    async def handle(self, exchange: Exchange) -> Reply | None:
        request = exchange.request
        methods = ROUTES.get(request.path)
        if methods is None:
            return self.reply(404, b"404 page not found", "text/plain")
        if request.method not in methods:
            return self.reply(405, b"405 method not allowed", "text/plain", allow=methods[0])
        if request.path == "/":
            reply = self.reply(200, b"Ollama is running", "text/plain; charset=utf-8")
            if request.method == "HEAD":
                reply.body = b""
            return reply
        if request.path == "/api/version":
            return self.json_reply(200, {"version": self.settings.version})
        if request.path == "/api/tags":
            return self.json_reply(200, {"models": [self._tag(m) for m in self.settings.pulled()]})
        if request.path == "/api/ps":
            return self.json_reply(200, {"models": self._ps()})
        if request.path == "/api/show":
            return self._show(exchange)
        return await self.generate(exchange, chat=request.path == "/api/chat")

    def _pulled(self, model: str) -> bool:
        return full_name(model) in {full_name(m) for m in self.settings.pulled()}

    def _details(self) -> dict[str, object]:
        return {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
                "parameter_size": "19.53M", "quantization_level": "unknown"}  # fmt: skip

    def _tag(self, model: str) -> dict[str, object]:
        return {
            "name": full_name(model), "model": full_name(model),
            "modified_at": "2026-11-30T06:16:03.982363568Z", "size": 84050696,
            "digest": hashlib.sha256(full_name(model).encode()).hexdigest(),
            "details": self._details(),
        }  # fmt: skip

    def _ps(self) -> list[dict[str, object]]:
        now = datetime.now(UTC)
        for name in [n for n, entry in self.loaded.items() if entry.expires_at <= now]:
            del self.loaded[name]
        return [
            {"name": name, "model": name, "size": 41321728, "digest": self._tag(name)["digest"],
             "details": self._details(), "expires_at": rfc3339(entry.expires_at),
             "size_vram": 0, "context_length": entry.context_length}
            for name, entry in self.loaded.items()
        ]  # fmt: skip

    def _show(self, exchange: Exchange) -> Reply:
        body = self._parse(exchange)
        if isinstance(body, Reply):
            return body
        model = body.get("model") or body.get("name")
        if not isinstance(model, str) or not model:
            return self.error(400, "model is required")
        if not self._pulled(model):
            return self.error(404, f"model '{model}' not found")
        return self.json_reply(200, {
            # As recorded (05): the header comment, then FROM the weights blob, named by its
            # SHA-256 in the model store.
            "modelfile": (
                '# Modelfile generated by "ollama show"\n'
                "# To build a new Modelfile based on this, replace FROM with:\n"
                f"# FROM {full_name(model)}\n\n"
                f"FROM /var/lib/ollama/models/blobs/sha256-{blob_digest(model)}\n"
                f'TEMPLATE "{TEMPLATE}"\n'
            ),
            "parameters": 'stop                           "<|im_end|>"',
            "template": TEMPLATE,
            "details": self._details(),
            "model_info": {"general.architecture": "llama",
                           "llama.context_length": self.settings.context_length},
            "tensors": [],
            "capabilities": ["completion"],
            "modified_at": "2026-11-30T06:16:03.982363568Z",
        })  # fmt: skip

    def _parse(self, exchange: Exchange) -> dict[str, object] | Reply:
        raw = exchange.request.body
        if not raw.strip():
            return self.error(400, "missing request body")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            if exc.pos >= len(raw.rstrip()):
                return self.error(400, "unexpected EOF")
            char = raw.decode(errors="replace")[exc.pos]
            return self.error(400, f"invalid character '{char}' looking for beginning of value")
        if not isinstance(value, dict):
            return self.error(400, "json: cannot unmarshal value into Go value of type api.Request")
        return value

    # -- generation --------------------------------------------------------------------------

    async def generate(self, exchange: Exchange, *, chat: bool) -> Reply | None:
        body = self._parse(exchange)
        if isinstance(body, Reply):
            return body
        checked = self._check(body, chat=chat)
        if isinstance(checked, Reply):
            return checked
        model, options = checked
        messages = (
            body.get("messages") if chat else [{"role": "user", "content": body.get("prompt")}]
        )
        if not isinstance(messages, list):
            messages = []
        keep_alive = parse_keep_alive(body.get("keep_alive"))
        if not (body.get("messages") if chat else body.get("prompt")):
            # A request with nothing to say only loads or unloads the model (11d, 11e).
            return await self._load_only(model, keep_alive, chat=chat)
        if self.settings.status_error is not None:
            status = self.settings.status_error
            return self.error(status, STATUS_ERRORS.get(status, "internal error (fake)"))
        num_ctx = as_int(options.get("num_ctx"), 0) or self.settings.n_ctx_per_slot
        # A num_ctx beyond the model's own context length is cut to it.
        num_ctx = min(num_ctx, self.settings.context_length)
        limit = as_int(options.get("num_predict"), 0) or self.settings.max_tokens_default
        pieces, finish = reply_pieces(reply_text(self.settings, body), limit)
        run = _OllamaRun(self, exchange, model, chat=chat, pieces=pieces, finish=finish)
        # Silent truncation (10_): the prompt is cut to num_ctx, nothing in the reply says so.
        run.prompt_eval_count = min(prompt_tokens_of(messages), num_ctx)
        run.num_ctx, run.keep_alive = num_ctx, keep_alive
        if chat:
            run.prompt_ids = []
        else:
            run.prompt_ids = token_ids(apply_template(m for m in messages if isinstance(m, dict)))
        work = run.stream() if body.get("stream", True) is not False else run.whole()
        await self.fake.guarded(exchange, work)
        return None

    def _check(
        self, body: dict[str, object], *, chat: bool
    ) -> tuple[str, dict[str, object]] | Reply:
        if chat and "messages" in body and not isinstance(body["messages"], list):
            kind = type(body["messages"]).__name__.replace("str", "string")
            return self.error(
                400,
                f"json: cannot unmarshal {kind} into Go struct field ChatRequest.messages of "
                "type []api.Message",
            )
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return self.error(400, "model is required")
        options = body.get("options") or {}
        if not isinstance(options, dict):
            return self.error(400, "json: cannot unmarshal options into Go value")
        for name in INTEGER_OPTIONS:
            value = options.get(name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                # A wrong option type is a 500, not a 400 (21g).
                return self.error(500, f'option "{name}" must be of type integer')
        if not self._pulled(model):
            return self.error(404, f"model '{model}' not found")
        return model, options

    async def _load_only(self, model: str, keep_alive: timedelta | None, *, chat: bool) -> Reply:
        reason = "unload" if keep_alive == timedelta(0) else "load"
        if reason == "unload":
            self.loaded.pop(full_name(model), None)
        else:
            await self.load(
                model, min(self.settings.n_ctx_per_slot, self.settings.context_length), keep_alive
            )
        field = {"message": {"role": "assistant", "content": ""}} if chat else {"response": ""}
        return self.json_reply(200, {
            "model": model, "created_at": rfc3339(datetime.now(UTC)), **field,
            "done": True, "done_reason": reason,
        })  # fmt: skip

    async def load(self, model: str, num_ctx: int, keep_alive: timedelta | None) -> float:
        """Seconds spent loading. A different num_ctx forces a reload (10_)."""
        name = full_name(model)
        started = time.monotonic()
        async with self._load_lock:
            entry = self.loaded.get(name)
            if entry is None or entry.context_length != num_ctx:
                await asyncio.sleep(self.settings.loading_seconds)
                entry = Loaded(num_ctx, DEFAULT_KEEP_ALIVE, datetime.now(UTC))
                self.loaded[name] = entry
            # The last keep_alive given sticks to the loaded model (40_).
            if keep_alive is not None:
                entry.keep_alive = keep_alive
        return time.monotonic() - started

    def touch(self, model: str) -> None:
        entry = self.loaded.get(full_name(model))
        if entry is None:
            return
        if entry.keep_alive == timedelta(0):
            del self.loaded[full_name(model)]
        else:
            entry.expires_at = datetime.now(UTC) + entry.keep_alive


class _OllamaRun:
    """One /api/chat or /api/generate generation."""

    def __init__(self, app: OllamaApp, exchange: Exchange, model: str, *, chat: bool,
                 pieces: list[str], finish: str) -> None:  # fmt: skip
        self.app = app
        self.fake = app.fake
        self.exchange = exchange
        self.model = model
        self.chat = chat
        self.pieces = pieces
        self.finish = finish
        self.prompt_eval_count = 0
        self.prompt_ids: list[int] = []
        self.num_ctx = app.settings.n_ctx_per_slot
        self.keep_alive: timedelta | None = None
        self.started = 0.0
        self.load_seconds = 0.0
        self.first_token_at = 0.0

    def _frame(self, content: str, **extra: object) -> dict[str, object]:
        text = {"message": {"role": "assistant", "content": content}} if self.chat else {
            "response": content}  # fmt: skip
        return {"model": self.model, "created_at": rfc3339(datetime.now(UTC)), **text, **extra}

    def _line(self, n: int) -> bytes:
        return go_json(self._frame(self.pieces[n], done=False)) + b"\n"

    def _final(self, content: str, generated: int) -> dict[str, object]:
        now = time.monotonic()
        prompt_seconds = self.prompt_eval_count * 0.0002
        metrics: dict[str, object] = {
            "total_duration": int((now - self.started) * 1e9),
            "load_duration": int(self.load_seconds * 1e9),
            "prompt_eval_count": self.prompt_eval_count,
            "prompt_eval_duration": int(prompt_seconds * 1e9),
            "eval_count": generated,
            "eval_duration": int((now - self.first_token_at) * 1e9) if generated else 0,
        }
        if not self.chat:
            metrics = {"context": [*self.prompt_ids, *range(1000, 1000 + generated)], **metrics}
        # Every metric is omitempty: a zero is left out, not sent (api/types.go).
        kept = {key: value for key, value in metrics.items() if value}
        return self._frame(content, done=True, done_reason=self.finish, **kept)

    async def _begin(self) -> None:
        self.started = time.monotonic()
        self.load_seconds = max(
            await self.app.load(self.model, self.num_ctx, self.keep_alive), 0.0001
        )
        self.first_token_at = time.monotonic()

    async def stream(self) -> None:
        stream = self.exchange.stream(200, [
            ("Content-Type", "application/x-ndjson"), ("Date", formatdate(usegmt=True)),
            ("Transfer-Encoding", "chunked"),
        ])  # fmt: skip
        async with self.fake.slot():
            await self._begin()
            plan = self.fake.plan_faults(len(self.pieces))

            async def send(first: int, stop: int) -> None:
                lines = []
                for n in range(first, stop):
                    if n == plan.garble_at:
                        lines.append(b'{"model":"' + self.model.encode() + b'","message":{"ro\n')
                    lines.append(self._line(n))
                # Each line is its own HTTP chunk (12c_), even when several go out at once.
                await stream.write(*lines)

            await self.fake.pace(plan.tokens, send)
            if plan.fault is not None:
                await self._fault(plan.fault, plan.tokens, stream)
                return
            await stream.write(go_json(self._final("", plan.tokens)) + b"\n")
            await stream.end()
            self.app.touch(self.model)
            self.fake.stats.streams_finished += 1

    async def _fault(self, fault: str, sent: int, stream: BodyStream) -> None:
        if fault == "fail":
            # Status stays 200; one error line, no done:true frame (31_).
            error = {"error": "an error was encountered while running the model: unexpected EOF"}
            await stream.write(go_json(error) + b"\n")
            await stream.end()
        elif fault == "disconnect":
            following = self._line(sent) if sent < len(self.pieces) else go_json(
                self._final("", sent))  # fmt: skip
            await stream.write(following[: len(following) // 2])
            self.exchange.keep_alive = False
            self.exchange.writer.close()
        else:
            await self.fake.hang(None)

    async def whole(self) -> None:
        async with self.fake.slot():
            await self._begin()

            async def send(first: int, stop: int) -> None:
                return None

            await self.fake.pace(len(self.pieces), send)
        reply = self.app.json_reply(200, self._final("".join(self.pieces), len(self.pieces)))
        self.exchange.writer.write(head(reply.status, reply.headers) + reply.body)
        await self.exchange.writer.drain()
        self.app.touch(self.model)
        self.fake.stats.streams_finished += 1
