"""Text fingerprints for the generated-artifact registry (pure Python, no Django).

A fingerprint is a set of hashes of the text's word k-shingles, thinned by winnowing
(Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document fingerprinting",
SIGMOD 2003). Two texts that share a passage of at least `WINDOW + SHINGLE_WORDS - 1` words
share at least one hash of it, wherever it sits in either text.

What the fingerprint must survive, and how:

1. Re-typesetting, PDF metadata rewrites, e-mailing (line wrapping, headers, quoted-printable
   already decoded by intake): only words count, so layout, line breaks and metadata vanish in
   `normalise`. Words split by a hyphen at a line break are joined ("evi-\\ndence").
2. Quote and dash styles, ligatures, full-width forms: NFKC, casefold, apostrophes dropped,
   hyphens inside words dropped ("follow-up" and "followup" read the same), other punctuation
   is a word break. Numbers stay words; separators inside them go ("45,000.00" -> "4500000"),
   so "$45,000" and an OCR'd "$45.000" agree.
3. OCR noise (some words wrong) and rewording: a wrong word spoils only the shingles that hold
   it; with k = 5 a 2% word error rate keeps about 90% of the shingles.
4. Reordered paragraphs: only shingles that straddle a moved boundary are lost.
5. Running heads, footers and Bates stamps on a document's pages add hashes to the document's
   side only; the share that matters ("how much of the artifact is in the document") is
   measured over the artifact's hashes, so additions on the document's side do not dilute it.
"""

import hashlib
import re
import unicodedata

SHINGLE_WORDS = 5  # k: words per shingle
WINDOW = 4  # w: consecutive shingle hashes per winnowing window

# Apostrophes of every style vanish inside words (straight, curly and modifier-letter styles agree).
_APOSTROPHES = re.compile(r"['\u2018\u2019\u201b\u02bc\u02b9\u0060\u00b4\u2032]")
# A hyphen (any dash style) at the end of a line, the word continuing on the next line.
_LINE_BREAK_HYPHEN = re.compile(r"(\w)[\-\u00ad\u2010\u2011\u2012\u2013\u2014\u2212]\s*\n\s*(\w)")
# A hyphen between two word characters: part of the word.
_INNER_HYPHEN = re.compile(r"(?<=\w)[\-\u00ad\u2010\u2011\u2212](?=\w)")
# A separator inside a number ("45,000.00", "05/02/2022", "2:18"): part of the number.
_NUMBER_SEPARATOR = re.compile(r"(?<=\d)[.,/:](?=\d)")
# A soft hyphen anywhere else is invisible.
_SOFT_HYPHEN = "\u00ad"
# Words: runs of letters and digits (underscore is punctuation here).
_WORD = re.compile(r"[^\W_]+")


def normalise(text: str) -> list[str]:
    """The text's words, in order: NFKC, casefolded, punctuation, quote and dash styles gone,
    line-break hyphenation joined, numbers kept as words."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _LINE_BREAK_HYPHEN.sub(r"\1\2", text)
    text = _APOSTROPHES.sub("", text)
    text = _INNER_HYPHEN.sub("", text)
    text = _NUMBER_SEPARATOR.sub("", text)
    text = text.replace(_SOFT_HYPHEN, "")
    return _WORD.findall(text)


def shingle_hash(words: list[str]) -> int:
    """A signed 64-bit hash (fits a PostgreSQL bigint) of one shingle."""
    digest = hashlib.blake2b(" ".join(words).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def shingle_hashes(words: list[str], *, k: int = SHINGLE_WORDS) -> list[int]:
    """Hashes of every k-word shingle, in text order; one shingle of all the words when there
    are fewer than k (but at least one)."""
    if not words:
        return []
    if len(words) < k:
        return [shingle_hash(words)]
    return [shingle_hash(words[i : i + k]) for i in range(len(words) - k + 1)]


def winnow(hashes: list[int], *, w: int = WINDOW) -> set[int]:
    """The minimum hash of every window of `w` consecutive hashes (all of them if fewer)."""
    if len(hashes) <= w:
        return set(hashes)
    return {min(hashes[i : i + w]) for i in range(len(hashes) - w + 1)}


def fingerprint(text: str) -> set[int]:
    """The winnowed k-word shingle hashes of the text's normalised words (empty for no words)."""
    return winnow(shingle_hashes(normalise(text)))


def containment(part: set[int], whole: set[int]) -> float:
    """Share of `part`'s hashes found in `whole`, 0..1 (0 for an empty `part`)."""
    if not part:
        return 0.0
    return len(part & whole) / len(part)
