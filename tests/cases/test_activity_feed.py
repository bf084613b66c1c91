"""The case page for lawyers: the activity feed in words with reads folded, the add-member form
that keeps what was typed, and the worker check on its own health page."""

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import AuditEvent, User
from apps.cases import activity
from apps.cases.models import Case, Membership
from apps.documents import services as document_services
from apps.documents.models import Document
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _private_blob_root(settings: Any, tmp_path: Path) -> None:
    settings.LEXWEB_BLOB_ROOT = tmp_path / "blobs"


def _add(user: User, case: Case, name: str, text: str) -> Document:
    outcome = document_services.document_upload(
        case=case,
        uploaded_by=user,
        filename=name,
        source=io.BytesIO(text.encode()),
        origin="client",
    )
    assert outcome.document is not None, outcome.error
    return outcome.document


def _activity_html(html: str) -> str:
    start = html.index('id="activity-heading"')
    return html[start : html.index("</section>", start)]


# --- the feed ---------------------------------------------------------------------------------


def test_feed_tells_changes_in_words_not_audit_codes(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    UserFactory(email="cora@firm.test", full_name="Cora Colleague", role="lawyer")
    lawyer_client.post(f"/cases/{case.pk}/members/", {"email": "cora@firm.test", "role": "lawyer"})
    document = _add(lawyer, case, "contract.txt", "The parties agree.")

    html = _activity_html(lawyer_client.get(f"/cases/{case.pk}/").content.decode())

    assert "added Cora Colleague to the case as lawyer" in html
    assert "uploaded contract.txt" in html
    assert f'href="/cases/{case.pk}/documents/{document.pk}/"' in html
    assert "Laura Lawyer" in html
    for code in ("case.member_add", "document.upload", "case.view", "<code"):
        assert code not in html


def test_consecutive_page_views_of_one_person_fold_into_one_line(
    lawyer: User, lawyer_client: Client, staff: User, staff_client: Client, case: Case
) -> None:
    first = _add(lawyer, case, "a.txt", "alpha")
    second = _add(lawyer, case, "b.txt", "beta")
    for document in (first, second, first):
        lawyer_client.get(f"/cases/{case.pk}/documents/{document.pk}/")
    lawyer_client.get(f"/cases/{case.pk}/documents/")
    staff_client.get(f"/cases/{case.pk}/")

    feed = activity.activity_feed_for_user(user=lawyer, case_id=case.pk)

    assert [(item.actor, item.kind, item.count) for item in feed] == [
        ("Sam Staff", "read", 1),
        ("Laura Lawyer", "read", 4),
        ("Laura Lawyer", "change", 2),
    ]
    assert feed[0].text == "looked at the case overview"
    # Three views of two documents are two documents, in the order they were done.
    assert feed[1].text == "looked at 2 documents and the document list"
    assert feed[1].since <= feed[1].at
    # Two uploads in a row are one line (issue 25 req 6), in the order they were done.
    assert feed[2].text == "uploaded a.txt and b.txt"


def test_a_change_between_reads_keeps_them_apart(lawyer: User, case: Case) -> None:
    client = Client()
    client.force_login(lawyer)
    client.get(f"/cases/{case.pk}/")
    _add(lawyer, case, "c.txt", "gamma")
    client.get(f"/cases/{case.pk}/")

    feed = activity.activity_feed_for_user(user=lawyer, case_id=case.pk)

    assert [item.text for item in feed] == [
        "looked at the case overview",
        "uploaded c.txt",
        "looked at the case overview",
    ]


def test_unknown_actions_and_worker_rows_still_read_as_words(lawyer: User, case: Case) -> None:
    from apps.accounts import services as account_services

    account_services.audit_record(actor=None, action="documents.some_new_thing", case=case)
    account_services.audit_record(
        actor=lawyer, action="case.update", case=case, target=case, detail={"fields": "title,court"}
    )

    feed = activity.activity_feed_for_user(user=lawyer, case_id=case.pk)

    assert feed[0].text == "changed the case's details (title, court)"
    assert (feed[1].actor, feed[1].text) == ("lexweb", "documents some new thing")


@pytest.mark.slow
def test_feed_is_bounded_and_hostile_labels_are_escaped(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    _add(lawyer, case, "<img src=x onerror=alert(1)>.txt", "x")
    for _ in range(30):
        lawyer_client.get(f"/cases/{case.pk}/documents/")

    html = _activity_html(lawyer_client.get(f"/cases/{case.pk}/").content.decode())

    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;.txt" in html
    assert "31 views since" in html  # 30 list views and the case page, one line
    assert len(activity.activity_feed_for_user(user=lawyer, case_id=case.pk, limit=1)) == 1


def test_feed_of_a_case_one_is_not_on_is_empty(outsider: User, case: Case, lawyer: User) -> None:
    _add(lawyer, case, "secret.txt", "x")

    assert activity.activity_feed_for_user(user=outsider, case_id=case.pk) == []


# --- the add-member form ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"email": "nobody@firm.test", "role": "staff"}, "No active user with e-mail"),
        # Not an address: a search for a colleague (the member picker), which finds nobody.
        ({"email": "not an address", "role": "staff"}, "Nobody found for “not an address”"),
        ({"email": "staff@firm.test", "role": "staff"}, "is already a member of this case"),
        ({"email": "nobody@firm.test", "role": "judge"}, "Select a valid choice."),
        ({"email": "x" * 300 + "@firm.test", "role": "staff"}, "at most 254 characters"),
    ],
)
def test_add_member_error_shows_the_form_again_with_what_was_typed(
    lawyer_client: Client, case: Case, data: dict[str, str], error: str
) -> None:
    before = Membership.objects.filter(case=case).count()

    response = lawyer_client.post(f"/cases/{case.pk}/members/", data)

    html = response.content.decode()
    assert response.status_code == 400
    assert error in html
    assert f'value="{data["email"]}"' in html
    assert 'aria-invalid="true"' in html or "alert--error" in html
    assert Membership.objects.filter(case=case).count() == before
    assert not AuditEvent.objects.filter(action="case.member_add").exists()


