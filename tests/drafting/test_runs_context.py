"""Evidence context for a stage (apps/drafting/pipeline/context.py and ranking.py): the whole
packet when it fits, else the best-ranked pages whose rendered excerpts fit a budget counted by
the backend's tokenizer (fake backends over real HTTP), sent in packet order with their Bates
labels; a conservative estimate, with its reason, when the tokenizer cannot count."""

import asyncio
import io
import re

import pymupdf
import pytest

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import Backend, Deployment
from apps.cluster.tokens import Calibration
from apps.documents import services as document_services
from apps.documents.models import Document, Page
from apps.drafting.pipeline import context, ranking
from apps.drafting.pipeline.context import TokenCounter, estimate_tokens, evidence_select
from apps.drafting.pipeline.prompts import template_load
from apps.evidence.models import FrozenPage
from apps.evidence.prompt import render_packet_pages
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from lexweb_dev.fakebackend.tokens import count_text_tokens
from tests.cluster.dispatch_fixtures import closed_port_url, silent_server
from tests.drafting.makers import packet_of

FILLER = "unrelated words about the weather and what was served for lunch that day. " * 6


def _pages(texts: list[str]) -> list[FrozenPage]:
    return [
        FrozenPage(pk=n, position=n, page_number=n, bates=[f"ACME{n:06d}"], text=text)
        for n, text in enumerate(texts, start=1)
    ]


def _deployment(base_url: str, kind: str = "llama_cpp") -> Deployment:
    """Unsaved rows: the counter needs only the backend's kind and address."""
    return Deployment(
        backend=Backend(name=f"{kind}-a", kind=kind, base_url=base_url), model_name="m"
    )


def _used(evidence: context.Evidence) -> int:
    return int(evidence.budget["used_tokens"])  # type: ignore[call-overload]


def _as_counted(text: str) -> str:
    """Rendered evidence as the counter counted it: with the counting nonce in place of the
    render's own (context.COUNTING_NONCE, an upper bound for any nonce)."""
    return re.sub(r"\b[0-9a-f]{32}\b", context.COUNTING_NONCE, text)


def _usable(evidence: context.Evidence) -> int:
    budget = evidence.budget
    return int(budget["budget_tokens"]) - int(budget["margin_tokens"])  # type: ignore[call-overload]


async def _select(
    pages: list[FrozenPage], counter: TokenCounter, *, ranked: list[int], budget: int
) -> context.Evidence:
    try:
        return await evidence_select(pages, ranked=ranked, budget_tokens=budget, counter=counter)
    finally:
        await counter.aclose()


# --- Estimates ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "The lease began on 3 March 2024 at a monthly rent of $1,250.00.",
        "ACME000014 ACME000015\n\n§ 12(b)(6) — “notice” 東京地方裁判所 ñandú",
        render_packet_pages(_pages(["The notice of termination.", "Invoice 2024-03-01"])),
        "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
        "",
    ],
)
def test_the_estimate_is_never_below_what_the_tokenizer_counts(text: str) -> None:
    assert estimate_tokens(text) >= count_text_tokens(text)


# --- Choosing within the budget (fake llama-server's /tokenize over HTTP) ---------------------


@pytest.mark.asyncio
async def test_a_packet_that_fits_is_sent_whole_in_order_counted_by_the_tokenizer() -> None:
    pages = _pages(["The lease.", "The invoice.", "The notice."])
    async with FakeBackend(FakeSettings(kind="llama_cpp")) as fake:
        counter = TokenCounter(_deployment(fake.base_url))
        evidence = await _select(pages, counter, ranked=[3], budget=10_000)

    assert evidence.labels == ["ACME000001", "ACME000002", "ACME000003"]
    assert evidence.text.index("ACME000001") < evidence.text.index("ACME000003")
    assert evidence.budget["selection"] == "whole packet"
    assert evidence.budget["counted_by"] == "tokenizer"
    assert evidence.budget["used_tokens"] == count_text_tokens(_as_counted(evidence.text))
    assert count_text_tokens(evidence.text) <= _used(evidence)
    assert evidence.budget["fallback_reason"] == ""


