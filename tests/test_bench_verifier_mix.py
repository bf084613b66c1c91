"""bench/bench_verifier.py's draft holds issue 28's forms (its performance requirement: "with
the new forms in the mix"), and the verifier reads them as planted: a small packet of the
same making, every form checked by its own check, right cites supported, altered ones not."""

from collections import Counter

import pytest

from apps.verification.checks import verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex
from bench import bench_verifier


def _checked(mix: str) -> Counter[tuple[str, str]]:
    corpus = bench_verifier.build_corpus(1000, 280, mix=mix)
    claims = extract_claims(corpus.text, bates_prefixes=[bench_verifier.PREFIX])
    findings = verify_text(corpus.text, claims, PacketIndex.build(corpus.pages))
    return Counter((finding.check, finding.status) for finding in findings)


@pytest.mark.slow
def test_the_full_mix_cites_transcript_lines_pins_and_notes_and_the_verifier_reads_them() -> None:
    checked = _checked("all")

    for check in ("record_cite_lines", "case_pin"):
        assert checked[(check, "unsupported")] > 0, checked  # the altered tenth
        # Right cites far outnumber it.
        assert checked[(check, "supported")] > 5 * checked[(check, "unsupported")], checked
    assert checked[("case_pin_note", "supported")] > 0, checked
    for check in ("record_cite_page", "quote_verbatim", "date_on_cited_page"):
        assert checked[(check, "supported")] > 5, checked


@pytest.mark.slow
def test_the_classic_mix_is_record_pages_only() -> None:
    checked = _checked("classic")

    assert not {check for check, _ in checked} & {"record_cite_lines", "case_pin", "case_pin_note"}
    assert checked[("record_cite_page", "supported")] > 5, checked
