"""Paragraphs numbered in brackets, "(1)", "(2)" at a line's start, as declarations and some
agreements number them: a paragraph pin ("Ex. 1 ¶ 2", "QX000001 ¶ 2") finds them. Where the
document numbers its paragraphs otherwise ("1. Scope."), a "(1)" at a line's start is a clause
inside a paragraph, never a paragraph of its own. Documents of invented words (seeded)."""

import random
import string

import pytest

from apps.verification.index import PacketIndex
from tests.verification.packets import findings_by_claim, text_index

SEEDS = range(4)


def _word(rng: random.Random, size: int) -> str:
    return rng.choice(string.ascii_uppercase) + "".join(
        rng.choice(string.ascii_lowercase) for _ in range(size - 1)
    )


def _packet(seed: int) -> tuple[list[str], list[str], PacketIndex]:
    """A declaration of three bracketed paragraphs, each stating an invented fact; and an
    agreement numbering its paragraphs "1." and "2.", with bracketed clauses in paragraph 1."""
    rng = random.Random(seed)  # noqa: S311 (seeded test data)
    verbs = ("ratified", "concealed", "invoiced")
    facts = [f"{_word(rng, 7)} {verb} the {_word(rng, 9)} {_word(rng, 8)}" for verb in verbs]
    declaration = "DECLARATION\n" + "\n".join(f"({n}) {fact}." for n, fact in enumerate(facts, 1))
    clauses = [f"{_word(rng, 8)} inspected the {_word(rng, 9)} racking" for _ in range(2)]
    agreement = (
        f"AGREEMENT\n1. Scope. The parties agree as follows.\n(1) {clauses[0]}.\n"
        f"(2) {clauses[1]}.\n2. Payment. The fee is due within thirty days.\n"
    )
    index = text_index(
        "QX", [("Ex_1_declaration.pdf", [declaration]), ("Ex_2_deal.pdf", [agreement])]
    )
    return facts, clauses, index


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("cite", ["Ex. 1 ¶ {n}", "QX000001 ¶ {n}"])
def test_a_bracketed_paragraph_is_found_by_its_pin(seed: int, cite: str) -> None:
    facts, _, index = _packet(seed)
    n = seed % 3 + 1
    right, wrong = cite.format(n=n), cite.format(n=n % 3 + 1)

    found = findings_by_claim(f"{facts[n - 1]} ({right}).", index, "QX")[right]
    missed = findings_by_claim(f"{facts[n - 1]} ({wrong}).", index, "QX")[wrong]

    assert (found.status, found.check) == ("supported", "record_cite_paragraph"), found.message
    assert missed.status == "unsupported" and f"¶ {n} has it" in missed.message


@pytest.mark.parametrize("seed", SEEDS)
def test_bracketed_clauses_of_a_numbered_paragraph_are_that_paragraph(seed: int) -> None:
    _, clauses, index = _packet(seed)

    found = findings_by_claim(f"{clauses[1]} (Ex. 2 ¶ 1).", index, "QX")["Ex. 2 ¶ 1"]

    assert found.status == "supported", found.message
