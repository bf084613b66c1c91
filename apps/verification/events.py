"""Payloads this app sends to a case's stream (see apps.cases.events.publish_to_case)."""

from typing import Literal, TypedDict

from apps.cases.events import case_event_types


class VerificationProgress(TypedDict):
    """A verification moved on: `claims_done` of `claim_count`, then the second opinion's
    `second_opinion_done` of `second_opinion_total`; the row is the truth."""

    type: Literal["verification.progress"]
    case_id: int
    draft_id: int
    version: int
    verification_id: int
    status: str
    claims_done: int
    claim_count: int
    blocking: int
    error: str
    second_opinion: str
    second_opinion_done: int
    second_opinion_total: int


case_event_types("verification.progress")
