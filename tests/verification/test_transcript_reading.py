"""A transcript's lines are read lazily (`transcripts._Transcript`): a line's terms when first
asked for, and the lines holding a term from the pages the packet's index says hold it. These
tests hold the lazy reading to the plain one, reading every line, on transcripts with pages whose
index is not their lines' own words: OCR pages, a word broken by a hyphen at a line's end, other
scripts, and a condensed sheet."""

import random

from apps.verification import normalise as nz
from apps.verification.index import PacketIndex, PageRecord
from apps.verification.sheets import sheet_pages
from apps.verification.transcripts import _lines_of

WORDS = [
    "forklift",
    "racking",
    "brake",
    "foreman",
    "invoice",
    "warehouse",
    "crane",
    "logbook",
    "spill",
    "morning",
    "cash",
    "dock",
    "tarrant",
    "coastline",
    "signed",
    "rolled",
    "parking",
    "reported",
    "operator",
    "paid",
    "night",
    "twelfth",
    "harlan",
]


def _page(number: int, rng: random.Random, lines: dict[int, str] | None = None) -> str:
    rows = [f"Page {number}"]
    for n in range(1, 26):
        text = (lines or {}).get(n) or " ".join(rng.choice(WORDS) for _ in range(6))
        rows.append(f"{n:>2}  {'Q.' if n % 2 else 'A.'} {text}")
    return "\n".join(rows)


def _sheet(first: int, rng: random.Random) -> str:
    """Four transcript pages printed one after another on one page (a condensed sheet read
    mini-page by mini-page)."""
    return "\n".join(_page(first + k, rng) for k in range(4))


def _index() -> tuple[PacketIndex, list[int]]:
    rng = random.Random(7)  # noqa: S311  (repeatable text, not a secret)
    texts: list[tuple[str, str]] = [(_page(1, rng), "text_layer")]
    # OCR: a bar read as "I", a look-alike in a figure.
    texts.append((_page(2, rng, {3: "| paid 4O12 in cash to the foreman"}), "ocr"))
    # A word broken at a line's end: the index reads "compensation", the lines "compen"...
    texts.append(
        (_page(3, rng, {4: "the foreman asked for compen-", 5: "sation at the dock"}), "text_layer")
    )
    texts.append((_page(4, rng, {6: "the café foreman signed the naïve logbook"}), "text_layer"))
    texts.append((_sheet(5, rng), "text_layer"))
    texts.append((_page(9, rng), "text_layer"))
    records = [
        PageRecord(n, 1, "voss-deposition.pdf", n, (f"VD{n:04d}",), text, source, None, "public")
        for n, (text, source) in enumerate(texts, 1)
    ]
    index = PacketIndex.build(records)
    return index, list(range(len(records)))


def test_a_condensed_sheet_is_among_the_pages() -> None:
    index, _ = _index()
    minis = sheet_pages(index.pages[4].text)
    assert minis is not None and [m.number for m in minis] == [5, 6, 7, 8]


def test_the_lazy_reading_finds_the_lines_that_reading_every_line_finds() -> None:
    index, pages = _index()
    transcript = _lines_of(index, pages)
    assert sorted(transcript.by_page) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    plain = [
        frozenset(nz.content_terms(nz.token_list(index.pages[line.record].text[slice(*line.span)])))
        for line in transcript.ordered
    ]
    every = set().union(*plain)
    assert {"compen", "sation", "4o12", "café", nz.stem("naïve")} <= every
    for term in sorted(every):
        assert transcript.lines_with(term) == [k for k, held in enumerate(plain) if term in held]
    assert [transcript.terms(k) for k in range(len(plain))] == plain
