"""Text normalisation shared by the packet index and the checks (pure, no Django).

Drafts and pages are compared as sequences of word tokens, never as raw strings, so that
whitespace, line breaks, hyphenation at line ends, curly and straight quotes, Unicode dashes
and non-breaking spaces do not decide a match:

1. `fold` maps look-alike characters one to one (the text keeps its length, so offsets found in
   the folded text are offsets in the original);
2. `tokens` finds the words of the folded text with their spans: letters and digits, joined
   across apostrophes, hyphens and a hyphen at a line end ("termina-\\ntion"), lowercased and
   stripped of those joiners ("Borrower's" -> "borrowers", "non-cancellable" ->
   "noncancellable");
3. `stem` is a light suffix stripper for key-term matching (plural, -ed, -ing, -ly), never
   for quotations, which must match word for word;
4. `close_words` is the OCR tolerance: one edit apart, letters only, words of five or more
   letters (a number must match exactly: "9k" is not "19k").
"""

import re
import unicodedata
from collections.abc import Iterable

# One character for one character, so that spans survive folding.
_FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u00ad": "-",
        "\u00a0": " ",
        "\u2007": " ",
        "\u202f": " ",
        "\u2009": " ",
        "\u200a": " ",
        "\u2002": " ",
        "\u2003": " ",
        "\u2026": ".",
    }
)

