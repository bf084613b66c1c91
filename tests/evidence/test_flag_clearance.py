"""A lawyer of the case clears a wrong registry flag with a written reason (issue 20 req 8): the
REST endpoint, the document page's form, the rules (staff and their tokens refused, outsiders
404, generated lineage and byte matches never cleared, the reason checked), the audit row, the
display for good, packets taking the document again, and what a later re-check does. Real
PostgreSQL, real HTTP through Django's test client."""

import hashlib

import pytest
from django.contrib.admin.sites import site as admin_site
from django.test import Client
from django.urls import reverse

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case, Membership
from apps.documents import reasons
from apps.documents.models import Blob, Document
from apps.evidence.models import ArtifactMatch, FlagClearance, GeneratedArtifact, Packet
from apps.evidence.services import checks, clearance, registry
from apps.evidence.services import packets as packet_services
from apps.evidence.services.packets import ProvenanceRefused
from tests.conftest import session_client, token_client
from tests.drafting.test_stream_registry import prose
from tests.evidence.conftest import derive, make_document, selection
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

REASON = "The other side's production of our own lease; the draft quoted it."


def generate(case: Case, text: str, title: str = "Motion draft v1") -> GeneratedArtifact:
    return registry.artifact_register(
        data=text.encode(), text=text, kind="model_output", media_type="text/markdown",
        title=title, case=case,
    )  # fmt: skip


def flagged(case: Case, user: User, *, seed: int = 900, origin: str = "opposing") -> Document:
    """A document the registry flagged by its text (a draft copied it)."""
    text = prose(seed, 400)
    generate(case, text, title=f"Draft {seed}")
    document = make_document(
        case, user, pages=[text], filename=f"production-{seed}.pdf", origin=origin,
        provenance=Document.Provenance.PENDING,
    )  # fmt: skip
    checks.document_check_text(document)
    document.refresh_from_db()
    assert document.provenance == Document.Provenance.FLAGGED
    return document


def url(case: Case, document: Document) -> str:
    return f"/api/v1/cases/{case.pk}/documents/{document.pk}/flag-clearance"


def clear(client: Client, case: Case, document: Document, reason: object = REASON) -> object:
    return client.post(url(case, document), {"reason": reason}, content_type="application/json")


# --- The lawyer clears -----------------------------------------------------------------------


def test_a_lawyer_clears_a_flag_audited_stored_and_shown_in_the_api(
    lawyer: User, lawyer_api: Client, case: Case
) -> None:
    document = flagged(case, lawyer)

    response = clear(lawyer_api, case, document, reason=f"  {REASON}\r\nSee the cover letter. ")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"] == document.pk and body["provenance"] == "clear"
    (shown,) = body["flag_clearances"]
    reason = f"{REASON}\nSee the cover letter."
    assert (shown["cleared_by"], shown["cleared_by_id"], shown["reason"]) == (
        str(lawyer),
        lawyer.pk,
        reason,
    )
    assert shown["text"].startswith(f"Flag cleared by {lawyer} on ")
    assert shown["text"].endswith(f": {reason}")
    assert [m["cleared"] for m in body["matches"]] == [True]
    row = FlagClearance.objects.get()
    assert (row.document, row.cleared_by, row.reason) == (document, lawyer, reason)
    assert ArtifactMatch.objects.get(document=document).clearance == row
    event = AuditEvent.objects.get(action="document.flag_cleared")
    assert (event.actor, event.case_id, event.target_id) == (lawyer, case.pk, str(document.pk))
    assert event.detail["reason"] == reason and event.detail["clearance"] == row.pk
    # Shown for good: the document's own representation keeps it.
    again = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents/{document.pk}").json()
    assert again["flag_clearances"] == body["flag_clearances"]
    listed = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents").json()["items"]
    assert [d["flag_clearances"] for d in listed if d["id"] == document.pk] == [[shown]]


