"""Admins stay out of cases they are not on, except through a recorded, time-limited
"break-glass" action with a written reason; a case whose lawyers have all left is never
orphaned, because an admin can break the glass and add a new lawyer."""

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import timezone

from apps.accounts import services as account_services
from apps.accounts.models import AuditEvent, User
from apps.cases import selectors, services
from apps.cases.models import BreakGlassGrant, Case, Membership
from lexweb.errors import Conflict, DomainError, NotFound
from tests.conftest import session_client, token_client, ws_connect
from tests.factories import MembershipFactory, UserFactory
from tests.lexweb.test_settings import _settings_probe

REASON = "Both lawyers on this matter left the firm; the partner asked me to add Lee."
PAGE = "/cases/break-glass/"


def _break_glass(client: Client, case_id: int, reason: str = REASON) -> Any:
    return client.post(PAGE, {"case_id": case_id, "reason": reason})


def _expire(grant: BreakGlassGrant) -> None:
    BreakGlassGrant.objects.filter(pk=grant.pk).update(
        granted_at=timezone.now() - timedelta(hours=2),
        expires_at=timezone.now() - timedelta(seconds=1),
    )


# --- Without break-glass, an admin is a stranger to the case --------------------------------


@pytest.mark.django_db
def test_admin_who_is_not_a_member_gets_404_on_the_case_pages_and_api(
    admin_user: User, case: Case
) -> None:
    pages = session_client(admin_user)
    api = token_client(admin_user)

    answers = [
        pages.get(f"/cases/{case.pk}/").status_code,
        pages.get(f"/cases/{case.pk}/documents/").status_code,
        api.get(f"/api/v1/cases/{case.pk}").status_code,
        api.get(f"/api/v1/cases/{case.pk}/members").status_code,
    ]

    assert answers == [404] * 4
    assert case.title not in pages.get(f"/cases/{case.pk}/").content.decode()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, databases="__all__")
async def test_admin_socket_is_refused_before_and_accepted_after_break_glass(
    admin_user: User, case: Case
) -> None:
    path = f"/ws/cases/{case.pk}/events/"
    _, before = await ws_connect(path, cookie_user=admin_user)
    assert before == (False, 4404)

    await sync_to_async(services.case_break_glass)(actor=admin_user, case_id=case.pk, reason=REASON)
    socket, after = await ws_connect(path, cookie_user=admin_user)

    assert after == (True, None)
    await socket.disconnect()


# --- Breaking the glass ---------------------------------------------------------------------


@pytest.mark.django_db
def test_break_glass_with_a_reason_lets_the_admin_in_and_is_audited_and_shown(
    admin_user: User, lawyer: User, case: Case, settings: Any
) -> None:
    settings.LEXWEB_BREAK_GLASS_SECONDS = 900
    client = session_client(admin_user)

    response = _break_glass(client, case.pk)

    assert response.status_code == 302
    assert response["Location"] == f"/cases/{case.pk}/"
    assert client.get(f"/cases/{case.pk}/").status_code == 200
    assert token_client(admin_user).get(f"/api/v1/cases/{case.pk}").status_code == 200
    grant = BreakGlassGrant.objects.get()
    assert (grant.user, grant.case, grant.reason) == (admin_user, case, REASON)
    assert grant.expires_at - grant.granted_at == timedelta(seconds=900)
    event = AuditEvent.objects.get(action="case.break_glass")
    assert (event.actor, event.case_id, event.via) == (admin_user, case.pk, "web")
    assert event.detail == {"reason": REASON, "expires_at": grant.expires_at.isoformat()}
    # Its members see it on the case page and in the case's activity.
    members_page = session_client(lawyer).get(f"/cases/{case.pk}/").content.decode()
    assert "Break-glass access by admins" in members_page
    assert REASON in members_page
    # In words in the activity feed, not as the audit code (issue 13 req. 7).
    assert "opened the case without being a member (break-glass)" in members_page
    assert "case.break_glass" not in members_page


@pytest.mark.django_db
@pytest.mark.parametrize("reason", ["", "   ", "\n\t "])
def test_an_empty_reason_is_refused_with_a_clear_message_and_nothing_recorded(
    admin_user: User, case: Case, reason: str
) -> None:
    response = _break_glass(session_client(admin_user), case.pk, reason)

    assert response.status_code == 400
    assert "Write why you need this case" in response.content.decode()
    assert not BreakGlassGrant.objects.exists()
    assert not AuditEvent.objects.filter(action="case.break_glass").exists()
    assert session_client(admin_user).get(f"/cases/{case.pk}/").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(("length", "accepted"), [(999, True), (1000, True), (1001, False)])
