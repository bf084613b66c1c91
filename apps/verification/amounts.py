"""Money amounts normalised to whole cents.

"$12,450.00", "$ 12,450", "USD 12,450", "US$12,450", "12,450.00 dollars", "12,450 USD" are all
"1245000"; "$1.2 million" is "120000000". Pure functions, no Django.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from apps.verification.spans import disjoint_values, whole_value

_NUMBER = r"(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d+(?:\.\d{1,2})?|\.\d{1,2})"
_SCALE = r"(?:\s*(?P<scale>million|billion|thousand|mm|bn|[mMkKbB])(?![A-Za-z]))?"
_SCALES = {"thousand": 3, "k": 3, "million": 6, "m": 6, "mm": 6, "billion": 9, "bn": 9, "b": 9}

_PATTERNS = [
    # $12,450.00 / $ 12,450 / US$12,450 / USD 12,450 / USD$12,450 / $1.2 million
    re.compile(
        r"(?<![\w$])(?:(?:US|USD)\s?\$|\$|USD\s?)\s?" + _NUMBER + r"(?!\d|,\d|\.\d)" + _SCALE,
    ),
    # 12,450.00 dollars / 12,450 USD / 1.2 million dollars
    re.compile(
        r"(?<![\w$.,])" + _NUMBER + _SCALE + r"\s+(?:U\.?S\.?\s+)?(?:dollars|USD)(?![A-Za-z])",
        re.IGNORECASE,
    ),
]


def _cents(number: str, scale: str | None) -> str | None:
    try:
        value = Decimal(number.replace(",", ""))
    except InvalidOperation:
        return None
    if scale:
        value = value.scaleb(_SCALES[scale.lower()])
    cents = value * 100
    if cents != cents.to_integral_value():
        return None
    return str(int(cents))


def amount_values(text: str) -> list[tuple[int, int, str]]:
    """Every money amount in `text` as (start, end, cents), in order, spans never overlapping."""
    return disjoint_values(_PATTERNS, text, lambda m: _cents(m.group("n"), m.group("scale")))


def parse_amount(text: str) -> str | None:
    """The cents that `text` is (whole string, surrounding spaces aside), or None."""
    return whole_value(amount_values, text)
