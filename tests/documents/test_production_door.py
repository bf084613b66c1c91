"""Issue 25 req 1: the door out. A production holds back system-generated documents, those
derived from them, registry-flagged documents and firm work product unless a lawyer of the case
includes each with a written reason (audited); a production volume is an outgoing production of
its own origin, never produced again and never added to a packet."""

import csv
import datetime
import io
import zipfile
from typing import Any

import pymupdf
import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import production_services, storage
from apps.documents import services as document_services
from apps.documents.models import Derivation, Document, Production, ProductionDocument
from apps.documents.privilege_log import Withholding
from apps.documents.production_door_services import Inclusion, ProductionRefused
from apps.documents.reasons import LawyerRequired, ReasonInvalid
from apps.evidence.models import GeneratedArtifact
from apps.evidence.services import packets as packet_services
from apps.evidence.services import registry
from apps.evidence.services.packets import ProvenanceRefused, Selection
from lexweb.errors import DomainError

pytestmark = pytest.mark.django_db

REASON = "Ordered produced by the court on 3 March; see docket entry 41."
MEMO = (
    "Our assessment of the lease dispute: the landlord's notice was served late, the tenant "
    "paid every instalment on time, and the arbitration clause does not reach the deposit. "
    "We recommend settling the deposit claim and contesting the eviction in full."
)


def _pdf(text: str) -> bytes:
    with pymupdf.open() as pdf:
        pdf.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 720), text, fontsize=11)
        return pdf.tobytes()