def test_the_document_page_offers_lawyers_the_form_and_shows_the_clearing_for_good(
    lawyer: User, lawyer_client: Client, staff_client: Client, case: Case
) -> None:
    document = flagged(case, lawyer)
    page = reverse("documents:detail", args=[case.pk, document.pk])
    action = reverse("documents:flag_clear", args=[case.pk, document.pk])

    assert action in lawyer_client.get(page).content.decode()
    assert action not in staff_client.get(page).content.decode()
    # CSRF is enforced on the real form.
    strict = session_client(lawyer)
    strict.handler.enforce_csrf_checks = True  # type: ignore[attr-defined]
    assert strict.post(action, {"reason": REASON}).status_code == 403
    response = lawyer_client.post(action, {"reason": REASON}, follow=True)

    assert response.redirect_chain[-1][0] == page
    html = response.content.decode()
    assert f"Flag cleared by {lawyer} on" in html and REASON.replace("'", "&#x27;") in html
    assert "The flag is cleared" in html
    assert action not in html  # nothing left to clear
    document.refresh_from_db()
    assert document.provenance == Document.Provenance.CLEAR


def test_the_admin_shows_clearings_read_only_and_only_of_the_admins_cases(
    lawyer: User, admin_user: User, case: Case
) -> None:
    document = flagged(case, lawyer)
    reason = "Re-production of exhibit 4 by the defendant"
    clearing = clearance.document_flag_clear(
        user=lawyer, case_id=case.pk, document_id=document.pk, reason=reason
    )
    admin = session_client(admin_user)
    listing = "/admin/evidence/flagclearance/"
    detail = f"/admin/evidence/flagclearance/{clearing.pk}/change/"

    assert reason not in admin.get(listing).content.decode()
    assert admin.get(detail).status_code == 302  # "does not exist": back to the index
    MembershipFactory(case=case, user=admin_user, role=Membership.Role.STAFF)
    assert reason in admin.get(listing).content.decode()
    page = admin.get(detail)
    assert page.status_code == 200 and reason in page.content.decode()
    assert 'name="reason"' not in page.content.decode()  # shown, not editable
    assert admin.post(f"/admin/evidence/flagclearance/{clearing.pk}/delete/").status_code == 403
    assert FlagClearance.objects.filter(pk=clearing.pk).exists()
    model_admin = admin_site._registry[FlagClearance]
    assert not model_admin.has_add_permission(page.wsgi_request)


# --- Who may -----------------------------------------------------------------------------------


@pytest.mark.parametrize("via", ["session", "token"])
def test_staff_are_refused_by_session_and_by_token_and_nothing_changes(
    lawyer: User, staff: User, case: Case, via: str
) -> None:
    document = flagged(case, lawyer)

    if via == "token":
        response = clear(token_client(staff), case, document)
        assert response.status_code == 403
        assert response.json()["code"] == "lawyer_required"
    else:
        action = reverse("documents:flag_clear", args=[case.pk, document.pk])
        assert session_client(staff).post(action, {"reason": REASON}).status_code == 403

    document.refresh_from_db()
    assert document.provenance == Document.Provenance.FLAGGED
    assert not FlagClearance.objects.exists()
    assert not AuditEvent.objects.filter(action="document.flag_cleared").exists()


def test_a_lawyer_who_is_staff_on_the_case_is_refused(lawyer: User, case: Case) -> None:
    other = UserFactory(role=User.Role.LAWYER)
    MembershipFactory(case=case, user=other, role=Membership.Role.STAFF)
    document = flagged(case, lawyer)

    response = clear(token_client(other), case, document)

    assert response.status_code == 403 and response.json()["code"] == "lawyer_required"


def test_outsiders_get_404_like_for_a_case_that_does_not_exist(
    lawyer: User, outsider_api: Client, outsider_client: Client, case: Case
) -> None:
    document = flagged(case, lawyer)

    api = clear(outsider_api, case, document)
    page = outsider_client.post(
        reverse("documents:flag_clear", args=[case.pk, document.pk]), {"reason": REASON}
    )
    missing = clear(outsider_api, case, Document(pk=10**9))

    assert api.status_code == page.status_code == 404
    assert api.json() == missing.json() | {"detail": api.json()["detail"]}
    assert case.title not in api.content.decode() + page.content.decode()
    assert not FlagClearance.objects.exists()


