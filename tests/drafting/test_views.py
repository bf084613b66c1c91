"""The browser pages of drafts: the Drafts tab, creating a draft (pasted or uploaded, against a
frozen packet of the case), adding versions, verifying, and the version page (claims
highlighted with an icon and a label, filters, the finding panel with the page image and the
matched words boxed, lawyer-only overrides, approval and why it is refused).

Non-members get the same 404 as for a missing case and change nothing; bad input comes back in
the form with a message that says what to do."""

import io
import re
import zipfile
from typing import Any

import docx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils.html import escape
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.drafting.models import Draft, DraftVersion
from apps.drafting.views.versions import STATES, Claim, segments
from apps.evidence.models import Packet
from apps.verification import services as verification_services
from apps.verification.models import Finding, Override, Verification
from tests.drafting.makers import draft_of, packet_of, read_pdf, verified

pytestmark = pytest.mark.django_db

RECORD = ["The tenant paid $12,450.00 on March 3, 2024.", "Signed at Springfield."]
DRAFT = "The tenant paid USD 12,450 on 03/03/2024. The landlord then paid $99.00 on June 9, 2021."
# A claim as the page writes it: a link with the icon (hidden from screen readers) and a label.
CLAIM = re.compile(
    r'<a class="claim claim--(?P<state>\w+)[^"]*" href="\?[^"]*finding=(?P<id>\d+)#finding-panel"'
    r' data-finding="\d+" id="claim-\d+"><span class="claim__icon" aria-hidden="true">'
    r'(?P<icon>[^<]+)</span><span class="visually-hidden">\[(?P<label>[^\]]+)\] </span>'
)


@pytest.fixture
def packet(lawyer: User, case: Case) -> Packet:
    document = read_pdf(case=case, user=lawyer, lines=RECORD)
    return packet_of(case=case, user=lawyer, documents=[document])


@pytest.fixture
def draft(lawyer: User, case: Case, packet: Packet) -> Draft:
    return draft_of(case=case, user=lawyer, packet=packet, text=DRAFT)


def _verify(user: User, draft: Draft, number: int = 1) -> Verification:
    """Request a verification and run the job's body, as the worker would."""
    verification = verification_services.verification_request(
        user=user, case_id=draft.case_id, draft_id=draft.pk, number=number
    )
    verification_services.verification_run(verification_id=verification.pk)
    verification.refresh_from_db()
    assert verification.status == Verification.Status.DONE, verification.error
    return verification


def _url(case: Case, tail: str = "") -> str:
    return f"/cases/{case.pk}/drafts/{tail}"


def _version(draft: Draft, number: int = 1, tail: str = "") -> str:
    return f"/cases/{draft.case_id}/drafts/{draft.pk}/versions/{number}/{tail}"


def _html(response: Any) -> str:
    return str(response.content.decode())


def _claims(html: str) -> list[dict[str, str]]:
    return [m.groupdict() for m in CLAIM.finditer(html)]


# --- Drafts tab -----------------------------------------------------------------------------


def test_drafts_tab_lists_each_draft_with_latest_version_packet_and_state(
    lawyer_client: Client, lawyer: User, case: Case, packet: Packet, draft: Draft
) -> None:
    verified(draft=draft, user=lawyer, statuses=["unsupported", "supported"])
    clean = draft_of(case=case, user=lawyer, packet=packet, title="Letter to counsel")

    response = lawyer_client.get(_url(case))

    html = _html(response)
    assert response.status_code == 200
    assert 'aria-current="page">Drafts</a>' in html
    assert f'href="/cases/{case.pk}/drafts/{draft.pk}/versions/1/"' in html
    assert packet.title in html and "Letter to counsel" in html
    assert "1 blocking finding" in html
    assert html.count("Not verified") == 1  # the clean draft's version 1
    assert clean.title in html
    assert AuditEvent.objects.filter(action="draft.list", actor=lawyer).count() == 1


# --- Access ---------------------------------------------------------------------------------


