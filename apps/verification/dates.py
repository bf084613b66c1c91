"""Dates in the forms lawyers and OCR write them, normalised to ISO 8601.

"March 3, 2024", "Mar. 3, 2024", "3 March 2024", "3rd day of March, 2024", "03/03/2024",
"3/3/24", "2024-03-03" are all "2024-03-03". Numeric dates are read month first (US practice);
a numeric date that is no valid month-first date but is a valid day-first one is read day
first. Pure functions, no Django.
"""

from __future__ import annotations

import datetime
import re

from apps.verification.spans import disjoint_values, whole_value

MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip

_MONTH = (
    r"(?P<{g}>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_ORD = r"(?:st|nd|rd|th)?"
# Spaces: any Unicode whitespace (non-breaking spaces included). OCR may drop or add a space
# around the comma, read the comma as a full stop, or drop the space after "Mar.".
_S = r"\s+"
_COMMA = r"\s*[,.]?\s*"

_PATTERNS = [
    # March 3, 2024 / Mar. 3 2024 / March 3rd, 2024
    re.compile(
        r"(?<![\w])"
        + _MONTH.format(g="m")
        + r"\s*"
        + r"(?P<d>\d{1,2})"
        + _ORD
        + r"(?!\d)"
        + _COMMA
        + r"(?P<y>\d{4})(?!\d)",
        re.IGNORECASE,
    ),
    # 3rd day of March, 2024 / 3 day of March 2024
    re.compile(
        r"(?<![\w])(?P<d>\d{1,2})"
        + _ORD
        + _S
        + r"day"
        + _S
        + r"of"
        + _S
        + _MONTH.format(g="m")
        + _COMMA
        + r"(?P<y>\d{4})(?!\d)",
        re.IGNORECASE,
    ),
    # 3 March 2024 / 3rd of March, 2024 / 03-Mar-2024
    re.compile(
        r"(?<![\w])(?P<d>\d{1,2})"
        + _ORD
        + r"(?:"
        + _S
        + r"of)?(?:\s+|-)"
        + _MONTH.format(g="m")
        + r"(?:"
        + _COMMA
        + r"|-)"
        + r"(?P<y>\d{4})(?!\d)",
        re.IGNORECASE,
    ),
    # 2024-03-03 / 2024/03/03
    re.compile(
        r"(?<![\w/.-])(?P<y>\d{4})(?P<sep>[-/.])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})(?![\w]|[-/]\d)"
    ),
    # 03/03/2024 / 3/3/24 / 03-03-2024 / 03.03.2024
    re.compile(
        r"(?<![\w/.-])(?P<m>\d{1,2})(?P<sep>[/.-])(?P<d>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})"
        r"(?![\w]|[-/]\d)"
    ),
]


def _year(text: str) -> int:
    year = int(text)
    if len(text) == 2:
        year += 2000 if year < 70 else 1900
    return year


def _iso(year: int, month: int, day: int) -> str | None:
    try:
        return datetime.date(year, month, day).isoformat()
    except ValueError:
        return None


def _value(match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    year = _year(groups["y"])
    if not 1000 <= year <= 2999:
        return None
    day = int(groups["d"])
    raw_month = groups["m"]
    if raw_month.isdigit():
        value = _iso(year, int(raw_month), day)
        if value is None and match.re is _PATTERNS[4]:
            # 25/12/2024: there is no month 25, so the date is written day first.
            value = _iso(year, day, int(raw_month))
        return value
    # casefold, not lower: the patterns match case-insensitively, so "\u017feptember" (long s) or
    # other Unicode case variants match and must find their month (lower() keeps the long s).
    month = MONTHS.get(raw_month.casefold()[:3])
    return None if month is None else _iso(year, month, day)


def date_values(text: str) -> list[tuple[int, int, str]]:
    """Every date in `text` as (start, end, ISO date), in order, spans never overlapping."""
    return disjoint_values(_PATTERNS, text, _value)


def parse_date(text: str) -> str | None:
    """The ISO date that `text` is (whole string, surrounding spaces aside), or None."""
    return whole_value(date_values, text)
