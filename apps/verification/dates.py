"""Dates in the forms lawyers and OCR write them, normalised to ISO 8601.

"March 3, 2024", "Mar. 3, 2024", "3 March 2024", "3rd day of March, 2024", "03/03/2024",
"3/3/24", "2024-03-03", and with the day in words "the third of March, 2024", "the third day
of March 2024", "March third, 2024", are all "2024-03-03"; without a year ("March 3", "the
third of March", "March the third") a month and day, "--03-03".

Numeric dates are read in the deployment's order, `LEXWEB_DATE_ORDER`: "mdy" (the default, US
practice: "3/7/24" is March 7, 2024) or "dmy" ("3/7/24" is 3 July 2024); a numeric date that
is no valid date in that order but is one in the other is read in the other ("25/12/2024").
A packet document that tells its own order (`document_order`) has its dates read in it.
`reading` says which reading a finding took. Pure functions, no Django: the verification app
points `date_order` at the setting when it starts (`read_order_from`).
"""

from __future__ import annotations

import bisect
import datetime
import re
from collections.abc import Callable, Collection, Iterable, Sequence

from apps.verification import numwords
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
# The same, where a transcript's line ends inside the date and the next line's number stands
# before the year ("April 22,\n 5  2021"; the comma marks the year to come).
_COMMA_OR_LINE = r"(?:\s*,[ \t]*\n[ \t]*\d{1,2}[ \t]+|\s*[,.]?\s*)"

# A year in words, as testimony, deeds and formal notices write it (issue 28 req 4): "two
# thousand seven", "two thousand and twenty-three", "nineteen ninety-nine", "twenty
# twenty-three", "nineteen oh five", "nineteen hundred and five". Its words may be split by a
# transcript's line number, like the other words of a date. Read by `_year_in_words`.
_YW_GAP = numwords.GAP  # a line may end inside it
_YW_UNIT = "(?:" + "|".join(word for word, value in numwords.UNITS.items() if value) + ")"
_YW_TEEN = "(?:" + "|".join(numwords.TEENS) + ")"
_YW_TENS = "(?:" + "|".join(numwords.TENS) + ")"
# 10 to 99: a teen, or a tens word with or without a unit ("ninety-nine", "ninety nine").
_YW_TEN_TO_99 = rf"(?:{_YW_TEEN}|{_YW_TENS}(?:(?:-|{_YW_GAP}){_YW_UNIT}(?![\w-]))?)"
_YW_BELOW_100 = rf"(?:{_YW_TEN_TO_99}|{_YW_UNIT})"
_YEAR_WORDS = (
    r"(?P<yw>(?>"  # atomic: the longest reading stands or falls whole (no "two thousand" of
    # "two thousand seven hundred")
    rf"(?:one|two){_YW_GAP}thousand(?:(?:{_YW_GAP}and)?{_YW_GAP}{_YW_BELOW_100})?"
    rf"|(?:{_YW_TEEN}|twenty){_YW_GAP}"
    rf"(?:hundred(?:(?:{_YW_GAP}and)?{_YW_GAP}{_YW_BELOW_100})?"
    rf"|o[h]?(?:-|{_YW_GAP}){_YW_UNIT}"
    rf"|{_YW_TEN_TO_99})"
    r"))(?![\w-])"
    # A number that goes on ("two thousand seven hundred dollars") is no year.
    rf"(?!{_YW_GAP}(?:and{_YW_GAP})?(?:{'|'.join(['hundred', *numwords.SCALES, 'point'])})\b)"
)
# Where a date ends with its year: in digits, or in words.
_YEAR = r"(?:(?P<y>\d{4})(?!\d)|" + _YEAR_WORDS + ")"

