"""The verifier finds the draft version it is asked about through a lookup the drafting app
registers (apps/verification/versions.py), since drafting sits above it; with nothing
registered it refuses rather than guess."""

from collections.abc import Iterator

import pytest

from apps.drafting import selectors as draft_selectors
from apps.verification import selectors, services, versions


@pytest.fixture
def nothing_registered() -> Iterator[None]:
    registered = versions._registered
    versions._registered = None
    try:
        yield
    finally:
        versions._registered = registered


def test_the_drafting_app_registers_its_lookup_when_django_starts() -> None:
    assert versions._registered is draft_selectors.version_in_case


@pytest.mark.django_db
def test_with_nothing_registered_no_version_is_verified_or_read(
    nothing_registered: None, lawyer, case
) -> None:
    with pytest.raises(versions.VersionLookupMissing):
        services.verification_request(user=lawyer, case_id=case.pk, draft_id=1, number=1)
    with pytest.raises(versions.VersionLookupMissing):
        selectors.findings_for_user(user=lawyer, case_id=case.pk, draft_id=1, number=1)
