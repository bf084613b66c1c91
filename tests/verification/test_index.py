"""The packet index: Bates look-ups, values per page, the quotable body of a page, quotation
search and opinions, on packets of our own (prefixes, digits and layouts unlike the dev set's)."""

from apps.verification import normalise as nz
from apps.verification.claims import BatesRef
from apps.verification.index import PacketIndex, PageRecord, bates_key, ocr_digits, ocr_read


def page(
    position: int,
    text: str,
    *,
    bates: str | None = None,
    document: int = 1,
    number: int | None = None,
    source: str = "text_layer",
    confidence: float | None = None,
) -> PageRecord:
    return PageRecord(
        position=position,
        document_id=document,
        filename=f"doc-{document}.pdf",
        page_number=number if number is not None else position,
        bates=(bates,) if bates else (),
        text=text,
        source=source,
        ocr_confidence=confidence,
        origin="client",
    )


def packet(*texts: str, prefix: str = "ZQX-", digits: int = 7, start: int = 120) -> PacketIndex:
    return PacketIndex.build(
        [page(i + 1, text, bates=f"{prefix}{start + i:0{digits}d}") for i, text in enumerate(texts)]
    )


def test_bates_labels_resolve_singly_and_as_ranges_with_any_prefix_form() -> None:
    index = packet("one", "two", "three")

    assert [p.text for p in index.pages_for_bates(BatesRef("ZQX-", 121, 121, 7)) or []] == ["two"]
    assert [p.text for p in index.pages_for_bates(BatesRef("ZQX", 120, 122, 7)) or []] == [
        "one",
        "two",
        "three",
    ]
    assert index.pages_for_bates(BatesRef("ZQX-", 121, 123, 7)) is None  # runs past the end
    assert index.pages_for_bates(BatesRef("ZQX-", 119, 119, 7)) is None
    assert index.pages_for_bates(BatesRef("ACME", 120, 120, 7)) is None
    assert index.bates_span("zqx") == ("ZQX-0000120", "ZQX-0000122")
    assert bates_key("ZQX-0000120") == ("ZQX", 120)


def test_a_huge_range_is_refused_without_walking_it() -> None:
    index = packet("one")

    found, missing = index.bates_indexes(BatesRef("ZQX-", 120, 10**12, 7))

    assert found == [0] and missing


def test_dates_and_amounts_of_a_page_are_indexed_in_every_form() -> None:
    index = packet(
        "Signed this 3rd day of March, 2024.\nBalance 12,450.00 as of 04/05/2024.",
        "Paid $869.98 on 2024-03-03.",
    )

    assert list(index.value_pages("date", "2024-03-03")) == [0, 1]
    assert list(index.value_pages("date", "2024-04-05")) == [0]
    assert list(index.value_pages("amount", "1245000")) == [0]  # a figure in a column is money
    assert list(index.value_pages("amount", "86998")) == [1]
    assert list(index.value_pages("amount", "100")) == []
    # A date's month is a word of its page, whatever form the date takes there.
    assert "april" in index.stems[0]


def test_ocr_look_alikes_inside_figures_are_read_as_digits_on_ocr_pages_only() -> None:
    assert ocr_digits("Total $869.9B due 0l/15/2O24") == "Total $869.98 due 01/15/2024"
    assert ocr_digits("SOLD BOB 10 OIL") == "SOLD BOB 10 OIL"
    index = PacketIndex.build(
        [
            page(1, "Total $869.9B due", bates="K1", source="ocr", confidence=60.0),
            page(2, "Total $869.9B due", bates="K2"),
        ]
    )

    assert list(index.value_pages("amount", "86998")) == [0]


def test_running_heads_footers_and_line_numbers_are_not_body() -> None:
    deposition = "\n".join(
        ["ZENITH REPORTING - DEPOSITION OF R. OKAFOR", "Page 14"]
        + [f"{n}   line {n} of the testimony" for n in range(1, 11)]
        + ["Zenith Reporting (555) 010-2000"]
    )
    second = deposition.replace("Page 14", "Page 15").replace("testimony", "answers")
    index = PacketIndex.build([page(1, deposition, bates="D1"), page(2, second, bates="D2")])

    body = index.detail(0).body_words

    assert body[:4] == ["line", "1", "of", "the"]
    assert "zenith" not in body and "14" not in body
    assert body.count("testimony") == 10
    # "1 of the testimony 2 line" is not a passage: line numbers are left out.
    assert index.find_quote([nz.token_list("of the testimony line 2 of the")]) is not None


def test_a_quotation_is_found_across_line_breaks_hyphenation_and_curly_quotes() -> None:
    index = packet(
        "The Tenant\u2019s obligations are non-\ncancellable and the termina-\ntion fee is due.",
        "Nothing here.",
    )

    hit = index.find_quote([nz.token_list("The Tenant's obligations are non-cancellable")])
    assert hit is not None and hit.page.position == 1 and hit.exact
    assert hit.page.text[hit.span[0] : hit.span[1]].startswith("The Tenant\u2019s")
    assert index.find_quote([nz.token_list("the termination fee is due")]) is not None
    assert index.find_quote([nz.token_list("the termination fee is owed")]) is None


def test_ellipsis_segments_must_stand_in_order_on_one_page() -> None:
    index = packet("alpha beta gamma delta epsilon zeta", "eta theta iota")

    assert index.find_quote([["alpha", "beta"], ["epsilon", "zeta"]]) is not None
    assert index.find_quote([["epsilon", "zeta"], ["alpha", "beta"]]) is None
    assert index.find_quote([["alpha", "beta"], ["eta", "theta"]]) is None