@pytest.mark.asyncio
async def test_a_packet_bigger_than_the_context_gets_the_best_ranked_pages_that_fit() -> None:
    texts = [FILLER] * 12
    texts[2] = f"{FILLER} The notice of termination was served on the tenant."
    texts[7] = f"{FILLER} A second notice of termination followed."
    texts[9] = f"{FILLER} Termination."
    pages = _pages(texts)
    # Counted as the counter counts them (with its nonce): the render's own random nonce takes
    # more or fewer tokens from one render to the next, which made the budget a lottery.
    nonce = context.COUNTING_NONCE
    preamble = count_text_tokens(render_packet_pages([], nonce=nonce))
    one = count_text_tokens(render_packet_pages(pages[:1], nonce=nonce)) - preamble
    # Room for the preamble and two excerpts (with the margin), not three.
    budget = int((preamble + 2.5 * (one + 2) + context.MARGIN_MIN_TOKENS) / 0.95)

    async with FakeBackend(FakeSettings(kind="llama_cpp")) as fake:
        counter = TokenCounter(_deployment(fake.base_url))
        evidence = await _select(pages, counter, ranked=[8, 3, 10], budget=budget)

    # The two best-ranked pages, sent in packet order, each labelled with its Bates number.
    assert evidence.labels == ["ACME000003", "ACME000008"]
    assert evidence.text.index("ACME000003") < evidence.text.index("ACME000008")
    assert "served on the tenant" in evidence.text and "second notice" in evidence.text
    assert evidence.budget["selection"] == "ranked by full text search"
    assert evidence.budget["counted_by"] == "tokenizer"
    assert (evidence.budget["pages_total"], evidence.budget["pages_sent"]) == (12, 2)
    # What the fake's tokenizer says of the rendered evidence is within the budget.
    assert count_text_tokens(evidence.text) <= _used(evidence) <= _usable(evidence)
    assert count_text_tokens(_as_counted(evidence.text)) == _used(evidence)


@pytest.mark.asyncio
async def test_room_left_after_the_matches_is_filled_with_other_pages_in_packet_order() -> None:
    pages = _pages(["alpha " * 30, "beta " * 30, "gamma " * 30, "delta " * 2000])
    async with FakeBackend(FakeSettings(kind="llama_cpp")) as fake:
        counter = TokenCounter(_deployment(fake.base_url))
        evidence = await _select(pages, counter, ranked=[3], budget=600)

    # The match first; then the unmatched pages that fit; the huge one does not.
    assert evidence.labels == ["ACME000001", "ACME000002", "ACME000003"]


@pytest.mark.asyncio
async def test_nothing_fits_says_so_instead_of_cutting_a_page() -> None:
    async with FakeBackend(FakeSettings(kind="llama_cpp")) as fake:
        counter = TokenCounter(_deployment(fake.base_url))
        evidence = await _select(_pages(["A long page " * 100]), counter, ranked=[1], budget=80)

    assert evidence.labels == [] and evidence.text == context.NOTHING_FITS
    assert evidence.budget["pages_sent"] == 0


@pytest.mark.asyncio
async def test_an_unreachable_tokenizer_falls_back_to_the_estimate_and_says_why() -> None:
    texts = [f"{FILLER} page {n} about the lease" for n in range(10)]
    pages = _pages(texts)
    counter = TokenCounter(_deployment(closed_port_url()))
    evidence = await _select(pages, counter, ranked=[5, 2], budget=1000)

    assert evidence.budget["counted_by"] == "estimate"
    reason = str(evidence.budget["fallback_reason"])
    assert reason.startswith("The tokenizer failed") and "Estimated from then on" in reason
    assert evidence.labels and evidence.labels[0] == "ACME000002"
    # The estimate is conservative: the real tokenizer's count is within the budget too.
    assert count_text_tokens(evidence.text) <= _used(evidence) <= _usable(evidence)


