"""What sits where a record cite belongs and is none: labels of no Bates prefix of the case
("RTX3060", "GPU 0001") and references to the system's own work ("Draft v2", "the earlier
summary")."""

from __future__ import annotations

import re

# A lone label-like token used as a cite: "RTX 3060", "GPU-0001", "A100", "RTX3060Ti".
JUNK = re.compile(r"[A-Z]{1,10}[\s_-]?\d{3,12}[A-Za-z]{0,3}")

_GENERATED = [
    re.compile(
        r"\b(?:lexweb|ChatGPT|GPT-?\d\w*|LLMs?|chatbot|assistant|(?:auto|machine|system|AI)"
        r"[- ]generated|auto-?summary)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\bAI\b"),
    re.compile(r"\bv\.?\s?\d+(?:\.\d+)*\b|\bversion\s+\d+", re.IGNORECASE),
    re.compile(
        r"\b(?:earlier|prior|previous|preceding|last|initial|first|our|generated|model|model['\u2019]s"
        r"|system|system['\u2019]s|internal)\s+"
        r"(?:[\w.]+\s+){0,2}(?:draft|summary|brief|declaration|decl\.|memo(?:randum)?|version"
        r"|analysis|outline|chronology|timeline|output|report)s?\b",
        re.IGNORECASE,
    ),
    re.compile(r"\bdrafts?\b", re.IGNORECASE),
    re.compile(r"\bsummar(?:y|ies)\b(?!\s+judgment)", re.IGNORECASE),
]
FISCAL_YEAR = re.compile(r"(?:FY|CY)[-_. ]?(?:19|20)\d\d")
YEAR_END = re.compile(r"\b(?:1[6-9]|20)\d\d\s*$")


def is_generated(part: str) -> bool:
    return any(p.search(part) for p in _GENERATED)


def is_generated_reference(text: str) -> bool:
    """Whether a not-a-record-cite names the system's own work ("Draft v2", "the earlier
    summary", "lexweb case summary v4") rather than a token that is no Bates number."""
    return is_generated(text)