# Each pattern looks first at the one character a date can start with (a digit, or a month's or
# an ordinal's first letter): the rest is tried only there, not at every character of a page.
_PATTERNS = [
    # March 3, 2024 / Mar. 3 2024 / March 3rd, 2024; a transcript's line may end after the
    # month, its next line's number before the day ("on June\n 5  9, 2023": June 9)
    re.compile(
        r"(?=[adfjmnos])(?<![\w])"
        + _MONTH.format(g="m")
        + r"(?:[ \t]*\n[ \t]*\d{1,2}[ \t]+|\s*)"
        + r"(?P<d>\d{1,2})"
        + _ORD
        + r"(?!\d)"
        + _COMMA_OR_LINE
        + _YEAR,
        re.IGNORECASE,
    ),
    # 3rd day of March, 2024 / 3 day of March 2024
    re.compile(
        r"(?=\d)(?<![\w])(?P<d>\d{1,2})"
        + _ORD
        + _S
        + r"day"
        + _S
        + r"of"
        + _S
        + _MONTH.format(g="m")
        + _COMMA
        + _YEAR,
        re.IGNORECASE,
    ),
    # 3 March 2024 / 3rd of March, 2024 / 03-Mar-2024 / 28. August 2023 (the day's ordinal
    # stop, as German and Scandinavian e-mail headers write it)
    re.compile(
        r"(?=\d)(?<![\w])(?P<d>\d{1,2})"
        + r"(?:st|nd|rd|th|\.(?=[ \t][A-Z]))?"
        + r"(?:"
        + _S
        + r"of)?(?:\s+|-)"
        + _MONTH.format(g="m")
        + r"(?:"
        + _COMMA
        + r"|-)"
        + _YEAR,
        re.IGNORECASE,
    ),
    # 2024-03-03 / 2024/03/03, and ISO 8601's date and time, 2024-03-03T23:47:05Z (the date)
    re.compile(
        r"(?=\d)(?<![\w/.-])(?P<y>\d{4})(?P<sep>[-/.])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})"
        r"(?:(?=T\d{2}:\d{2})|(?![\w]|[-/]\d))"
    ),
    # 03/03/2024 / 3/3/24 / 03-03-2024 / 03.03.2024
    re.compile(
        r"(?=\d)(?<![\w/.-])(?P<m>\d{1,2})(?P<sep>[/.-])(?P<d>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})"
        r"(?![\w]|[-/]\d)"
    ),
]


# Days as ordinal words ("the second of April, 2007", "April second, 2007", "the nineteenth
# day of October, 2023"): a tens word and a unit joined by a hyphen or a space, or by a hyphen
# ending a line, over a transcript's line number too ("the twenty-\nseventh of June": the hyphen
# is the word's own).
_ORDINAL_UNITS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9,
}  # fmt: skip
_ORDINAL_DAYS = {
    **_ORDINAL_UNITS,
    "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14,
    "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19,
    "twentieth": 20, "thirtieth": 30,
}  # fmt: skip
_ORDINAL_WORD = (
    r"(?P<dw>(?:twenty|thirty)(?:-[ \t]*\n[ \t]*(?:\d{1,2}[ \t]+)?|[-\s])"
    r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)"
    r"|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
    r"|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth"
    r"|thirtieth)"
)
# Between the words of a date: spaces, or a line break and the next line's number where a
# transcript numbers its lines ("on the\n 5  nineteenth of June, 2021").
_GAP = r"(?:[ \t]*\n[ \t]*\d{1,2}[ \t]+|\s+)"
_WORD_PATTERNS = [
    # the second of April, 2007 / second day of April 2007 / the nineteenth day of October, 2023
    re.compile(
        r"(?=[efnst])(?<![\w-])"
        + _ORDINAL_WORD
        + rf"{_GAP}(?:day{_GAP})?of{_GAP}"
        + _MONTH.format(g="m")
        + r"(?:\s*,\s*|"
        + _GAP
        + r")"
        + _YEAR,
        re.IGNORECASE,
    ),
    # April second, 2007 / April the second, 2007
    re.compile(
        r"(?=[adfjmnos])(?<![\w])"
        + _MONTH.format(g="m")
        + rf"{_GAP}(?:the{_GAP})?"
        + _ORDINAL_WORD
        + r"(?:\s*,\s*|"
        + _GAP
        + r")"
        + _YEAR,
        re.IGNORECASE,
    ),
]


# A day in words first: in a transcript a line's number may stand before the month ("the
# second of\n 7  April, 2007" is April 2, not April 7).
_ALL_PATTERNS = _WORD_PATTERNS + _PATTERNS


