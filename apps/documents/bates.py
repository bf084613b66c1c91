"""Bates numbers: what a prefix may be, the label a production prints, and the key a label is
looked up by. A leaf module (no database), so forms, services, selectors and the verifier can
share one rule.

A prefix is what the user typed: capital letters and digits, in groups joined by single '-',
'_' or '.', and optionally one separator at its end, a hyphen, a space, '_' or '.' ("ACME",
"AB-2", "ACME-", "ACME "). The label is the prefix and the zero-padded number exactly as typed:
"ACME 000123" for "ACME ".

Read back, the separator at the end of a prefix is typography, not identity: "ACME 000123",
"ACME-000123" and "ACME000123" name one page. `prefix_key` is what those share, and a case
numbers every prefix with one key in one sequence (production_services takes its lock and its
next number by key), so a key and a number name at most one page (or, in a production with a
page suffix, one document, whose pages are "ABC000123.001", "ABC000123.002", ...).
"""

import re

MAX_PREFIX = 20
# A production may number documents and their pages with a suffix of this many digits at most.
MAX_PAGE_SUFFIX_DIGITS = 6
# What may end a prefix (and sit between the prefix and the digits of a label as written).
SEPARATORS = " -_."
_PREFIX = re.compile(r"[A-Z0-9]+(?:[-_.][A-Z0-9]+)*[-_. ]?")
_RULE = (
    "The Bates prefix is 1-20 capital letters and digits, joined by single '-', '_' or '.', "
    "and may end with one space or one hyphen (ABC, ABC- or 'ABC ' stamp ABC000123, "
    "ABC-000123 or ABC 000123)."
)


def prefix_problem(prefix: str) -> str | None:
    """Why `prefix` cannot be a Bates prefix, as a message to show; None when it can."""
    if not prefix.strip():
        return "The Bates prefix is empty or only spaces; type letters or digits (e.g. ACME)."
    if len(prefix) > MAX_PREFIX:
        return f"The Bates prefix is at most {MAX_PREFIX} characters."
    if not prefix.isascii():
        # Look-alikes (a Cyrillic A, a fullwidth A, the Kelvin sign) would print like a
        # prefix of Latin capitals and never be found when typed back.
        return (
            "The Bates prefix takes the letters A-Z and the digits 0-9 only; it holds "
            f"{_first_non_ascii(prefix)}, a character from outside them (a look-alike?)."
        )
    if prefix[0].isspace():
        return "The Bates prefix starts with a space; it starts with a letter or a digit."
    if any(ch.isspace() and ch != " " for ch in prefix) or any(ord(ch) < 32 for ch in prefix):
        return "The Bates prefix may end with one space, never a tab, line break or other control."
    core = prefix.rstrip(SEPARATORS)
    if core and len(prefix) - len(core) > 1:
        ending = prefix[len(core) :]
        return (
            f"The Bates prefix ends with {ending!r}; it may end with one space or one hyphen, "
            "not two."
        )
    if not _PREFIX.fullmatch(prefix):
        return _RULE
    return None


def _first_non_ascii(text: str) -> str:
    ch = next(c for c in text if not c.isascii())
    return f"U+{ord(ch):04X}"


def prefix_core(prefix: str) -> str:
    """The prefix without the one separator it may end with ("ACME-" -> "ACME")."""
    if len(prefix) > 1 and prefix[-1] in SEPARATORS:
        return prefix[:-1]
    return prefix


def prefix_key(prefix: str) -> str:
    """What every spelling of the prefix's labels shares: its core, in capitals."""
    return prefix_core(prefix).upper()


def prefix_spellings(key: str) -> list[str]:
    """Every prefix whose key is `key` (the key itself and the key with each separator), for
    a query over the stored prefixes of one key."""
    return [key, *(key + sep for sep in SEPARATORS)]


def label(prefix: str, number: int, digits: int, suffix_digits: int = 0, page: int = 0) -> str:
    """The label a production prints: the prefix as typed and the zero-padded number; in a
    production with a page suffix (`suffix_digits` > 0), page `page` (>= 1) of the document
    numbered `number` adds "." and the page, zero-padded: "ABC000123.002"."""
    text = f"{prefix}{number:0{digits}d}"
    if suffix_digits and page:
        text += f".{page:0{suffix_digits}d}"
    return text


def page_suffix_problem(suffix_digits: int, pages: int) -> str | None:
    """Why a production cannot number a document of `pages` pages with a page suffix of
    `suffix_digits` digits (0: none), as a message to show; None when it can."""
    if isinstance(suffix_digits, bool) or not 0 <= suffix_digits <= MAX_PAGE_SUFFIX_DIGITS:
        return (
            f"The page suffix has 1 to {MAX_PAGE_SUFFIX_DIGITS} digits (ABC000123.001), "
            "or none (0)."
        )
    if suffix_digits and pages >= 10**suffix_digits:
        return (
            f"A document of {pages} pages needs more than a {suffix_digits}-digit page suffix "
            f"(at most {10**suffix_digits - 1} pages)."
        )
    return None
