"""Configuration of a fake backend. Every field is read when a request arrives, so a test can
change the settings of a running fake (for example end its loading phase)."""

from dataclasses import dataclass
from typing import Literal

Kind = Literal["llama_cpp", "ollama"]


@dataclass
class FakeSettings:
    kind: Kind
    model: str = "tiny"
    # Per stream. The fake paces each stream by a schedule (token n is due at start + n/rate);
    # math.inf sends everything at once.
    tokens_per_second: float = 200.0
    # Generations running at once; more requests wait in a queue, as llama-server's do, and get
    # even their response headers only when a slot frees.
    slots: int = 2
    # llama-server: context of one slot (`--ctx-size` / `--parallel`). Ollama: the default num_ctx.
    n_ctx_per_slot: int = 4096
    # llama-server answers 503 "Loading model" to everything for this long after start. Ollama
    # has no such state: its first generation waits this long and reports it as load_duration.
    loading_seconds: float = 0.0
    # llama-server only; /health stays public.
    api_key: str = ""
    # The reply's text, streamed in the tokenizer's pieces (`tokens.text_pieces`). None: as many
    # deterministic gibberish words as max_tokens allows, or, for a request with a JSON schema,
    # the smallest value valid under it (as a real server's grammar would end the reply).
    reply: str | None = None
    # The demo's models: each reply is written from the request's own prompt (the excerpts it
    # quotes, the stage its schema and sections name), with the demo's planted mistakes; see
    # `writer`. Overrides `reply`. Off: the wire format and replies are exactly as recorded.
    demo_writer: bool = False
    # Tokens generated when a request names no limit.
    max_tokens_default: int = 128
    # llama-server: seconds between `:` keep-alive pings while a stream produces nothing (queued,
    # or hung). None: no pings (the real default is 30 s).
    ping_interval: float | None = None
    # Under status 200, after this many tokens: an error event/line, then the end of the body.
    fail_after_tokens: int | None = None
    # After this many tokens: half of the next event, then the connection closes.
    disconnect_after_tokens: int | None = None
    # After this many tokens: nothing more (except pings), but the connection stays open.
    hang_after_tokens: int | None = None
    # The faults above end only this many streams; later ones go through (a server that
    # dropped one stream and is back). None: every stream.
    fault_streams: int | None = None
    # As a server killed by the fault and started again: from the moment a fault is planned for
    # a stream (the stream itself goes on to its fault), the fake stops listening, so that new
    # connections are refused, for this many seconds; then it listens again on its port.
    # 0: it keeps listening.
    away_after_fault_seconds: float = 0.0
    # Every generation request answers this 5xx status with the recorded error body.
    status_error: int | None = None
    # After the first token, one event whose JSON is cut short, then the stream goes on.
    invalid_json: bool = False
    # llama-server: report this many prompt tokens fewer than were evaluated (usage and
    # timings), as a server that cut the prompt silently would.
    prompt_tokens_unreported: int = 0
    # Ollama: the models that `ollama pull` has fetched. None: just `model`.
    pulled_models: list[str] | None = None
    # llama-server: the GGUF file it serves (/props `model_path`); "": /models/<model>.gguf.
    model_path: str = ""
    # llama-server started without --alias: it names its model by the file's path (/v1/models
    # id and aliases, /props model_alias), as the real one does; `model` is then unused there.
    no_alias: bool = False
    # llama-server: an older build whose /props has no default_generation_settings.n_ctx.
    props_without_n_ctx: bool = False
    # Ollama: the model's own context length (/api/show model_info); a larger num_ctx is cut
    # to it, as Ollama does.
    context_length: int = 32768
    # Ollama: the version /api/version reports.
    version: str = "0.24.0"

    def pulled(self) -> list[str]:
        return list(self.pulled_models) if self.pulled_models is not None else [self.model]

    def gguf_path(self) -> str:
        return self.model_path or f"/models/{self.model}.gguf"

    def served_name(self) -> str:
        """The name llama-server gives its model: the alias, or without one the file's path."""
        return self.gguf_path() if self.no_alias else self.model
