"""A quotation's words as the checks compare them: split at its ellipses and bracketed
insertions (a leaf module: the quotation, paragraph and transcript checks all read it)."""

import re

from apps.verification import normalise as nz
from apps.verification.claims import Claim

_GAP = re.compile(r"\s*(?:\.\s?\.\s?\.|\u2026)\s*|\[[^\]]*\]")
_GLUED_BRACKET = re.compile(r"(?<=\w)\[([^\]\s]*)\]|\[([^\]\s]*)\](?=\w)")


def quote_words(claim: Claim) -> list[str]:
    """The words of a quotation claim (between its ellipses and bracketed changes)."""
    return [w for s in quote_segments(claim.quote or claim.text) for w in s]


def quote_segments(quote: str) -> list[list[str]]:
    """The quotation's words, split at ellipses and at bracketed insertions ("[Quillon]"); a
    bracket inside a word ("[t]he") only changes letters and is read through."""
    text = _GLUED_BRACKET.sub(lambda m: m.group(1) or m.group(2) or "", quote)
    parts = [nz.token_list(piece) for piece in _GAP.split(text)]
    return [words for words in parts if words]
