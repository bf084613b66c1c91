"""A draft's length costs the verifier its claims, not their square (bench/bench_hostile_drafts.py
measures it): the places that read a sentence, a claim's neighbours or a cite's place among
its sentence's cites read in place, by bisection or by lookup. These tests hold the readings
to what a plain reading of the whole gives, on generated cases."""

import random
import re

from apps.verification.checks import verify_text
from apps.verification.claims import Spans, extract_claims
from apps.verification.claims.extract import _citations_only
from apps.verification.claims.sentences import sentence_spans
from tests.verification.packets import text_index

_ONLY_CITATIONS = re.compile(
    r"[\s.,;:()]*(?:(?:see|see also|cf\.|accord|but see)[\s,]*)?[\s.,;:()]*", re.I
)


def _plainly_citations_only(text: str, start: int, end: int, cites: list[tuple[int, int]]) -> bool:
    """The sentence with its cites blanked out, matched whole."""
    chars = list(text[start:end])
    for a, b in cites:
        if a < start or a >= end:
            continue
        for k in range(a, min(b, end)):
            chars[k - start] = " "
    return _ONLY_CITATIONS.fullmatch("".join(chars)) is not None


def test_a_sentence_of_citations_is_read_gap_by_gap_as_a_whole_reading_reads_it() -> None:
    pieces = ["(", ")", ".", " ", ",", ";", "see", "See also", "cf.", "accord", "but see", "\n"]
    pieces += ["word", "Id", "CITE", "CITE", "CITE"]
    rng = random.Random(20261207)  # noqa: S311  (generated cases)
    agreed = citations_only = 0
    for _ in range(4000):
        text, cites = "", []
        for piece in rng.choices(pieces, k=rng.randint(1, 14)):
            if piece == "CITE":
                cites.append((len(text), len(text) + 11))
                text += "1 F.3d 2, 3"
            else:
                text += piece
        start = rng.randint(0, len(text))
        end = rng.randint(start, len(text))
        whole = _plainly_citations_only(text, start, end, cites)
        assert _citations_only(text, start, end, cites) == whole, (text, start, end, cites)
        agreed += 1
        citations_only += whole
    assert agreed == 4000 and 400 < citations_only < 3600  # both answers were met often


def test_the_spans_inside_a_stretch_are_found_by_bisection_as_a_scan_finds_them() -> None:
    rng = random.Random(7)  # noqa: S311  (generated cases)
    for _ in range(3000):
        length = rng.randint(1, 80)
        spans = []
        for _ in range(rng.randint(0, 10)):
            a = rng.randint(0, length)
            spans.append((a, a + rng.randint(0, 12)))
        start = rng.randint(0, length)
        end = rng.randint(start, length + 5)
        scanned = {k for a, b in spans for k in range(max(a, start), min(b, end))}
        found = Spans(spans).within(start, end)
        assert {k for a, b in found for k in range(a, b)} == scanned
        assert all(start <= a < b <= end for a, b in found)
        assert found == sorted(found)


def test_a_run_of_abbreviation_stops_is_one_sentence_however_long() -> None:
    run = "".join(f"(Dkt. {n} at 2.) " for n in range(1, 2001))
    text = f"{run}The pump failed. J. Smith saw it. It stopped."
    spans = sentence_spans(text, [])
    assert [text[a:b] for a, b in spans] == [
        run.strip(),  # "2.)" before "(" ends nothing, "Dkt." never; before "The" it does
        "The pump failed.",
        "J. Smith saw it.",  # an initial ends nothing
        "It stopped.",
    ]


def test_each_cite_of_a_long_sentence_of_cites_is_judged_as_in_a_short_one() -> None:
    pages = [f"Page {n}. The pump failed at the Riverside plant on day {n}." for n in range(1, 9)]
    index = text_index("ABC", [("a.pdf", pages[:4]), ("b.pdf", pages[4:])])

    def verdicts(count: int) -> list[tuple[str, str]]:
        # one sentence of cites: real pages, pages past the packet's end, another prefix
        cites = [f"ABC{n % 11 + 1:06d}" if n % 5 else "ABD000001" for n in range(count)]
        text = "The pump failed at the Riverside plant, " + "; ".join(cites) + "."
        found = verify_text(text, extract_claims(text, bates_prefixes=["ABC"]), index)
        return [(f.claim.text, f.status) for f in found]

    short, long = verdicts(22), verdicts(1500)
    assert len(long) >= 1200  # (a label of another prefix stands for no claim)
    assert long[: len(short) - 1] == short[:-1]  # (the last cite of the short one ends it)
    assert {status for _, status in long} == {status for _, status in short}
    assert len({status for _, status in short}) > 1  # supported and flagged cites both
