"""The model-output rule (lexweb.text.model_text): what it drops, checked over every code point,
and that what it leaves is storable (PostgreSQL text and jsonb), XML-legal (DOCX) and shows no
reversed text."""

import json

import docx
import pytest

from lexweb.text import model_data, model_text

BIDI_CONTROLS = {*range(0x202A, 0x202F), *range(0x2066, 0x206A)}
NONCHARACTERS = {*range(0xFDD0, 0xFDF0)} | {
    plane * 0x10000 + last for plane in range(17) for last in (0xFFFE, 0xFFFF)
}
DROPPED = (
    ({*range(0x00, 0x20)} - {0x09, 0x0A, 0x0D})
    | {*range(0x7F, 0xA0)}
    | {*range(0xD800, 0xE000)}
    | NONCHARACTERS
    | BIDI_CONTROLS
)


def test_every_code_point_is_kept_or_dropped_by_the_documented_rule() -> None:
    every = "".join(chr(code) for code in range(0x110000))

    kept = {ord(char) for char in model_text(every)}

    assert kept == set(range(0x110000)) - DROPPED
    # Kept on purpose: tab and line breaks, U+FFFD, the bidi marks that cannot reverse a run.
    assert {0x09, 0x0A, 0x0D, 0xFFFD, 0x200E, 0x200F, 0x061C} <= kept


def test_what_it_leaves_is_storable_and_xml_legal_and_it_is_idempotent() -> None:
    hostile = "Pay \u202eten dollars\u202c now\x00\x05\x14\ufffe\uffff\ud800\x85 \U0010ffff."

    cleaned = model_text(hostile)

    assert cleaned == "Pay ten dollars now ."
    assert model_text(cleaned) == cleaned
    cleaned.encode("utf-8")  # no lone surrogate left
    docx.Document().add_paragraph(cleaned)  # python-docx refuses XML-illegal characters


def test_plain_text_is_returned_as_it_is() -> None:
    text = "The lease began on 3 March 2024.\n\tItem — “quoted”, עברית, 中文."
    assert model_text(text) is text


def test_structured_values_are_cleaned_keys_included() -> None:
    parsed = json.loads(
        '{"reasons": ["a\\u0000b", "\\ud800c"], "k\\u0000": {"\\u202e": [1, null]}}'
    )

    assert model_data(parsed) == {"reasons": ["ab", "c"], "k": {"": [1, None]}}


@pytest.mark.parametrize("value", [3, 2.5, True, None])
def test_other_json_values_pass_through(value: object) -> None:
    assert model_data(value) == value
