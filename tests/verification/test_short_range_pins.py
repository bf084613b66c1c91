"""Pin cites with a short page range (Bluebook rule 3.2(a): "1194-95", the repeated leading
digits dropped; drafters also write "41-3", and the California Style Manual "at pp. 640-41"):
the range's end takes the start's leading digits (41-3 -> 41-43, 640-41 -> 640-641), and the
proposition holds on any page of the range, as on record cites' pages so on an opinion's.
Generated documents of invented words (seeded), never an evaluation's sentences."""

import random
import string

import pytest

from apps.verification.checks import Finding
from apps.verification.paragraphs import page_numbers, range_end
from tests.verification import test_footnote_and_california_pins as opinions
from tests.verification.packets import findings_by_claim, text_index

SEEDS = range(4)
FILLER = "The parties met and conferred on scheduling."


def _word(rng: random.Random, size: int) -> str:
    return rng.choice(string.ascii_uppercase) + "".join(
        rng.choice(string.ascii_lowercase) for _ in range(size - 1)
    )


@pytest.mark.parametrize(
    ("pin", "pages"),
    [
        ("at 41-3", [41, 42, 43]),
        ("at 41-43", [41, 42, 43]),
        ("pp. 640-41", [640, 641]),
        ("at 1045-46", [1045, 1046]),
        ("p. 98-9", [98, 99]),
        ("at 7", [7]),
        ("at 41-39", [41]),  # an end before the start names the start alone
    ],
)
def test_a_short_range_ends_with_the_starts_leading_digits(pin: str, pages: list[int]) -> None:
    assert page_numbers([pin]) == pages


def test_range_end() -> None:
    assert (range_end("41", "3"), range_end("640", "41"), range_end("9", "12")) == (43, 641, 12)


class Long:
    """Documents Ex. 1 and Ex. 2 (two pages each) and Ex. 3 of `length` pages; one page of Ex. 3
    (its page `fact_page`) states an invented fact."""

    def __init__(self, seed: int, length: int, fact_page: int) -> None:
        rng = random.Random(seed)  # noqa: S311 (seeded test data)
        self.fact = f"{_word(rng, 7)} ratified the {_word(rng, 9)} {_word(rng, 8).lower()}"
        pages = [f"SUBCONTRACT\n{FILLER}" for _ in range(length)]
        pages[fact_page - 1] = f"SUBCONTRACT\n{self.fact} at the loading dock."
        letters = [f"LETTER\n{FILLER}", f"LETTER (continued)\n{FILLER}"]
        self.index = text_index(
            "QX",
            [("Ex_1_letter.pdf", letters), ("Ex_2_notes.pdf", letters), ("Ex_3_sub.pdf", pages)],
        )

    def finding(self, text: str, cite: str) -> Finding:
        found = findings_by_claim(text, self.index, "QX")
        assert cite in found, list(found)
        return found[cite]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("written", ["Ex. 3 at 41-3", "Ex. 3, pp. 41-3", "Ex. 3 at 41-43"])
def test_a_record_pin_range_holds_the_fact_on_any_of_its_pages(seed: int, written: str) -> None:
    packet = Long(seed, 45, 42 + seed % 2)  # the fact on page 42 or 43

    finding = packet.finding(f"{packet.fact} ({written}).", written)

    assert finding.status == "supported", finding.message


@pytest.mark.parametrize("seed", SEEDS)
def test_a_short_range_past_the_documents_end_names_the_missing_page(seed: int) -> None:
    packet = Long(seed, 42, 41)  # no page 43

    finding = packet.finding(f"{packet.fact} (Ex. 3 at 41-3).", "Ex. 3 at 41-3")

    assert finding.status == "unsupported"
    assert "no page 43" in finding.message


@pytest.mark.parametrize("seed", SEEDS)
def test_a_short_range_that_misses_the_fact_is_wrong(seed: int) -> None:
    packet = Long(seed, 45, 44)

    finding = packet.finding(f"{packet.fact} (Ex. 3 at 41-3).", "Ex. 3 at 41-3")

    assert finding.status == "unsupported"
    assert "QX000048" in finding.message  # page 44 of Ex. 3 (the packet's 48th page)


@pytest.mark.parametrize("seed", SEEDS)
def test_an_id_range_after_a_bates_cite_reads_the_documents_pages(seed: int) -> None:
    packet = Long(seed, 45, 43)

    finding = packet.finding(f"A rule (QX000045). {packet.fact}. Id. at 41-3.", "Id. at 41-3")

    assert finding.status == "supported", finding.message
    assert "page 41-43 of Ex_3_sub.pdf" in finding.message


# -- case pins: the same ranges on an opinion's reporter pages -------------------------------

REMEDY = "Suppression is the remedy for the unlawful search of the glovebox. "


@pytest.mark.parametrize(
    "cite",
    [
        "People v. Smith (2019) 7 Cal.5th 100, 101-2.",
        "(People v. Smith (2019) 7 Cal.5th 100, at pp. 101-02.)",
    ],
)
def test_a_case_pin_range_names_the_page_that_carries_the_proposition(cite: str) -> None:
    finding = opinions._cite(REMEDY + cite, cite[:7])

    assert finding.status == "supported", finding.message
    assert "page 102 carries" in finding.message


def test_a_case_pin_short_range_that_misses_the_proposition_is_wrong() -> None:
    finding = opinions._cite(REMEDY + "People v. Smith (2019) 7 Cal.5th 100, 100-1.", "People")

    assert finding.status == "unsupported"
    assert "page 102 does" in finding.message
