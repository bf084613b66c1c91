"""Text from outside (people, files, backends, NVML) made safe to store and show."""

import unicodedata


def printable(raw: str) -> str:
    """NFC text without control or other non-printing characters (NUL included: PostgreSQL
    refuses it in text and jsonb)."""
    text = unicodedata.normalize("NFC", raw or "")
    return "".join(ch for ch in text if unicodedata.category(ch)[0] != "C")


def storable(raw: str) -> str:
    """The text as given, less what PostgreSQL cannot store in text or jsonb: NUL, and lone
    surrogates (JSON may carry "\\ud800"; UTF-8 has no such character). Line breaks stay."""
    if "\x00" not in raw and raw.isascii():
        return raw
    return "".join(ch for ch in raw if ch != "\x00" and unicodedata.category(ch) != "Cs")


def one_line(raw: str, limit: int) -> str:
    """Printable, single-spaced (line breaks and tabs become spaces), at most `limit`
    characters."""
    words = (printable(word) for word in (raw or "").split())
    return " ".join(word for word in words if word)[:limit]