def test_reason_is_at_most_1000_characters(
    admin_user: User, case: Case, length: int, accepted: bool
) -> None:
    reason = "r" * length

    if accepted:
        grant = services.case_break_glass(actor=admin_user, case_id=case.pk, reason=reason)
        assert len(grant.reason) == length
    else:
        with pytest.raises(DomainError, match="at most 1000 characters"):
            services.case_break_glass(actor=admin_user, case_id=case.pk, reason=reason)
        assert not BreakGlassGrant.objects.exists()


@pytest.mark.django_db
def test_an_expired_grant_is_refused_with_a_clear_message(admin_user: User, case: Case) -> None:
    grant = services.case_break_glass(actor=admin_user, case_id=case.pk, reason=REASON)
    _expire(grant)
    client = session_client(admin_user)

    page = client.get(f"/cases/{case.pk}/")
    api = token_client(admin_user).get(f"/api/v1/cases/{case.pk}")

    assert page.status_code == api.status_code == 404
    assert "Your break-glass access to case" in page.content.decode()
    assert "break the glass again" in api.json()["detail"]
    assert case.title not in page.content.decode()
    assert not selectors.case_is_member(user=admin_user, case_id=case.pk)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, databases="__all__")
async def test_an_expired_grant_opens_no_socket(admin_user: User, case: Case) -> None:
    grant = await sync_to_async(services.case_break_glass)(
        actor=admin_user, case_id=case.pk, reason=REASON
    )
    await sync_to_async(_expire)(grant)

    _, state = await ws_connect(f"/ws/cases/{case.pk}/events/", cookie_user=admin_user)

    assert state == (False, 4404)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, databases="__all__")
async def test_an_open_socket_closes_when_the_grant_expires(admin_user: User, case: Case) -> None:
    grant = await sync_to_async(services.case_break_glass)(
        actor=admin_user, case_id=case.pk, reason=REASON
    )
    socket, state = await ws_connect(f"/ws/cases/{case.pk}/events/", cookie_user=admin_user)
    assert state == (True, None)

    await sync_to_async(_expire)(grant)
    # The websocket watch re-checks every LEXWEB_WS_RECHECK_SECONDS (1 s by default).
    closed = await socket.receive_output(timeout=10)

    assert closed == {"type": "websocket.close", "code": 4403, "reason": closed.get("reason")}
    assert "your break-glass access to this case ended" in closed.get("reason", "")


@pytest.mark.django_db
def test_breaking_the_glass_again_after_expiry_opens_the_case_again(
    admin_user: User, case: Case
) -> None:
    _expire(services.case_break_glass(actor=admin_user, case_id=case.pk, reason=REASON))

    response = _break_glass(session_client(admin_user), case.pk, "Still adding the new lawyer.")

    assert response.status_code == 302
    assert session_client(admin_user).get(f"/cases/{case.pk}/").status_code == 200
    assert AuditEvent.objects.filter(action="case.break_glass").count() == 2


def test_a_grant_is_live_until_the_instant_it_expires() -> None:
    expires = timezone.now()
    grant = BreakGlassGrant(expires_at=expires)

    assert grant.is_live(expires - timedelta(microseconds=1))
    assert not grant.is_live(expires)
    assert not grant.is_live(expires + timedelta(microseconds=1))


# --- Who may, and what it opens ---------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["lawyer_outsider", "staff"])
def test_non_admins_get_404_for_the_page_and_nothing_is_recorded(
    outsider: User, staff: User, case: Case, other_case: Case, who: str
) -> None:
    user = outsider if who == "lawyer_outsider" else staff
    client = session_client(user)

    assert client.get(PAGE).status_code == 404
    assert _break_glass(client, case.pk).status_code == 404
    with pytest.raises(NotFound):
        services.case_break_glass(actor=user, case_id=case.pk, reason=REASON)
    assert not BreakGlassGrant.objects.exists()


@pytest.mark.django_db
def test_a_deactivated_admins_grant_opens_nothing(admin_user: User, case: Case) -> None:
    services.case_break_glass(actor=admin_user, case_id=case.pk, reason=REASON)
    User.objects.filter(pk=admin_user.pk).update(is_active=False)
    admin_user.refresh_from_db()

    assert not selectors.case_is_member(user=admin_user, case_id=case.pk)
    with pytest.raises(NotFound):
        selectors.case_get_for_user(user=admin_user, case_id=case.pk)


