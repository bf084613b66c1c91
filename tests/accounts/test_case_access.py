"""The accounts app asks who belongs to which case through a registry the cases app fills
(apps/accounts/case_access.py), and refuses to guess when nothing is registered."""

from collections.abc import Iterator

import pytest

from apps.accounts import case_access
from apps.accounts.selectors import SocketAccess, audit_list_for_user, socket_access_ended
from apps.cases.selectors import CaseAccessForAccounts


@pytest.fixture
def nothing_registered() -> Iterator[None]:
    registered = case_access.case_access()
    case_access._registered = None
    try:
        yield
    finally:
        case_access.register(registered)


def test_the_cases_app_registers_its_answers_when_django_starts() -> None:
    assert isinstance(case_access.case_access(), CaseAccessForAccounts)


@pytest.mark.django_db
def test_with_nothing_registered_a_case_socket_is_neither_kept_nor_let_go(
    nothing_registered: None, lawyer, case
) -> None:
    access = SocketAccess(user_id=lawyer.pk, session_key="", token_id=None, case_id=case.pk)
    with pytest.raises(case_access.CaseAccessMissing):
        socket_access_ended(accesses=[access])
    with pytest.raises(case_access.CaseAccessMissing):
        list(audit_list_for_user(user=lawyer, case_id=case.pk))


@pytest.mark.django_db
def test_members_follow_the_case_and_others_do_not(
    lawyer, staff, outsider, case, other_case
) -> None:
    answers = case_access.case_access()
    users = {lawyer.pk, staff.pk, outsider.pk}
    pairs = answers.member_pairs(user_ids=users, case_ids={case.pk, other_case.pk})
    assert pairs == {(lawyer.pk, case.pk), (staff.pk, case.pk), (outsider.pk, other_case.pk)}
    assert answers.grant_pairs(user_ids=users, case_ids={case.pk}) == set()
    assert list(answers.member_case_ids(user_id=outsider.pk).values_list("case_id", flat=True)) == [
        other_case.pk
    ]
