"""Dates (to ISO; a year-less one to "--MM-DD") and money amounts (to cents) as claims,
outside every other claim."""

from __future__ import annotations

import re
from collections.abc import Callable

from apps.verification.amounts import amount_values
from apps.verification.claims.base import Claim, Kind, Spans
from apps.verification.dates import context_years, date_values, month_day_values

_SECTION_BEFORE = re.compile(r"\u00a7\u00a7?[ \t\u00a0]*$")


def value_claims(
    text: str,
    plain: str,
    taken: Spans,
    sentence: Callable[[int, int], tuple[int, int]],
) -> list[Claim]:
    """The dates and amounts of `plain` (the draft with odd spaces read as spaces) that overlap
    no span of `taken`; `text` is the draft as written (the claims' text)."""
    claims: list[Claim] = []
    full_dates = date_values(plain)
    values: list[tuple[Kind, list[tuple[int, int, str]]]] = [
        ("date", full_dates),
        ("amount", amount_values(plain)),
    ]
    for kind, found in values:
        for start, end, value in found:
            if kind == "date" and _SECTION_BEFORE.search(plain, max(0, start - 4), start):
                continue  # "O.C.G.A. § 9-11-56(c)": a section's number, not a date
            if not taken.overlaps(start, end):
                span = sentence(start, end)
                claims.append(Claim(kind, start, end, text[start:end], span, value=value))
    # A year-less date ("on November 8"): its year is the one its sentence's full dates give.
    anchors: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for claim in claims:
        if claim.kind == "date" and claim.value is not None:
            anchors.setdefault(claim.sentence, []).append((claim.start, claim.value))
    for start, end, value in month_day_values(plain, full_dates):  # dates read once
        if not taken.overlaps(start, end):
            span = sentence(start, end)
            years = context_years(value, anchors.get(span, []), start)
            claims.append(
                Claim("date", start, end, text[start:end], span, value=value, years=years)
            )
    return claims