@pytest.mark.django_db
def test_a_grant_opens_only_its_own_case(admin_user: User, case: Case, other_case: Case) -> None:
    services.case_break_glass(actor=admin_user, case_id=case.pk, reason=REASON)

    assert session_client(admin_user).get(f"/cases/{other_case.pk}/").status_code == 404
    assert not selectors.break_glass_is_live(user=admin_user, case_id=other_case.pk)


@pytest.mark.django_db
def test_a_member_admin_is_told_to_open_the_case_as_usual(admin_user: User, case: Case) -> None:
    MembershipFactory(case=case, user=admin_user)

    with pytest.raises(Conflict, match="open it as usual"):
        services.case_break_glass(actor=admin_user, case_id=case.pk, reason=REASON)


@pytest.mark.django_db
def test_a_missing_case_is_said_plainly_to_the_admin(admin_user: User) -> None:
    response = _break_glass(session_client(admin_user), 987_654_321)

    assert response.status_code == 400
    assert "No case 987654321." in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("case_id", ["", "0", "-3", "abc", "9" * 30])
def test_a_bad_case_id_is_a_form_error(admin_user: User, case_id: str) -> None:
    response = session_client(admin_user).post(PAGE, {"case_id": case_id, "reason": REASON})

    assert response.status_code == 400
    assert not BreakGlassGrant.objects.exists()


# --- The orphaned case ----------------------------------------------------------------------


@pytest.mark.django_db
def test_an_orphaned_case_is_listed_and_rescued_by_adding_a_new_lawyer(
    admin_user: User, lawyer: User, case: Case
) -> None:
    account_services.user_update(actor=admin_user, user_id=lawyer.pk, changes={"is_active": False})
    UserFactory(email="lee@firm.test", full_name="Lee New", role=User.Role.LAWYER)
    newcomer = User.objects.get(email="lee@firm.test")
    client = session_client(admin_user)

    listing = client.get(PAGE).content.decode()
    assert case.number in listing and f">{case.pk}<" in listing
    assert case.title not in listing and case.client not in listing

    assert _break_glass(client, case.pk).status_code == 302
    added = client.post(f"/cases/{case.pk}/members/", {"email": newcomer.email, "role": "lawyer"})

    assert added.status_code == 302
    membership = Membership.objects.get(case=case, user=newcomer)
    assert membership.role == Membership.Role.LAWYER
    event = AuditEvent.objects.get(action="case.member_add")
    assert (event.actor, event.case_id) == (admin_user, case.pk)
    assert case.number not in client.get(PAGE).content.decode()  # no longer orphaned


# --- Break-glass reads; it does not change who is on the case --------------------------------


@pytest.mark.django_db
def test_break_glass_cannot_add_the_admin_or_anyone_to_a_case_with_a_lawyer(
    admin_user: User, lawyer: User, case: Case
) -> None:
    pages, api = session_client(admin_user), token_client(admin_user)
    newcomer = UserFactory(email="lee@firm.test", role=User.Role.LAWYER)
    grant = services.case_break_glass(actor=admin_user, case_id=case.pk, reason=REASON)

    page = pages.post(f"/cases/{case.pk}/members/", {"email": admin_user.email, "role": "staff"})
    answers = [
        api.post(f"/api/v1/cases/{case.pk}/members", {"email": e, "role": r}, "application/json")
        for e, r in [(admin_user.email, "staff"), (newcomer.email, "lawyer")]
    ]

    assert page.status_code == 302
    assert "Break-glass access is read-only" in pages.get(page["Location"]).content.decode()
    assert [a.status_code for a in answers] == [403, 403]
    assert answers[0].json() == {
        "detail": "Break-glass access is read-only: ask a lawyer on this case to make the change.",
        "code": "forbidden",
    }
    assert set(Membership.objects.filter(case=case).values_list("user__email", flat=True)) == {
        lawyer.email,
        "staff@firm.test",
    }
    assert not AuditEvent.objects.filter(action="case.member_add").exists()
    # The case page offers no member controls under a grant.
    assert 'name="role"' not in pages.get(f"/cases/{case.pk}/").content.decode()
    # When the grant ends, nothing is left: the admin is a stranger to the case again.
    _expire(grant)
    assert api.get(f"/api/v1/cases/{case.pk}").status_code == 404