def test_non_member_gets_404_on_every_draft_page_and_changes_nothing(
    outsider_client: Client, lawyer: User, case: Case, packet: Packet, draft: Draft
) -> None:
    _, (finding, _) = verified(draft=draft, user=lawyer, statuses=["unsupported", "supported"])
    before = (
        Draft.objects.count(),
        DraftVersion.objects.count(),
        Verification.objects.count(),
        Override.objects.count(),
        ProcrastinateJob.objects.count(),
    )
    gets = [_url(case), _url(case, "new/"), _url(case, f"{draft.pk}/"), _version(draft)]
    posts = {
        _url(case, "new/"): {"title": "X", "kind": "brief", "packet": packet.pk, "text": "Hi."},
        _url(case, f"{draft.pk}/versions/"): {"text": "Version two.", "media_type": "markdown"},
        _version(draft, tail="verify/"): {},
        _version(draft, tail=f"findings/{finding.pk}/override/"): {"reason": "Checked by hand."},
        _version(draft, tail="approve/"): {},
    }

    for path in gets:
        assert outsider_client.get(path).status_code == 404, path
    for path, data in posts.items():
        response = outsider_client.post(path, data)
        assert response.status_code == 404, path
        assert case.title not in _html(response)
    after = (
        Draft.objects.count(),
        DraftVersion.objects.count(),
        Verification.objects.count(),
        Override.objects.count(),
        ProcrastinateJob.objects.count(),
    )
    assert after == before


def test_a_draft_of_another_case_is_404_under_this_one(
    lawyer_client: Client, lawyer: User, case: Case, draft: Draft, other_case: Case
) -> None:
    response = lawyer_client.get(f"/cases/{other_case.pk}/drafts/{draft.pk}/versions/1/")

    assert response.status_code == 404


# --- Creating a draft -----------------------------------------------------------------------


def test_new_draft_form_lists_only_the_frozen_packets_of_the_case(
    staff_client: Client, lawyer: User, case: Case, packet: Packet
) -> None:
    document = read_pdf(case=case, user=lawyer, lines=["Other."], filename="other.pdf")
    editable = packet_of(
        case=case, user=lawyer, documents=[document], title="Still open", freeze=False
    )

    html = _html(staff_client.get(_url(case, "new/")))

    assert f'<option value="{packet.pk}">Record (version 1, 1 page)</option>' in html
    assert f'value="{editable.pk}"' not in html
    assert 'enctype="multipart/form-data"' in html


def test_staff_pastes_a_draft_and_lands_on_version_one(
    staff_client: Client, staff: User, case: Case, packet: Packet
) -> None:
    response = staff_client.post(
        _url(case, "new/"),
        {
            "title": "  Motion   to compel ",
            "kind": "motion",
            "packet": packet.pk,
            "text": DRAFT,
            "media_type": "plain",
        },
    )

    draft = Draft.objects.get(case=case)
    assert response.status_code == 302
    assert response["Location"] == _version(draft)
    assert (draft.title, draft.kind, draft.packet_id) == ("Motion to compel", "motion", packet.pk)
    version = draft.versions.get()
    assert (version.text, version.media_type, version.created_by) == (DRAFT, "plain", staff)
    assert AuditEvent.objects.filter(action="draft.create", actor=staff).count() == 1


@pytest.mark.parametrize("kind", ["md", "txt", "docx"])
def test_lawyer_uploads_markdown_plain_text_or_docx(
    lawyer_client: Client, case: Case, packet: Packet, kind: str
) -> None:
    if kind == "docx":
        document = docx.Document()
        document.add_paragraph(DRAFT)
        buffer = io.BytesIO()
        document.save(buffer)
        data = buffer.getvalue()
    else:
        data = DRAFT.encode()
    upload = SimpleUploadedFile(f"brief.{kind}", data)

    response = lawyer_client.post(
        _url(case, "new/"), {"title": "Brief", "kind": "brief", "packet": packet.pk, "file": upload}
    )

    assert response.status_code == 302, _html(response)
    version = DraftVersion.objects.get(draft__case=case)
    assert version.text.strip() == DRAFT
    assert version.filename == f"brief.{kind}"
    assert version.media_type == {"md": "markdown", "txt": "plain", "docx": "docx"}[kind]


