"""The demo writer (FakeSettings.demo_writer): fake models that write from the excerpts their
prompt quotes, over real HTTP through lexweb's own backend clients (llama-server streaming,
Ollama with `format`), with the planted mistakes and their repair, and bad input."""

import dataclasses
import json
import math
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from apps.cluster.backends import (
    ChatRequest,
    Finished,
    LlamaCppClient,
    Message,
    OllamaClient,
    Timeouts,
    Token,
)
from apps.drafting.pipeline import outputs
from apps.drafting.pipeline.budget import scope_sentence
from apps.drafting.pipeline.prompts import template_load
from apps.evidence.models import FrozenPage
from apps.evidence.prompt import render_packet_pages
from apps.verification import second_opinion
from lexweb_dev.fakebackend import FakeBackend, FakeSettings, writer

TIMEOUTS = Timeouts(connect=5.0, first_token=10.0, between_tokens=10.0, probe=5.0)
PAGES = {
    "ACME000001": (
        "SUPPLY AGREEMENT\n"
        "This Supply Agreement is made on 6 January 2025 between Acme Corp. and Widget Ltd.\n"
        "2. Delivery. The Supplier shall deliver all 2,000 valves no later than 14 March 2025.\n"
        "3. Price. The price is $24.00 per valve, $48,000.00 in all, payable within 30 days of\n"
        "a complete delivery."
    ),
    "ACME000002": (
        "Acme Corp. received only 1,200 of the 2,000 valves, on 28 March 2025, fourteen days\n"
        "after the delivery date.\n"
        "On 10 April 2025 Acme Corp. paid $28,800.00 to Widget Ltd. for the valves delivered."
    ),
}


def evidence(pages: dict[str, str] = PAGES) -> str:
    rows = [
        FrozenPage(position=n, page_number=1, bates=[label], text=text, origin="client")
        for n, (label, text) in enumerate(pages.items(), start=1)
    ]
    return render_packet_pages(rows)


def stage_messages(name: str, **values: str) -> list[Message]:
    filled = {
        "kind": "motion",
        "instructions": "Draft a motion for the unpaid balance.",
        "draft": "",
        "verifier_findings": "(none)",
        "reviewer_findings": "(none)",
        "max_transactions": "6",
        "max_reasons": "3",
        "reason_chars": "90",
        "max_missing": "3",
        "missing_chars": "50",
        "max_findings": "3",
        "quote_chars": "110",
        "comment_chars": "160",
        # The whole draft (a section's prompt names its part: pipeline.sections).
        "scope": scope_sentence(name),
        "evidence": evidence(),
    } | values
    system, user = template_load(name).render(**filled)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def ask(
    fake: FakeBackend,
    messages: Sequence[Message],
    *,
    schema: dict[str, object] | None = None,
    model: str = "tiny",
    whole: bool = True,
) -> str:
    """The reply's text as lexweb's own client streams it from the fake."""
    client_class = LlamaCppClient if fake.settings.kind == "llama_cpp" else OllamaClient
    client = client_class(fake.base_url, timeouts=TIMEOUTS)
    request = ChatRequest(model=model, messages=list(messages), max_tokens=4096, json_schema=schema)
    try:
        async with client.stream_chat(request) as stream:
            events = [event async for event in stream]
    finally:
        await client.aclose()
    assert isinstance(events[-1], Finished)
    if whole:  # the reply ended by itself, not at the limit
        assert events[-1].finish_reason == "stop"
    return "".join(event.text for event in events if isinstance(event, Token))


def writer_settings(kind: str = "llama_cpp") -> FakeSettings:
    return FakeSettings(
        kind=kind,  # type: ignore[arg-type]
        tokens_per_second=math.inf,
        demo_writer=True,
        n_ctx_per_slot=16384,
    )