def test_a_document_of_another_case_is_404_for_a_lawyer_of_this_one(
    lawyer: User, lawyer_api: Client, case: Case, outsider: User, other_case: Case
) -> None:
    theirs = flagged(other_case, outsider, seed=901)

    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents/{theirs.pk}/flag-clearance",
        {"reason": REASON},
        content_type="application/json",
    )

    assert response.status_code == 404
    assert not FlagClearance.objects.exists()


# --- What may never be cleared -----------------------------------------------------------------


def test_a_system_generated_document_is_never_cleared(
    lawyer: User, lawyer_api: Client, case: Case
) -> None:
    document = flagged(case, lawyer, origin=Document.Origin.SYSTEM_GENERATED)

    response = clear(lawyer_api, case, document)

    assert response.status_code == 409
    assert response.json()["code"] == "generated_lineage"
    assert "lexweb generated it" in response.json()["detail"]
    assert not FlagClearance.objects.exists()


def test_a_document_derived_from_a_generated_one_at_any_depth_is_never_cleared(
    lawyer: User, lawyer_api: Client, lawyer_client: Client, case: Case
) -> None:
    generated = make_document(
        case, lawyer, pages=["Generated."], filename="draft.pdf", origin="system_generated"
    )
    middle = make_document(case, lawyer, pages=["Stamped."], filename="volume.pdf")
    derive(middle, generated, transform="bates-stamp")
    document = flagged(case, lawyer)
    derive(document, middle, transform="email-attachment")

    response = clear(lawyer_api, case, document)

    assert response.status_code == 409
    assert response.json()["code"] == "generated_lineage"
    assert "draft.pdf" in response.json()["detail"]
    page = lawyer_client.get(reverse("documents:detail", args=[case.pk, document.pk]))
    assert reverse("documents:flag_clear", args=[case.pk, document.pk]) not in (
        page.content.decode()
    )
    document.refresh_from_db()
    assert document.provenance == Document.Provenance.FLAGGED


def test_a_byte_for_byte_copy_of_a_generated_file_is_never_cleared(
    lawyer: User, lawyer_api: Client, case: Case
) -> None:
    data = prose(910, 300).encode()
    generate(case, data.decode())
    blob = Blob.objects.create(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    document = Document.objects.create(
        case=case, blob=blob, filename="brief.pdf", kind="pdf", content_type="application/pdf",
        origin="client", status="ready", uploaded_by=lawyer,
    )  # fmt: skip
    checks.document_check_bytes(document)

    response = clear(lawyer_api, case, document)

    assert response.status_code == 409
    assert response.json()["code"] == "generated_bytes"
    assert not FlagClearance.objects.exists()


def test_a_document_that_is_not_flagged_has_nothing_to_clear(
    lawyer: User, lawyer_api: Client, case: Case
) -> None:
    document = make_document(case, lawyer)

    response = clear(lawyer_api, case, document)

    assert response.status_code == 409 and response.json()["code"] == "not_flagged"


def test_clearing_twice_is_a_409_and_the_first_clearing_stands(
    lawyer: User, lawyer_api: Client, case: Case
) -> None:
    document = flagged(case, lawyer)
    assert clear(lawyer_api, case, document).status_code == 201

    second = clear(lawyer_api, case, document, reason="Another reason, written twice.")

    assert second.status_code == 409
    assert second.json()["code"] == "flag_already_cleared"
    assert f"by {lawyer}" in second.json()["detail"]
    assert list(FlagClearance.objects.values_list("reason", flat=True)) == [REASON]
    assert AuditEvent.objects.filter(action="document.flag_cleared").count() == 1


# --- The reason ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        ("", 400),
        ("   \n\t  ", 400),
        ("too short", 400),
        ("x" * 2001, 400),
        ("Our own lease\x07 quoted", 400),  # a control character
        ("Our own lease \u202equoted back", 400),  # a bidi override
        ("Our own lease \u200b quoted", 400),  # an invisible character
        ("Our own lease \ue000 quoted", 400),  # private use
        ("Our own lease\x00 quoted", 422),  # NUL: refused by every API body
        ("x" * 20_000, 422),  # past any API body's string limit
        (["a list", "of reasons"], 422),
        (None, 422),
    ],
)
def test_a_bad_reason_is_refused_and_nothing_is_stored(
    lawyer: User, lawyer_api: Client, case: Case, reason: object, status: int
) -> None:
    document = flagged(case, lawyer)

    response = clear(lawyer_api, case, document, reason=reason)

    assert response.status_code == status, response.content
    if status == 400:
        assert response.json()["code"] == "reason_invalid"
    assert not FlagClearance.objects.exists()
    document.refresh_from_db()
    assert document.provenance == Document.Provenance.FLAGGED


