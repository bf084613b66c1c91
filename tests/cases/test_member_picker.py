"""The member picker (issue 25 req 5): a lawyer of the case finds colleagues by part of a name
or e-mail; only active people who may be added are offered; only those who manage the case's
members may search."""

import pytest
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case, Membership
from tests.conftest import session_client
from tests.factories import CaseFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(db: None) -> dict[str, User]:
    return {
        "nora": UserFactory(email="nora.new@firm.test", full_name="Nora Newcomer"),
        "noel": UserFactory(email="n.lawyer@firm.test", full_name="Noel Lawyer", role="lawyer"),
        "gone": UserFactory(email="nobody.left@firm.test", full_name="Norma Gone", is_active=False),
    }


def _search(client: Client, case: Case, q: str) -> list[str]:
    response = client.get(f"/cases/{case.pk}/members/candidates/", {"q": q})
    assert response.status_code == 200
    return [p["email"] for p in response.json()["people"]]


def test_lawyer_finds_active_non_members_by_name_or_e_mail(
    lawyer_client: Client, case: Case, people: dict[str, User], staff: User
) -> None:
    assert _search(lawyer_client, case, "no") == ["n.lawyer@firm.test", "nora.new@firm.test"]
    assert _search(lawyer_client, case, "NEWCOMER") == ["nora.new@firm.test"]
    assert _search(lawyer_client, case, "n.lawyer@") == ["n.lawyer@firm.test"]
    # Members already on the case, and deactivated people, are never offered.
    assert _search(lawyer_client, case, "staff") == []
    assert _search(lawyer_client, case, "Gone") == []
    # One character finds nothing: a search, not a directory dump.
    assert _search(lawyer_client, case, "n") == []


def test_the_answer_carries_names_e_mails_and_roles_only(
    lawyer_client: Client, case: Case, people: dict[str, User]
) -> None:
    person = lawyer_client.get(f"/cases/{case.pk}/members/candidates/", {"q": "Noel"}).json()
    assert person["people"] == [
        {
            "id": people["noel"].pk,
            "name": "Noel Lawyer",
            "email": "n.lawyer@firm.test",
            "role": "lawyer",
            "role_label": "Lawyer",
        }
    ]


@pytest.mark.parametrize("q", ["%", "__", "\x00\x00", "'; DROP TABLE x; --", "x" * 5000])
def test_hostile_searches_find_nothing_and_do_not_fail(
    lawyer_client: Client, case: Case, people: dict[str, User], q: str
) -> None:
    assert _search(lawyer_client, case, q) == []


def test_staff_member_may_not_search(
    staff_client: Client, case: Case, people: dict[str, User]
) -> None:
    response = staff_client.get(f"/cases/{case.pk}/members/candidates/", {"q": "no"})
    assert response.status_code == 403
    assert "nora" not in response.content.decode()


def test_non_member_gets_404(outsider_client: Client, case: Case, people: dict[str, User]) -> None:
    response = outsider_client.get(f"/cases/{case.pk}/members/candidates/", {"q": "no"})
    assert response.status_code == 404
    assert "nora" not in response.content.decode()


def test_anonymous_is_sent_to_sign_in(client: Client, case: Case) -> None:
    response = client.get(f"/cases/{case.pk}/members/candidates/", {"q": "no"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_an_admin_rescuing_a_case_is_offered_only_lawyers_not_themselves(
    admin_user: User, people: dict[str, User]
) -> None:
    orphan = CaseFactory(created_by=admin_user)
    MembershipFactory(case=orphan, user=admin_user, role="staff")
    UserFactory(email="nadia.admin@firm.test", full_name="Nadia Admin", role="admin")

    found = _search(session_client(admin_user), orphan, "firm.test")

    assert found == ["n.lawyer@firm.test"]


# --- the add form: what was typed is resolved by the same search --------------------------------


def test_typing_part_of_a_name_adds_the_one_person_found(
    lawyer_client: Client, case: Case, people: dict[str, User]
) -> None:
    response = lawyer_client.post(
        f"/cases/{case.pk}/members/", {"email": "newcomer", "role": "staff"}
    )

    assert response.status_code == 302
    assert Membership.objects.filter(case=case, user=people["nora"], role="staff").exists()
    assert AuditEvent.objects.filter(action="case.member_add", case=case).count() == 1


def test_several_found_are_offered_to_choose_from_then_the_chosen_one_is_added(
    lawyer_client: Client, case: Case, people: dict[str, User]
) -> None:
    response = lawyer_client.post(f"/cases/{case.pk}/members/", {"email": "no", "role": "staff"})

    html = response.content.decode()
    assert response.status_code == 400
    assert "2 people match “no”: choose one." in html
    assert f'name="user_id" value="{people["nora"].pk}"' in html
    assert f'name="user_id" value="{people["noel"].pk}"' in html
    assert not AuditEvent.objects.filter(action="case.member_add").exists()

    chosen = {"email": "no", "user_id": str(people["noel"].pk), "role": "lawyer"}
    response = lawyer_client.post(f"/cases/{case.pk}/members/", chosen)

    assert response.status_code == 302
    assert Membership.objects.get(case=case, user=people["noel"]).role == "lawyer"


def test_a_chosen_person_who_was_deactivated_meanwhile_is_refused(
    lawyer_client: Client, case: Case, people: dict[str, User]
) -> None:
    data = {"email": "no", "user_id": str(people["gone"].pk), "role": "staff"}
    response = lawyer_client.post(f"/cases/{case.pk}/members/", data)

    assert response.status_code == 400
    assert "That person has no active account." in response.content.decode()
    assert not Membership.objects.filter(case=case, user=people["gone"]).exists()


def test_the_lawyer_role_is_refused_for_a_non_lawyer_picked(
    lawyer_client: Client, case: Case, people: dict[str, User]
) -> None:
    data = {"email": "no", "user_id": str(people["nora"].pk), "role": "lawyer"}
    response = lawyer_client.post(f"/cases/{case.pk}/members/", data)

    assert response.status_code == 400
    assert "is not a lawyer" in response.content.decode()


def test_staff_cannot_add_by_picking_an_id(
    staff_client: Client, case: Case, people: dict[str, User]
) -> None:
    data = {"email": "no", "user_id": str(people["nora"].pk), "role": "staff"}
    staff_client.post(f"/cases/{case.pk}/members/", data)
    assert not Membership.objects.filter(case=case, user=people["nora"]).exists()


def test_the_case_page_carries_the_picker_for_lawyers_only(
    lawyer_client: Client, staff_client: Client, case: Case
) -> None:
    picker = f'data-member-picker="/cases/{case.pk}/members/candidates/"'
    assert picker in lawyer_client.get(f"/cases/{case.pk}/").content.decode()
    assert picker not in staff_client.get(f"/cases/{case.pk}/").content.decode()
