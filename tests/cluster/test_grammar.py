"""Issue 29, requirement 3: the compact grammar lexweb's llama.cpp client sends for a JSON
schema (apps.cluster.backends.grammar), its worst-case size, and what a real llama.cpp server
does with it: every structured stage's schema, on the tiny random-weight model, ends by itself
("stop") within the stage's max_tokens."""

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from apps.cluster.backends.grammar import (
    SchemaError,
    schema_to_gbnf,
    worst_case,
    worst_case_tokens,
)
from apps.drafting.models import Stage
from apps.drafting.pipeline import execute, outputs
from apps.verification import second_opinion
from lexweb_dev.fakebackend.writer import GRAMMAR_SCHEMA_COMMENT
from tests.harness.llamacpp import LlamaCppServer, running_llamacpp

N = Stage.Name
GREEDY = {"temperature": 0, "seed": 1}
MESSAGES = [
    {"role": "system", "content": "Answer with JSON only."},
    {"role": "user", "content": "Is there ground for the motion to compel? Cite exhibit 12."},
]


def structured() -> dict[str, tuple[Mapping[str, object], int]]:
    """Every schema the product sends, with the max_tokens its replies get."""
    found: dict[str, tuple[Mapping[str, object], int]] = {
        "second_opinion": (second_opinion.SCHEMA, settings.LEXWEB_SECOND_OPINION_MAX_TOKENS)
    }
    for name in execute.MODEL_STAGES:
        schema = outputs.schema_for(name)
        if schema is not None:
            found[name] = (schema, execute.MAX_TOKENS[name])
    return found


def worst_instance(schema: Mapping[str, object]) -> object:
    """The longest value the schema admits, every character a one-byte one."""
    kind = schema["type"]
    if kind == "object":
        properties = schema["properties"]
        assert isinstance(properties, dict)
        return {key: worst_instance(sub) for key, sub in properties.items()}
    if kind == "array":
        items = schema["items"]
        assert isinstance(items, dict) and isinstance(schema["maxItems"], int)
        return [worst_instance(items)] * schema["maxItems"]
    if kind == "string":
        enum = schema.get("enum")
        if isinstance(enum, list):
            return max(enum, key=len)
        assert isinstance(schema["maxLength"], int)
        return "x" * schema["maxLength"]
    if kind == "boolean":
        return False
    return -(10**15)  # integer: a sign and 16 digits


def test_every_structured_stage_is_covered() -> None:
    assert set(structured()) == {"second_opinion", N.GATE, N.ADVERSARY, N.EXTRACTOR}


@pytest.mark.parametrize("name", sorted(structured()))
def test_worst_case_is_the_longest_compact_instance(name: str) -> None:
    schema, _limit = structured()[name]
    size = worst_case(schema)
    compact = json.dumps(worst_instance(schema), separators=(",", ":"))

    assert len(compact) == size.structure + size.content


def test_an_unbounded_string_or_array_or_optional_property_is_refused() -> None:
    text = {"type": "string"}
    bounded = {"type": "string", "maxLength": 5}
    with pytest.raises(SchemaError, match="maxLength"):
        schema_to_gbnf(_object(reason=text))
    with pytest.raises(SchemaError, match="maxItems"):
        worst_case(_object(reasons={"type": "array", "items": bounded}))
    with pytest.raises(SchemaError, match="required"):
        schema_to_gbnf({**_object(a=bounded, b=bounded), "required": ["a"]})
    with pytest.raises(SchemaError, match="pattern"):
        schema_to_gbnf(_object(a={**bounded, "pattern": "^x$"}))
    with pytest.raises(SchemaError, match="number"):
        schema_to_gbnf(_object(a={"type": "number"}))


def test_grammar_has_no_whitespace_and_names_its_schema_for_the_fake() -> None:
    schema = _object(answer={"type": "string", "enum": ["yes", "no"]})
    grammar = schema_to_gbnf(schema)

    first, *rules = grammar.splitlines()
    assert json.loads(first.removeprefix(GRAMMAR_SCHEMA_COMMENT)) == schema
    assert "space" not in grammar and "[ \\t" not in grammar
    assert rules[-1].startswith("char ::=") and "root ::= " in grammar


def test_a_bound_raised_past_the_budget_shows_in_the_worst_case() -> None:
    gate = json.loads(json.dumps(outputs.GATE_SCHEMA))
    assert worst_case_tokens(gate) <= execute.MAX_TOKENS[N.GATE]
    gate["properties"]["reasons"]["items"]["maxLength"] = 1000

    assert worst_case_tokens(gate) > execute.MAX_TOKENS[N.GATE]


def _object(**properties: Mapping[str, object]) -> dict[str, object]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


# -- on a real llama.cpp server --------------------------------------------------------------


@pytest.fixture(scope="module")
def roomy_llamacpp(tiny_gguf: Path) -> Iterator[LlamaCppServer]:
    """One slot of 4,096 tokens: room for the longest structured reply (the extractor's 2,048)."""
    log = tiny_gguf.with_name("grammar-server.log")
    with running_llamacpp(tiny_gguf, log, context=4096, slots=1) as server:
        yield server


@pytest.mark.llamacpp
@pytest.mark.parametrize("name", sorted(structured()))
def test_real_server_ends_each_structured_reply_within_its_limit(
    roomy_llamacpp: LlamaCppServer, name: str
) -> None:
    schema, max_tokens = structured()[name]
    body = {
        "model": roomy_llamacpp.alias,
        "messages": MESSAGES,
        "max_tokens": max_tokens,
        "grammar": schema_to_gbnf(schema),
        **GREEDY,
    }
    reply = httpx.post(
        f"{roomy_llamacpp.base_url}/v1/chat/completions", json=body, timeout=300
    ).json()
    choice = reply["choices"][0]
    value = json.loads(choice["message"]["content"])

    size = worst_case(schema)
    assert choice["finish_reason"] == "stop", choice["message"]["content"][-200:]
    assert reply["usage"]["completion_tokens"] <= worst_case_tokens(schema) <= max_tokens
    # No whitespace: the reply is no longer than the compact worst case (the random model fills
    # its strings to their maxLength, so this is close to equal).
    assert len(choice["message"]["content"]) <= size.structure + size.content
    assert set(value) == set(schema["properties"])  # type: ignore[arg-type]