@pytest.mark.django_db
def test_break_glass_cannot_remove_members_change_roles_or_edit_the_case(
    admin_user: User, lawyer: User, staff: User, case: Case
) -> None:
    api = token_client(admin_user)
    services.case_break_glass(actor=admin_user, case_id=case.pk, reason=REASON)

    answers = [
        api.delete(f"/api/v1/cases/{case.pk}/members/{staff.pk}"),
        api.patch(
            f"/api/v1/cases/{case.pk}/members/{staff.pk}", {"role": "lawyer"}, "application/json"
        ),
        api.patch(f"/api/v1/cases/{case.pk}", {"title": "Renamed"}, "application/json"),
    ]
    page = session_client(admin_user).post(f"/cases/{case.pk}/members/{staff.pk}/remove/")

    assert [a.status_code for a in answers] == [403, 403, 403]
    assert {a.json()["detail"] for a in answers} == {
        "Break-glass access is read-only: ask a lawyer on this case to make the change."
    }
    assert page.status_code == 302
    assert Membership.objects.filter(case=case, user=staff, role="staff").exists()
    case.refresh_from_db()
    assert case.title != "Renamed"


@pytest.mark.django_db
def test_an_orphaned_case_is_rescued_through_the_api_with_one_lawyer_and_nothing_else(
    admin_user: User, lawyer: User, staff: User, case: Case
) -> None:
    account_services.user_update(actor=admin_user, user_id=lawyer.pk, changes={"is_active": False})
    lee = UserFactory(email="lee@firm.test", role=User.Role.LAWYER)
    kim = UserFactory(email="kim@firm.test", role=User.Role.LAWYER)
    api = token_client(admin_user)
    services.case_break_glass(actor=admin_user, case_id=case.pk, reason=REASON)

    def add(email: str, role: str) -> Any:
        return api.post(
            f"/api/v1/cases/{case.pk}/members", {"email": email, "role": role}, "application/json"
        )

    themselves = add(admin_user.email, "staff")
    as_staff = add(lee.email, "staff")
    removal = api.delete(f"/api/v1/cases/{case.pk}/members/{staff.pk}")
    rescued = add(lee.email, "lawyer")
    second = add(kim.email, "lawyer")  # the case has an active lawyer again: they decide

    assert [themselves.status_code, as_staff.status_code, removal.status_code] == [403] * 3
    assert "may only add a lawyer to it, as lawyer" in themselves.json()["detail"]
    assert rescued.status_code == 201
    assert second.status_code == 403
    assert (
        second.json()["detail"]
        == "Break-glass access is read-only: ask a lawyer on this case to make the change."
    )
    [event] = AuditEvent.objects.filter(action="case.member_add")
    assert (event.actor, event.case_id, event.detail) == (
        admin_user,
        case.pk,
        {"role": "lawyer", "rescue": True},
    )
    # The new lawyer manages the case's members from now on.
    assert session_client(lee).get(f"/cases/{case.pk}/").context["can_manage"] is True
    assert not Membership.objects.filter(case=case, user=admin_user).exists()


@pytest.mark.django_db
def test_cases_with_an_active_lawyer_are_not_listed(admin_user: User, case: Case) -> None:
    listing = session_client(admin_user).get(PAGE).content.decode()

    assert case.number not in listing
    assert "Every case has an active lawyer." in listing


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, databases="__all__")
async def test_members_watching_the_case_hear_of_the_break_glass_at_once(
    admin_user: User, lawyer: User, case: Case
) -> None:
    member, state = await ws_connect(f"/ws/cases/{case.pk}/events/", cookie_user=lawyer)
    assert state == (True, None)

    await sync_to_async(services.case_break_glass)(actor=admin_user, case_id=case.pk, reason=REASON)
    notice = await member.receive_json_from(timeout=10)

    assert notice["type"] == "cases.notice"
    assert "break-glass" in notice["message"] and REASON in notice["message"]
    await member.disconnect()


# --- The setting ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("59", "LEXWEB_BREAK_GLASS_SECONDS must be at least 60"),
        ("60", None),
        ("86400", None),
        ("86401", "LEXWEB_BREAK_GLASS_SECONDS is at most 86400"),
    ],
)
def test_break_glass_seconds_is_between_a_minute_and_a_day(value: str, error: str | None) -> None:
    result = _settings_probe(
        {"LEXWEB_BREAK_GLASS_SECONDS": value}, "settings.LEXWEB_BREAK_GLASS_SECONDS"
    )

    if error is None:
        assert result.stdout.strip() == value, result.stderr
    else:
        assert result.returncode != 0
        assert error in result.stderr