def _bad_docx() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("word/document.xml", "<not a document")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("change", "status", "message"),
    [
        ({"text": "   \n "}, 400, "The draft is empty: paste its text or upload a file."),
        ({"text": "Bell \x07 here."}, 400, "control character (U+0007)"),
        ({"title": ""}, 400, "Give the draft a title."),
        ({"packet": ""}, 400, "Choose the frozen packet the draft is checked against."),
        ({"packet": "987654321"}, 400, "No packet 987654321 in this case."),
        (
            {"text": "", "file": ("brief.docx", _bad_docx())},
            400,
            "could not be read as a Word document",
        ),
        (
            {"text": "", "file": ("brief.pdf", b"%PDF-1.4")},
            400,
            "is not a draft lexweb can read",
        ),
        (
            {"text": "", "file": ("brief.txt", b"caf\xe9")},
            400,
            "is not UTF-8 text",
        ),
        ({"file": ("brief.txt", b"Also a file.")}, 400, "not both"),
    ],
)
def test_bad_input_comes_back_in_the_form_and_creates_nothing(
    lawyer_client: Client,
    case: Case,
    packet: Packet,
    change: dict[str, Any],
    status: int,
    message: str,
) -> None:
    data: dict[str, Any] = {"title": "Brief", "kind": "brief", "packet": packet.pk, "text": DRAFT}
    data.update(change)
    if "file" in data:
        data["file"] = SimpleUploadedFile(*data["file"])

    response = lawyer_client.post(_url(case, "new/"), data)

    assert response.status_code == status
    assert message in _html(response).replace("&#x27;", "'").replace("&quot;", '"')
    assert not Draft.objects.exists()


def test_an_oversized_upload_is_413_with_the_limit(
    lawyer_client: Client, case: Case, packet: Packet, settings: Any
) -> None:
    settings.LEXWEB_MAX_DRAFT_BYTES = 2048
    upload = SimpleUploadedFile("long.txt", b"word " * 1000)

    response = lawyer_client.post(
        _url(case, "new/"), {"title": "Long", "kind": "brief", "packet": packet.pk, "file": upload}
    )

    assert response.status_code == 413
    assert "The file is 5,000 bytes; the limit is 2,048 bytes." in _html(response)
    assert not Draft.objects.exists()


def test_an_editable_packet_is_refused_until_frozen(
    lawyer_client: Client, lawyer: User, case: Case
) -> None:
    document = read_pdf(case=case, user=lawyer, lines=RECORD)
    editable = packet_of(case=case, user=lawyer, documents=[document], freeze=False)

    response = lawyer_client.post(
        _url(case, "new/"), {"title": "B", "kind": "brief", "packet": editable.pk, "text": DRAFT}
    )

    assert response.status_code == 400
    assert "is not frozen: a draft is checked against a frozen packet only" in _html(response)
    assert not Draft.objects.exists()


def test_a_packet_of_another_case_is_no_such_packet(
    lawyer_client: Client, case: Case, outsider: User, other_case: Case
) -> None:
    document = read_pdf(case=other_case, user=outsider, lines=RECORD)
    theirs = packet_of(case=other_case, user=outsider, documents=[document])

    response = lawyer_client.post(
        _url(case, "new/"), {"title": "B", "kind": "brief", "packet": theirs.pk, "text": DRAFT}
    )

    html = _html(response)
    assert response.status_code == 400
    assert f"No packet {theirs.pk} in this case." in html
    assert theirs.title not in html.split("<form", 1)[1].split("</select>")[0]
    assert not Draft.objects.exists()


# --- Versions -------------------------------------------------------------------------------


def test_draft_page_adds_a_version_and_refuses_an_empty_one(
    staff_client: Client, case: Case, draft: Draft
) -> None:
    page = staff_client.get(_url(case, f"{draft.pk}/"))
    assert page.status_code == 200
    assert "Version 1" in _html(page) and "Not verified" in _html(page)

    empty = staff_client.post(
        _url(case, f"{draft.pk}/versions/"), {"text": " ", "media_type": "markdown"}
    )
    added = staff_client.post(
        _url(case, f"{draft.pk}/versions/"), {"text": "Second text.", "media_type": "markdown"}
    )

    assert empty.status_code == 400
    assert "The draft is empty" in _html(empty)
    assert added.status_code == 302 and added["Location"] == _version(draft, 2)
    assert list(draft.versions.values_list("number", "text")) == [
        (1, DRAFT),
        (2, "Second text."),
    ]