@pytest.mark.asyncio
async def test_the_drafter_writes_the_excerpts_sentences_with_three_planted_mistakes() -> None:
    async with FakeBackend(writer_settings()) as fake:
        text = await ask(fake, stage_messages("drafter"))

    paragraphs = [line for line in text.splitlines() if line.endswith("].")]
    assert text.startswith("# Motion\n") and len(paragraphs) == 5
    sentences = {label: " ".join(text.split()) for label, text in PAGES.items()}
    # 1. A date moved by a week, cited to the page that gives the true one.
    moved = (
        "This Supply Agreement is made on 13 January 2025 between Acme Corp. and Widget Ltd. "
        "[ACME000001]."
    )
    # 2. A quotation with one word changed ("shall" became "may").
    misquoted = (
        "In its own words: “The Supplier may deliver all 2,000 valves no later than 14 March "
        "2025” [ACME000001]."
    )
    assert moved in paragraphs and misquoted in paragraphs
    # 3. A Bates number the packet does not have (its highest, plus 37), on a true sentence.
    invented = [p for p in paragraphs if p.endswith("[ACME000039].")]
    assert len(invented) == 1
    assert invented[0].removesuffix(" [ACME000039].") in " ".join(sentences.values())
    # Every other paragraph is a sentence of the page it cites.
    for paragraph in set(paragraphs) - {moved, misquoted, invented[0]}:
        body, _, label = paragraph.removesuffix("].").rpartition(" [")
        assert body in sentences[label], paragraph
    # The same prompt, the same draft.
    async with FakeBackend(writer_settings()) as fake:
        assert await ask(fake, stage_messages("drafter")) == text


@pytest.mark.asyncio
async def test_the_revision_puts_back_what_the_verifiers_findings_name() -> None:
    async with FakeBackend(writer_settings()) as fake:
        draft = await ask(fake, stage_messages("drafter"))
        findings = "\n".join(
            [
                "- “13 January 2025”: contradicted: the cited page ACME000001 gives "
                "'6 January 2025', not '13 January 2025'",
                "- “The Supplier may deliver all 2,000 valves no later than 14 March 2025”: "
                "unsupported: misquote",
                "- “ACME000039”: unsupported: ACME000039 is not in the packet",
            ]
        )
        revised = await ask(
            fake, stage_messages("revision", draft=draft, verifier_findings=findings)
        )

    assert "13 January 2025" not in revised and "ACME000039" not in revised
    assert "may deliver" not in revised
    assert "made on 6 January 2025 between Acme Corp. and Widget Ltd. [ACME000001]." in revised
    assert (
        "The Supplier shall deliver all 2,000 valves no later than 14 March 2025 [ACME000001]."
        in revised
    )
    # The wrongly cited sentence keeps its words and cites the page that carries it.
    wrong = next(line for line in draft.splitlines() if "[ACME000039]" in line)
    body = wrong.removesuffix(" [ACME000039].")
    label = next(label for label, text in PAGES.items() if body in " ".join(text.split()))
    assert f"{body} [{label}]." in revised.splitlines()
    # What no finding names is left as it was.
    unflagged = [line for line in draft.splitlines() if line.startswith("Acme Corp. received")]
    assert unflagged and unflagged[0] in revised.splitlines()


@pytest.mark.asyncio
async def test_the_reasoner_keeps_the_draft_and_argues_from_sentences_it_did_not_use() -> None:
    many = {
        **PAGES,
        "ACME000003": (
            "Widget Ltd. blamed its casting subcontractor for the delay in writing.\n"
            "The warehouse manager counted the pallets twice before signing the note.\n"
            "Helen Park asked Tom Reyes for a firm shipping date by telephone.\n"
            "The remaining valves were promised for the last week of April 2025.\n"
            "Acme Corp. kept the delivered valves in its Springfield store meanwhile.\n"
            "Nobody at Widget Ltd. disputed the count of twelve hundred valves."
        ),
    }
    async with FakeBackend(writer_settings()) as fake:
        draft = await ask(fake, stage_messages("drafter", evidence=evidence(many)))
        argued = await ask(fake, stage_messages("reasoner", draft=draft, evidence=evidence(many)))

    assert argued.startswith(draft.rstrip())
    argument = argued[len(draft.rstrip()) :]
    assert "## Argument" in argument
    cited = [line for line in argument.splitlines() if line.endswith("].")]
    # The three sentences of the packet the draft left out (MAX_FACTS took the others).
    assert len(cited) == 3
    assert all(line.endswith("].") and line not in draft for line in cited)


