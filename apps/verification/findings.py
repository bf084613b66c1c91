"""What a check says of one claim: the verifier's finding before it is stored (a leaf module:
the checks' modules, the services and the second opinion all read it, and it reads none of
them)."""

from dataclasses import dataclass
from typing import Literal

from apps.verification.claims import Claim
from apps.verification.index import PageRecord

Status = Literal["supported", "unsupported", "contradicted", "needs_review"]


@dataclass(frozen=True)
class Finding:
    claim: Claim
    status: Status
    check: str
    message: str
    page: PageRecord | None = None
    excerpt: str = ""
    match: tuple[int, int] | None = None  # span in page.text of the matched words
    found_value: str | None = None  # contradicted: the value on the page