def _ordinal_day(words: str) -> int | None:
    """The day an ordinal written in words names ("twenty-first" 21), or None."""
    parts = re.split(r"[-\s]+", words.casefold())
    if len(parts) == 1:
        return _ORDINAL_DAYS.get(parts[0])
    tens = {"twenty": 20, "thirty": 30}.get(parts[0])
    unit = _ORDINAL_UNITS.get(parts[-1])
    return None if tens is None or unit is None else tens + unit


def _year(text: str) -> int:
    year = int(text)
    if len(text) == 2:
        year += 2000 if year < 70 else 1900
    return year


def _year_in_words(text: str) -> int:
    """The year `_YEAR_WORDS` matched ("two thousand and seven" 2007, "nineteen ninety-nine"
    1999, "twenty oh five" 2005, "nineteen hundred" 1900); 0 (no year) if it reads as none.
    A transcript's line number between its words is no part of it."""
    words = numwords.words_of(text)
    if "thousand" in words:
        value = numwords.parse_words(words)
        return int(value) if value is not None and value == int(value) else 0
    century = numwords.parse_words(words[:1])
    rest = words[1:]
    if century is None or not rest:
        return 0
    if rest[0] == "hundred":
        tail = rest[2:] if rest[1:2] == ["and"] else rest[1:]
        below = numwords.parse_words(tail) if tail else 0
    elif rest[0] in ("o", "oh"):
        below = numwords.parse_words(rest[1:])
    else:
        below = numwords.parse_words(rest)
        if below is not None and below < 10:
            return 0  # "nineteen five" is no year anyone writes
    if below is None or not 0 <= below < 100:
        return 0
    return int(century) * 100 + int(below)


def _iso(year: int, month: int, day: int) -> str | None:
    try:
        return datetime.date(year, month, day).isoformat()
    except ValueError:
        return None


DATE_ORDERS = ("mdy", "dmy")


def _default_order() -> str:
    return "mdy"


_order_source: Callable[[], str] = _default_order


def read_order_from(source: Callable[[], str]) -> None:
    """Where `date_order` reads the order: the verification app points it at Django's
    settings (`LEXWEB_DATE_ORDER`) when it starts; this module imports no Django."""
    global _order_source
    _order_source = source


def date_order() -> str:
    """The order numeric dates are read in ("mdy" or "dmy"; "mdy" before the app starts)."""
    order = _order_source()
    return order if order in DATE_ORDERS else "mdy"


def _value(match: re.Match[str], order: str = "mdy") -> str | None:
    groups = match.groupdict()
    year = _year(groups["y"]) if groups.get("y") is not None else _year_in_words(groups["yw"])
    if not 1000 <= year <= 2999:
        return None
    day = int(groups["d"]) if groups.get("d") is not None else _ordinal_day(groups["dw"])
    if day is None:
        return None
    raw_month = groups["m"]
    if raw_month.isdigit():
        first = int(raw_month)
        if order == "dmy" and match.re is _PATTERNS[4]:
            first, day = day, first  # the first number is the day
        value = _iso(year, first, day)
        if value is None and match.re is _PATTERNS[4]:
            # 25/12/2024 (month first): there is no month 25, so the date is written day first.
            value = _iso(year, day, first)
        return value
    # casefold, not lower: the patterns match case-insensitively, so "\u017feptember" (long s) or
    # other Unicode case variants match and must find their month (lower() keeps the long s).
    month = MONTHS.get(raw_month.casefold()[:3])
    return None if month is None else _iso(year, month, day)


def date_values(text: str, order: str | None = None) -> list[tuple[int, int, str]]:
    """Every date in `text` as (start, end, ISO date), in order, spans never overlapping.
    Numeric dates are read in `order` ("mdy" or "dmy"; None: `date_order()`)."""
    read = order or date_order()
    return disjoint_values(_ALL_PATTERNS, text, lambda match: _value(match, read))