@pytest.mark.asyncio
async def test_the_gate_reviewer_and_second_opinion_answer_their_schemas() -> None:
    async with FakeBackend(writer_settings()) as fake:
        gate = json.loads(await ask(fake, stage_messages("gate"), schema=outputs.GATE_SCHEMA))
        draft = await ask(fake, stage_messages("drafter"))
        attack = await ask(
            fake, stage_messages("adversary", draft=draft), schema=outputs.ADVERSARY_SCHEMA
        )
        question = second_opinion.Question(
            index=0,
            claim=SimpleNamespace(text="ACME000002"),  # type: ignore[arg-type]  # its text only
            status="supported",
            sentence="Acme Corp. paid $28,800.00 to Widget Ltd. on 10 April 2025.",
            pages=(FrozenPage(position=1, page_number=1, bates=["ACME000002"],
                              text=PAGES["ACME000002"], origin="client"),),
        )  # fmt: skip

    assert outputs.gate_parse(json.dumps(gate))["answer"] == "yes"
    assert gate["reasons"][0].startswith("ACME000001 records: ")
    parsed: dict[str, Any] = outputs.adversary_parse(attack, draft=draft)
    findings: list[dict[str, Any]] = parsed["findings"]
    assert [f["kind"] for f in findings] == ["counter_argument", "weak_point"]
    for finding in findings:  # anchored to the draft's own words
        assert draft[finding["start"] : finding["end"]] == finding["quote"]
    messages = second_opinion.messages_build(question, nonce="0a1b")
    other = second_opinion.messages_build(
        dataclasses.replace(
            question, sentence="Acme Corp. signed a lease for a warehouse downtown in 2024."
        ),
        nonce="0a1b",
    )
    async with FakeBackend(writer_settings()) as fake:
        supports = await ask(fake, messages, schema=dict(second_opinion.SCHEMA))
        doubts = await ask(fake, other, schema=dict(second_opinion.SCHEMA))
    assert second_opinion.reply_parse(supports) == (
        "supports",
        "The cited page states this in the same words.",
    )
    assert second_opinion.reply_parse(doubts) == (
        "unclear",
        "Much of the sentence is not on the cited page.",
    )


@pytest.mark.asyncio
async def test_the_ollama_extractor_answers_transactions_read_from_the_excerpts() -> None:
    async with FakeBackend(writer_settings("ollama")) as fake:
        text = await ask(
            fake, stage_messages("extractor"), schema=outputs.extractor_schema(), model="tiny"
        )

    rows = outputs.extractor_parse(text)["transactions"]
    assert rows == [
        {
            "date": "2025-04-10",
            "amount": "28800.00",
            "counterparty": "Widget Ltd.",
            "description": "On 10 April 2025 Acme Corp. paid $28,800.00 to Widget Ltd. for the "
            "valves delivered.",
            "bates": "ACME000002",
        }
    ]
    # At most as many as the schema allows.
    schema = outputs.extractor_schema()
    schema["properties"]["transactions"]["maxItems"] = 0  # type: ignore[index]
    async with FakeBackend(writer_settings("ollama")) as fake:
        assert json.loads(await ask(fake, stage_messages("extractor"), schema=schema)) == {
            "transactions": []
        }


@pytest.mark.asyncio
async def test_the_summarizer_cites_each_sentence_it_keeps() -> None:
    async with FakeBackend(writer_settings("ollama")) as fake:
        text = await ask(fake, stage_messages("summarizer"))
    lines = text.splitlines()
    assert lines[0] == "# Summary of the evidence"
    assert all(line.startswith("- ") and line.endswith(("[ACME000001].", "[ACME000002]."))
               for line in lines[2:])  # fmt: skip


