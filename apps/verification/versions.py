"""How the verifier reaches the version it is asked about, without importing the drafting app
above it (docs/architecture/modules.md, "The order of the apps").

A verification is of one version of a draft (`Verification.version`, a foreign key written as
the string "drafting.DraftVersion": it imports nothing). The verification endpoints name a
version by its case, draft and number; the drafting app registers how to find it here when
Django starts (`apps.drafting.apps.DraftingConfig.ready`). Nothing is assumed when none is
registered: every call raises, so a process that did not load the drafting app verifies nothing.

Everything about a version as a version (approving it, the state of a draft's versions, the
approve endpoint) is the drafting app's, which calls the verifier's services and selectors.
"""

from typing import Protocol

from django.db.models import Model

from apps.cases.models import Case


class VersionLookup(Protocol):
    def __call__(self, *, case: Case, draft_id: int, number: int) -> Model:
        """Version `number` of draft `draft_id` of `case` (membership already checked by the
        caller), or NotFound for a missing draft or version."""
        ...


class VersionLookupMissing(RuntimeError):
    pass


_registered: VersionLookup | None = None


def register(lookup: VersionLookup) -> None:
    """Called once by the drafting app when Django starts; a second call replaces the first."""
    global _registered
    _registered = lookup


def version_in_case(*, case: Case, draft_id: int, number: int) -> Model:
    """The version the verifier is asked about (see `VersionLookup`)."""
    if _registered is None:
        raise VersionLookupMissing(
            "no app has said how to find a draft's version: apps.drafting must be installed "
            "and ready"
        )
    return _registered(case=case, draft_id=draft_id, number=number)
