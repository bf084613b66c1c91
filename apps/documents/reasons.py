"""A lawyer's written word on a document: who may give it and what the reason must be.

Two acts take it: including a held-back document in a production
(`production_door_services`) and clearing a wrong registry flag (the evidence app's
`services.clearance`, above this app). Both refuse anyone but a lawyer of the case
(LawyerRequired, 403; `apps.cases.selectors.case_is_lawyer`) and check the reason with
`reason_clean` (ReasonInvalid, 400): at least MIN_REASON and at most MAX_REASON characters once
trimmed, no control or format characters but line breaks and tabs. The reason is shown for good.
`LawyerRequired` is also the refusal of the verifier's overrides and of drafting's approval.
"""

import unicodedata

from lexweb.errors import DomainError, PermissionDenied

MIN_REASON = 10
MAX_REASON = 2000
# Characters a written reason may hold of the categories refused below.
_ALLOWED_CONTROLS = frozenset("\n\t")
# Control, format (bidi overrides, zero-width), surrogate and private-use characters.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co"})


class LawyerRequired(PermissionDenied):
    """Only a lawyer of the case may do this (403); the caller is a member already."""

    code = "lawyer_required"


class ReasonInvalid(DomainError):
    code = "reason_invalid"


def reason_clean(reason: object) -> str:
    """The reason, trimmed (line ends as \\n), or ReasonInvalid saying what to change."""
    if not isinstance(reason, str):
        raise ReasonInvalid("The reason must be text.")
    text = reason.replace("\r\n", "\n").replace("\r", "\n").strip()
    if len(text) < MIN_REASON:
        raise ReasonInvalid(
            f"Write why this flag is wrong (at least {MIN_REASON} characters): the reason is "
            "shown on the document for good."
        )
    if len(text) > MAX_REASON:
        raise ReasonInvalid(f"The reason is {len(text):,} characters; at most {MAX_REASON:,}.")
    for char in text:
        if char not in _ALLOWED_CONTROLS and unicodedata.category(char) in _REFUSED_CATEGORIES:
            raise ReasonInvalid(
                f"The reason holds a control or invisible character (U+{ord(char):04X}); "
                "write it as plain text (line breaks are fine)."
            )
    return text