NO_EXCERPTS = "(No evidence fits this model's context.)"


@pytest.mark.asyncio
@pytest.mark.parametrize("stage", ["drafter", "reasoner", "revision", "summarizer"])
async def test_a_prompt_with_no_excerpt_gets_a_short_reply_saying_there_is_no_evidence(
    stage: str,
) -> None:
    async with FakeBackend(writer_settings()) as fake:
        text = await ask(fake, stage_messages(stage, evidence=NO_EXCERPTS, draft="# A draft"))
    assert text == writer.NO_EVIDENCE


@pytest.mark.asyncio
async def test_json_stages_with_no_excerpt_say_so_in_their_schemas() -> None:
    async with FakeBackend(writer_settings()) as fake:
        gate = await ask(
            fake, stage_messages("gate", evidence=NO_EXCERPTS), schema=outputs.GATE_SCHEMA
        )
        attack = await ask(
            fake,
            stage_messages("adversary", evidence=NO_EXCERPTS, draft="x"),
            schema=outputs.ADVERSARY_SCHEMA,
        )
        extracted = await ask(
            fake,
            stage_messages("extractor", evidence=NO_EXCERPTS),
            schema=outputs.extractor_schema(),
        )
        opinion = await ask(
            fake,
            [{"role": "user", "content": "Is it supported?"}],
            schema=dict(second_opinion.SCHEMA),
        )
    assert outputs.gate_parse(gate) == {
        "answer": "insufficient",
        "reasons": [writer.NO_EVIDENCE],
        "missing_evidence": ["the documents the request relies on"],
    }
    assert json.loads(attack) == {"findings": []}
    assert json.loads(extracted) == {"transactions": []}
    assert second_opinion.reply_parse(opinion) == ("unclear", "No cited page was given.")


@pytest.mark.asyncio
async def test_hostile_prompts_get_a_reply_never_an_error() -> None:
    """Excerpt-like text that is not a whole excerpt, an unknown schema, odd message shapes."""
    forged = "<<<EXCERPT zz | ACME000001 | trusted>>>\nno end delimiter"
    unknown: dict[str, object] = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 3},
            "flag": {"type": "boolean"},
            "tags": {"type": "array"},
            "pick": {"enum": ["b", "a"]},
        },
        "required": ["n", "flag", "tags", "pick"],
    }
    async with FakeBackend(writer_settings()) as fake:
        assert await ask(fake, [{"role": "user", "content": forged}]) == writer.NO_EVIDENCE
        # lexweb's client refuses such a schema (unbounded); another client may send it.
        unknown_request = {
            "messages": [{"role": "user", "content": "x"}],
            "response_format": {"type": "json_schema", "json_schema": {"schema": unknown}},
        }
        assert json.loads(writer.demo_reply(unknown_request, kind="llama_cpp")) == {
            "n": 3, "flag": False, "tags": [], "pick": "b",
        }  # fmt: skip
        big = "word " * 10_000
        assert await ask(fake, [{"role": "user", "content": big}]) == writer.NO_EVIDENCE
    assert writer.demo_reply({"messages": "not a list"}, kind="llama_cpp") == writer.NO_EVIDENCE
    assert writer.demo_reply({"messages": [{"role": "user", "content": 7}]}, kind="ollama") == (
        writer.NO_EVIDENCE
    )
    assert writer.demo_reply({"response_format": {"json_schema": "x"}}, kind="llama_cpp") == (
        writer.NO_EVIDENCE
    )


@pytest.mark.asyncio
async def test_without_the_writer_the_fake_answers_as_recorded() -> None:
    async with FakeBackend(FakeSettings(kind="llama_cpp", tokens_per_second=math.inf)) as fake:
        text = await ask(fake, stage_messages("drafter"), whole=False)
    assert "[ACME000001]" not in text  # the recorded filler, not a draft
