"""Word-level diffs between two versions of a draft (issue 12, requirement 7).

`version_diff_for_user` checks membership of the case (NotFound for non-members, as for a
missing draft or version), audits the read ("draft.version_diff", one row per request) and
compares the two texts word by word:

1. Each text is cut into tokens: runs of word characters, runs of whitespace, and single
   punctuation marks. Every distinct token becomes one character, and fast-diff-match-patch
   (Myers' diff in C++, with its semantic clean-up) compares the two strings of characters, so
   a change is reported in whole words, never half a word.
2. Sizes are bounded: the diff gets DIFF_TIME_LIMIT_S of CPU at most (past it, it answers a
   coarser but still correct diff, marked `exact: false`); unchanged stretches longer than
   twice DIFF_CONTEXT_WORDS keep that many words at each end and say how many were left out;
   the answer stops after DIFF_MAX_OPS operations or DIFF_MAX_CHARS characters of text
   (`truncated: true`). The word counts always cover the whole of both versions.
"""

import re
import time
from dataclasses import dataclass, field

import fast_diff_match_patch

from apps.accounts.models import User
from apps.cases import read_audit
from apps.drafting.models import DraftVersion
from apps.drafting.selectors import case_for_user, draft_in_case, version_in_draft
from lexweb.errors import DomainError

DIFF_TIME_LIMIT_S = 2.0
DIFF_CONTEXT_WORDS = 30
DIFF_MAX_OPS = 5000
DIFF_MAX_CHARS = 500_000

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)
# Characters standing for tokens: from U+0100 upwards, skipping the surrogates.
_FIRST_CODE = 0x100
_SURROGATES = range(0xD800, 0xE000)
_MAX_TOKENS = 0x10FFFF - _FIRST_CODE - len(_SURROGATES)
_OPS = {"=": "equal", "+": "insert", "-": "delete"}


@dataclass(frozen=True)
class DiffOp:
    op: str  # "equal", "insert" or "delete"
    text: str
    elided_words: int = 0  # words of an unchanged stretch left out in the middle of `text`


@dataclass(frozen=True)
class VersionDiff:
    draft_id: int
    number: int  # the version shown (the newer one, usually)
    against: int  # the version it is compared with
    ops: list[DiffOp] = field(default_factory=list)
    inserted_words: int = 0
    deleted_words: int = 0
    unchanged_words: int = 0
    exact: bool = True
    truncated: bool = False


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _is_word(token: str) -> bool:
    return not token.isspace()


def _encode(tokens: list[str], codes: dict[str, str], table: list[str]) -> str:
    out = []
    for token in tokens:
        char = codes.get(token)
        if char is None:
            if len(table) >= _MAX_TOKENS:
                raise DomainError(
                    "The versions hold too many distinct words to compare; compare shorter drafts."
                )
            code = _FIRST_CODE + len(table)
            if code >= _SURROGATES.start:
                code += len(_SURROGATES)
            char = chr(code)
            codes[token] = char
            table.append(token)
        out.append(char)
    return "".join(out)


def _elide(tokens: list[str], first: bool, last: bool) -> tuple[str, int]:
    """An unchanged stretch with its middle left out when long: DIFF_CONTEXT_WORDS words are
    kept at each end that touches a change (none at the start or end of the text)."""
    words = [n for n, token in enumerate(tokens) if _is_word(token)]
    head = 0 if first else DIFF_CONTEXT_WORDS
    tail = 0 if last else DIFF_CONTEXT_WORDS
    if len(words) <= head + tail + 1:
        return "".join(tokens), 0
    cut_from = words[head - 1] + 1 if head else 0
    cut_to = words[len(words) - tail] if tail else len(tokens)
    elided = sum(1 for token in tokens[cut_from:cut_to] if _is_word(token))
    return "".join([*tokens[:cut_from], "…", *tokens[cut_to:]]), elided


def word_diff(old: str, new: str) -> tuple[list[tuple[str, list[str]]], bool]:
    """The word-level diff of `old` to `new`: (operation, tokens) pairs, and whether it is exact
    (False when the time limit cut the search short)."""
    codes: dict[str, str] = {}
    table: list[str] = []
    a = _encode(_tokens(old), codes, table)
    b = _encode(_tokens(new), codes, table)
    started = time.monotonic()
    raw = fast_diff_match_patch.diff(
        a, b, timelimit=DIFF_TIME_LIMIT_S, counts_only=False, cleanup="Semantic"
    )
    exact = time.monotonic() - started < DIFF_TIME_LIMIT_S
    base = _FIRST_CODE
    ops = []
    for op, chars in raw:
        tokens = []
        for char in chars:
            code = ord(char) - base
            if code >= _SURROGATES.start - base:
                code -= len(_SURROGATES)
            tokens.append(table[code])
        ops.append((_OPS[op], tokens))
    return ops, exact


def version_diff(*, old: DraftVersion, new: DraftVersion) -> VersionDiff:
    """The bounded word diff of two versions of one draft (access checked by the caller)."""
    ops, exact = word_diff(old.text, new.text)
    counts = {"equal": 0, "insert": 0, "delete": 0}
    shown: list[DiffOp] = []
    chars = 0
    truncated = False
    for index, (op, tokens) in enumerate(ops):
        counts[op] += sum(1 for token in tokens if _is_word(token))
        if truncated:
            continue
        if op == "equal":
            text, elided = _elide(tokens, first=index == 0, last=index == len(ops) - 1)
        else:
            text, elided = "".join(tokens), 0
        if len(shown) >= DIFF_MAX_OPS or chars + len(text) > DIFF_MAX_CHARS:
            truncated = True
            continue
        chars += len(text)
        shown.append(DiffOp(op=op, text=text, elided_words=elided))
    return VersionDiff(
        draft_id=new.draft_id,
        number=new.number,
        against=old.number,
        ops=shown,
        inserted_words=counts["insert"],
        deleted_words=counts["delete"],
        unchanged_words=counts["equal"],
        exact=exact,
        truncated=truncated,
    )


def version_diff_for_user(
    *, user: User, case_id: int, draft_id: int, number: int, against: int | None = None
) -> VersionDiff:
    """What changed from version `against` (the one before `number` when not given) to version
    `number` of the draft. Audited as one read of version `number` ("draft.version_diff")."""
    case = case_for_user(user=user, case_id=case_id)
    draft = draft_in_case(case=case, draft_id=draft_id)
    new = version_in_draft(draft=draft, number=number)
    if against is None:
        if number == 1:
            raise DomainError(
                "Version 1 has no earlier version: give ?against= the version to compare with."
            )
        against = number - 1
    old = version_in_draft(draft=draft, number=against)
    diff = version_diff(old=old, new=new)
    read_audit.read_record(
        user=user,
        action="draft.version_diff",
        case=case,
        target=new,
        detail={"against": old.number},
    )
    return diff
