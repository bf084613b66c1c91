"""Evidence context for a stage: everything when it fits, else the most relevant pages within
the budget, sent in packet order with their Bates labels (apps/drafting/pipeline/context.py)."""

from apps.drafting.pipeline.context import EXCERPT_OVERHEAD_TOKENS, estimate_tokens, evidence_select
from apps.drafting.pipeline.prompts import template_load
from apps.evidence.models import FrozenPage


def _pages(texts: list[str]) -> list[FrozenPage]:
    return [
        FrozenPage(pk=n, position=n, page_number=n, bates=[f"ACME{n:06d}"], text=text)
        for n, text in enumerate(texts, start=1)
    ]


def test_a_packet_that_fits_is_sent_whole_in_order() -> None:
    pages = _pages(["The lease.", "The invoice.", "The notice."])

    evidence = evidence_select(pages, query="anything", budget_tokens=10_000)

    assert evidence.labels == ["ACME000001", "ACME000002", "ACME000003"]
    assert evidence.text.index("ACME000001") < evidence.text.index("ACME000003")


def test_a_packet_too_big_sends_the_pages_that_match_the_query_within_the_budget() -> None:
    filler = "unrelated words about the weather and lunch " * 40
    pages = _pages([filler, f"{filler} the notice of termination was served", filler, filler])
    one_page = estimate_tokens(pages[1].text) + EXCERPT_OVERHEAD_TOKENS

    evidence = evidence_select(pages, query="notice of termination", budget_tokens=one_page + 5)

    assert evidence.labels == ["ACME000002"]
    assert "termination was served" in evidence.text and evidence.pages_total == 4


def test_nothing_fits_says_so_instead_of_cutting_a_page() -> None:
    evidence = evidence_select(_pages(["A long page " * 100]), query="page", budget_tokens=10)

    assert evidence.labels == [] and "No evidence fits" in evidence.text


def test_every_stage_template_has_a_version_and_fills_its_placeholders() -> None:
    values = {
        "kind": "motion",
        "instructions": "I",
        "evidence": "E",
        "draft": "D",
        "verifier_findings": "V",
        "reviewer_findings": "R",
        "max_transactions": "9",
    }
    for name in ("gate", "drafter", "reasoner", "adversary", "revision", "summarizer", "extractor"):
        template = template_load(name)
        system, user = template.render(**values)
        assert template.version == "1" and system and user and "$" not in system + user
