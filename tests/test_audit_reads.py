"""Every read of client material is audited, whatever the edge: one row per request, with the
actor, the case, the object, the edge (api/web) and the client address.

`API` lists every operation of the ninja API (from its OpenAPI schema) and `PAGES` every browser
route (from the URL resolver), each as a read of material (with the audit action it must leave),
a write that returns material (audited by its service), or not material (with the reason). The
first tests fail when an operation or route exists that the tables do not list, so a new
endpoint has to say which it is; the others call every material one as a member, with real
data, and fail when it left no row or not exactly one.
"""

import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.db.models import Model
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver

from apps.accounts.models import AuditEvent, User
from apps.api.api import api
from apps.cases.models import Case
from apps.documents import production_selectors, production_services, review_services, selectors
from apps.documents import services as document_services
from apps.documents.models import Production, ProductionExport, Tag
from apps.drafting.services import transactions
from apps.evidence.services import packets as packet_services
from apps.evidence.services import registry
from tests.conftest import make_case, make_lawyer, make_staff, session_client, token_client
from tests.drafting.makers import draft_of, verified
from tests.drafting.run_fixtures import runs_for_tables
from tests.drafting.table_fixtures import financial_run
from tests.harness.database import flush_written_tables

# A documentation address (RFC 5737): nothing else in the test run comes from it.
CLIENT_IP = "198.51.100.23"
IMAGE_DPI = 72


@dataclass(frozen=True)
class Read:
    """Shows client material: must leave exactly one read row with this action. `target` names
    the object the row must point at (a key of the `objects` fixture)."""

    action: str
    target: str = "case"
    query: dict[str, str] = field(default_factory=dict)
    # Path ids taken from other objects than the defaults: {path kwarg: key of `objects`}.
    ids: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Write:
    """Changes something and answers with client material: its service audits the change."""

    action: str
    payload: dict[str, Any] = field(default_factory=dict)
    # Path ids taken from other objects than the defaults: {path kwarg: key of `objects`}.
    ids: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NotMaterial:
    reason: str


Entry = Read | Write | NotMaterial