def _upload(case: Case, user: User, name: str, text: str, origin: str = "client") -> Document:
    outcome = document_services.document_upload(
        case=case, uploaded_by=user, filename=name, source=io.BytesIO(_pdf(text)), origin=origin
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    outcome.document.refresh_from_db()
    return outcome.document


def _generated(case: Case, name: str, text: str, parents: list[Document]) -> Document:
    document = document_services.document_create_generated(
        case=case,
        actor=None,
        filename=name,
        data=_pdf(text),
        text=text,
        media_type="application/pdf",
        source="test: drafter",
        parents=parents,
    )
    document_services.document_extract_text(document_id=document.pk)
    document.refresh_from_db()
    return document


@pytest.fixture
def held(case: Case, lawyer: User) -> dict[str, Document]:
    """A clean client document and one of each kind the door out holds back."""
    clean = _upload(case, lawyer, "lease.pdf", "The lease between Acme and Bolt, signed 2024.")
    draft = _generated(case, "draft.pdf", "A motion lexweb drafted from the lease.", [clean])
    # An exhibit derived (byte for byte, as an attachment) from the generated draft.
    derived = _upload(case, lawyer, "derived.pdf", "An exhibit cut out of the draft motion.")
    document_services.derivation_record(
        child=derived,
        parents=[draft],
        transform=Derivation.EMAIL_ATTACHMENT,
        version="1",
        deterministic=True,
    )
    # A model wrote this memo once; a person uploads it again as a "client" file.
    registry.artifact_register(
        data=MEMO.encode(),
        text=MEMO,
        kind=GeneratedArtifact.Kind.MODEL_OUTPUT,
        media_type="text/plain",
        title="Lease memo",
        case=case,
    )
    flagged = _upload(case, lawyer, "memo.pdf", MEMO)
    work = _upload(case, lawyer, "notes.pdf", "Partner notes on strategy.", "work_product")
    documents = {
        "clean": clean,
        "draft": draft,
        "derived": derived,
        "flagged": flagged,
        "work": work,
    }
    for document in documents.values():
        document.refresh_from_db()
    assert draft.origin == derived.origin == "system_generated"
    assert flagged.provenance == Document.Provenance.FLAGGED
    return documents


def _create(
    case: Case, actor: User, documents: list[Document], include: list[Inclusion] | None = None
) -> Production:
    return production_services.production_create(
        case=case,
        actor=actor,
        volume="OUT001",
        prefix="OUT",
        document_ids=[d.pk for d in documents],
        inclusions=include or [],
    )


def _api(case: Case) -> str:
    return f"/api/v1/cases/{case.pk}/productions"


def _body(documents: list[Document], **extra: Any) -> dict[str, Any]:
    return {
        "volume": "OUT001",
        "prefix": "OUT",
        "document_ids": [d.pk for d in documents],
        **extra,
    }


# --- The service ---------------------------------------------------------------------------------


def test_each_held_back_document_is_refused_by_name_and_nothing_is_produced(
    case: Case, lawyer: User, held: dict[str, Document]
) -> None:
    with pytest.raises(ProductionRefused) as info:
        _create(case, lawyer, list(held.values()))

    refused = {document_id: why for document_id, _, why in info.value.refusals}
    assert set(refused) == {held[k].pk for k in ("draft", "derived", "flagged", "work")}
    assert refused[held["draft"].pk] == "it is system generated (lexweb wrote it)"
    assert f"derived from “draft.pdf” (document {held['draft'].pk})" in refused[held["derived"].pk]
    assert "registry flagged it" in refused[held["flagged"].pk]
    assert refused[held["work"].pk] == "it is firm work product"
    assert (info.value.status, info.value.code) == (422, "production_refused")
    assert "lease.pdf" not in info.value.message and "memo.pdf" in info.value.message
    assert not Production.objects.exists()


def test_a_lawyer_includes_each_held_back_document_with_a_reason_kept_and_audited(
    case: Case, lawyer: User, held: dict[str, Document]
) -> None:
    kept = ("draft", "flagged", "work")
    documents = [held["clean"], *(held[k] for k in kept)]
    include = [Inclusion(document_id=held[k].pk, reason=f"  {REASON}\r\n") for k in kept]

    production = _create(case, lawyer, documents, include)

    items = {i.document_id: i for i in ProductionDocument.objects.filter(production=production)}
    assert items[held["clean"].pk].held_back == "" and items[held["clean"].pk].included_by is None
    for key in kept:
        item = items[held[key].pk]
        assert (item.included_by, item.inclusion_reason) == (lawyer, REASON)
        assert item.held_back
    audits = AuditEvent.objects.filter(action="production.document_included").order_by("id")
    assert [(a.actor, a.detail["document"], a.detail["reason"]) for a in audits] == [
        (lawyer, held[k].pk, REASON) for k in kept
    ]
    assert audits[2].detail["held_back"] == "it is firm work product"
    # The row is about the document (the case's activity names it), in this production.
    assert [a.target_label for a in audits] == [held[k].filename for k in kept]
    assert {(a.detail["production"], a.detail["volume"]) for a in audits} == {
        (production.pk, production.volume)
    }


def test_staff_may_not_include_and_nothing_is_produced(
    case: Case, staff: User, held: dict[str, Document]
) -> None:
    with pytest.raises(LawyerRequired):
        _create(
            case, staff, [held["work"]], [Inclusion(document_id=held["work"].pk, reason=REASON)]
        )
    # Without inclusions staff is told what is held back, like anyone.
    with pytest.raises(ProductionRefused):
        _create(case, staff, [held["work"]])
    assert not Production.objects.exists()
    assert not AuditEvent.objects.filter(action="production.document_included").exists()


@pytest.mark.parametrize(
    ("reason", "says"),
    [
        ("", "at least 10"),
        ("   \n\t ", "at least 10"),
        ("too short", "at least 10"),
        ("x" * 2001, "at most 2,000"),
        ("Produce it\u202e please, ordered.", "control or invisible"),
    ],
)
def test_a_missing_short_oversized_or_hidden_reason_is_refused(
    case: Case, lawyer: User, held: dict[str, Document], reason: str, says: str
) -> None:
    with pytest.raises(ReasonInvalid, match=says):
        _create(
            case, lawyer, [held["work"]], [Inclusion(document_id=held["work"].pk, reason=reason)]
        )
    assert not Production.objects.exists()


def test_inclusions_must_name_held_back_documents_of_the_production_once(
    case: Case, lawyer: User, held: dict[str, Document], other_case: Case, outsider: User
) -> None:
    theirs = _upload(
        other_case, outsider, "theirs.pdf", "Another firm's case file.", "work_product"
    )
    work = held["work"]
    cases = [
        ([work], [Inclusion(document_id=999_999_999, reason=REASON)], "not among"),
        ([work], [Inclusion(document_id=theirs.pk, reason=REASON)], "not among"),
        (
            [work, held["clean"]],
            [Inclusion(document_id=held["clean"].pk, reason=REASON)],
            "not held",
        ),
        ([work], [Inclusion(document_id=work.pk, reason=REASON)] * 2, "included twice"),
        ([work, theirs], [Inclusion(document_id=work.pk, reason=REASON)], "No document"),
    ]
    for documents, include, says in cases:
        with pytest.raises(DomainError, match=says):
            _create(case, lawyer, documents, include)
    assert not Production.objects.exists()


# --- The volume --------------------------------------------------------------------------------


def test_the_volume_is_an_outgoing_production_never_produced_again_nor_put_in_a_packet(
    case: Case, lawyer: User, held: dict[str, Document]
) -> None:
    production = _create(case, lawyer, [held["clean"]])
    production_services.production_stamp(production_id=production.pk)
    volume = Production.objects.get(pk=production.pk).volume_document
    assert volume is not None
    assert (volume.origin, volume.get_origin_display()) == ("production", "Outgoing production")

    with pytest.raises(DomainError, match="is a production volume"):
        production_services.production_create(
            case=case, actor=lawyer, volume="OUT002", prefix="OUT", document_ids=[volume.pk]
        )
    packet = packet_services.packet_create(user=lawyer, case_id=case.pk, title="Exhibits")
    with pytest.raises(ProvenanceRefused, match="production volume"):
        packet_services.packet_items_add(
            user=lawyer,
            case_id=case.pk,
            packet_id=packet.pk,
            selections=[
                Selection(document_id=held["clean"].pk, reason="The lease itself"),
                Selection(document_id=volume.pk, reason="The volume as well"),
            ],
        )
    assert not packet.items.exists()  # all or nothing: not even the original beside it


def test_a_volume_holding_an_included_generated_document_stays_system_generated(
    case: Case, lawyer: User, held: dict[str, Document]
) -> None:
    include = [Inclusion(document_id=held["draft"].pk, reason=REASON)]
    production = _create(case, lawyer, [held["clean"], held["draft"]], include)
    production_services.production_stamp(production_id=production.pk)

    volume = Production.objects.get(pk=production.pk).volume_document
    assert volume is not None and volume.origin == "system_generated"


# --- The API and MCP's shared schema -----------------------------------------------------------


def test_api_refusal_lists_each_document_and_why(
    case: Case, lawyer_api: Client, held: dict[str, Document]
) -> None:
    response = lawyer_api.post(
        _api(case), _body([held["clean"], held["work"], held["flagged"]]), "application/json"
    )

    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "production_refused"
    assert [e["loc"] for e in body["errors"]] == [
        ["document_ids", held["work"].pk],
        ["document_ids", held["flagged"].pk],
    ]
    assert body["errors"][0]["msg"] == "notes.pdf: it is firm work product"


def test_api_lawyer_includes_with_a_reason_and_the_items_say_so(
    case: Case, lawyer: User, lawyer_api: Client, held: dict[str, Document]
) -> None:
    body = _body(
        [held["clean"], held["work"]],
        include=[{"document_id": held["work"].pk, "reason": REASON}],
    )
    response = lawyer_api.post(_api(case), body, "application/json")

    assert response.status_code == 201, response.json()
    items = {i["document_id"]: i for i in response.json()["items"]}
    assert items[held["work"].pk]["inclusion_reason"] == REASON
    assert items[held["work"].pk]["included_by_id"] == lawyer.pk
    assert items[held["work"].pk]["held_back"] == "it is firm work product"
    assert items[held["clean"].pk]["included_by_id"] is None
    audit = AuditEvent.objects.get(action="production.document_included")
    assert (audit.via, audit.detail["reason"]) == ("api", REASON)


def test_api_a_staff_token_may_not_include(
    case: Case, staff_api: Client, held: dict[str, Document]
) -> None:
    body = _body([held["work"]], include=[{"document_id": held["work"].pk, "reason": REASON}])

    response = staff_api.post(_api(case), body, "application/json")

    assert response.status_code == 403
    assert response.json()["code"] == "lawyer_required"
    assert not Production.objects.exists()


@pytest.mark.parametrize(
    ("include", "status", "code"),
    [
        ([{"document_id": "WORK"}], 422, "invalid"),  # no reason
        ([{"document_id": "WORK", "reason": ""}], 400, "reason_invalid"),
        ([{"document_id": "WORK", "reason": "y" * 5000}], 400, "reason_invalid"),
        ([{"document_id": "WORK", "reason": "z" * 20_000}], 422, "invalid"),  # over any string
        ([{"document_id": 0, "reason": REASON}], 422, "invalid"),
        ([{"document_id": "1", "reason": REASON}], 422, "invalid"),
        ([{"document_id": 999_999_999, "reason": REASON}], 400, "invalid"),
        ([{"document_id": "WORK", "reason": REASON, "by": "me"}], 422, "invalid"),
        ("all of them", 422, "invalid"),
    ],
)
def test_api_bad_inclusions_are_refused_and_nothing_is_produced(
    case: Case, lawyer_api: Client, held: dict[str, Document], include: Any, status: int, code: str
) -> None:
    if isinstance(include, list):
        include = [
            {**one, "document_id": held["work"].pk} if one.get("document_id") == "WORK" else one
            for one in include
        ]
    response = lawyer_api.post(
        _api(case), _body([held["work"]], include=include), "application/json"
    )

    assert response.status_code == status, response.json()
    assert response.json()["code"] == code
    assert not Production.objects.exists()


# --- The order screen --------------------------------------------------------------------------


def _new(case: Case) -> str:
    return reverse("documents:production_new", kwargs={"case_id": case.pk})


def test_the_order_screen_says_no_with_the_reason_and_offers_lawyers_the_inclusion(
    case: Case, lawyer_client: Client, staff_client: Client, held: dict[str, Document]
) -> None:
    ids = [held["clean"].pk, held["work"].pk, held["draft"].pk]

    as_lawyer = lawyer_client.get(_new(case), {"ids": ids}).content.decode()
    as_staff = staff_client.get(_new(case), {"ids": ids}).content.decode()

    assert "No: it is firm work product." in as_lawyer
    assert "No: it is system generated (lexweb wrote it)." in as_lawyer
    assert as_lawyer.count("data-held-back") == 2
    assert f'name="include_{held["work"].pk}"' in as_lawyer
    assert f'name="include_{held["clean"].pk}"' not in as_lawyer
    assert "No: it is firm work product." in as_staff and 'name="include_' not in as_staff


def test_the_order_screen_commits_a_lawyers_inclusion_and_refuses_without_one(
    case: Case, lawyer: User, lawyer_client: Client, held: dict[str, Document]
) -> None:
    form = {
        "documents": f"{held['clean'].pk},{held['work'].pk}",
        "volume": "OUT001",
        "bates_prefix": "OUT",
        "digits": "6",
        "position": "bottom_right",
        "legend": "",
        "legend_position": "bottom_left",
        "font_size": "9",
        "margin": "18",
        "op": "commit",
    }

    refused = lawyer_client.post(_new(case), form)
    assert refused.status_code == 400
    assert "notes.pdf (document" in refused.content.decode()
    assert not Production.objects.exists()

    made = lawyer_client.post(_new(case), {**form, f"include_{held['work'].pk}": REASON})
    assert made.status_code == 302
    item = ProductionDocument.objects.get(document=held["work"])
    assert (item.included_by, item.inclusion_reason) == (lawyer, REASON)
    assert AuditEvent.objects.get(action="production.document_included").via == "web"
    page = lawyer_client.get(made["Location"]).content.decode()
    assert f"included by a lawyer: “{REASON}”" in page


def _commit_form(documents: list[Document], **fields: str) -> dict[str, str]:
    return {
        "documents": ",".join(str(d.pk) for d in documents),
        "volume": "OUT001",
        "bates_prefix": "OUT",
        "digits": "6",
        "position": "bottom_right",
        "legend": "",
        "legend_position": "bottom_left",
        "font_size": "9",
        "margin": "18",
        "op": "commit",
        **fields,
    }


def test_the_order_screen_withholds_a_document_into_the_privilege_log(
    case: Case, staff_client: Client, held: dict[str, Document]
) -> None:
    work = held["work"].pk
    fields = {
        f"withhold_{work}": "work_product",
        f"withhold_description_{work}": "Strategy notes for trial.",
        f"withhold_date_{work}": "2025-01-03",
        f"withhold_author_{work}": "P. Partner",
    }

    soon = {**fields, f"withhold_date_{work}": "soon"}
    bad = staff_client.post(_new(case), _commit_form([held["clean"], held["work"]], **soon))
    assert bad.status_code == 400 and "not a date" in bad.content.decode()
    made = staff_client.post(_new(case), _commit_form([held["clean"], held["work"]], **fields))

    assert made.status_code == 302
    production = Production.objects.get()
    assert list(production.items.values_list("document_id", flat=True)) == [held["clean"].pk]
    (entry,) = production.privilege_log.all()
    assert (entry.document_id, entry.date, entry.author) == (
        work,
        datetime.date(2025, 1, 3),
        "P. Partner",
    )
    page = staff_client.get(made["Location"]).content.decode()
    assert "Privilege log" in page and "Strategy notes for trial." in page


# --- The privilege log -------------------------------------------------------------------------


def _withhold(document: Document, **fields: Any) -> Withholding:
    values: dict[str, Any] = {
        "document_id": document.pk,
        "privilege": "work_product",
        "description": "Partner's notes on trial strategy, prepared for this litigation.",
        "date": datetime.date(2025, 1, 3),
        "author": "P. Partner",
        "recipients": "A. Associate; B. Paralegal",
    }
    values.update(fields)
    return Withholding(**values)


def test_withheld_documents_go_to_the_privilege_log_exported_as_csv_and_pdf_with_the_volume(
    case: Case, staff: User, held: dict[str, Document]
) -> None:
    # Withholding sends nothing out: staff may do it. A cell a spreadsheet would run is quoted.
    production = production_services.production_create(
        case=case,
        actor=staff,
        volume="OUT001",
        prefix="OUT",
        document_ids=[held["clean"].pk],
        withheld=[
            _withhold(held["work"]),
            _withhold(
                held["draft"], privilege="attorney_client", author="=HYPERLINK(1)", date=None
            ),
        ],
    )
    production_services.production_stamp(production_id=production.pk)
    production.refresh_from_db()
    export = production_services.production_export_request(production=production, actor=staff)
    production_services.production_export_build(export_id=export.pk)
    export.refresh_from_db()
    assert export.status == "ready" and export.output is not None

    with zipfile.ZipFile(storage.blob_path(export.output.sha256)) as archive:
        rows = list(
            csv.reader(io.StringIO(archive.read("OUT001/PRIVILEGE_LOG.csv").decode("utf-8-sig")))
        )
        pdf_bytes = archive.read("OUT001/PRIVILEGE_LOG.pdf")
    assert rows == [
        ["Bates range or document", "Date", "Author", "Recipients", "Privilege", "Description"],
        [
            f"notes.pdf (document {held['work'].pk})",
            "2025-01-03",
            "P. Partner",
            "A. Associate; B. Paralegal",
            "Attorney work product",
            "Partner's notes on trial strategy, prepared for this litigation.",
        ],
        [
            f"draft.pdf (document {held['draft'].pk})",
            "",
            "'=HYPERLINK(1)",
            "A. Associate; B. Paralegal",
            "Attorney-client privilege",
            "Partner's notes on trial strategy, prepared for this litigation.",
        ],
    ]
    with pymupdf.open(stream=pdf_bytes, filetype="pdf") as pdf:
        text = " ".join(page.get_text() for page in pdf)
    assert "Privilege log of production OUT001" in text and "notes.pdf" in text
    assert "Attorney-client privilege" in text
    audits = AuditEvent.objects.filter(action="production.document_withheld").order_by("id")
    assert [a.detail["document"] for a in audits] == [held["work"].pk, held["draft"].pk]
    assert [a.target_label for a in audits] == [held["work"].filename, held["draft"].filename]


def test_a_volume_without_withheld_documents_has_no_privilege_log(
    case: Case, lawyer: User, held: dict[str, Document]
) -> None:
    production = _create(case, lawyer, [held["clean"]])
    production_services.production_stamp(production_id=production.pk)
    production.refresh_from_db()
    export = production_services.production_export_request(production=production, actor=lawyer)
    production_services.production_export_build(export_id=export.pk)
    export.refresh_from_db()
    assert export.output is not None
    with zipfile.ZipFile(storage.blob_path(export.output.sha256)) as archive:
        assert not [n for n in archive.namelist() if "PRIVILEGE_LOG" in n]


def test_bad_withholdings_are_refused_and_nothing_is_produced(
    case: Case, lawyer: User, held: dict[str, Document], other_case: Case, outsider: User
) -> None:
    theirs = _upload(other_case, outsider, "theirs.pdf", "Another firm's case file.")
    clean, work = held["clean"], held["work"]
    cases = [
        ([_withhold(clean)], "both produced and withheld"),
        ([_withhold(theirs)], "No document"),
        ([_withhold(work, document_id=999_999_999)], "No document"),
        ([_withhold(work), _withhold(work)], "withheld twice"),
        ([_withhold(work, privilege="secret")], "Unknown privilege"),
        ([_withhold(work, description="  ")], "description"),
        ([_withhold(work, description="d" * 2001)], "at most 2,000"),
        ([_withhold(work, author="a\u200bb")], "invisible"),
    ]
    for withheld, says in cases:
        with pytest.raises(DomainError, match=says):
            production_services.production_create(
                case=case,
                actor=lawyer,
                volume="OUT001",
                prefix="OUT",
                document_ids=[clean.pk],
                withheld=withheld,
            )
    assert not Production.objects.exists()
    assert not AuditEvent.objects.filter(action="production.document_withheld").exists()


def test_api_withholds_into_the_privilege_log_and_refuses_bad_entries(
    case: Case, lawyer_api: Client, held: dict[str, Document]
) -> None:
    entry = {
        "document_id": held["work"].pk,
        "privilege": "attorney_client_work_product",
        "description": "Memo to the client on settlement.",
        "date": "2025-02-01",
        "recipients": "Client CFO",
    }
    for bad in (
        {**entry, "privilege": "secret"},
        {**entry, "description": ""},
        {**entry, "date": "yesterday"},
        {**entry, "document_id": 0},
        {k: v for k, v in entry.items() if k != "privilege"},
    ):
        response = lawyer_api.post(
            _api(case), _body([held["clean"]], withhold=[bad]), "application/json"
        )
        assert response.status_code == 422, (bad, response.json())
    assert not Production.objects.exists()

    made = lawyer_api.post(_api(case), _body([held["clean"]], withhold=[entry]), "application/json")

    assert made.status_code == 201, made.json()
    assert made.json()["privilege_log"] == [
        {
            "document_id": held["work"].pk,
            "filename": "notes.pdf",
            "date": "2025-02-01",
            "author": "",
            "recipients": "Client CFO",
            "privilege": "attorney_client_work_product",
            "privilege_label": "Attorney-client privilege; work product",
            "description": "Memo to the client on settlement.",
        }
    ]


def test_api_can_it_be_produced_says_no_with_the_reason(
    case: Case,
    lawyer_api: Client,
    staff_api: Client,
    held: dict[str, Document],
    other_case: Case,
    outsider: User,
) -> None:
    theirs = _upload(other_case, outsider, "theirs.pdf", "Another firm's case file.")
    ids = [held["clean"].pk, held["work"].pk, held["draft"].pk, theirs.pk, 999_999_999]
    url = f"{_api(case)}/check"

    answers = lawyer_api.get(url, {"document_ids": ids}).json()
    as_staff = staff_api.get(url, {"document_ids": ids}).json()

    assert [(a["document_id"], a["producible"]) for a in answers] == [
        (held["clean"].pk, True),
        (held["work"].pk, False),
        (held["draft"].pk, False),
    ]
    assert answers[1]["held_back"] == "it is firm work product"
    assert answers[2]["held_back"] == "it is system generated (lexweb wrote it)"
    assert [a["lawyer_may_include"] for a in answers] == [False, True, True]
    assert [a["lawyer_may_include"] for a in as_staff] == [False, False, False]
    assert lawyer_api.get(url, {"document_ids": "x"}).status_code == 422
    # Over 1,000 ids is over the request's field limit before the schema's.
    assert lawyer_api.get(url, {"document_ids": list(range(1, 1002))}).status_code == 413
    assert lawyer_api.get(f"/api/v1/cases/{other_case.pk}/productions/check").status_code == 404


def test_api_can_it_be_produced_refuses_a_volume_outright(
    case: Case, lawyer: User, lawyer_api: Client, held: dict[str, Document]
) -> None:
    production = _create(case, lawyer, [held["clean"]])
    production_services.production_stamp(production_id=production.pk)
    volume_id = Production.objects.get(pk=production.pk).volume_document_id
    assert volume_id is not None

    (answer,) = lawyer_api.get(f"{_api(case)}/check", {"document_ids": [volume_id]}).json()

    assert answer["producible"] is False and "is a production volume" in answer["refused"]
    assert answer["lawyer_may_include"] is False
