"""`manage.py gguf_facts PATH [--json]`: the facts an admin pastes into the admin or a site file."""

import json
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from apps.cluster.gguf import read_gguf_facts
from tests.cluster.test_gguf import Spec, write_gguf


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