# (method, OpenAPI path) -> what it is.
API: dict[tuple[str, str], Entry] = {
    ("GET", "/api/v1/me"): NotMaterial("the caller's own account"),
    ("GET", "/api/v1/tokens"): NotMaterial("the caller's own tokens"),
    ("POST", "/api/v1/tokens"): NotMaterial("creates a token of the caller's (audited)"),
    ("DELETE", "/api/v1/tokens/{token_id}"): NotMaterial("revokes a token (audited)"),
    ("GET", "/api/v1/cases"): NotMaterial("the caller's case list: numbers and titles"),
    ("POST", "/api/v1/cases"): NotMaterial("opens a case (audited)"),
    ("GET", "/api/v1/cases/{case_id}"): Read("case.view"),
    ("PATCH", "/api/v1/cases/{case_id}"): NotMaterial("renames a case (audited)"),
    ("GET", "/api/v1/cases/{case_id}/members"): Read("member.list"),
    ("POST", "/api/v1/cases/{case_id}/members"): NotMaterial("adds a member (audited)"),
    ("PATCH", "/api/v1/cases/{case_id}/members/{user_id}"): NotMaterial("audited write"),
    ("DELETE", "/api/v1/cases/{case_id}/members/{user_id}"): NotMaterial("audited write"),
    ("POST", "/api/v1/cases/{case_id}/worker-check"): NotMaterial("queues a test job"),
    ("GET", "/api/v1/cases/{case_id}/events"): Read("case.events"),
    ("GET", "/api/v1/cases/{case_id}/events/stream"): Read("case.stream"),
    ("GET", "/api/v1/cases/{case_id}/documents"): Read("document.list"),
    ("POST", "/api/v1/cases/{case_id}/documents"): Write(
        "document.upload", {"origin": "client", "files": ("audit-note.txt", b"A note.\n")}
    ),
    ("GET", "/api/v1/cases/{case_id}/documents/{document_id}"): Read("document.view", "document"),
    ("GET", "/api/v1/cases/{case_id}/documents/{document_id}/original"): Read(
        "document.download", "document"
    ),
    ("GET", "/api/v1/cases/{case_id}/documents/{document_id}/pages"): Read(
        "document.pages", "document"
    ),
    ("GET", "/api/v1/cases/{case_id}/documents/{document_id}/pages/{number}/image"): Read(
        "document.page", "document", {"dpi": str(IMAGE_DPI)}
    ),
    ("GET", "/api/v1/cases/{case_id}/documents/{document_id}/pages/{number}/hits"): Read(
        "document.page", "document", {"q": "ledger"}
    ),
    ("GET", "/api/v1/cases/{case_id}/search"): Read("case.search", query={"q": "ledger"}),
    ("GET", "/api/v1/cases/{case_id}/tags"): Read("tag.list"),
    ("POST", "/api/v1/cases/{case_id}/documents/tag"): NotMaterial("tags documents (audited)"),
    ("POST", "/api/v1/cases/{case_id}/documents/untag"): NotMaterial("untags (audited)"),
    ("POST", "/api/v1/cases/{case_id}/documents/withdraw"): NotMaterial(
        "withdraws documents (audited); answers their names and the reason"
    ),
    ("POST", "/api/v1/cases/{case_id}/documents/{document_id}/restore"): NotMaterial(
        "restores a withdrawn document (audited)"
    ),
    ("POST", "/api/v1/cases/{case_id}/documents/{document_id}/flag-clearance"): Write(
        "document.flag_cleared",
        {"reason": "The words are the exhibit's own."},
        ids={"document_id": "flagged_document"},
    ),
    ("GET", "/api/v1/cases/{case_id}/productions"): Read("production.list"),
    ("POST", "/api/v1/cases/{case_id}/productions"): Write(
        "production.create", {"volume": "AUDIT2", "prefix": "AUD", "document_ids": "document"}
    ),
    ("GET", "/api/v1/cases/{case_id}/productions/check"): Read("document.list"),
    ("GET", "/api/v1/cases/{case_id}/productions/{production_id}"): Read(
        "production.view", "production"
    ),
    ("GET", "/api/v1/cases/{case_id}/productions/{production_id}/pdf"): Read(
        "production.download", "production"
    ),
    ("GET", "/api/v1/cases/{case_id}/bates/{reference}"): Read("bates.lookup"),
    ("POST", "/api/v1/cases/{case_id}/productions/{production_id}/exports"): Write(
        "production.export", {"encoding": "utf-8", "image_dpi": 100}
    ),
    ("GET", "/api/v1/cases/{case_id}/productions/{production_id}/exports/{export_id}"): Read(
        "production.export_view", "export"
    ),
    ("GET", "/api/v1/cases/{case_id}/productions/{production_id}/exports/{export_id}/zip"): Read(
        "production.export_download", "production"
    ),
    ("POST", "/api/v1/cases/{case_id}/packets"): Write("packet.create", {"title": "Audit 2"}),
    ("GET", "/api/v1/cases/{case_id}/packets"): Read("packet.list"),
    ("GET", "/api/v1/cases/{case_id}/packets/{packet_id}"): Read("packet.view", "packet"),
    ("POST", "/api/v1/cases/{case_id}/packets/{packet_id}/items"): Write(
        "packet.items_add",
        {"items": [{"document_id": "document", "reason": "The ledger"}]},
        {"packet_id": "empty_packet"},
    ),
    ("DELETE", "/api/v1/cases/{case_id}/packets/{packet_id}/items/{item_id}"): NotMaterial(
        "removes an item; answers nothing (audited)"
    ),
    ("POST", "/api/v1/cases/{case_id}/packets/{packet_id}/freeze"): Write(
        "packet.freeze", ids={"packet_id": "editable_packet"}
    ),
    ("POST", "/api/v1/cases/{case_id}/packets/{packet_id}/versions"): Write("packet.new_version"),
    ("GET", "/api/v1/cases/{case_id}/packets/{packet_id}/versions"): Read(
        "packet.versions", "packet"
    ),
    ("GET", "/api/v1/cases/{case_id}/packets/{packet_id}/pages"): Read("packet.pages", "packet"),
    ("GET", "/api/v1/cases/{case_id}/packets/{packet_id}/compare/{other_id}"): Read(
        "packet.compare", "packet"
    ),
    ("POST", "/api/v1/cases/{case_id}/drafts"): Write(
        "draft.create",
        {"title": "Audit draft", "kind": "memo", "packet_id": "@packet", "text": "Audit text."},
    ),
    ("GET", "/api/v1/cases/{case_id}/drafts"): Read("draft.list"),
    ("GET", "/api/v1/cases/{case_id}/drafts/{draft_id}"): Read("draft.view", "draft"),
    ("POST", "/api/v1/cases/{case_id}/drafts/{draft_id}/versions"): Write(
        "draft.version_add", {"text": "Version two."}
    ),
    ("GET", "/api/v1/cases/{case_id}/drafts/{draft_id}/versions/{number}"): Read(
        "draft.version_view", "version"
    ),
    ("POST", "/api/v1/cases/{case_id}/drafts/{draft_id}/versions/{number}/verify"): Write(
        "verification.request"
    ),
    ("GET", "/api/v1/cases/{case_id}/drafts/{draft_id}/versions/{number}/findings"): Read(
        "finding.list", "version"
    ),
    (
        "POST",
        "/api/v1/cases/{case_id}/drafts/{draft_id}/versions/{number}/findings/{finding_id}/override",
    ): Write("finding.override", {"reason": "Checked by hand against the signed lease."}),
    ("POST", "/api/v1/cases/{case_id}/drafts/{draft_id}/versions/{number}/approve"): Write(
        "draft.approve", ids={"draft_id": "clean_draft"}
    ),
    ("GET", "/api/v1/cases/{case_id}/drafts/{draft_id}/versions/{number}/diff"): Read(
        "draft.version_diff", "version", query={"against": "1"}
    ),
    ("POST", "/api/v1/cases/{case_id}/drafts/{draft_id}/versions/{number}/export"): Write(
        "draft.export", {"format": "pdf"}, ids={"draft_id": "clean_draft"}
    ),
    ("POST", "/api/v1/cases/{case_id}/runs"): Write(
        "run.start",
        {"kind": "summary", "packet_id": "@packet", "instructions": "Summarise the ledger."},
    ),
    ("GET", "/api/v1/cases/{case_id}/runs"): Read("run.list"),
    ("GET", "/api/v1/cases/{case_id}/runs/{run_id}"): Read("run.view", "run"),
    ("GET", "/api/v1/cases/{case_id}/runs/{run_id}/events"): Read("run.events", "run"),
    ("GET", "/api/v1/cases/{case_id}/runs/{run_id}/events/stream"): Read("run.stream", "run"),
    ("GET", "/api/v1/cases/{case_id}/runs/{run_id}/transactions.csv"): Read(
        "run.transactions_csv", "financial_run", ids={"run_id": "financial_run"}
    ),
    ("POST", "/api/v1/cases/{case_id}/runs/{run_id}/cancel"): Write("run.cancel"),
    ("POST", "/api/v1/cases/{case_id}/runs/{run_id}/gate-override"): Write(
        "run.gate_override",
        {"reason": "Checked the lease by hand: grounds exist."},
        ids={"run_id": "stopped_run"},
    ),
    ("POST", "/api/v1/cases/{case_id}/runs/{run_id}/reject"): Write(
        "run.rejected",
        {"reason": "Checked the draft by hand: it will not do."},
        ids={"run_id": "waiting_run"},
    ),
    ("GET", "/api/v1/cluster/status"): NotMaterial("GPUs and backends, no case"),
}

