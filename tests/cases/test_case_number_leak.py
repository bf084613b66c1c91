"""Whether a case number exists in a court is told only to someone who can see that case.

A 409 on create or rename used to tell any lawyer that the firm has a matter they are not on.
Now a court number is unique only among the cases one person can see: the same number in a
case you cannot see is allowed (it stays invisible to you, and yours to them), and a clash with
one of your own cases is still a 409 that names it.
"""

import threading

import pytest
from django.db import connection
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases import selectors, services
from apps.cases.models import Case
from lexweb.errors import Conflict
from tests.conftest import session_client, token_client

NUMBER, COURT = "CV-2026-0001", "Superior Court"


@pytest.fixture
def courted(case: Case) -> Case:
    case.court = COURT
    case.save(update_fields=["court"])
    return case


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("number", "court"),
    [(NUMBER, COURT), ("cv-2026-0001", "superior court"), (f"  {NUMBER} ", "SUPERIOR   COURT")],
)
def test_creating_a_number_held_by_a_case_you_cannot_see_succeeds_and_reveals_nothing(
    outsider: User, lawyer: User, courted: Case, number: str, court: str
) -> None:
    response = token_client(outsider).post(
        "/api/v1/cases",
        {"title": "Their matter", "number": number, "client": "Them", "court": court},
        content_type="application/json",
    )

    assert response.status_code == 201, response.content
    assert courted.title not in response.content.decode()
    # Each side sees only its own case with that number.
    assert list(selectors.case_list_for_user(user=outsider).values_list("title", flat=True)) == [
        "Their matter"
    ]
    assert courted.pk in selectors.case_list_for_user(user=lawyer).values_list("pk", flat=True)
    assert "Their matter" not in session_client(lawyer).get("/").content.decode()


@pytest.mark.django_db
def test_the_browser_form_also_accepts_a_number_held_by_a_case_you_cannot_see(
    outsider: User, courted: Case
) -> None:
    response = session_client(outsider).post(
        "/cases/new/", {"title": "Theirs", "number": NUMBER, "client": "Them", "court": COURT}
    )

    assert response.status_code == 302
    assert Case.objects.filter(number=NUMBER, court=COURT).count() == 2
    assert courted.title not in response.content.decode()


@pytest.mark.django_db
def test_a_number_held_by_one_of_your_own_cases_is_a_409_that_names_it(
    lawyer_api: Client, courted: Case
) -> None:
    response = lawyer_api.post(
        "/api/v1/cases",
        {"title": "Again", "number": NUMBER.lower(), "client": "C", "court": COURT.upper()},
        content_type="application/json",
    )

    assert response.status_code == 409
    assert response.json() == {
        "detail": f"Case {NUMBER.lower()} already exists in that court (one of yours).",
        "code": "conflict",
    }
    assert Case.objects.count() == 1


@pytest.mark.django_db
def test_renaming_into_a_number_you_cannot_see_succeeds_into_your_own_is_a_409(
    outsider: User, other_case: Case, lawyer: User, courted: Case
) -> None:
    hidden = token_client(outsider).patch(
        f"/api/v1/cases/{other_case.pk}",
        {"number": NUMBER, "court": COURT},
        content_type="application/json",
    )
    mine = services.case_create(actor=lawyer, title="Mine", number="CV-9", client="C", court=COURT)

    assert hidden.status_code == 200, hidden.content
    assert courted.title not in hidden.content.decode()
    with pytest.raises(Conflict, match="already exists in that court"):
        services.case_update(actor=lawyer, case=mine, changes={"number": NUMBER})
    mine.refresh_from_db()
    assert mine.number == "CV-9"
    assert not AuditEvent.objects.filter(action="case.update", case=mine).exists()


@pytest.mark.django_db
def test_a_member_of_both_cases_sees_both(
    outsider: User, lawyer: User, courted: Case, admin_user: User
) -> None:
    theirs = services.case_create(
        actor=outsider, title="Theirs", number=NUMBER, client="T", court=COURT
    )
    services.member_add(actor=outsider, case=theirs, email=lawyer.email, role="lawyer")

    visible = selectors.case_list_for_user(user=lawyer).filter(number=NUMBER)

    assert set(visible.values_list("pk", flat=True)) == {courted.pk, theirs.pk}


@pytest.mark.django_db(transaction=True)
def test_two_creates_of_the_same_number_at_once_by_one_person_make_one_case(lawyer: User) -> None:
    """The advisory lock queues the second create behind the first, which it then sees."""
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def create(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            services.case_create(
                actor=lawyer, title=f"Race {n}", number="RACE-1", client="C", court=COURT
            )
            outcomes.append("created")
        except Conflict:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [threading.Thread(target=create, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(outcomes) == ["conflict", "created"]
    assert Case.objects.filter(number="RACE-1").count() == 1