def test_add_member_keeps_the_chosen_role_on_error(lawyer_client: Client, case: Case) -> None:
    response = lawyer_client.post(
        f"/cases/{case.pk}/members/", {"email": "nobody@firm.test", "role": "lawyer"}
    )

    assert response.status_code == 400
    assert '<option value="lawyer" selected>' in response.content.decode()


def test_add_member_escapes_what_was_typed(lawyer_client: Client, case: Case) -> None:
    response = lawyer_client.post(
        f"/cases/{case.pk}/members/", {"email": '"><script>x</script>', "role": "staff"}
    )

    assert response.status_code == 400
    assert "<script>x</script>" not in response.content.decode()


def test_staff_adding_a_member_is_refused_with_a_message(staff_client: Client, case: Case) -> None:
    response = staff_client.post(
        f"/cases/{case.pk}/members/", {"email": "lawyer@firm.test", "role": "staff"}
    )

    assert response.status_code == 302
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert "Only lawyers on this case manage its members." in messages


# --- the worker check on the health page ------------------------------------------------------


def test_case_page_has_no_worker_button_but_links_the_health_page(
    lawyer_client: Client, case: Case
) -> None:
    html = lawyer_client.get(f"/cases/{case.pk}/").content.decode()

    assert f'action="/cases/{case.pk}/worker-check/"' not in html
    assert f'href="/cases/{case.pk}/health/"' in html


def test_health_page_has_the_worker_check_and_the_stream(staff_client: Client, case: Case) -> None:
    response = staff_client.get(f"/cases/{case.pk}/health/")

    html = response.content.decode()
    assert response.status_code == 200
    assert f'action="/cases/{case.pk}/worker-check/"' in html
    assert f'data-case-stream="/ws/cases/{case.pk}/events/"' in html
    assert not AuditEvent.objects.filter(case=case).exists()


def test_worker_check_without_script_returns_to_the_health_page(
    staff_client: Client, case: Case
) -> None:
    response = staff_client.post(f"/cases/{case.pk}/worker-check/")

    assert (response.status_code, response["Location"]) == (302, f"/cases/{case.pk}/health/")
    assert ProcrastinateJob.objects.filter(task_name="cases.worker_check").count() == 1


@pytest.mark.parametrize("case_id", ["0", "987654321", str(2**63), str(2**70)])
def test_health_page_of_unknown_or_huge_case_ids_is_404(
    lawyer_client: Client, case_id: str
) -> None:
    assert lawyer_client.get(f"/cases/{case_id}/health/").status_code == 404


def test_outsider_gets_404_on_the_health_page_and_the_member_form(
    outsider_client: Client, case: Case
) -> None:
    pages = [
        outsider_client.get(f"/cases/{case.pk}/health/"),
        outsider_client.post(
            f"/cases/{case.pk}/members/", {"email": "outsider@firm.test", "role": "lawyer"}
        ),
        outsider_client.post(f"/cases/{case.pk}/members/", {"email": "bad", "role": "x"}),
    ]

    for response in pages:
        assert response.status_code == 404
        assert "Acme v. Widget" not in response.content.decode()
    assert not Membership.objects.filter(case=case, user__email="outsider@firm.test").exists()


def test_health_page_refuses_post(lawyer_client: Client, case: Case) -> None:
    assert lawyer_client.post(f"/cases/{case.pk}/health/").status_code == 405