# Browser route (as the resolver spells it) -> what a GET of it is. Uploads through the
# document page are audited by the upload service (tests/documents); every route is listed.
PAGES: dict[str, Entry] = {
    "healthz": NotMaterial("probe"),
    "readyz": NotMaterial("probe"),
    "accounts/login/": NotMaterial("sign-in"),
    "accounts/logout/": NotMaterial("sign-out"),
    "accounts/reauth/": NotMaterial("password re-entry"),
    "accounts/people/": NotMaterial("admins only: accounts (names, e-mails, roles), no case"),
    "accounts/people/<int:user_id>/": NotMaterial("admins only: one account, no case"),
    "accounts/people/<int:user_id>/password/": NotMaterial("sets a password (POST, audited)"),
    "accounts/people/<int:user_id>/active/": NotMaterial("(de)activates (POST, audited)"),
    "accounts/people/<int:user_id>/sign-in-link/": NotMaterial(
        "admins only: mails a sign-in link (POST, audited)"
    ),
    "accounts/sign-in/<str:secret>/": NotMaterial("a sign-in link's confirm page and sign-in"),
    "accounts/password/": NotMaterial("the user's own new password"),
    "accounts/tokens/": NotMaterial("the user's own tokens"),
    "accounts/tokens/revoke-all/": NotMaterial("revokes the user's tokens (audited)"),
    "accounts/tokens/<int:token_id>/revoke/": NotMaterial("revokes a token (audited)"),
    "": NotMaterial("the user's case list: numbers and titles"),
    "cases/new/": NotMaterial("the form to open a case"),
    "cases/break-glass/": NotMaterial("an admin's break-glass form: case numbers; audited grant"),
    "cases/<int:case_id>/": Read("case.view"),
    "cases/<int:case_id>/members/": NotMaterial("adds a member (POST, audited)"),
    "cases/<int:case_id>/members/candidates/": NotMaterial(
        "the member picker: names and e-mails of people not on the case, no case material"
    ),
    "cases/<int:case_id>/members/<int:user_id>/role/": NotMaterial("audited write (POST)"),
    "cases/<int:case_id>/members/<int:user_id>/remove/": NotMaterial("audited write (POST)"),
    "cases/<int:case_id>/health/": NotMaterial("the worker check's page: number only"),
    "cases/<int:case_id>/worker-check/": NotMaterial("queues a test job (POST)"),
    "cases/<int:case_id>/documents/": Read("document.list"),
    "cases/<int:case_id>/documents/<int:document_id>/": Read("document.view", "document"),
    "cases/<int:case_id>/documents/rows/": Read("document.list"),
    "cases/<int:case_id>/documents/bulk/": NotMaterial("tags or withdraws (POST, audited)"),
    "cases/<int:case_id>/documents/<int:document_id>/restore/": NotMaterial(
        "restores a withdrawn document (POST, audited)"
    ),
    "cases/<int:case_id>/documents/<int:document_id>/flag-clearance/": NotMaterial(
        "clears a flag (POST, audited); redirects to the document"
    ),
    "cases/<int:case_id>/search/": Read("case.search", query={"q": "ledger"}),
    "cases/<int:case_id>/bates/": Read("bates.lookup", query={"ref": "AUD000001"}),
    "cases/<int:case_id>/productions/": Read("production.list"),
    # Without a pick: the (empty) list of picked documents.
    "cases/<int:case_id>/productions/new/": Read("document.list"),
    "cases/<int:case_id>/productions/preview/<int:document_id>.png": Read(
        "production.preview", "document", query={"bates_prefix": "AUD"}
    ),
    "cases/<int:case_id>/productions/<int:production_id>/": Read("production.view", "production"),
    "cases/<int:case_id>/productions/<int:production_id>/exports/": NotMaterial(
        "queues a volume export (POST, audited)"
    ),
    "cases/<int:case_id>/packets/": Read("packet.list"),
    "cases/<int:case_id>/packets/<int:packet_id>/": Read("packet.view", "packet"),
    "cases/<int:case_id>/packets/<int:packet_id>/items/": NotMaterial("adds items (POST, audited)"),
    "cases/<int:case_id>/packets/<int:packet_id>/items/<int:item_id>/remove/": NotMaterial(
        "removes an item (POST, audited)"
    ),
    "cases/<int:case_id>/packets/<int:packet_id>/freeze/": Read("packet.view", "packet"),
    "cases/<int:case_id>/packets/<int:packet_id>/versions/": Read("packet.versions", "packet"),
    "cases/<int:case_id>/packets/<int:packet_id>/compare/<int:other_id>/": Read(
        "packet.compare", "packet"
    ),
    "cases/<int:case_id>/packets/<int:packet_id>/pages/": Read("packet.pages", "packet"),
    "cases/<int:case_id>/drafts/": Read("draft.list"),
    # The create form lists the case's frozen packets.
    "cases/<int:case_id>/drafts/new/": Read("packet.list"),
    "cases/<int:case_id>/drafts/<int:draft_id>/": Read("draft.view", "draft"),
    "cases/<int:case_id>/drafts/<int:draft_id>/versions/": NotMaterial(
        "adds a version (POST, audited)"
    ),
    "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/": Read(
        "finding.list", "version"
    ),
    "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/verify/": NotMaterial(
        "queues a verification (POST, audited)"
    ),
    "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/findings/"
    "<int:finding_id>/override/": NotMaterial("overrides a finding (POST, audited)"),
    "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/approve/": NotMaterial(
        "approves a version (POST, audited)"
    ),
    "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/export/": NotMaterial(
        "exports a version (POST, audited draft.export)"
    ),
    "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/diff/": Read(
        "draft.version_diff", "version", query={"against": "1"}
    ),
    "cases/<int:case_id>/runs/": Read("run.list"),
    # The start form lists the case's frozen packets.
    "cases/<int:case_id>/runs/new/": Read("packet.list"),
    "cases/<int:case_id>/runs/<int:run_id>/": Read("run.view", "run"),
    "cases/<int:case_id>/runs/<int:run_id>/cancel/": NotMaterial("cancels a run (POST, audited)"),
    "cases/<int:case_id>/runs/<int:run_id>/gate-override/": NotMaterial(
        "overrides the gate (POST, audited)"
    ),
    "cases/<int:case_id>/runs/<int:run_id>/reject/": NotMaterial("rejects a run (POST, audited)"),
    "cluster/": NotMaterial("GPUs and backends, no case"),
    "cluster/jobs/": NotMaterial(
        "admins only: job counts and workers, no case (audited cluster.jobs_view)"
    ),
}