@pytest.mark.asyncio
async def test_a_hung_tokenizer_times_out_and_the_estimate_takes_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(context, "COUNT_SECONDS", 0.3)
    async with silent_server() as url:
        counter = TokenCounter(_deployment(url))
        evidence = await _select(
            _pages(["The lease.", "The notice."]), counter, ranked=[], budget=2000
        )

    assert evidence.budget["counted_by"] == "estimate"
    assert "did not answer within" in str(evidence.budget["fallback_reason"])
    assert evidence.labels == ["ACME000001", "ACME000002"]


@pytest.mark.asyncio
async def test_a_tokenizer_that_fails_half_way_is_not_asked_again() -> None:
    pages = _pages([f"{FILLER} page {n}" for n in range(40)])
    async with FakeBackend(FakeSettings(kind="llama_cpp")) as fake:
        counter = TokenCounter(_deployment(fake.base_url))
        first = await counter.text("one two three")
        await fake.stop()  # the server goes away between counts
        evidence = await _select(pages, counter, ranked=[], budget=1000)

    assert first == 3
    assert evidence.budget["counted_by"] == "tokenizer, then estimate"
    assert evidence.budget["estimates"] and evidence.labels
    assert count_text_tokens(evidence.text) <= _usable(evidence)


@pytest.mark.asyncio
async def test_ollama_has_no_tokenizer_so_its_budget_is_an_estimate_scaled_up() -> None:
    pages = _pages([f"{FILLER} page {n}" for n in range(10)])
    async with FakeBackend(FakeSettings(kind="ollama")) as fake:
        plain = await _select(
            pages, TokenCounter(_deployment(fake.base_url, "ollama")), ranked=[], budget=700
        )
        scaled = await _select(
            pages,
            TokenCounter(
                _deployment(fake.base_url, "ollama"), calibration=Calibration(scale=2.0, calls=3)
            ),
            ranked=[],
            budget=700,
        )

    assert plain.budget["counted_by"] == "estimate"
    assert "Ollama has no tokenizer endpoint" in str(plain.budget["fallback_reason"])
    assert scaled.budget["counted_by"] == "calibrated estimate"
    assert scaled.budget["calibration"] == {"scale": 2.0, "calls": 3, "margin": 0.1}
    assert len(scaled.labels) < len(plain.labels)
    assert count_text_tokens(plain.text) <= _usable(plain)


@pytest.mark.asyncio
async def test_counts_go_to_the_tokenizer_a_few_at_a_time() -> None:
    pages = _pages([f"{FILLER} page {n}" for n in range(30)])
    async with FakeBackend(FakeSettings(kind="llama_cpp")) as fake:
        counter = TokenCounter(_deployment(fake.base_url))
        evidence, _ = await asyncio.gather(
            _select(pages, counter, ranked=list(range(30, 0, -1)), budget=900), asyncio.sleep(0)
        )

    assert evidence.budget["tokenizer_counts"] <= context.MAX_COUNTED_PAGES  # type: ignore[operator]
    # Ranked last-page-first: the pages sent are the last ones, in packet order.
    assert evidence.labels == sorted(evidence.labels) and evidence.labels[-1] == "ACME000030"


def test_every_stage_template_has_a_version_and_fills_its_placeholders() -> None:
    values = {
        "kind": "motion",
        "instructions": "I",
        "evidence": "E",
        "draft": "D",
        "verifier_findings": "V",
        "reviewer_findings": "R",
        "max_transactions": "9",
        "max_reasons": "3",
        "reason_chars": "90",
        "max_missing": "3",
        "missing_chars": "50",
        "max_findings": "3",
        "quote_chars": "110",
        "comment_chars": "160",
        "scope": "S",
    }
    # Versions 2: the gate's and the reviewer's state the bounds of their schemas (issue 29);
    # the reasoner's, the reviewer's (3) and the revision's are told the whole draft or which
    # part of it they read ($scope: long drafts reviewed in sections).
    versions = {"gate": "2", "adversary": "3", "reasoner": "2", "revision": "2"}
    for name in ("gate", "drafter", "reasoner", "adversary", "revision", "summarizer", "extractor"):
        template = template_load(name)
        system, user = template.render(**values)
        assert template.version == versions.get(name, "1")
        assert system and user and "$" not in system + user


