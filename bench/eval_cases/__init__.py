# ruff: noqa: S311  (seeded test-data grammars: long vocabulary lines, list concatenation of pieces, random.Random on purpose)
"""A generator of labelled verifier evaluation cases in the shared set format (the format of
../shared/eval/verifier/, described in docs/reference/evaluations.md), for measuring the
verifier on cases, names and drafting styles nobody tuned it on (issue 20 req 3, issue 28 req
10).

`python -m bench.eval_cases OUT_DIR --seed N --cases 24 [--no-scans]` writes OUT_DIR/case-*/.
Deterministic per seed; another seed gives other parties, people, dates, amounts, sentences,
Bates prefixes and numbering. Each case draws a practice area (construction, employment,
insurance, IP licensing, landlord-tenant, securities, medical malpractice, trade secrets,
logistics), documents of that area (the agreement, letters, reports, logs; a deposition
transcript with numbered lines in most cases), court opinions (some star-paged with footnotes;
California reporters and California-style cites in California courts), one or two productions
(prefixes of 2-6 letters followed by nothing, a space or a hyphen; 6-8 digits; varied start
numbers; an opposing production, sometimes with page-suffix numbers and a legend), another
production's stamps printed on two source pages, and with scans one small document rendered to
a noisy image. Two drafts per case in two styles (declaration, letter or chronology; motion,
memo or California brief) hold supported claims and every error kind of the format at least
once. Values appear in other forms than the sources' (dates in words, "the 3rd day of",
numerals against amounts in words, "$4.1 million").

Modules: words (vocabularies and value forms), world (a case's facts, documents, opinions and
productions), drafts (sentences, planted errors, styles), output (PDFs, scans, the files).
"""

from pathlib import Path

ERROR_KINDS = (
    "bates_out_of_range",
    "bates_wrong_page",
    "bates_not_a_bates_number",
    "date_not_in_source",
    "date_shifted",
    "quote_altered",
    "quote_fabricated",
    "amount_altered",
    "amount_not_in_source",
    "citation_not_in_packet",
    "citation_pin_cite_wrong",
    "self_generated_reference",
)


def generate(out: Path, *, seed: int, cases: int = 24, scans: bool = True) -> dict[str, int]:
    """Write `cases` cases under `out`; returns totals (cases, pages, labels, unsupported)."""
    import random

    from bench.eval_cases import drafts, output, world

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    totals = {"cases": 0, "pages": 0, "labels": 0, "unsupported": 0}
    for index in range(1, cases + 1):
        case = world.build(seed, index, scans=scans)
        planned = drafts.plan(random.Random(f"{seed}:{index}:drafts"), case)
        counts = output.write(case, planned, out)
        totals["cases"] += 1
        for key, value in counts.items():
            totals[key] += value
    return totals