_NUMERIC = re.compile(r"\s*(\d{1,2})[/.-](\d{1,2})[/.-](\d{2}|\d{4})\s*")
# A document's own numeric dates (same separator twice, a year of four digits) and the format
# it declares ("dd/mm/yyyy", "MM-DD-YYYY"): what decides the order of its ambiguous dates.
# (each pattern starts with the characters it needs, so that it is tried at few places; what
# stands before a match is checked after it)
_WRITTEN = re.compile(r"(\d{1,2})([/.-])(\d{1,2})\2(?:1[6-9]|2\d)\d\d(?![\d/.-]*\d)")
_DECLARED = re.compile(r"([dDmM])\1([/.-])([dDmM])\3\2[yY]{2}(?:[yY]{2})?(?![A-Za-z])")


def document_order(texts: Iterable[str]) -> str | None:
    """The order a document writes its numeric dates in, where its own pages tell: "dmy"
    where it declares "dd/mm/yyyy" or writes a date only day first can be ("28/08/2023"), or
    in the dotted form of the countries that write the day first ("09.10.2023"), and never
    one only month first can be; "mdy" the other way round; None where nothing tells or both
    do (then the deployment's `date_order` reads them). A document keeps one convention: its
    "03/07/2023" is 3 July where its "28/08/2023" is 28 August."""
    day_first = month_first = 0
    for text in texts:
        for declared in _DECLARED.finditer(text):
            start = declared.start()
            if start and text[start - 1].isalpha():
                continue
            first_letter, second_letter = declared.group(1).lower(), declared.group(3).lower()
            if first_letter != second_letter:
                if first_letter == "d":
                    day_first += 1
                else:
                    month_first += 1
        for written in _WRITTEN.finditer(text):
            start = written.start()
            if start and text[start - 1] in "0123456789/.-":
                continue
            first, second = int(written.group(1)), int(written.group(3))
            if first > 12 >= second >= 1 or (written.group(2) == "." and second <= 12):
                day_first += 1
            elif second > 12 >= first >= 1:
                month_first += 1
    if day_first and not month_first:
        return "dmy"
    if month_first and not day_first:
        return "mdy"
    return None


def ambiguous(text: str) -> bool:
    """Whether `text` is a numeric date whose numbers could each be the month ("03/07/2023")."""
    numeric = _NUMERIC.fullmatch(text)
    if numeric is None:
        return False
    first, second = int(numeric.group(1)), int(numeric.group(2))
    return first <= 12 and second <= 12 and first != second


def reading(text: str, value: str, order: str | None = None, *, why: str | None = None) -> str:
    """Which reading of a date as written (`text`) gave `value`, where it could have been read
    otherwise: "" for an unambiguous date in figures with its month in words or a four-digit
    year first; else "read as April 2, 2007" and, for a numeric date whose numbers could each
    be the month, which came first and why (`why`, where not the deployment's setting)."""
    if is_month_day(value) or len(value) != 10:
        return ""
    shown = f"{_MONTH_NAMES[int(value[5:7])]} {int(value[8:])}, {value[:4]}"
    numeric = _NUMERIC.fullmatch(text)
    if numeric is None:
        if re.search(r"\d", text) and not _ORDINAL_HINT.search(text):
            return ""
        return f"read as {shown}"
    first, second = int(numeric.group(1)), int(numeric.group(2))
    read = order or date_order()
    two_digit = " (a two-digit year)" if len(numeric.group(3)) == 2 else ""
    if first <= 12 and second <= 12 and first != second:
        which = "month" if read == "mdy" else "day"
        because = why or f"as LEXWEB_DATE_ORDER={read} says"
        return f"read as {shown}{two_digit}: {which} first, {because}"
    if first > 12 or second > 12:
        which = "day" if first > 12 else "month"
        return f"read as {shown}{two_digit}: {which} first, the only reading with a month"
    return f"read as {shown}{two_digit}" if two_digit else ""


