"""The activity feed folds one person's repeated change into one line with a count (issue 25
req 6: "the same activity line six times per upload"), keeps other people's and other changes
apart, and tells the reads and changes it had no words for in words."""

import pytest
from django.test import Client

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import activity
from apps.cases.models import Case
from tests.cases.test_activity_feed import _activity_html, _add

pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_six_uploads_in_a_row_are_one_line_naming_three_and_counting_the_rest(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    for name in "abcdef":
        _add(lawyer, case, f"{name}.txt", f"text {name}")
        # The review list read again after each upload, as the live page does.
        lawyer_client.get(f"/cases/{case.pk}/documents/")

    feed = activity.activity_feed_for_user(user=lawyer, case_id=case.pk)
    changes = [item for item in feed if item.kind == "change"]

    assert [(c.text, c.count) for c in changes] == [("uploaded a.txt, b.txt, c.txt and 3 more", 6)]
    # The reads between the uploads are one line; the one after the last upload is its own.
    assert [(item.kind, item.count) for item in feed] == [("read", 1), ("change", 6), ("read", 5)]
    html = _activity_html(lawyer_client.get(f"/cases/{case.pk}/").content.decode())
    assert html.count("uploaded") == 1 and "(6 times since" in html


def test_the_same_sentence_repeated_is_said_once_with_its_count(lawyer: User, case: Case) -> None:
    for _ in range(6):
        account_services.audit_record(
            actor=lawyer, action="document.tag", case=case, detail={"tag": "hot", "count": 2}
        )

    feed = activity.activity_feed_for_user(user=lawyer, case_id=case.pk)

    assert [(item.text, item.count) for item in feed] == [("tagged 2 documents “hot”", 6)]


def test_other_people_and_other_changes_break_the_fold(
    lawyer: User, staff: User, case: Case
) -> None:
    _add(lawyer, case, "a.txt", "alpha")
    _add(staff, case, "b.txt", "beta")
    _add(lawyer, case, "c.txt", "gamma")
    account_services.audit_record(
        actor=lawyer, action="document.tag", case=case, detail={"tag": "hot", "count": 1}
    )
    _add(lawyer, case, "d.txt", "delta")

    feed = activity.activity_feed_for_user(user=lawyer, case_id=case.pk)

    assert [(item.actor, item.text, item.count) for item in feed] == [
        ("Laura Lawyer", "uploaded d.txt", 1),
        ("Laura Lawyer", "tagged 1 document “hot”", 1),
        ("Laura Lawyer", "uploaded c.txt", 1),
        ("Sam Staff", "uploaded b.txt", 1),
        ("Laura Lawyer", "uploaded a.txt", 1),
    ]


def test_stamped_previews_are_reads_and_door_out_changes_are_in_words(
    lawyer: User, case: Case
) -> None:
    document = _add(lawyer, case, "memo.txt", "privileged")
    for action in ("production.preview", "production.preview", "production.document_withheld"):
        account_services.audit_record(actor=lawyer, action=action, case=case, target=document)

    feed = activity.activity_feed_for_user(user=lawyer, case_id=case.pk)

    assert [item.text for item in feed] == [
        "withheld memo.txt from a production (privilege log)",
        "looked at 2 stamped previews",
        "uploaded memo.txt",
    ]
