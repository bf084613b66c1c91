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
6. Disguises of the same letters: invisible characters (zero-width spaces and joiners, bidi
   controls, byte-order marks) are dropped, accents are stripped (OCR often loses them), and
   Cyrillic and Greek letters that look like Latin ones read as the Latin ones.

The hash of a shingle is part of the stored data (ArtifactFingerprint rows): changing the
normalisation or the hash makes every registered fingerprint stale, so the tests pin both.
"""

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Set

SHINGLE_WORDS = 5  # k: words per shingle
WINDOW = 4  # w: consecutive shingle hashes per winnowing window

# Apostrophes of every style (straight, curly, modifier letter) vanish inside words.
_APOSTROPHES = re.compile(r"['\u2018\u2019\u201b\u02bc\u02b9\u0060\u00b4\u2032]")
# The patterns start with the punctuation they remove, so the scanner skips the many
# positions that cannot match (a leading look-behind would be tried at every character).
# Hyphens of every style (not en or em dashes, which separate words).
_HYPHENS = "\\-\u00ad\u2010\u2011\u2212"
# A hyphen at the end of a line, after a letter, the word going on at the next line's start
# (not across a blank line: that is a dash ending a paragraph).
_LINE_BREAK_HYPHEN = re.compile(rf"[{_HYPHENS}](?<=\w.)[ \t\r\f\v]*\n[ \t\r\f\v]*(?=\w)")
# A hyphen between two word characters: part of the word ("follow-up" reads "followup", the
# same as "follow-" at a line's end and "up" on the next).
_INNER_HYPHEN = re.compile(rf"[{_HYPHENS}](?<=\w.)(?=\w)")
# A separator inside a number ("45,000.00", "05/02/2022", "2:18"): part of the number.
_NUMBER_SEPARATOR = re.compile(r"[.,/:](?<=\d.)(?=\d)")
# A soft hyphen anywhere else is invisible.
_SOFT_HYPHEN = "\u00ad"
# Invisible characters (Unicode format characters, category Cf, that appear in pasted text):
# gone, so "evi\u200bdence" is one word. The soft hyphen is one too, handled above first.
_INVISIBLE = dict.fromkeys(
    [0x180E, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064,
     0xFEFF, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)  # fmt: skip
# Cyrillic and Greek letters (after casefolding) drawn like Latin ones.
_LOOKALIKES = dict(
    zip("аеорсухіјѕԁԛԝһкмтвпъαβεικνορτυχ", "aeopcyxijsdqwhkmtbnbabeiknoptux", strict=True)
)
_LOOKALIKES.update({chr(code): "" for code in _INVISIBLE})
# One pattern for them all (str.translate with a table this size is ten times slower).
_DISGUISES = re.compile("[" + "".join(_LOOKALIKES) + "]")
_COMBINING_MARKS = re.compile(r"[\u0300-\u036f]+")
# Words: runs of letters and digits (underscore is punctuation here).
_WORD = re.compile(r"[^\W_]+")


def normalise(text: str) -> list[str]:
    """The text's words, in order: NFKC, casefolded, punctuation, quote and dash styles gone,
    line-break hyphenation joined, invisible characters and accents gone, look-alike letters
    read as Latin, numbers kept as words."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _LINE_BREAK_HYPHEN.sub("", text)
    text = _DISGUISES.sub(lambda m: _LOOKALIKES[m.group()], text)
    text = _COMBINING_MARKS.sub("", unicodedata.normalize("NFKD", text))
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
    """Hashes of every k-word shingle, in text order (each equal to `shingle_hash` of its
    words); one shingle of all the words when there are fewer than k (but at least one)."""
    if not words:
        return []
    if len(words) < k:
        return [shingle_hash(words)]
    # One encoded string and the byte offset of each word: a shingle is then one slice of it
    # (a 20-page upload has some 8,000 shingles; joining each anew costs twice as much).
    joined = " ".join(words).encode("utf-8")
    starts = [0]
    for word in words:
        starts.append(starts[-1] + len(word.encode("utf-8")) + 1)
    blake2b, from_bytes = hashlib.blake2b, int.from_bytes
    return [
        from_bytes(blake2b(joined[starts[i] : starts[i + k] - 1], digest_size=8).digest(),
                   "big", signed=True)
        for i in range(len(words) - k + 1)
    ]  # fmt: skip


def winnow(hashes: list[int], *, w: int = WINDOW) -> set[int]:
    """The minimum hash of every window of `w` consecutive hashes (all of them if fewer)."""
    if len(hashes) <= w:
        return set(hashes)
    last = len(hashes) - w + 1
    return set(map(min, *(hashes[j : j + last] for j in range(w))))


def fingerprint(text: str) -> set[int]:
    """The winnowed k-word shingle hashes of the text's normalised words (empty for no words)."""
    return winnow(shingle_hashes(normalise(text)))


# A quotation: “…” or "…" (at most 2,000 characters, so a stray mark does not swallow a page).
_QUOTATION = re.compile(r'\u201c[^\u201d]{0,2000}\u201d|"[^"]{0,2000}"')


def fingerprint_with_quotes(text: str) -> tuple[set[int], set[int]]:
    """The fingerprint (equal to `fingerprint(text)`), and the part of it that is quoted: the
    hashes whose every shingle lies inside quotation marks. What a model output quotes is the
    evidence's words; the rest are its own."""
    words: list[str] = []
    quoted: list[bool] = []
    position = 0
    for match in _QUOTATION.finditer(text):
        for part, inside in ((text[position : match.start()], False), (match.group(), True)):
            part_words = normalise(part)
            words.extend(part_words)
            quoted.extend([inside] * len(part_words))
        position = match.end()
    tail = normalise(text[position:])
    words.extend(tail)
    quoted.extend([False] * len(tail))
    hashes = shingle_hashes(words)
    hashed = winnow(hashes)
    k = min(SHINGLE_WORDS, len(words))
    own = {h for i, h in enumerate(hashes) if not all(quoted[i : i + k])}
    return hashed, hashed - own


def containment(part: set[int], whole: set[int]) -> float:
    """Share of `part`'s hashes found in `whole`, 0..1 (0 for an empty `part`)."""
    if not part:
        return 0.0
    return len(part & whole) / len(part)


def evidence_shingles(texts: Iterable[str]) -> set[int]:
    """Every k-word shingle hash (not winnowed) of each of `texts`: the words of the evidence a
    draft was written from. An artifact's hash found here is a passage of that evidence (the
    evidence's words, wherever the artifact has them), so the artifact leaves it out of its
    fingerprint; a winnowed set would miss most of them. Each text on its own: no shingle
    spans two texts."""
    found: set[int] = set()
    for text in texts:
        found.update(shingle_hashes(normalise(text)))
    return found


def without_evidence(
    hashes: set[int], quoted: set[int], evidence: Set[int]
) -> tuple[set[int], set[int], int]:
    """An artifact's fingerprint and quoted part (`fingerprint_with_quotes`) less the hashes
    that are `evidence`'s words, and how many were left out."""
    left_out = hashes & evidence
    if not left_out:
        return hashes, quoted, 0
    return hashes - left_out, quoted - left_out, len(left_out)