def test_the_longest_reason_allowed_is_kept_whole(
    lawyer: User, lawyer_api: Client, case: Case
) -> None:
    document = flagged(case, lawyer)

    response = clear(lawyer_api, case, document, reason="y" * reasons.MAX_REASON)

    assert response.status_code == 201
    assert FlagClearance.objects.get().reason == "y" * reasons.MAX_REASON


def test_a_bad_reason_on_the_page_says_why_and_changes_nothing(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    document = flagged(case, lawyer)

    response = lawyer_client.post(
        reverse("documents:flag_clear", args=[case.pk, document.pk]),
        {"reason": "short"},
        follow=True,
    )

    assert response.status_code == 200
    assert "Write why this flag is wrong" in response.content.decode()
    assert not FlagClearance.objects.exists()


# --- After: packets and later checks -----------------------------------------------------------


def test_a_packet_takes_the_cleared_document_and_freezes_it(
    lawyer: User, case: Case, packet: Packet
) -> None:
    document = flagged(case, lawyer)
    with pytest.raises(ProvenanceRefused):
        packet_services.packet_items_add(
            user=lawyer, case_id=case.pk, packet_id=packet.pk, selections=[selection(document)]
        )
    clearance.document_flag_clear(
        user=lawyer, case_id=case.pk, document_id=document.pk, reason=REASON
    )

    # Adding and freezing re-check it against the registry: the cleared match is found again
    # and does not flag it.
    packet_services.packet_items_add(
        user=lawyer, case_id=case.pk, packet_id=packet.pk, selections=[selection(document)]
    )
    frozen = packet_services.packet_freeze(user=lawyer, case_id=case.pk, packet_id=packet.pk)

    assert frozen.status == Packet.Status.FROZEN
    assert frozen.frozen_pages.filter(document=document).exists()
    document.refresh_from_db()
    assert document.provenance == Document.Provenance.CLEAR


def test_a_re_read_finding_the_same_artifact_leaves_the_cleared_document_clear(
    lawyer: User, case: Case
) -> None:
    document = flagged(case, lawyer)
    clearance.document_flag_clear(
        user=lawyer, case_id=case.pk, document_id=document.pk, reason=REASON
    )

    checks.document_check_text(document)

    document.refresh_from_db()
    assert document.provenance == Document.Provenance.CLEAR


def test_a_later_match_with_another_artifact_flags_it_again_and_needs_its_own_clearing(
    lawyer: User, lawyer_api: Client, case: Case
) -> None:
    document = flagged(case, lawyer)
    assert clear(lawyer_api, case, document).status_code == 201
    text = document.pages.get().text
    newer = generate(case, text + "\n\nA new paragraph of the second draft.", title="Draft 2")

    assert checks.documents_recheck(
        document_ids=[document.pk], found=ArtifactMatch.Found.PACKET_ADD
    ) == [document.pk]

    document.refresh_from_db()
    assert document.provenance == Document.Provenance.FLAGGED
    standing = ArtifactMatch.objects.get(document=document, clearance__isnull=True)
    assert standing.artifact == newer
    body = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents/{document.pk}").json()
    assert len(body["flag_clearances"]) == 1  # the first clearing is still shown
    second = clear(lawyer_api, case, document, reason="The second draft quoted it too.")
    assert second.status_code == 201
    assert len(second.json()["flag_clearances"]) == 2
    assert not ArtifactMatch.objects.filter(document=document, clearance__isnull=True).exists()