_MONTH_NAMES = (
    "", "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_ORDINAL_HINT = re.compile(r"(?:st|nd|rd|th)\b", re.IGNORECASE)


def parse_date(text: str) -> str | None:
    """The ISO date that `text` is (whole string, surrounding spaces aside), or None."""
    return whole_value(date_values, text)


# Year-less dates: "November 8", "Oct. 11th", "8 November", "the 3rd day of March". The month
# is a word (never the modal "may": a month name is capitalised, or the whole name is in
# capitals), and no year follows (a following year makes it a full date, found first).
_MONTH_WORD = (
    r"(?P<m>(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
    r"|(?:JAN(?:UARY)?|FEB(?:RUARY)?|MAR(?:CH)?|APR(?:IL)?|MAY|JUNE?|JULY?|AUG(?:UST)?"
    r"|SEP(?:T(?:EMBER)?)?|OCT(?:OBER)?|NOV(?:EMBER)?|DEC(?:EMBER)?))"
)
_NO_YEAR_AFTER = r"(?!\d|[ \t]*[,.]?[ \t]*(?:\d{4}|'\d\d)(?!\d)|/\d|-\d{4})"
_INTRODUCERS = "on by from to until till since before after of the and or through between"
_INTRODUCED = "|".join(
    rf"(?<=\b{w}\s)" for word in _INTRODUCERS.split(" ") for w in (word, word.capitalize())
)
_OF = r"(?:st|nd|rd|th)?[ \t]+(?:day[ \t]+of[ \t]+|of[ \t]+)?"
_MONTH_DAY_PATTERNS = [
    # November 8 / Oct. 11th / Aug 27
    re.compile(
        r"(?=[ADFJMNOS])(?<![\w.])"
        + _MONTH_WORD
        + r"(?:\.?[ \t]+|\.)(?P<d>\d{1,2})(?:st|nd|rd|th)?(?![\w])"
        + _NO_YEAR_AFTER
    ),
    # 8 November / 3rd of March / 3rd day of March: after a word that introduces a date or at
    # the start of a line or clause, never after a label ("Section 12 May ...").
    # (The lookahead first: the lookbehinds are tried only where a day and a capital stand.)
    re.compile(
        rf"(?=\d{{1,2}}{_OF}[A-Z])"
        + r"(?:^|(?<=[(\[])|(?<=[(\[,;:\n]\s)|(?<=\n)|"
        + _INTRODUCED
        + rf")(?P<d>\d{{1,2}}){_OF}"
        + _MONTH_WORD
        + r"\b"
        + _NO_YEAR_AFTER
    ),
    *(
        _WORD_MONTH_DAY_PATTERNS := [
            # the second of April / second day of April (no year after)
            re.compile(
                r"(?=(?i:[efnst]))(?<![\w-])(?i:"
                + _ORDINAL_WORD
                + r")(?:[ \t]+(?i:day))?[ \t]+(?i:of)[ \t]+"
                + _MONTH_WORD
                + r"(?![\w-])"
                + _NO_YEAR_AFTER
            ),
            # April second / April the second (no year after)
            re.compile(
                r"(?=[ADFJMNOS])(?<![\w.])"
                + _MONTH_WORD
                + r"[ \t]+(?:the[ \t]+)?(?i:"
                + _ORDINAL_WORD
                + r")(?![\w-])"
                + _NO_YEAR_AFTER
            ),
        ]
    ),
]
# What a year-less date in words needs (a quick look before reading a page for them): one of
# these words, as `normalise.raw_words` finds them (lowercased; "twenty-first" is one word).
_ORDINAL_STEMS = (
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
    "tenth", "eleventh", "twelfth", "teenth", "tieth",
)  # fmt: skip
ORDINAL_WORDS = frozenset(
    [*_ORDINAL_DAYS]
    + [f"{tens}-{unit}" for tens in ("twenty", "thirty") for unit in _ORDINAL_UNITS]
)


def _month_day(match: re.Match[str]) -> str | None:
    month = MONTHS.get(match.group("m").casefold()[:3])
    groups = match.groupdict()
    day = int(groups["d"]) if groups.get("d") is not None else _ordinal_day(groups["dw"])
    if month is None or day is None or _iso(2000, month, day) is None:  # 2000: Feb 29 is a day
        return None
    return f"--{month:02d}-{day:02d}"


def month_day_values(
    text: str, full: Sequence[tuple[int, int, str]] | None = None
) -> list[tuple[int, int, str]]:
    """Every year-less date of `text` as (start, end, "--MM-DD"), in order, never overlapping
    a full date (`full`: `date_values(text)`, read when not given) or each other. The value is
    ISO 8601's form of a month and day without a year."""
    if full is None:
        full = date_values(text)
    starts = [a for a, _, _ in full]  # sorted and disjoint (date_values)
    ends = [b for _, b, _ in full]

    def free(start: int, end: int) -> bool:
        at = bisect.bisect_left(starts, end)  # the full dates starting before `end`
        return at == 0 or ends[at - 1] <= start

    return [v for v in disjoint_values(_MONTH_DAY_PATTERNS, text, _month_day) if free(v[0], v[1])]


def word_date_values(
    text: str, taken: Sequence[tuple[int, int, str]] = (), words: Collection[str] | None = None
) -> list[tuple[int, int, str]]:
    """The dates with the day in words in `text` that overlap no span of `taken`, in order:
    whole ones ("the second of April, two thousand seven", "April second, 2007") as
    `date_values` gives them, then the year-less ones ("the second of April", "April the
    second") as `month_day_values` does, overlapping neither. A page's reader looks for dates
    only around its figures; these may have none. Quick where there is no ordinal word (most
    pages): `words` (the text's words, lowercased, when the caller has them) or a substring
    look first."""
    if words is not None:
        # A day broken at a line's end is one word of the page ("twenty-\nninth").
        if ORDINAL_WORDS.isdisjoint(words) and not any(
            "\n" in word and word.endswith(_ORDINAL_STEMS) for word in words
        ):
            return []
    elif not any(stem in text.lower() for stem in _ORDINAL_STEMS):
        return []
    order = date_order()
    spans = sorted(taken)

    def free(value: tuple[int, int, str]) -> bool:
        return not any(value[0] < b and value[1] > a for a, b, _ in spans)

    whole = [
        v for v in disjoint_values(_WORD_PATTERNS, text, lambda m: _value(m, order)) if free(v)
    ]
    spans = sorted([*spans, *whole])
    year_less = [v for v in disjoint_values(_WORD_MONTH_DAY_PATTERNS, text, _month_day) if free(v)]
    return sorted([*whole, *year_less])


def is_month_day(value: str | None) -> bool:
    """Whether a date value is a month and day without a year ("--11-08")."""
    return value is not None and value.startswith("--")


def same_day(wanted: str, found: str, years: Collection[int] = ()) -> bool:
    """Whether a date on a page (`found`, ISO or "--MM-DD") is the draft's date (`wanted`).

    A full date is only itself. A year-less date is any date of that month and day; `years`
    (what the sentence's full dates make likely, `context_years`) narrows it to those years,
    where the page's date has one."""
    if wanted == found:
        return True
    if not is_month_day(wanted) or found[-6:] != wanted[-6:]:
        return False
    if not years or is_month_day(found):
        return True
    return found[:4].isdigit() and int(found[:4]) in years


HALF_YEAR = 183  # days: how far across a year end a year-less date may run from its anchor


def context_years(month_day: str, anchors: Sequence[tuple[int, str]], at: int) -> tuple[int, ...]:
    """The years a year-less date at offset `at` may be in, from the full dates of its sentence
    (`anchors`: offset, ISO date), or () when they give none (none, or of several years).

    The nearest anchor's year; and across a year end, where a narration runs on: "from December
    20, 2023 to January 5" may mean January 5, 2024 (written after its anchor, within half a
    year after it), and "from December 20 to January 5, 2024" December 20, 2023."""
    years = {iso[:4] for _, iso in anchors}
    if len(years) != 1:
        return ()
    offset, iso = min(anchors, key=lambda a: abs(a[0] - at))
    anchor = datetime.date.fromisoformat(iso)
    month, day = int(month_day[2:4]), int(month_day[5:7])
    other = anchor.year + 1 if at > offset else anchor.year - 1
    try:
        crossed = datetime.date(other, month, day)
    except ValueError:  # February 29 of a year without one
        return (anchor.year,)
    if abs((crossed - anchor).days) <= HALF_YEAR and (crossed > anchor) == (at > offset):
        return tuple(sorted((anchor.year, other)))
    return (anchor.year,)