# --- Verifying ------------------------------------------------------------------------------


def test_verify_button_queues_the_cpu_job_and_the_page_shows_progress(
    staff_client: Client, case: Case, draft: Draft
) -> None:
    response = staff_client.post(_version(draft, tail="verify/"))

    assert response.status_code == 302 and response["Location"] == _version(draft)
    verification = Verification.objects.get(version__draft=draft)
    assert verification.status == Verification.Status.QUEUED
    job = ProcrastinateJob.objects.get(
        task_name="verification.verify", args__verification_id=verification.pk
    )
    assert job.queue_name == "cpu"
    html = _html(staff_client.get(_version(draft)))
    assert 'data-verification="queued"' in html
    assert 'aria-label="Claims checked"' in html and 'id="live-state"' in html
    assert 'id="verify-button" disabled' in html


@pytest.mark.django_db
@pytest.mark.slow
def test_a_real_worker_run_shows_every_claim_highlighted_with_icon_and_label(
    lawyer: User, case: Case, draft: Draft, run_jobs: Any
) -> None:
    client = Client()
    client.force_login(lawyer)
    client.post(_version(draft, tail="verify/"))

    run_jobs()

    html = _html(client.get(_version(draft)))
    verification = Verification.objects.get(version__draft=draft)
    assert verification.status == Verification.Status.DONE, verification.error
    findings = list(Finding.objects.filter(verification=verification).order_by("start"))
    claims = _claims(html)
    assert [int(c["id"]) for c in claims] == [f.pk for f in findings]
    for claim, finding in zip(claims, findings, strict=True):
        icon, label = STATES[finding.status]
        assert claim["state"] == finding.status
        assert claim["icon"] == icon
        assert claim["label"] == f"{label}, {finding.get_kind_display().lower()}"
    assert {f.status for f in findings} >= {"supported"}
    assert {f.status for f in findings} & {"unsupported", "contradicted"}
    assert "Second opinion" in html and "Not obtained" in html


# --- The version page -----------------------------------------------------------------------


@pytest.fixture
def checked(lawyer: User, draft: Draft) -> dict[str, Finding]:
    verification = _verify(lawyer, draft)
    return {f.text: f for f in Finding.objects.filter(verification=verification)}


def test_filters_by_status_and_kind_in_the_query_string(
    lawyer_client: Client, draft: Draft, checked: dict[str, Finding]
) -> None:
    blocking = {f.pk for f in checked.values() if f.blocks}
    amounts = {f.pk for f in checked.values() if f.kind == "amount"}

    by_status = _claims(
        _html(lawyer_client.get(_version(draft), {"status": ["unsupported", "contradicted"]}))
    )
    by_kind = _claims(_html(lawyer_client.get(_version(draft), {"kind": "amount"})))
    both = _claims(
        _html(lawyer_client.get(_version(draft), {"kind": "amount", "status": "supported"}))
    )
    ignored = _claims(_html(lawyer_client.get(_version(draft), {"status": "<script>"})))

    assert {int(c["id"]) for c in by_status} == blocking
    assert {int(c["id"]) for c in by_kind} == amounts
    assert {int(c["id"]) for c in both} == {checked["USD 12,450"].pk}
    assert len(ignored) == len(checked)
    # The selected finding's link keeps the filters.
    html = _html(lawyer_client.get(_version(draft), {"kind": "amount"}))
    assert f'href="?kind=amount&amp;finding={checked["$99.00"].pk}#finding-panel"' in html


