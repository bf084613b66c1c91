"""`manage.py gguf_facts PATH [--json]`: the facts an admin pastes into the admin or a site file."""

import json
import os
import subprocess
import sys
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from apps.cluster.gguf import read_gguf_facts
from tests.cluster.test_gguf import Spec, write_gguf
from tests.running import BASE_DIR


def _run(*args: str) -> str:
    out = StringIO()
    call_command("gguf_facts", *args, stdout=out)
    return out.getvalue()


def test_printed_facts_read_back_as_the_deployment_fields_of_a_site_file(tmp_path: Path) -> None:
    path = tmp_path / "moe.gguf"
    write_gguf(path, Spec(arch="qwen3moe", experts=8, experts_used=2, vocab=20_000))

    printed = _run(str(path))

    # Comment lines say what is not a deployment field; the rest is YAML.
    assert printed.startswith("# Test Model 1B: ")
    assert "2 layers, 2 of them with a KV cache; 8 experts, 2 used per token" in printed
    assert yaml.safe_load(printed) == dict(read_gguf_facts(path).deployment_values())
    assert "total_params: " in printed and "_" in printed.split("total_params: ")[1].split()[0]


def test_json_has_every_fact_and_the_deployment_fields(tmp_path: Path) -> None:
    path = tmp_path / "dense.gguf"
    write_gguf(path)

    printed = json.loads(_run(str(path), "--json"))

    facts = read_gguf_facts(path)
    assert printed["weights_bytes"] == facts.weights_bytes
    assert printed["block_count"] == 2 and printed["context_length"] == 8192
    assert printed["deployment"] == dict(facts.deployment_values())


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a GGUF file"),
        (b"GGUF\x01\x00\x00\x00" + b"\0" * 64, "unsupported GGUF version 1"),
        (b"GGUF\x03\x00\x00\x00\x01", "truncated header at byte 9"),
    ],
)
def test_a_bad_file_is_a_clear_command_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)

    with pytest.raises(CommandError, match=message):
        _run(str(path))


def test_a_missing_file_is_a_clear_command_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no such file"):
        _run(str(tmp_path / "nowhere.gguf"))


def _run_process(path: Path) -> subprocess.CompletedProcess[str]:
    """The command as an admin runs it. In a process of its own with a time limit, so that a
    reader that blocked (a FIFO opened for reading waits for a writer) fails the test instead
    of hanging it."""
    return subprocess.run(
        [sys.executable, "manage.py", "gguf_facts", str(path)],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "make",
    [lambda tmp: tmp, lambda tmp: _fifo(tmp / "model.gguf")],
    ids=["directory", "fifo"],
)
@pytest.mark.slow
def test_a_directory_or_a_fifo_is_one_clear_line_without_blocking(
    tmp_path: Path, make: Callable[[Path], Path]
) -> None:
    path = make(tmp_path)

    result = _run_process(path)

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line == f"CommandError: {path}: no such file (or not a regular file)."
    assert result.stdout == ""


@pytest.mark.slow
def test_a_fifo_in_place_of_a_split_part_is_refused_without_blocking(tmp_path: Path) -> None:
    written = write_gguf(tmp_path / "split.gguf", split_max_tensors=8)
    written.paths[1].unlink()
    _fifo(written.paths[1])

    result = _run_process(written.paths[0])

    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("CommandError: ") and written.paths[1].name in line
