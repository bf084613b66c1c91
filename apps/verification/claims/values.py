"""Dates (to ISO) and money amounts (to cents) as claims, outside every other claim."""

from __future__ import annotations

from collections.abc import Callable

from apps.verification.amounts import amount_values
from apps.verification.claims.base import Claim, Kind, Spans
from apps.verification.dates import date_values


def value_claims(
    text: str,
    plain: str,
    taken: Spans,
    sentence: Callable[[int, int], tuple[int, int]],
) -> list[Claim]:
    """The dates and amounts of `plain` (the draft with odd spaces read as spaces) that overlap
    no span of `taken`; `text` is the draft as written (the claims' text)."""
    claims: list[Claim] = []
    values: list[tuple[Kind, list[tuple[int, int, str]]]] = [
        ("date", date_values(plain)),
        ("amount", amount_values(plain)),
    ]
    for kind, found in values:
        for start, end, value in found:
            if not taken.overlaps(start, end):
                span = sentence(start, end)
                claims.append(Claim(kind, start, end, text[start:end], span, value=value))
    return claims