def test_an_ocr_page_tolerates_one_slip_in_a_long_word_but_not_in_a_number() -> None:
    index = PacketIndex.build(
        [page(1, "I still have like 9k left after the truck purchse fell through.", bates="T1",
              source="ocr", confidence=81.0)]
    )  # fmt: skip

    hit = index.find_quote([nz.token_list("the truck purchase fell through")])
    assert hit is not None and not hit.exact
    assert index.find_quote([nz.token_list("I still have like 19k left")]) is None


def test_a_bar_standing_alone_on_an_ocr_page_is_read_as_i() -> None:
    index = PacketIndex.build(
        [page(1, "| had to use some of it for my car payments and rent.", bates="T1",
              source="ocr", confidence=94.0)]
    )  # fmt: skip

    assert index.find_quote([nz.token_list("I had to use some of it for my car")]) is not None


def test_the_closest_passage_of_a_misquote_is_named() -> None:
    index = packet(
        "Service was fully restored after a failed database migration was rolled back.",
        "Unrelated words about invoices and payment terms.",
    )
    words = nz.token_list("Service was fully restored after a faulty database migration was")

    hit = index.closest_passage(words)

    assert hit is not None and hit.page.position == 1 and 0.8 < hit.ratio < 1
    assert hit.page.text[hit.span[0] : hit.span[1]].startswith("Service was fully restored")


def test_an_opinion_maps_each_pdf_page_to_its_printed_reporter_page() -> None:
    head = "Orrin Mills, Inc. v. Falk, 77 N.W.3d 310 (Minn. 2019)"
    pages = [
        page(1, "Cover letter", bates="P1", document=1),
        page(2, f"{head}\n310\nORRIN MILLS, INC. v. FALK\nOpinion text.", bates="P2", document=2,
             number=1),
        page(3, f"{head}\n311\nMore reasoning.", bates="P3", document=2, number=2),
        page(4, f"{head}\nThe page number was lost here.", bates="P4", document=2, number=3),
    ]  # fmt: skip
    index = PacketIndex.build(pages)

    opinion = index.opinion("77", "N.W.3d", "310")

    assert opinion is not None
    assert {n: p.bates[0] for n, p in opinion.pages.items()} == {310: "P2", 311: "P3", 312: "P4"}
    assert index.opinion("77", "N.W.3d", "311") is None  # not where it starts
    assert index.opinion("78", "N.W.3d", "310") is None


def test_an_empty_packet_and_pages_without_text_index_cleanly() -> None:
    empty = PacketIndex.build([])
    assert empty.pages_for_bates(BatesRef("A", 1, 1, 6)) is None
    assert empty.find_quote([["any", "words"]]) is None

    blank = PacketIndex.build([page(1, "", bates="B000001", source="none")])
    assert blank.pages_for_bates(BatesRef("B", 1, 1, 6)) is not None
    assert blank.detail(0).words == []
    assert blank.closest_passage(["a", "b"]) is None


PAGE_TEXTS = [
    "Lease of 3 March 2024.\nNon-cancel-\n  lable terms; Borrower's “covenants” — breached.",
    "Paid $12,450.00 (USD 12,450) on 03/03/2024;\u00a0balance 216,000.00, 869.98 and 1,2345.",
    "2O23-11-O8 | swear the 3rd day of March, 2024 and Sept. 3, 2024; 25/12/2024 x.",
    "word" * 40 + "1,234.56" + "x" * 90 + " 12 dollars and 7 USD, 5 us dollars",
    "",
    "   \n\n\t",
]


def test_a_pages_words_and_values_are_those_of_reading_its_whole_text() -> None:
    from apps.verification import amounts, dates
    from apps.verification.index import _page_values, _page_words

    for text in PAGE_TEXTS:
        assert _page_words(text) == set(nz.raw_words(text)), text
        found_dates, found_amounts = _page_values(text)
        assert [(v.start, v.end, v.value) for v in found_dates] == dates.date_values(text), text
        # Every amount of the parser is among the page's (which adds bare figures).
        assert set(amounts.amount_values(text)) <= {
            (v.start, v.end, v.value) for v in found_amounts
        }, text


def test_an_ocr_bar_after_an_opening_quotation_mark_or_bracket_is_the_pronoun_i() -> None:
    assert ocr_read('He said "| swear it" twice') == 'He said "I swear it" twice'
    assert ocr_read("\u201c| swear\u201d and (| was)") == "\u201cI swear\u201d and (I was)"
    # Not a pronoun: a bar inside a word, doubled, or closing one.
    assert ocr_read("x|y a|| b cost|") == "x|y a|| b cost|"


def test_what_the_checks_derive_from_a_packet_is_made_once_per_index_and_key() -> None:
    """`derived` keeps a check's reading of a document for every later claim of the run (a
    brief pins one opinion many times), per index: another index reads its own pages again."""
    page = PageRecord(1, 1, "a.pdf", 1, ("A1",), "text", "text_layer", None, "client")
    made: list[str] = []

    def make(name: str) -> str:
        made.append(name)
        return name.upper()

    first, second = PacketIndex.build([page]), PacketIndex.build([page])
    assert [first.derived(("lines", 1), lambda: make("one")) for _ in range(3)] == ["ONE"] * 3
    assert first.derived(("lines", 2), lambda: make("two")) == "TWO"
    assert second.derived(("lines", 1), lambda: make("again")) == "AGAIN"
    assert made == ["one", "two", "again"]