_KWARG = re.compile(r"<(?:\w+:)?(\w+)>|\{(\w+)\}")


def _walk(patterns: Sequence[URLPattern | URLResolver], prefix: str = "") -> Iterator[str]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern)


def _page_routes() -> set[str]:
    return {
        route
        for route in _walk(get_resolver().url_patterns)
        if not route.startswith(("admin/", "api/"))
    }


def _api_operations() -> set[tuple[str, str]]:
    paths = api.get_openapi_schema()["paths"]
    return {(method.upper(), path) for path, operations in paths.items() for method in operations}


def _path(route: str, ids: dict[str, Any]) -> str:
    path = _KWARG.sub(lambda m: str(ids[m.group(1) or m.group(2)]), route)
    return path if path.startswith("/") else "/" + path


# --- The tables are complete ----------------------------------------------------------------


def test_every_api_operation_says_whether_it_returns_client_material() -> None:
    assert _api_operations() == set(API)


def test_every_browser_route_says_whether_it_returns_client_material() -> None:
    assert _page_routes() == set(PAGES)


# --- Real data to read ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def _world(django_db_setup: None, django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    """The personas, their case and `objects`, made once for this file and committed (about
    0.4 s a test when each test made its own); each test runs in a transaction rolled back after
    it, so what a test writes (tokens, audit rows, a write's result) is gone for the next. The
    rows are deleted when the file is done."""
    md5 = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    with django_db_blocker.unblock(), override_settings(PASSWORD_HASHERS=md5):
        lawyer = make_lawyer()
        case = make_case(lawyer, make_staff())
        made = _objects(lawyer, case)
        yield {"lawyer": lawyer, "case": case, "objects": made}
        flush_written_tables(connection)


def _fresh(value: Any) -> Any:
    """A model instance read again: a test that changed the shared one in memory leaves the
    next test nothing of it."""
    return type(value).objects.get(pk=value.pk) if isinstance(value, Model) else value


@pytest.fixture
def lawyer(db: None, _world: dict[str, Any]) -> User:
    return _fresh(_world["lawyer"])


@pytest.fixture
def case(db: None, _world: dict[str, Any]) -> Case:
    return _fresh(_world["case"])


@pytest.fixture
def objects(db: None, _world: dict[str, Any]) -> dict[str, Any]:
    return {name: _fresh(value) for name, value in _world["objects"].items()}


def _objects(lawyer: User, case: Case) -> dict[str, Any]:
    """A read PDF of `case`, a stamped production of it (AUD000001) and a built export."""
    with pymupdf.open() as pdf:
        pdf.new_page().insert_text((72, 72), "The ledger of Acme, page one.", fontsize=11)
        data = pdf.tobytes()
    outcome = document_services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="ledger.pdf",
        source=io.BytesIO(data),
        origin="client",
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    review_services.documents_tag(
        actor=lawyer, case=case, document_ids=[outcome.document.pk], name="Hot ledger"
    )
    production = production_services.production_create(
        case=case, actor=lawyer, volume="AUDIT1", prefix="AUD", document_ids=[outcome.document.pk]
    )
    production_services.production_stamp(production_id=production.pk)
    production.refresh_from_db()
    export = production_services.production_export_request(
        production=production, actor=lawyer, image_dpi=100
    )
    production_services.production_export_build(export_id=export.pk)
    return {
        "case": case,
        "document": outcome.document,
        "production": Production.objects.get(pk=production.pk),
        "export": ProductionExport.objects.get(pk=export.pk),
        **(packets := _packets(lawyer, case, outcome.document)),
        **_drafts(lawyer, case, packets["packet"]),
        **runs_for_tables(case=case, user=lawyer, packet=packets["packet"], label="Audit"),
        "financial_run": _financial_run(lawyer, case, packets["packet"]),
        "flagged_document": _flagged_document(lawyer, case),
    }


def _flagged_document(lawyer: User, case: Case) -> Any:
    """A document the registry flagged (a draft copied it): what a lawyer clears."""
    text = " ".join(f"The audit draft copied clause {n} of the tenancy." for n in range(12))
    registry.artifact_register(
        data=text.encode(), text=text, kind="model_output", media_type="text/markdown",
        title="Audit copying draft", case=case,
    )  # fmt: skip
    flagged = document_services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="flagged.txt",
        source=io.BytesIO(f"{text}\n".encode()),
        origin="opposing",
    ).document
    assert flagged is not None
    document_services.document_extract_text(document_id=flagged.pk)
    return flagged


def _financial_run(lawyer: User, case: Case, packet: Any) -> Any:
    """A financial extraction with its table, whose CSV was downloaded once already (so it is
    registered: the request under test only reads)."""
    run = financial_run(case=case, user=lawyer, packet=packet, label="Audit")
    transactions.transactions_csv_for_user(user=lawyer, case_id=case.pk, run_id=run.pk)
    return run


def _drafts(lawyer: User, case: Case, packet: Any) -> dict[str, Any]:
    """A draft of the frozen packet whose version 1 has an unsupported finding (`finding`) and
    a supported one, and a draft whose version 1 has only a supported one (`clean_draft`)."""
    draft = draft_of(case=case, user=lawyer, packet=packet, title="Audit brief")
    _verification, (finding, _supported) = verified(
        draft=draft, user=lawyer, statuses=["unsupported", "supported"]
    )
    clean = draft_of(case=case, user=lawyer, packet=packet, title="Audit clean brief")
    verified(draft=clean, user=lawyer, statuses=["supported"])
    return {
        "draft": draft,
        "version": draft.versions.get(number=1),
        "finding": finding,
        "clean_draft": clean,
    }


def _packets(lawyer: User, case: Case, document: Any) -> dict[str, Any]:
    """A frozen packet holding the document (`packet`), an editable one holding it too (its
    item is `item`) and an empty editable one."""
    made = {}
    for name in ("packet", "editable_packet", "empty_packet"):
        made[name] = packet_services.packet_create(user=lawyer, case_id=case.pk, title=name)
    for name in ("packet", "editable_packet"):
        (made[f"{name}_item"],) = packet_services.packet_items_add(
            user=lawyer,
            case_id=case.pk,
            packet_id=made[name].pk,
            selections=[packet_services.Selection(document_id=document.pk, reason="Audit")],
        )
    made["packet"] = packet_services.packet_freeze(
        user=lawyer, case_id=case.pk, packet_id=made["packet"].pk
    )
    return made


def _ids(objects: dict[str, Any]) -> dict[str, Any]:
    return {
        "case_id": objects["case"].pk,
        "document_id": objects["document"].pk,
        "number": 1,
        "production_id": objects["production"].pk,
        "export_id": objects["export"].pk,
        "reference": "AUD000001",
        "packet_id": objects["packet"].pk,
        "item_id": objects["editable_packet_item"].pk,
        "other_id": objects["editable_packet"].pk,
        "draft_id": objects["draft"].pk,
        "finding_id": objects["finding"].pk,
        "run_id": objects["run"].pk,
    }


def _from(client: Client) -> Client:
    client.defaults["REMOTE_ADDR"] = CLIENT_IP
    return client


def _rows_written_by(send: Any) -> tuple[Any, list[AuditEvent]]:
    last = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    response = send()
    return response, list(AuditEvent.objects.filter(id__gt=last).order_by("id"))


def _assert_one_read(
    rows: list[AuditEvent], read: Read, *, user: User, objects: dict[str, Any], via: str
) -> None:
    assert [row.action for row in rows] == [read.action], [(r.action, r.target_label) for r in rows]
    (row,) = rows
    target = objects[read.target]
    assert row.actor_id == user.pk
    assert row.case_id == objects["case"].pk
    assert (row.target_type, row.target_id) == (target._meta.label_lower, str(target.pk))
    assert (row.via, row.client_ip) == (via, CLIENT_IP)


def _fill(value: Any, objects: dict[str, Any]) -> Any:
    """Inside lists of objects (packet selections), "document" stands for the document's id."""
    if isinstance(value, list):
        return [
            {k: objects["document"].pk if v == "document" else v for k, v in one.items()}
            if isinstance(one, dict)
            else one
            for one in value
        ]
    return value


API_READS = [
    pytest.param(path, entry, id=f"GET {path}")
    for (method, path), entry in API.items()
    if isinstance(entry, Read)
]
API_WRITES = [
    pytest.param(method, path, entry, id=f"{method} {path}")
    for (method, path), entry in API.items()
    if isinstance(entry, Write)
]
PAGE_READS = [
    pytest.param(route, entry, id=f"GET /{route}")
    for route, entry in PAGES.items()
    if isinstance(entry, Read)
]


# --- Each material read leaves exactly one row ----------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "read"), API_READS)
@pytest.mark.parametrize("auth", ["token", "session"])
def test_api_read_of_material_leaves_one_audit_row(
    lawyer: User, objects: dict[str, Any], path: str, read: Read, auth: str
) -> None:
    client = _from(token_client(lawyer) if auth == "token" else session_client(lawyer))
    url = _path(path, {**_ids(objects), **{k: objects[v].pk for k, v in read.ids.items()}})

    response, rows = _rows_written_by(lambda: client.get(url, read.query))

    assert response.status_code == 200, response.content[:300]
    _assert_one_read(rows, read, user=lawyer, objects=objects, via="api")


@pytest.mark.django_db
@pytest.mark.parametrize(("route", "read"), PAGE_READS)
def test_browser_read_of_material_leaves_one_audit_row(
    lawyer: User, objects: dict[str, Any], route: str, read: Read
) -> None:
    client = _from(session_client(lawyer))

    response, rows = _rows_written_by(lambda: client.get(_path(route, _ids(objects)), read.query))

    assert response.status_code == 200, response.content[:300]
    _assert_one_read(rows, read, user=lawyer, objects=objects, via="web")


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path", "write"), API_WRITES)
def test_api_write_that_answers_with_material_is_audited_with_edge_and_address(
    lawyer: User, objects: dict[str, Any], method: str, path: str, write: Write
) -> None:
    client = _from(token_client(lawyer))
    payload = {
        k: [objects["document"].pk]
        if v == "document"
        # "@name" stands for the id of objects[name] (a draft's packet).
        else objects[v[1:]].pk
        if isinstance(v, str) and v.startswith("@")
        else _fill(v, objects)
        for k, v in write.payload.items()
    }
    url = _path(path, {**_ids(objects), **{k: objects[v].pk for k, v in write.ids.items()}})
    if any(isinstance(v, tuple) for v in payload.values()):
        payload = {
            k: SimpleUploadedFile(*v) if isinstance(v, tuple) else v for k, v in payload.items()
        }

        def send() -> Any:
            return client.post(url, payload)
    else:

        def send() -> Any:
            return client.post(url, payload, content_type="application/json")

    response, rows = _rows_written_by(send)

    assert response.status_code < 300, response.content[:300]
    written = [row for row in rows if row.action == write.action]
    assert len(written) == 1
    assert (written[0].actor_id, written[0].case_id) == (lawyer.pk, objects["case"].pk)
    assert (written[0].via, written[0].client_ip) == ("api", CLIENT_IP)


# --- What the rows say, and what leaves none -------------------------------------------------


@pytest.mark.django_db
def test_search_row_records_the_query_and_the_number_of_hits(
    lawyer: User, objects: dict[str, Any]
) -> None:
    client = _from(token_client(lawyer))

    _response, rows = _rows_written_by(
        lambda: client.get(f"/api/v1/cases/{objects['case'].pk}/search", {"q": "ledger  acme"})
    )

    assert [row.detail for row in rows] == [{"query": "ledger acme", "hits": 1}]


@pytest.mark.django_db
def test_bates_row_records_the_reference_and_the_number_of_pages(
    lawyer: User, objects: dict[str, Any]
) -> None:
    client = _from(session_client(lawyer))

    _response, rows = _rows_written_by(
        lambda: client.get(f"/cases/{objects['case'].pk}/bates/", {"ref": "AUD000001"})
    )

    assert [row.detail for row in rows] == [{"reference": "AUD000001", "pages": 1}]


@pytest.mark.django_db
def test_page_image_row_records_the_page_number(lawyer: User, objects: dict[str, Any]) -> None:
    client = _from(token_client(lawyer))
    url = f"/api/v1/cases/{objects['case'].pk}/documents/{objects['document'].pk}/pages/1/image"

    _response, rows = _rows_written_by(lambda: client.get(url, {"dpi": IMAGE_DPI}))

    assert [row.detail for row in rows] == [{"page": 1}]


@pytest.mark.django_db
def test_search_page_without_a_query_is_audited_as_a_read_of_the_document_names(
    lawyer: User, objects: dict[str, Any]
) -> None:
    client = _from(session_client(lawyer))

    response, rows = _rows_written_by(lambda: client.get(f"/cases/{objects['case'].pk}/search/"))

    assert response.status_code == 200 and "ledger.pdf" in response.content.decode()
    assert [row.action for row in rows] == ["document.list"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "query", "status"),
    [
        ("/api/v1/cases/{case}/search", {"q": "   "}, 400),
        ("/api/v1/cases/{case}/bates/NOPE1", {}, 400),
        ("/api/v1/cases/{case}/bates/AUD000009", {}, 404),
        ("/api/v1/cases/{case}/documents/987654321", {}, 404),
        ("/api/v1/cases/{case}/documents/{document}/pages/9/image", {}, 404),
        ("/api/v1/cases/987654321/documents", {}, 404),
    ],
    ids=[
        "blank-search",
        "bad-bates",
        "unknown-bates",
        "missing-document",
        "missing-page",
        "no-case",
    ],
)
def test_a_refused_read_shows_nothing_and_leaves_no_read_row(
    lawyer: User, objects: dict[str, Any], url: str, query: dict[str, str], status: int
) -> None:
    client = _from(token_client(lawyer))
    path = url.format(case=objects["case"].pk, document=objects["document"].pk)

    response, rows = _rows_written_by(lambda: client.get(path, query))

    assert response.status_code == status
    assert rows == []


