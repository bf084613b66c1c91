"""Text from outside (people, files, backends, NVML) made safe to store and show.

What a model writes goes through `model_text` (and `model_data` for a structured reply) at the
model-output boundary: the tokens a backend client yields (apps/cluster/backends/streams.py),
the text a stage stores (a draft version, a stage's output), the strings of a parsed JSON reply,
and again at export (apps/drafting/services/exports.py), so any stored text exports.

The rule (`model_text`), one for every kind of model text. These characters are dropped:
- C0 controls U+0000-U+001F except tab, line feed and carriage return; DEL U+007F; C1
  controls U+0080-U+009F. NUL is refused by PostgreSQL; the others are refused by XML (DOCX)
  or are invisible and mean nothing in a legal document.
- Lone surrogates U+D800-U+DFFF (a JSON string may carry "\\ud800"; UTF-8 cannot encode it).
- Noncharacters: U+FDD0-U+FDEF and the last two code points of every plane (U+FFFE, U+FFFF,
  U+1FFFE, ... U+10FFFF). XML refuses U+FFFE and U+FFFF; none of them is text.
- Bidirectional embeddings, overrides and isolates: U+202A-U+202E (LRE, RLE, PDF, LRO, RLO)
  and U+2066-U+2069 (LRI, RLI, FSI, PDI). An override shows the rest of a line reversed, so
  the words a reader sees would differ from those the verifier checked; after this no stored
  or exported text can show reversed text.
Dropped, not replaced: a mark would put characters into quotes and citations that the model
did not write and the evidence does not have; the text left is what a reader sees.
Kept: everything else, in particular U+FFFD (it is printable and says visibly that a backend
could not decode something; dropping it would hide that), right-to-left letters (they show in
their own natural order), and the bidi marks U+200E, U+200F and U+061C, which are zero-width
letters of a direction and cannot reverse a run of text.
"""

import re
import unicodedata

# The characters `model_text` drops (see the module docstring).
_NOT_TEXT = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufdd0-\ufdef"
    + "".join(f"\\U{plane:04X}FFFE\\U{plane:04X}FFFF" for plane in range(17))
    + "]"
)
# The same for ASCII text (most tokens, most drafts): ten times faster to search.
_NOT_TEXT_ASCII = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def model_text(raw: str) -> str:
    """`raw` (anything a model wrote) less the characters the module's rule drops. Idempotent;
    returns `raw` itself when there is nothing to drop."""
    pattern = _NOT_TEXT_ASCII if raw.isascii() else _NOT_TEXT
    if pattern.search(raw) is None:
        return raw
    return pattern.sub("", raw)


def model_data(value: object) -> object:
    """A parsed JSON value with `model_text` applied to every string in it, keys included
    (json.loads turns "\\u0000" and "\\ud800" escapes into characters PostgreSQL's jsonb
    refuses). Keys that become equal keep the last value, as json.loads does for repeats."""
    if isinstance(value, str):
        return model_text(value)
    if isinstance(value, list):
        return [model_data(item) for item in value]
    if isinstance(value, dict):
        return {model_text(str(key)): model_data(item) for key, item in value.items()}
    return value


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


def storable_data(value: object) -> object:
    """A JSON-like value with `storable` applied to every string in it, keys included, so that
    PostgreSQL's jsonb takes it (a file name or an error text may hold NUL)."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list | tuple):
        return [storable_data(item) for item in value]
    if isinstance(value, dict):
        return {storable(str(key)): storable_data(item) for key, item in value.items()}
    return value


def one_line(raw: str, limit: int) -> str:
    """Printable, single-spaced (line breaks and tabs become spaces), at most `limit`
    characters."""
    words = (printable(word) for word in (raw or "").split())
    return " ".join(word for word in words if word)[:limit]


def quoted(raw: str, limit: int = 80) -> str:
    """Text as an error message quotes it: escaped like Python's repr (control and invisible
    characters shown as escapes), at most `limit` characters of the quote itself, so a text of
    escapes cannot make the message long."""
    shown = repr(raw[:limit])
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"