def test_the_panel_shows_the_finding_and_the_page_image_with_the_matched_words_boxed(
    lawyer_client: Client, case: Case, draft: Draft, checked: dict[str, Finding]
) -> None:
    supported = checked["USD 12,450"]
    page = supported.page
    assert page is not None and supported.boxes

    html = _html(lawyer_client.get(_version(draft), {"finding": supported.pk}))
    fragment = lawyer_client.get(_version(draft), {"finding": supported.pk, "panel": "1"})

    panel = html.split('id="finding-panel"', 1)[1].split("</section>", 1)[0]
    assert "Supported" in panel and supported.check_name in panel
    assert escape(supported.message) in panel
    # PyMuPDF's new page is A4: the SVG measures the page in points, the boxes' unit.
    assert '<svg class="page-figure__svg" viewBox="0 0 595.0 842.0"' in panel
    image = f"/api/v1/cases/{case.pk}/documents/{page.document_id}/pages/1/image?dpi=100"
    assert f'<image href="{image}"' in panel
    rects = re.findall(r'<rect class="match-box" x="([\d.]+)" y="([\d.]+)" width', panel)
    assert [(float(x), float(y)) for x, y in rects] == [(b[0], b[1]) for b in supported.boxes]
    assert "claim--selected" in html
    body = _html(fragment)
    assert body.lstrip().startswith("<section") and "<html" not in body and "match-box" in body
    # The image it points at is served to the member.
    assert lawyer_client.get(image).status_code == 200


def test_a_contradicted_or_unsupported_finding_names_what_was_found(
    lawyer_client: Client, draft: Draft, checked: dict[str, Finding]
) -> None:
    finding = checked["$99.00"]

    html = _html(lawyer_client.get(_version(draft), {"finding": finding.pk}))

    panel = html.split('id="finding-panel"', 1)[1].split("</section>", 1)[0]
    assert STATES[finding.status][1] in panel
    assert escape(finding.message) in panel
    if finding.found_value:
        assert finding.found_value in panel


def test_staff_see_the_override_disabled_and_are_refused_with_403(
    staff_client: Client, draft: Draft, checked: dict[str, Finding]
) -> None:
    finding = checked["$99.00"]

    page = _html(staff_client.get(_version(draft), {"finding": finding.pk}))
    response = staff_client.post(
        _version(draft, tail=f"findings/{finding.pk}/override/"),
        {"reason": "I checked the signed lease myself."},
    )

    assert '<fieldset disabled aria-describedby="override-why">' in page
    assert "Only a lawyer on this case may approve a draft." in page
    assert "Only a lawyer on this case may override a finding" in page
    assert response.status_code == 403
    assert "Only a lawyer on this case may override a finding" in _html(response)
    assert not Override.objects.exists()


def test_lawyer_overrides_with_a_reason_and_the_override_stays_on_the_finding(
    lawyer_client: Client, lawyer: User, draft: Draft, checked: dict[str, Finding]
) -> None:
    finding = checked["$99.00"]
    url = _version(draft, tail=f"findings/{finding.pk}/override/")

    missing = lawyer_client.post(url, {"reason": ""})
    short = lawyer_client.post(url, {"reason": "ok"})
    done = lawyer_client.post(url, {"reason": "The receipt is in the client's file, p. 4."})
    again = lawyer_client.post(url, {"reason": "Once more, for the record."})

    assert missing.status_code == 400 and "Write why this finding may stand." in _html(missing)
    assert short.status_code == 400 and "at least 10 characters" in _html(short)
    assert done.status_code == 302
    assert done["Location"] == _version(draft) + f"?finding={finding.pk}#finding-panel"
    assert again.status_code == 409 and "overridden already" in _html(again)
    override = Override.objects.get(finding=finding)
    assert override.lawyer == lawyer
    html = _html(lawyer_client.get(_version(draft), {"finding": finding.pk}))
    panel = html.split('id="finding-panel"', 1)[1].split("</section>", 1)[0]
    assert "Overridden by Laura Lawyer" in panel
    assert "The receipt is in the client&#x27;s file, p. 4." in panel
    (claim,) = [c for c in _claims(html) if int(c["id"]) == finding.pk]
    assert (claim["state"], claim["icon"]) == ("overridden", "✎")
    assert claim["label"] == f"Overridden ({finding.get_status_display().lower()}), amount"
    assert AuditEvent.objects.filter(action="finding.override", actor=lawyer).count() == 1