# A word: letters/digits, joined by an apostrophe, an inner hyphen or a hyphen ending a line.
_WORD = re.compile(r"[^\W_]+(?:(?:['-]|-[ \t]*\r?\n[ \t]*)[^\W_]+)*")
_DIGIT_RUN = re.compile(r"\d+")
_JOINERS = re.compile(r"['\-\s]")

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is
    it its itself just me more most my myself no nor not now of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves said says say see also per via upon within without among each every shall may
    must one two three ex dkt id at p pp nos
    """.split()  # noqa: SIM905
)


def fold(text: str) -> str:
    """Map curly quotes, dashes and odd spaces to ASCII, one character for one."""
    # Every character folded is outside ASCII: an ASCII text (most pages) is its own fold,
    # and `isascii` is answered without reading it.
    return text if text.isascii() else text.translate(_FOLD)


def norm_token(raw: str) -> str:
    """The comparable form of one token found by `tokens` (lowercase, no joiners)."""
    token = _JOINERS.sub("", raw).lower()
    if not token.isascii():
        token = unicodedata.normalize("NFKC", token)
    return token


def tokens(text: str) -> list[tuple[str, int, int]]:
    """Every word of `text` as (normalised token, start, end) with offsets into `text`."""
    words, spans = token_spans(text)
    return [(word, start, end) for word, (start, end) in zip(words, spans, strict=True)]


# The ASCII text fast paths. Lowercasing ASCII keeps every character's class and the text's
# length, so the words of the lowercased text are the words, lowercased, at the same places.
# Where no hyphen ends a line, a word never spans anything but letters, digits, apostrophes
# and hyphens: the text with every other character made a space (`_KEEP`, a byte table: a
# translation in C) splits into runs, each a run of letters and digits (a word as it is) or
# one holding a joiner, which the word pattern reads (`_ascii_raw`). The pattern over the whole
# text ran character by character in Python's regular expression engine, the largest part of
# reading a page.
_KEEP = bytes(c if chr(c).isalnum() or chr(c) in "'-" else 32 for c in range(128)) + bytes(
    [32] * 128
)
_HYPHEN_AT_LINE_END = re.compile(r"-[ \t]*\r?\n")
_RUN = re.compile(r"[^ ]+")


def _ascii_runs(low: str) -> str | None:
    """`low` (lowercased ASCII) with every character that no word holds made a space; None
    where a hyphen ends a line (a word may run across it: the pattern reads the text)."""
    if "-" in low and _HYPHEN_AT_LINE_END.search(low):
        return None
    return low.encode("ascii").translate(_KEEP).decode("ascii")


def _ascii_raw(low: str) -> list[str]:
    """`_WORD.findall(low)` for lowercased ASCII text."""
    kept = _ascii_runs(low)
    if kept is None:
        return _WORD.findall(low)
    runs = kept.split()
    if "'" not in low and "-" not in low:
        return runs
    out: list[str] = []
    for run in runs:
        if run.isalnum():
            out.append(run)
        else:
            out.extend(_WORD.findall(run))
    return out


def token_spans(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """`tokens` as two lists: the normalised tokens, and their spans in `text`."""
    folded = fold(text)
    words: list[str] = []
    spans: list[tuple[int, int]] = []
    if folded.isascii():
        low = folded.lower()
        kept = _ascii_runs(low)
        if kept is not None:
            for match in _RUN.finditer(kept):
                run = match.group()
                if run.isalnum():
                    words.append(run)
                    spans.append(match.span())
                    continue
                at = match.start()
                for part in _WORD.finditer(run):
                    raw = part.group()
                    words.append(raw if raw.isalnum() else _JOINERS.sub("", raw))
                    spans.append((at + part.start(), at + part.end()))
            return words, spans
        spans = [match.span() for match in _WORD.finditer(low)]
        words = [raw if raw.isalnum() else _JOINERS.sub("", raw) for raw in _WORD.findall(low)]
        return words, spans
    for match in _WORD.finditer(folded):
        raw = match.group()
        words.append(raw.lower() if raw.isascii() and raw.isalnum() else norm_token(raw))
        spans.append(match.span())
    return words, spans


def token_list(text: str) -> list[str]:
    """The normalised tokens of `text`, without spans (cheaper)."""
    folded = fold(text)
    if folded.isascii():
        # Only a word holding a joiner (an apostrophe or a hyphen) needs `norm_token`'s
        # stripping.
        low = folded.lower()
        found = _ascii_raw(low)
        if "'" in low or "-" in low:
            return [raw if raw.isalnum() else _JOINERS.sub("", raw) for raw in found]
        return found
    return [
        raw.lower() if raw.isascii() and raw.isalnum() else norm_token(raw)
        for raw in _WORD.findall(folded)
    ]


def raw_words(text: str) -> list[str]:
    """The words of `text` lowercased but not yet normalised (`norm_token` finishes them):
    the cheapest form, for indexing many pages."""
    folded = fold(text)
    if folded.isascii():
        return _ascii_raw(folded.lower())
    return _WORD.findall(folded.lower())


def stem(token: str) -> str:
    """A light stem for key terms, the same for a word's forms: "breaches", "breached" ->
    "breach"; "invoice", "invoices", "invoiced" -> "invoic"; "Keystone's" (read "keystones")
    and "KEYSTONE" -> "keyston"; "parties" -> "party"; "days" -> "day".

    First the plural, as English forms it (an S-stemmer): "-ies" is "-y", "-es" and "-s" lose
    their "s" ("boxes" -> "boxe", whose "e" goes last), but not "-us", "-ss" and "-is"
    ("status", "class", "basis" are no plurals). Then one ending of a
    verb or an adverb ("-ed" not of "-eed": "proceed", "proceeds", "proceeded" are one), then a
    final "e": "rate", "rates", "rated" and "rating" meet in "rat".
    """
    if len(token) <= 3 or not token.isalpha():
        return token
    if token.endswith("ies") and len(token) > 4 and token[-4] not in "ae":
        token = token[:-3] + "y"
    elif token.endswith("s") and token[-2] not in "usi":
        token = token[:-1]
    for suffix in ("ation", "ing", "edly", "ed", "ly"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            if suffix == "ed" and token.endswith("eed"):
                break  # "proceed", "exceed": no past tense ("proceeded" is "proceed")
            token = token[: -len(suffix)]
            break
    if token.endswith("e") and len(token) >= 4:
        token = token[:-1]
    return token


def content_terms(words: Iterable[str], terms: dict[str, str] | None = None) -> list[str]:
    """Key terms of a run of normalised tokens: no stopwords, no one-letter words, stemmed.
    `terms`, where given, is the caller's table of what each word was found to be (its stem,
    or "" for a word that is no key term), read and filled here: a text read line by line
    decides each of its words once."""
    seen: dict[str, None] = {}
    if terms is None:
        for word in words:
            if word not in STOPWORDS and (len(word) >= 3 or word.isdigit()):
                seen[stem(word)] = None  # an existing key keeps its first place
        return list(seen)
    for word in words:
        term = terms.get(word)
        if term is None:
            keep = word not in STOPWORDS and (len(word) >= 3 or word.isdigit())
            term = terms[word] = stem(word) if keep else ""
        if term:
            seen[term] = None
    return list(seen)


def close_words(a: str, b: str) -> bool:
    """True when `a` and `b` are the same word up to one OCR slip (letters only, 5+ long)."""
    if a == b:
        return True
    if len(a) < 5 or len(b) < 5 or not a.isalpha() or not b.isalpha():
        return False
    if abs(len(a) - len(b)) > 1:
        return False
    return _within_one_edit(a, b)


def _within_one_edit(a: str, b: str) -> bool:
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :]
    return a[i:] == b[i + 1 :]


def shape(line: str) -> str:
    """A line with its digits masked, to recognise running heads ("Page 3 of 8")."""
    return _DIGIT_RUN.sub("#", " ".join(raw_words(line)))