# --- Ranking (PostgreSQL full text search over the frozen pages) -------------------------------


def _pdf(*, case: Case, user: User, pages: list[str]) -> Document:
    with pymupdf.open() as pdf:
        for text in pages:
            page = pdf.new_page()
            page.insert_textbox(pymupdf.Rect(72, 72, 540, 760), text, fontsize=11)
        data = pdf.tobytes()
    outcome = document_services.document_upload(
        case=case, uploaded_by=user, filename="bundle.pdf", source=io.BytesIO(data), origin="client"
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    return Document.objects.get(pk=outcome.document.pk)


HAND_MADE = [
    "Lunch was served at noon. The weather was fine.",
    "The landlord served a notice of termination on the tenant.",
    "Termination is mentioned once here, among other words about the building.",
    "Notice of termination. The notice of termination was served; a termination notice "
    "followed the first notice of termination.",
    "The invoice for March lists the rent.",
]


@pytest.mark.django_db
def test_pages_are_ranked_by_full_text_search_against_the_query(lawyer: User, case: Case) -> None:
    packet = packet_of(
        case=case, user=lawyer, documents=[_pdf(case=case, user=lawyer, pages=HAND_MADE)]
    )
    by_position = {
        p.position: p.pk for p in FrozenPage.objects.filter(packet=packet).order_by("position")
    }

    ranked = ranking.frozen_pages_ranked(
        packet_id=packet.pk, query=ranking.query_text("Draft on the notice of termination.", "")
    )

    # Most matches, closest together, first; pages matching nothing are left out.
    assert [r.page_id for r in ranked] == [by_position[4], by_position[2], by_position[3]]
    assert ranked[0].rank > ranked[1].rank > ranked[2].rank > 0
    # The section being written counts too.
    rent = ranking.frozen_pages_ranked(
        packet_id=packet.pk, query=ranking.query_text("Draft a motion.", "The rent for March.")
    )
    assert [r.page_id for r in rent] == [by_position[5]]


@pytest.mark.django_db
def test_a_page_read_again_after_freezing_is_ranked_by_its_frozen_text(
    lawyer: User, case: Case
) -> None:
    document = _pdf(case=case, user=lawyer, pages=HAND_MADE)
    packet = packet_of(case=case, user=lawyer, documents=[document])
    # The document's page 5 now says something else (re-read); the frozen page did not change.
    Page.objects.filter(document=document, number=5).update(text="Termination termination.")
    from django.contrib.postgres.search import SearchVector

    Page.objects.filter(document=document, number=5).update(
        search_vector=SearchVector("text", config="english")
    )

    ranked = ranking.frozen_pages_ranked(packet_id=packet.pk, query="termination")
    frozen = FrozenPage.objects.get(packet=packet, position=5)

    assert frozen.pk not in {r.page_id for r in ranked}
    assert ranking.frozen_pages_ranked(packet_id=packet.pk, query="invoice")[0].page_id == frozen.pk


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "",
        "   \x00 ",
        '"unclosed quote -- - - - -notice or or and not ( ) : * & | ! <-> \\',
        "-" * 500 + " notice",
        "termination " * 50_000,
        " ".join(f"word{n}" for n in range(5000)),
    ],
)
def test_hostile_or_enormous_queries_rank_without_error(
    lawyer: User, case: Case, query: str
) -> None:
    packet = packet_of(
        case=case, user=lawyer, documents=[_pdf(case=case, user=lawyer, pages=HAND_MADE)]
    )

    ranked = ranking.frozen_pages_ranked(packet_id=packet.pk, query=query)

    assert len(ranking.query_words(query)) <= ranking.MAX_QUERY_WORDS
    assert all(r.rank > 0 for r in ranked)
    if "notice" in query or "termination" in query:
        assert ranked