def test_approve_is_refused_with_the_reason_while_findings_block_then_allowed(
    lawyer_client: Client, staff_client: Client, draft: Draft, checked: dict[str, Finding]
) -> None:
    blocking = [f for f in checked.values() if f.blocks]
    page = _html(lawyer_client.get(_version(draft)))
    assert 'id="approve-button" disabled aria-describedby="approve-why"' in page
    assert f"{len(blocking)} finding" in page.split('id="approve-why"')[1][:200]

    refused = lawyer_client.post(_version(draft, tail="approve/"))
    by_staff = staff_client.post(_version(draft, tail="approve/"))

    assert refused.status_code == 409
    n = len(blocking)
    assert (
        f"Not approved: {n} finding{'s' if n != 1 else ''} {'are' if n != 1 else 'is'} "
        "unsupported or contradicted and not overridden."
    ) in _html(refused)
    assert by_staff.status_code == 403
    assert "Only a lawyer on this case may approve a draft" in _html(by_staff)
    for finding in blocking:
        lawyer_client.post(
            _version(draft, tail=f"findings/{finding.pk}/override/"),
            {"reason": "Checked against the original by hand."},
        )
    assert 'id="approve-button">' in _html(lawyer_client.get(_version(draft)))

    approved = lawyer_client.post(_version(draft, tail="approve/"))

    assert approved.status_code == 302
    version = draft.versions.get(number=1)
    assert version.approved_at is not None
    assert "Approved by Laura Lawyer" in _html(lawyer_client.get(_version(draft)))


def test_approve_before_any_verification_says_to_verify_first(
    lawyer_client: Client, draft: Draft
) -> None:
    page = _html(lawyer_client.get(_version(draft)))
    response = lawyer_client.post(_version(draft, tail="approve/"))

    assert "Verify this version first" in page
    assert response.status_code == 409
    assert "has not been verified" in _html(response)


def test_a_missing_version_or_finding_is_404(
    lawyer_client: Client, draft: Draft, checked: dict[str, Finding]
) -> None:
    assert lawyer_client.get(_version(draft, 9)).status_code == 404
    assert lawyer_client.get(_version(draft), {"finding": "987654321"}).status_code == 200
    response = lawyer_client.post(
        _version(draft, tail="findings/987654321/override/"), {"reason": "Some long reason."}
    )
    assert response.status_code == 404


# --- Highlighting ---------------------------------------------------------------------------


def _fake_claim(pk: int, start: int, end: int) -> Claim:
    finding = Finding(pk=pk, start=start, end=end, status="supported", kind="date")
    return Claim(finding, "supported", "✓", "Supported", "Date")


def test_segments_give_each_piece_to_the_innermost_claim_and_keep_every_character() -> None:
    text = 'He said "paid on 3 March 2024 in full" twice.'
    quote = _fake_claim(1, 8, 38)
    date = _fake_claim(2, 17, 29)
    out_of_range = _fake_claim(3, 40, 400)
    empty = _fake_claim(4, 5, 5)

    pieces = segments(text, [quote, date, out_of_range, empty])

    assert "".join(p.text for p in pieces) == text
    owners = [(p.text, p.claim.finding.pk if p.claim else None, p.first) for p in pieces]
    assert owners == [
        ("He said ", None, False),
        ('"paid on ', 1, True),
        ("3 March 2024", 2, True),
        (' in full"', 1, False),
        (" t", None, False),
        ("wice.", 3, True),
    ]


def test_page_size_of_an_image_document_is_its_pixels_at_its_stated_resolution(
    lawyer: User, case: Case
) -> None:
    from PIL import Image

    from apps.documents import services as document_services
    from apps.evidence.models import FrozenPage
    from apps.verification.selectors import frozen_page_size

    buffer = io.BytesIO()
    # JPEG keeps whole dots per inch (PNG stores pixels per metre: 200 would read as 199).
    Image.new("L", (400, 600), 255).save(buffer, format="JPEG", dpi=(200, 200))
    outcome = document_services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="scan.jpg",
        source=io.BytesIO(buffer.getvalue()),
        origin="client",
    )
    assert outcome.document is not None, outcome.error
    assert outcome.document.kind == "image"

    size = frozen_page_size(FrozenPage(document=outcome.document, page_number=1))
    missing = frozen_page_size(FrozenPage(document=outcome.document, page_number=2))

    assert size == (144.0, 216.0)  # 400 x 600 pixels at 200 dpi, in points
    assert missing is None