@pytest.mark.django_db
def test_member_and_tag_lists_answer_names_and_leave_their_read_rows(
    lawyer: User, objects: dict[str, Any]
) -> None:
    client = _from(token_client(lawyer))
    case_id = objects["case"].pk

    members, member_rows = _rows_written_by(lambda: client.get(f"/api/v1/cases/{case_id}/members"))
    tags, tag_rows = _rows_written_by(lambda: client.get(f"/api/v1/cases/{case_id}/tags"))

    assert lawyer.email in members.content.decode() and "Hot ledger" in tags.content.decode()
    assert [row.action for row in member_rows + tag_rows] == ["member.list", "tag.list"]


@pytest.mark.django_db
def test_case_page_shows_its_members_under_one_case_view_row(
    lawyer: User, objects: dict[str, Any]
) -> None:
    client = _from(session_client(lawyer))

    response, rows = _rows_written_by(lambda: client.get(f"/cases/{objects['case'].pk}/"))

    assert lawyer.email in response.content.decode()
    assert [row.action for row in rows] == ["case.view"]


@pytest.mark.django_db
def test_document_list_with_a_refused_filter_records_the_tag_menu_it_shows(
    lawyer: User, objects: dict[str, Any]
) -> None:
    client = _from(session_client(lawyer))
    url = f"/cases/{objects['case'].pk}/documents/"

    refused, rows = _rows_written_by(lambda: client.get(url, {"sort": "nonsense"}))

    assert refused.status_code == 400 and "Hot ledger" in refused.content.decode()
    assert [row.action for row in rows] == ["tag.list"]


@pytest.mark.django_db
def test_a_bulk_untag_checks_the_tag_without_a_read_row(
    lawyer: User, objects: dict[str, Any]
) -> None:
    # The tag list is read to check the choice, not shown: the write's own row is the record.
    client = _from(session_client(lawyer))
    case, document = objects["case"], objects["document"]
    tag_id = Tag.objects.get(case=case).pk

    response, rows = _rows_written_by(
        lambda: client.post(
            f"/cases/{case.pk}/documents/bulk/",
            {"action": "untag", "ids": [document.pk], "tag": tag_id},
        )
    )

    assert response.status_code == 302
    assert [row.action for row in rows] == ["document.untag"]


@pytest.mark.django_db
def test_selectors_called_outside_a_request_write_a_row_each_time(
    lawyer: User, objects: dict[str, Any]
) -> None:
    case = objects["case"]

    _none, rows = _rows_written_by(
        lambda: [
            selectors.document_list_for_user(user=lawyer, case_id=case.pk),
            production_selectors.production_list_for_user(user=lawyer, case_id=case.pk),
        ]
    )

    assert [(row.action, row.via, row.client_ip) for row in rows] == [
        ("document.list", "cli", None),
        ("production.list", "cli", None),
    ]
