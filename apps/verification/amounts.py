"""Money amounts normalised to whole cents, with their currency.

In numerals: "$12,450.00", "$ 12,450", "USD 12,450", "US$12,450", "12,450.00 dollars",
"12,450 USD" are all "1245000"; "$1.2 million" is "120000000". In words (issue 28 req 4, read
by `numwords`' grammar of English numbers): "eighty-four thousand two hundred fifty dollars" is
"8425000", "four point one million dollars" "410000000", "one hundred and five dollars and
twenty cents" and "One Hundred Five and 20/100 Dollars" "10520", "a million dollars"
"100000000", "twelve hundred dollars" "120000".

Dollars are the plain cents; another currency is its ISO code and the cents: "EUR 3.5m",
"3,500,000 EUR", "€3.5 million" and "three point five million euros" are "EUR:350000000";
"£12k", "GBP 12,000" and "twelve thousand pounds sterling" are "GBP:1200000" (plain "pounds"
is a weight as often as money, so only "pounds sterling" is read). Pure functions, no Django.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from apps.verification.numwords import (
    GAP,
    RUN,
    SCALES,
    TEENS,
    TENS,
    UNITS,
    parse_words,
    run_values,
    runs,
    words_of,
)
from apps.verification.spans import disjoint_values, whole_value

# Up to four decimals before a scale ("$1.148 million"); an amount of cents without one (more
# than two decimals and no scale is no amount: `_tagged`).
# (Swiss practice groups thousands with an apostrophe: "CHF 480'000.00")
_NUMBER = (
    r"(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d{1,3}(?:['\u2019]\d{3})+(?:\.\d{1,2})?"
    r"|\d+(?:\.\d{1,4})?|\.\d{1,2})"
)
# A scale on the figure's own line, and never a person's initial ("$8,839.58\nB. A. Castellano").
_SCALE = (
    r"(?:[ \t]*(?P<scale>million|billion|thousand|mm|bn|[mMkKbB])(?![A-Za-z])"
    r"(?![.][ \t]*[A-Z][.]))?"
)
_SCALES = {"thousand": 3, "k": 3, "million": 6, "m": 6, "mm": 6, "billion": 9, "bn": 9, "b": 9}
_CURRENCY_NAMES = {"$": "USD", "usd": "USD", "dollar": "USD", "dollars": "USD", "us$": "USD"}
_CURRENCY_NAMES |= {"eur": "EUR", "€": "EUR", "euro": "EUR", "euros": "EUR"}
_CURRENCY_NAMES |= {"gbp": "GBP", "£": "GBP", "pounds sterling": "GBP"}
# Other currencies by their ISO codes, before or after the figure ("CHF 480'000.00", "1,250
# CAD"): the codes of the currencies a US firm's international matters meet most.
OTHER_CODES: tuple[str, ...] = (
    *("CHF", "CAD", "AUD", "NZD", "JPY", "CNY", "HKD", "SGD", "SEK", "NOK", "DKK", "INR"),
    *("MXN", "BRL", "ZAR", "KRW", "ILS", "AED", "SAR", "PLN", "CZK", "TRY"),
)
_CURRENCY_NAMES |= {code.lower(): code for code in OTHER_CODES}
_CODES = "|".join(OTHER_CODES)

# Each pattern looks first at the one character an amount can start with (a currency's sign or
# code, a digit or a point): the rest is tried only there.
_PATTERNS = [
    # $12,450.00 / $ 12,450 / US$12,450 / USD 12,450 / USD$12,450 / $1.2 million / EUR 3.5m /
    # €3,500.00 / £12k
    re.compile(
        r"(?=[$€£UEG])(?<![\w$€£])(?P<cur>(?:US|USD)\s?\$|\$|USD\s?|EUR\s?|€|GBP\s?|£)\s?"
        + _NUMBER
        + r"(?!\d|,\d|\.\d)"
        + _SCALE,
    ),
    # 12,450.00 dollars / 12,450 USD / 1.2 million dollars / 1,250 EUR / 3,500 euros
    re.compile(
        r"(?=[\d.])(?<![\w$€£.,/])"
        + _NUMBER
        + _SCALE
        + r"\s+(?:U\.?S\.?\s+)?(?P<cur>dollars|USD|EUR|euros|GBP)(?![A-Za-z])",
        re.IGNORECASE,
    ),
]
# The other currencies' codes, in capitals, before or after the figure: read only in a text
# that holds one (`CODE_HINT`), so that the patterns above stay tried at few characters.
CODE_HINT = re.compile(rf"\b(?:{_CODES})\b")
_CODE_PATTERNS = [
    re.compile(rf"(?<![\w$€£])(?P<cur>(?:{_CODES})\s?)" + _NUMBER + r"(?!\d|,\d|\.\d)" + _SCALE),
    re.compile(
        r"(?=[\d.])(?<![\w$€£.,/])" + _NUMBER + _SCALE + rf"\s+(?P<cur>{_CODES})(?![A-Za-z])"
    ),
]

# In words: a run of number words (`numwords.runs`), then the currency and the cents in words or
# as a fraction of a hundred; or a check's form, the fraction before the currency ("One Hundred
# Five and 20/100 Dollars"; OCR may read a space beside the slash, "25/ 100", or a speck
# after "and" as a stop or a comma, "Nine and. 25/100"). Matched at the run's end only, so the
# page is read in one pass.
_WORD_TAILS = [
    re.compile(
        rf"{GAP}and[.,]?{GAP}(?P<f>\d{{1,2}})[ \t]?/[ \t]?100{GAP}"
        rf"(?:U\.?S\.?{GAP})?(?P<cur>dollars)(?![\w-])",
        re.IGNORECASE,
    ),
    re.compile(
        rf"{GAP}(?:U\.?S\.?{GAP})?(?P<cur>dollars?|euros?|pounds{GAP}sterling)(?![\w-])"
        rf"(?:,?{GAP}and{GAP}(?:(?P<c>"
        + RUN
        + rf"){GAP}cents?(?![\w-])|(?P<f>\d{{1,2}})[ \t]?/[ \t]?100(?!\d)))?",
        re.IGNORECASE,
    ),
]


CURRENCY_WORDS = frozenset(["dollar", "dollars", "euro", "euros", "sterling"])


def has_currency_word(text: str) -> bool:
    """Whether `text` holds what an amount in words needs, a currency word (a quick look
    before scanning a page: substring search on the lowered text is much faster than a
    case-insensitive pattern)."""
    low = text.lower()
    return "dollar" in low or "euro" in low or "sterling" in low


def _currency(raw: str) -> str:
    """The ISO code of a currency as written ("US$", "EUR ", "€", "pounds\nsterling")."""
    key = " ".join(raw.lower().split())
    if key.startswith("us"):  # US$, USD, USD$
        return "USD"
    return _CURRENCY_NAMES.get(key, "USD")


def _tagged(cents: Decimal, currency: str) -> str | None:
    if cents != cents.to_integral_value() or cents < 0:
        return None
    return str(int(cents)) if currency == "USD" else f"{currency}:{int(cents)}"


def _value(match: re.Match[str]) -> str | None:
    try:
        value = Decimal(re.sub("[,'\u2019]", "", match.group("n")))
    except InvalidOperation:
        return None
    scale = match.group("scale")
    currency = _currency(match.group("cur"))
    if currency in OTHER_CODES and not scale and not re.search("[,.'\u2019]", match.group("n")):
        return (
            None  # ("CAD 000123" may be a Bates label: a figure in groups or with cents is money)
        )
    if scale:
        value = value.scaleb(_SCALES[scale.lower()])
    return _tagged(value * 100, currency)


def _word_value(number: Decimal, tail: re.Match[str]) -> str | None:
    cents = number * 100
    groups = tail.groupdict()
    if groups.get("c"):
        extra = parse_words(words_of(groups["c"]))
        if extra is None or extra >= 100 or extra != extra.to_integral_value():
            return None
        cents += extra
    elif groups.get("f"):
        cents += int(groups["f"])
    return _tagged(cents, _currency(tail.group("cur")))


def amount_values(text: str) -> list[tuple[int, int, str]]:
    """Every money amount in `text`, in numerals or in words, as (start, end, value), in
    order, spans never overlapping."""
    found = numeral_amount_values(text)
    if has_currency_word(text):
        # Words first: a run of words may hold a transcript's line number ("four point one\n 5
        # million dollars"), which is no amount of its own.
        words = word_amount_values(text)
        taken = [(a, b) for a, b, _ in words]
        found = sorted(words + [v for v in found if _free(taken, v[0], v[1])])
    return found


def numeral_amount_values(text: str) -> list[tuple[int, int, str]]:
    """The money amounts written in numerals in `text` ("$1.2 million", "EUR 3.5m")."""
    patterns = [*_PATTERNS, *_CODE_PATTERNS] if CODE_HINT.search(text) else _PATTERNS
    return disjoint_values(patterns, text, _value)


def word_amount_values(text: str) -> list[tuple[int, int, str]]:
    """The money amounts written in words in `text`, as `amount_values` gives them.

    Read from each currency word back: only where the word before it can end a number (or is
    the "and" of "and 20/100") are the number words before it (at most RUN_WINDOW characters)
    read, so a page is one quick scan for currency words however long it is."""
    found: list[tuple[int, int, str]] = []
    taken_to = 0  # an amount's words (its cents too) start no other
    # Lowered when that keeps every offset (ASCII), so the scan is case-sensitive (faster).
    currencies = (
        _CURRENCY_WORD.finditer(text.lower())
        if text.isascii()
        else _CURRENCY_WORD_ANY_CASE.finditer(text)
    )
    for currency in currencies:
        at = currency.start()
        if at < taken_to or (at and (text[at - 1].isalnum() or text[at - 1] in "-_")):
            continue  # taken, or inside a word
        before = _US.sub("", text[max(taken_to, at - 80) : at])
        last = _LAST_WORD.search(before)
        if last is None or last.group(1).lower() not in _ENDS:
            continue
        window = max(taken_to, at - RUN_WINDOW)
        run = None
        for run in runs(text, window, at):  # noqa: B007 - the last run before the currency
            pass
        if run is None or (window > taken_to and run.start() <= window + 1):
            continue  # none, or one that may start before the window: longer than any number
        numbers = run_values(run)
        if not numbers or numbers[-1][1] != run.end():
            continue  # no number, or none that ends where the currency stands
        start, _, number = numbers[-1]  # "between ten and twenty dollars": twenty dollars
        for pattern in _WORD_TAILS:
            tail = pattern.match(text, run.end())
            if tail is None or tail.start("cur") != at:
                continue
            value = _word_value(number, tail)
            if value is not None:
                found.append((start, tail.end(), value))
                taken_to = tail.end()
            break
    return found


RUN_WINDOW = 1000  # characters before a currency word that its number may take
_CURRENCY = r"[dep](?:ollars?|uros?|ounds)(?![\w-])"
_CURRENCY_WORD = re.compile(_CURRENCY)
_CURRENCY_WORD_ANY_CASE = re.compile(_CURRENCY, re.IGNORECASE)
_US = re.compile(r"U\.?S\.?\s*$", re.IGNORECASE)
_LAST_WORD = re.compile(r"([A-Za-z]+)[^A-Za-z]*$")
_ENDS = frozenset([*UNITS, *TEENS, *TENS, *SCALES, "hundred", "oh", "and"])


def _free(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return not any(start < b and end > a for a, b in taken)


def parse_amount(text: str) -> str | None:
    """The value that `text` is (whole string, surrounding spaces aside), or None."""
    return whole_value(amount_values, text)


def split(value: str) -> tuple[str, int]:
    """An amount's currency and cents: "1245000" -> ("USD", 1245000)."""
    currency, _, cents = value.rpartition(":")
    return currency or "USD", int(cents)


def describe(value: str) -> str:
    """An amount as a person reads it: "$84,250.00", "EUR 3,500.00"."""
    currency, cents = split(value)
    dollars, rest = divmod(cents, 100)
    figure = f"{dollars:,}.{rest:02d}"
    return f"${figure}" if currency == "USD" else f"{currency} {figure}"


def distance(wanted: str, found: str) -> tuple[int, float]:
    """How far an amount on a page is from the draft's: another currency is furthest, then one
    whose digits are not the same digits, then by relative difference."""
    (want_cur, want), (found_cur, got) = split(wanted), split(found)
    if want_cur != found_cur:
        return (2, 0.0)
    same_digits = sorted(str(want)) == sorted(str(got))
    return (0 if same_digits else 1, abs(want - got) / max(1, want))


def is_in_words(text: str) -> bool:
    """Whether an amount as written has its number in words ("four point one million dollars"),
    not only in numerals with a scale word ("$4.1 million")."""
    return any(word in _SPELLED for word in words_of(text))


_SPELLED = frozenset([*UNITS, *TEENS, *TENS, "a", "hundred", "point"])
