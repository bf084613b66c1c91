"""Security by case: someone who is not a member learns nothing about a case, on any edge.

A non-member gets 404 (never 403, which would confirm the case exists) on pages, the API and
websockets, exactly as for a case id that does not exist, and nothing they send changes anything.
`MATRIX` lists every case-scoped route with the methods it accepts; the first test walks the URL
resolver and the websocket routing, so a route added without a matrix entry fails the suite.
"""

import io
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pymupdf
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.resolvers import LocalePrefixPattern
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts import services as account_services
from apps.accounts.models import AuditEvent, User
from apps.cases import services as case_services
from apps.cases.models import Case, Membership
from apps.documents import production_services, review_services
from apps.documents import services as document_services
from apps.documents.models import (
    BatesPage,
    Blob,
    Document,
    Page,
    Production,
    ProductionExport,
    Tag,
)
from apps.drafting.models import Draft, DraftVersion, Run
from apps.evidence.models import FlagClearance, FrozenPage, Packet, PacketItem
from apps.evidence.services import packets as packet_services
from apps.evidence.services import registry
from apps.verification.models import Finding, Override, Verification
from lexweb.routing import websocket_urlpatterns
from tests.conftest import session_client, token_client, ws_connect
from tests.drafting.makers import draft_of, verified
from tests.drafting.run_fixtures import run_ids_for_tables, runs_for_tables
from tests.drafting.table_fixtures import financial_run, financial_run_id
from tests.factories import CaseFactory, MembershipFactory, UserFactory

PAGE, API, WEBSOCKET = "page", "api", "websocket"
EVERY_METHOD = ("GET", "POST", "PUT", "PATCH", "DELETE")
# Far above any id the test database hands out.
MISSING_CASE_ID = 987_654_321
NEWCOMER_EMAIL = "newcomer@firm.test"
# A tiny valid upload: (file name, bytes). Payload values that are tuples go as files.
UPLOAD = ("matrix-note.txt", b"A short note for the access matrix.\n")
# Stands for [the matrix document's id] in a payload; filled in by _resolve().
THE_DOCUMENT = ("the matrix document",)
# Stands for the frozen matrix packet's id in a payload; filled in by _resolve().
THE_PACKET = ("the frozen matrix packet",)
# [the id] of a document in no packet or production (one that can be withdrawn), and the id of
# the case's tag on the matrix document.
LOOSE_DOCUMENT = ("the loose matrix document",)
THE_TAG = ("the matrix tag",)
Payload = dict[str, Any]


@dataclass(frozen=True)
class Route:
    """One case-scoped route, spelled as the resolver spells it, and what it accepts.

    `payloads` are bodies that succeed for a member, so a refusal is the access check at work
    and not a validation error; `{user_id}` routes act on `junior`, whom a leak would change;
    `{document_id}` routes on `document`, a one-page PDF of `case`, and `{number}` on its page 1.
    A GET payload is the query string; a payload with a file is sent as multipart.
    """

    kind: str
    route: str
    methods: tuple[str, ...]
    payloads: dict[str, Payload] = field(default_factory=dict)
    # Path ids other than the defaults: {path kwarg: key of _packet_ids()}. `{packet_id}` is a
    # frozen packet holding `document` unless a route needs an editable or empty one.
    ids: dict[str, str] = field(default_factory=dict)
    # Where a member's successful POST may redirect (a prefix); None: the case's page.
    redirect: str | None = None


MATRIX: tuple[Route, ...] = (
    Route(PAGE, "cases/<int:case_id>/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/members/",
        ("POST",),
        {"POST": {"email": NEWCOMER_EMAIL, "role": "staff"}},
    ),
    Route(PAGE, "cases/<int:case_id>/members/candidates/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/members/<int:user_id>/role/",
        ("POST",),
        {"POST": {"role": "lawyer"}},
    ),
    Route(PAGE, "cases/<int:case_id>/members/<int:user_id>/remove/", ("POST",)),
    Route(PAGE, "cases/<int:case_id>/health/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/worker-check/",
        ("POST",),
        redirect="cases/<int:case_id>/health/",
    ),
    Route(
        API,
        "api/v1/cases/<case_id>",
        ("GET", "PATCH"),
        {"PATCH": {"title": "Renamed by someone", "status": "closed"}},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/members",
        ("GET", "POST"),
        {"POST": {"email": NEWCOMER_EMAIL, "role": "staff"}},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/members/<user_id>",
        ("PATCH", "DELETE"),
        {"PATCH": {"role": "lawyer"}},
    ),
    Route(API, "api/v1/cases/<case_id>/worker-check", ("POST",)),
    Route(API, "api/v1/cases/<case_id>/events", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/events/stream", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/documents/",
        ("GET", "POST"),
        {"POST": {"origin": "client", "files": UPLOAD}},
    ),
    Route(PAGE, "cases/<int:case_id>/documents/<int:document_id>/", ("GET",)),
    Route(PAGE, "cases/<int:case_id>/documents/rows/", ("GET",), {"GET": {"ids": "1"}}),
    Route(
        PAGE,
        "cases/<int:case_id>/documents/bulk/",
        ("POST",),
        {"POST": {"action": "tag", "ids": THE_DOCUMENT, "tag_name": "Matrix"}},
        redirect="cases/<int:case_id>/documents/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/documents/<int:document_id>/restore/",
        ("POST",),
        redirect="cases/<int:case_id>/documents/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/documents/<int:document_id>/flag-clearance/",
        ("POST",),
        {"POST": {"reason": "Matrix: the words are the exhibit's own."}},
        ids={"document_id": "flagged_document"},
        redirect="cases/<int:case_id>/documents/",
    ),
    Route(PAGE, "cases/<int:case_id>/search/", ("GET",), {"GET": {"q": "matrix"}}),
    Route(PAGE, "cases/<int:case_id>/bates/", ("GET",), {"GET": {"ref": "MTX000001"}}),
    Route(PAGE, "cases/<int:case_id>/productions/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/productions/new/",
        ("GET", "POST"),
        {
            "GET": {"volume": "MATRIX2", "bates_prefix": "MTX"},
            "POST": {
                "op": "commit",
                "documents": THE_DOCUMENT,
                "volume": "MATRIX2",
                "bates_prefix": "MTX",
                "digits": "6",
                "position": "bottom_right",
                "legend_position": "bottom_left",
                "font_size": "9",
                "margin": "18",
            },
        },
        redirect="cases/<int:case_id>/productions/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/productions/preview/<int:document_id>.png",
        ("GET",),
        {"GET": {"bates_prefix": "MTX", "legend": "CONFIDENTIAL"}},
    ),
    Route(PAGE, "cases/<int:case_id>/productions/<int:production_id>/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/productions/<int:production_id>/exports/",
        ("POST",),
        {"POST": {"encoding": "utf-8", "image_dpi": "100"}},
        redirect="cases/<int:case_id>/productions/",
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/documents",
        ("GET", "POST"),
        {"POST": {"origin": "client", "files": UPLOAD}},
    ),
    Route(API, "api/v1/cases/<case_id>/documents/<document_id>", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/documents/<document_id>/original", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/documents/<document_id>/pages", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/documents/<document_id>/pages/<number>/image", ("GET",)),
    Route(
        API,
        "api/v1/cases/<case_id>/documents/<document_id>/pages/<number>/hits",
        ("GET",),
        {"GET": {"q": "matrix"}},
    ),
    Route(API, "api/v1/cases/<case_id>/search", ("GET",), {"GET": {"q": "matrix"}}),
    Route(API, "api/v1/cases/<case_id>/tags", ("GET",)),
    Route(
        API,
        "api/v1/cases/<case_id>/documents/tag",
        ("POST",),
        {"POST": {"document_ids": THE_DOCUMENT, "name": "Matrix"}},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/documents/untag",
        ("POST",),
        {"POST": {"document_ids": THE_DOCUMENT, "tag_id": THE_TAG}},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/documents/withdraw",
        ("POST",),
        {"POST": {"document_ids": LOOSE_DOCUMENT, "reason": "Matrix"}},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/documents/<document_id>/restore",
        ("POST",),
        ids={"document_id": "withdrawn_document"},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/documents/<document_id>/flag-clearance",
        ("POST",),
        {"POST": {"reason": "Matrix: the words are the exhibit's own."}},
        ids={"document_id": "flagged_document"},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/productions",
        ("GET", "POST"),
        {"POST": {"volume": "MATRIX2", "prefix": "MTX", "document_ids": THE_DOCUMENT}},
    ),
    Route(API, "api/v1/cases/<case_id>/productions/check", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/productions/<production_id>", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/productions/<production_id>/pdf", ("GET",)),
    Route(
        API,
        "api/v1/cases/<case_id>/productions/<production_id>/exports",
        ("POST",),
        {"POST": {"encoding": "cp1252", "image_dpi": 100}},
    ),
    Route(API, "api/v1/cases/<case_id>/productions/<production_id>/exports/<export_id>", ("GET",)),
    Route(
        API,
        "api/v1/cases/<case_id>/productions/<production_id>/exports/<export_id>/zip",
        ("GET",),
    ),
    Route(API, "api/v1/cases/<case_id>/bates/<reference>", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/packets/",
        ("GET", "POST"),
        {"POST": {"title": "Matrix 2"}},
        redirect="cases/<int:case_id>/packets/",
    ),
    Route(PAGE, "cases/<int:case_id>/packets/<int:packet_id>/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/packets/<int:packet_id>/items/",
        ("POST",),
        {"POST": {"document": THE_DOCUMENT, "reason": "Matrix"}},
        ids={"packet_id": "empty"},
        redirect="cases/<int:case_id>/packets/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/packets/<int:packet_id>/items/<int:item_id>/remove/",
        ("POST",),
        {"POST": {"reason": "Matrix"}},
        ids={"packet_id": "editable"},
        redirect="cases/<int:case_id>/packets/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/packets/<int:packet_id>/freeze/",
        ("GET", "POST"),
        ids={"packet_id": "editable"},
        redirect="cases/<int:case_id>/packets/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/packets/<int:packet_id>/versions/",
        ("GET", "POST"),
        redirect="cases/<int:case_id>/packets/",
    ),
    Route(PAGE, "cases/<int:case_id>/packets/<int:packet_id>/compare/<int:other_id>/", ("GET",)),
    Route(PAGE, "cases/<int:case_id>/packets/<int:packet_id>/pages/", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/packets", ("GET", "POST"), {"POST": {"title": "Matrix 2"}}),
    Route(API, "api/v1/cases/<case_id>/packets/<packet_id>", ("GET",)),
    Route(
        API,
        "api/v1/cases/<case_id>/packets/<packet_id>/items",
        ("POST",),
        {"POST": {"items": [{"document_id": THE_DOCUMENT, "reason": "Matrix"}]}},
        ids={"packet_id": "empty"},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/packets/<packet_id>/items/<item_id>",
        ("DELETE",),
        ids={"packet_id": "editable"},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/packets/<packet_id>/freeze",
        ("POST",),
        ids={"packet_id": "editable"},
    ),
    Route(API, "api/v1/cases/<case_id>/packets/<packet_id>/versions", ("GET", "POST")),
    Route(API, "api/v1/cases/<case_id>/packets/<packet_id>/pages", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/packets/<packet_id>/compare/<other_id>", ("GET",)),
    Route(
        API,
        "api/v1/cases/<case_id>/drafts",
        ("GET", "POST"),
        {"POST": {"title": "Matrix 2", "packet_id": THE_PACKET, "text": "Matrix text."}},
    ),
    Route(API, "api/v1/cases/<case_id>/drafts/<draft_id>", ("GET",)),
    Route(
        API,
        "api/v1/cases/<case_id>/drafts/<draft_id>/versions",
        ("POST",),
        {"POST": {"text": "Matrix version two."}},
    ),
    Route(API, "api/v1/cases/<case_id>/drafts/<draft_id>/versions/<number>", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/drafts/<draft_id>/versions/<number>/verify", ("POST",)),
    Route(API, "api/v1/cases/<case_id>/drafts/<draft_id>/versions/<number>/findings", ("GET",)),
    Route(
        API,
        "api/v1/cases/<case_id>/drafts/<draft_id>/versions/<number>/findings/<finding_id>/override",
        ("POST",),
        {"POST": {"reason": "Checked by hand against the record."}},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/drafts/<draft_id>/versions/<number>/approve",
        ("POST",),
        ids={"draft_id": "clean_draft"},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/drafts/<draft_id>/versions/<number>/diff",
        ("GET",),
        {"GET": {"against": "1"}},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/drafts/<draft_id>/versions/<number>/export",
        ("POST",),
        {"POST": {"format": "pdf"}},
        ids={"draft_id": "clean_draft"},
    ),
    Route(PAGE, "cases/<int:case_id>/drafts/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/drafts/new/",
        ("GET", "POST"),
        {"POST": {"title": "Matrix 3", "kind": "brief", "packet": THE_PACKET, "text": "Matrix."}},
        redirect="cases/<int:case_id>/drafts/",
    ),
    Route(PAGE, "cases/<int:case_id>/drafts/<int:draft_id>/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/drafts/<int:draft_id>/versions/",
        ("POST",),
        {"POST": {"text": "Matrix version three.", "media_type": "markdown"}},
        redirect="cases/<int:case_id>/drafts/",
    ),
    Route(PAGE, "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/verify/",
        ("POST",),
        redirect="cases/<int:case_id>/drafts/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/findings/"
        "<int:finding_id>/override/",
        ("POST",),
        {"POST": {"reason": "Checked by hand against the record."}},
        redirect="cases/<int:case_id>/drafts/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/approve/",
        ("POST",),
        ids={"draft_id": "clean_draft"},
        redirect="cases/<int:case_id>/drafts/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/export/",
        ("POST",),
        {"POST": {"format": "pdf"}},
        ids={"draft_id": "clean_draft"},
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/drafts/<int:draft_id>/versions/<int:number>/diff/",
        ("GET",),
        {"GET": {"against": "1"}},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/runs",
        ("GET", "POST"),
        {"POST": {"kind": "summary", "packet_id": THE_PACKET, "instructions": "Summarise it."}},
    ),
    Route(API, "api/v1/cases/<case_id>/runs/<run_id>", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/runs/<run_id>/events", ("GET",)),
    Route(API, "api/v1/cases/<case_id>/runs/<run_id>/events/stream", ("GET",)),
    Route(
        API,
        "api/v1/cases/<case_id>/runs/<run_id>/transactions.csv",
        ("GET",),
        ids={"run_id": "financial_run"},
    ),
    Route(API, "api/v1/cases/<case_id>/runs/<run_id>/cancel", ("POST",)),
    Route(
        API,
        "api/v1/cases/<case_id>/runs/<run_id>/gate-override",
        ("POST",),
        {"POST": {"reason": "Checked by hand: the grounds exist."}},
        ids={"run_id": "stopped_run"},
    ),
    Route(
        API,
        "api/v1/cases/<case_id>/runs/<run_id>/reject",
        ("POST",),
        {"POST": {"reason": "Checked by hand: it will not do."}},
        ids={"run_id": "waiting_run"},
    ),
    Route(PAGE, "cases/<int:case_id>/runs/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/runs/new/",
        ("GET", "POST"),
        {"POST": {"kind": "summary", "packet": THE_PACKET, "instructions": "Summarise it."}},
        redirect="cases/<int:case_id>/runs/",
    ),
    Route(PAGE, "cases/<int:case_id>/runs/<int:run_id>/", ("GET",)),
    Route(
        PAGE,
        "cases/<int:case_id>/runs/<int:run_id>/cancel/",
        ("POST",),
        redirect="cases/<int:case_id>/runs/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/runs/<int:run_id>/gate-override/",
        ("POST",),
        {"POST": {"reason": "Checked by hand: the grounds exist."}},
        ids={"run_id": "stopped_run"},
        redirect="cases/<int:case_id>/runs/",
    ),
    Route(
        PAGE,
        "cases/<int:case_id>/runs/<int:run_id>/reject/",
        ("POST",),
        {"POST": {"reason": "Checked by hand: it will not do."}},
        ids={"run_id": "waiting_run"},
        redirect="cases/<int:case_id>/runs/",
    ),
    Route(WEBSOCKET, "ws/cases/<int:case_id>/events/", ("CONNECT",)),
    Route(WEBSOCKET, "ws/cases/<int:case_id>/runs/<int:run_id>/events/", ("CONNECT",)),
)

HTTP_CALLS = [
    pytest.param(entry, method, id=f"{method} /{entry.route}")
    for entry in MATRIX
    if entry.kind != WEBSOCKET
    for method in entry.methods
]
API_CALLS = [call for call in HTTP_CALLS if call.values[0].kind == API]
# Pages take no bearer tokens: members reach them by session only.
PROBES = [
    pytest.param(entry, method, via, id=f"{via} {method} /{entry.route}")
    for entry in MATRIX
    if entry.kind != WEBSOCKET
    for method in EVERY_METHOD
    for via in (("session", "token") if entry.kind == API else ("session",))
]
SOCKETS = [pytest.param(entry, id=entry.route) for entry in MATRIX if entry.kind == WEBSOCKET]

_KWARG = re.compile(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>")
_CSRF_VALUE = re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]*"')


# --- Helpers ------------------------------------------------------------------------------


def _walk(patterns: Sequence[URLPattern | URLResolver], prefix: str = "") -> Iterator[str]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            assert not isinstance(entry.pattern, LocalePrefixPattern), "i18n_patterns: extend _walk"
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern)


def _kwargs(route: str) -> set[str]:
    return {a or b for a, b in _KWARG.findall(route)}


def _path(route: str, **kwargs: int) -> str:
    return "/" + _KWARG.sub(lambda m: str(kwargs[m.group(1) or m.group(2)]), route)


def _packet_ids(case: Case) -> dict[str, int]:
    packets = {p.title: p for p in Packet.objects.filter(case=case, title__startswith="MATRIX ")}
    editable = packets["MATRIX editable"]
    return {
        "frozen": packets["MATRIX frozen"].pk,
        "editable": editable.pk,
        "empty": packets["MATRIX empty"].pk,
        "editable_item": PacketItem.objects.get(packet=editable).pk,
    }


def _draft_ids(case: Case) -> dict[str, int]:
    drafts = {d.title: d for d in Draft.objects.filter(case=case, title__startswith="MATRIX ")}
    draft = drafts["MATRIX draft"]
    return {
        "draft": draft.pk,
        "clean_draft": drafts["MATRIX clean"].pk,
        "finding": Finding.objects.get(verification__version__draft=draft, status="unsupported").pk,
    }


def _ids(
    case: Case, junior: User, document: Document, entry: Route | None = None
) -> dict[str, Any]:
    production = Production.objects.get(case=case, volume="MATRIX1")
    export = ProductionExport.objects.get(production=production)
    packets = {
        **_packet_ids(case),
        **_draft_ids(case),
        **run_ids_for_tables(case, "MATRIX"),
        "financial_run": financial_run_id(case, "MATRIX"),
    }
    packets["withdrawn_document"] = Document.objects.get(
        case=case, filename="matrix-withdrawn.txt"
    ).pk
    packets["flagged_document"] = Document.objects.get(case=case, filename="matrix-flagged.txt").pk
    overrides = {k: packets[v] for k, v in entry.ids.items()} if entry else {}
    return {
        "draft_id": packets["draft"],
        "finding_id": packets["finding"],
        "packet_id": packets["frozen"],
        "item_id": packets["editable_item"],
        "other_id": packets["editable"],
        "run_id": packets["run"],
        "case_id": case.pk,
        "user_id": junior.pk,
        "document_id": document.pk,
        "number": 1,
        "production_id": production.pk,
        "export_id": export.pk,
        "reference": "MTX000001",
        **overrides,
    }


def _resolve(payload: Payload | None) -> Payload | None:
    """Fill in ids only known once the fixtures exist: [the document's id] at the top level,
    the id itself inside a list of objects (packet selections)."""
    if payload is None:
        return None
    ids = list(Document.objects.filter(filename="matrix.pdf").values_list("pk", flat=True))

    def inner(value: Any) -> Any:
        if isinstance(value, list):
            return [
                {k: ids[0] if v is THE_DOCUMENT else v for k, v in one.items()}
                if isinstance(one, dict)
                else one
                for one in value
            ]
        return value

    packet = Packet.objects.get(title="MATRIX frozen").pk
    loose = list(Document.objects.filter(filename="matrix-loose.txt").values_list("pk", flat=True))
    fixed = {
        THE_PACKET: packet,
        LOOSE_DOCUMENT: loose,
        THE_TAG: Tag.objects.get(name="Matrix tag").pk,
    }

    def top(value: Any) -> Any:
        if value is THE_DOCUMENT:
            return ids
        return fixed[value] if isinstance(value, tuple) and value in fixed else inner(value)

    return {k: top(v) for k, v in payload.items()}


def _send(client: Client, entry: Route, method: str, path: str) -> Any:
    payload = _resolve(entry.payloads.get(method))
    if method == "GET":
        return client.get(path, payload or {})
    if payload is not None and any(isinstance(v, tuple) for v in payload.values()):
        # Files are made afresh for every request: an upload reads its file to the end.
        return client.post(
            path,
            {k: SimpleUploadedFile(*v) if isinstance(v, tuple) else v for k, v in payload.items()},
        )
    if entry.kind == API:
        body = json.dumps(payload) if payload is not None else ""
        return client.generic(method, path, body, content_type="application/json")
    if method == "POST":
        return client.post(path, payload or {})
    return client.generic(method, path)


def _snapshot(case: Case) -> dict[str, object]:
    """Everything a request on `case` could have changed."""
    return {
        "cases": list(
            Case.objects.order_by("pk").values_list(
                "pk", "title", "number", "court", "client", "status"
            )
        ),
        "memberships": list(
            Membership.objects.order_by("pk").values_list("pk", "case_id", "user_id", "role")
        ),
        "case_audit": AuditEvent.objects.filter(case=case).count(),
        "jobs": ProcrastinateJob.objects.count(),
        "documents": list(
            Document.objects.order_by("pk").values_list("pk", "case_id", "filename", "status")
        ),
        "blobs": Blob.objects.count(),
        "pages": Page.objects.count(),
        "productions": list(Production.objects.order_by("pk").values_list("pk", "status")),
        "bates": BatesPage.objects.count(),
        "exports": ProductionExport.objects.count(),
        "packets": list(
            Packet.objects.order_by("pk").values_list("pk", "status", "title", "content_hash")
        ),
        "packet_items": list(PacketItem.objects.order_by("pk").values_list("pk", "packet_id")),
        "frozen_pages": FrozenPage.objects.count(),
        "drafts": list(Draft.objects.order_by("pk").values_list("pk", "case_id", "title")),
        "draft_versions": list(
            DraftVersion.objects.order_by("pk").values_list("pk", "number", "approved_at")
        ),
        "verifications": list(Verification.objects.order_by("pk").values_list("pk", "status")),
        "findings": Finding.objects.count(),
        "overrides": Override.objects.count(),
        "flag_clearances": FlagClearance.objects.count(),
        "provenance": list(Document.objects.order_by("pk").values_list("pk", "provenance")),
    }


def _normalized(response: Any, case_id: int) -> object:
    """The body with the requested id (and the per-response CSRF mask) taken out."""
    if response["Content-Type"].startswith("application/json"):
        body = response.json()
        return {**body, "detail": body["detail"].replace(str(case_id), "<id>")}
    html = response.content.decode()
    return _CSRF_VALUE.sub(r'\1<csrf>"', html)


def _login_url(path: str, query: Payload | None = None) -> str:
    """Where login_required sends an anonymous request for `path` (with its query string)."""
    if query:
        path += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    return str(redirect_to_login(path, reverse(settings.LOGIN_URL))["Location"])


def _assert_nothing_about(case: Case, text: str) -> None:
    assert case.title not in text
    assert case.number not in text


@pytest.fixture
def junior(case: Case) -> User:
    return _make_junior(case)


def _make_junior(case: Case) -> User:
    """A lawyer who is staff on `case`: the target of the member routes."""
    user = UserFactory(email="junior@firm.test", full_name="Jo Junior", role=User.Role.LAWYER)
    MembershipFactory(case=case, user=user, role=Membership.Role.STAFF)
    return user


@pytest.fixture
def newcomer(db: None) -> User:
    return UserFactory(email=NEWCOMER_EMAIL, full_name="Nico Newcomer")


@pytest.fixture
def document(lawyer: User, case: Case) -> Document:
    return _make_document(lawyer, case)


def _make_document(lawyer: User, case: Case) -> Document:
    """A one-page PDF of `case` with its page read, the target of the document routes."""
    with pymupdf.open() as pdf:
        pdf.new_page().insert_text((72, 72), "The matrix page of Acme.", fontsize=11)
        data = pdf.tobytes()
    outcome = document_services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="matrix.pdf",
        source=io.BytesIO(data),
        origin="court",
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    # A stamped production of it, with a built volume: the target of the production routes.
    production = production_services.production_create(
        case=case, actor=lawyer, volume="MATRIX1", prefix="MTX", document_ids=[outcome.document.pk]
    )
    production_services.production_stamp(production_id=production.pk)
    production.refresh_from_db()
    export = production_services.production_export_request(
        production=production, actor=lawyer, image_dpi=100
    )
    production_services.production_export_build(export_id=export.pk)
    _packets(lawyer, case, outcome.document)
    # The targets of the review routes: a tag on it, a document that can be withdrawn, and
    # one that is withdrawn (to restore).
    review_services.documents_tag(
        actor=lawyer, case=case, document_ids=[outcome.document.pk], name="Matrix tag"
    )
    for name in ("matrix-loose.txt", "matrix-withdrawn.txt"):
        other = document_services.document_upload(
            case=case,
            uploaded_by=lawyer,
            filename=name,
            source=io.BytesIO(f"The {name} note of Acme.\n".encode()),
            origin="client",
        ).document
        assert other is not None
    review_services.documents_withdraw(
        actor=lawyer, case=case, document_ids=[other.pk], reason="Matrix"
    )
    _flagged_document(lawyer, case)
    return outcome.document


def _flagged_document(lawyer: User, case: Case) -> None:
    """A document the registry flagged (a draft copied it): the target of the flag-clearance
    routes."""
    text = " ".join(f"The matrix draft copied clause {n} of the tenancy." for n in range(12))
    registry.artifact_register(
        data=text.encode(), text=text, kind="model_output", media_type="text/markdown",
        title="MATRIX copying draft", case=case,
    )  # fmt: skip
    flagged = document_services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="matrix-flagged.txt",
        source=io.BytesIO(f"{text}\n".encode()),
        origin="opposing",
    ).document
    assert flagged is not None
    document_services.document_extract_text(document_id=flagged.pk)
    flagged.refresh_from_db()
    assert flagged.provenance == Document.Provenance.FLAGGED


def _packets(lawyer: User, case: Case, document: Document) -> None:
    """Packets of `case`: a frozen one holding the document, an editable one holding it, and an
    empty editable one: the targets of the packet routes."""
    made = {
        name: packet_services.packet_create(user=lawyer, case_id=case.pk, title=f"MATRIX {name}")
        for name in ("frozen", "editable", "empty")
    }
    for name in ("frozen", "editable"):
        packet_services.packet_items_add(
            user=lawyer,
            case_id=case.pk,
            packet_id=made[name].pk,
            selections=[packet_services.Selection(document_id=document.pk, reason="Matrix")],
        )
    frozen = packet_services.packet_freeze(
        user=lawyer, case_id=case.pk, packet_id=made["frozen"].pk
    )
    # Drafts of the frozen packet: one with an unsupported finding to override, one whose
    # only finding is supported (it can be approved).
    draft = draft_of(case=case, user=lawyer, packet=frozen, title="MATRIX draft")
    verified(draft=draft, user=lawyer, statuses=["unsupported", "supported"])
    clean = draft_of(case=case, user=lawyer, packet=frozen, title="MATRIX clean")
    verified(draft=clean, user=lawyer, statuses=["supported"])
    runs_for_tables(case=case, user=lawyer, packet=frozen, label="MATRIX")
    financial_run(case=case, user=lawyer, packet=frozen, label="MATRIX")


# --- The matrix is complete ---------------------------------------------------------------


def test_matrix_lists_exactly_the_case_scoped_routes_that_exist() -> None:
    http = {r for r in _walk(get_resolver().url_patterns) if "case_id" in _kwargs(r)}
    sockets = {r for r in _walk(websocket_urlpatterns) if "case_id" in _kwargs(r)}
    discovered = {(API if r.startswith("api/") else PAGE, r) for r in http} | {
        (WEBSOCKET, r) for r in sockets
    }

    assert discovered == {(entry.kind, entry.route) for entry in MATRIX}
    assert len({entry.route for entry in MATRIX}) == len(MATRIX)


def _assert_refused_like_a_missing_case(
    client: Client, entry: Route, method: str, case: Case, junior: User, document: Document
) -> Any:
    before = _snapshot(case)
    ids = _ids(case, junior, document, entry)

    response = _send(client, entry, method, _path(entry.route, **ids))
    missing = _send(
        client, entry, method, _path(entry.route, **{**ids, "case_id": MISSING_CASE_ID})
    )

    assert response.status_code == missing.status_code == 404
    _assert_nothing_about(case, response.content.decode())
    assert _normalized(response, case.pk) == _normalized(missing, MISSING_CASE_ID)
    assert _snapshot(case) == before
    return response


# --- Non-members, anonymous, missing cases ------------------------------------------------


@dataclass
class _World:
    lawyer: User
    staff: User
    outsider: User
    other_case: Case
    case: Case
    junior: User
    newcomer: User
    document: Document


@pytest.fixture(scope="class")
def world(django_db_setup: None, django_db_blocker: Any) -> Iterator[_World]:
    """TestCaseRoutes' set of fixtures, made once per class in a transaction rolled back after
    it (see the class)."""
    with django_db_blocker.unblock(), transaction.atomic():
        lawyer = UserFactory(
            email="lawyer@firm.test", full_name="Laura Lawyer", role=User.Role.LAWYER
        )
        staff = UserFactory(email="staff@firm.test", full_name="Sam Staff", role=User.Role.STAFF)
        outsider = UserFactory(
            email="outsider@firm.test", full_name="Otto Outsider", role=User.Role.LAWYER
        )
        other_case = CaseFactory(
            created_by=outsider, number="CV-2026-0999", title="Other v. Matter"
        )
        MembershipFactory(case=other_case, user=outsider, role=Membership.Role.LAWYER)
        case = CaseFactory(created_by=lawyer, number="CV-2026-0001", title="Acme v. Widget")
        MembershipFactory(case=case, user=lawyer, role=Membership.Role.LAWYER)
        MembershipFactory(case=case, user=staff, role=Membership.Role.STAFF)
        junior = _make_junior(case)
        newcomer = UserFactory(email=NEWCOMER_EMAIL, full_name="Nico Newcomer")
        document = _make_document(lawyer, case)
        yield _World(lawyer, staff, outsider, other_case, case, junior, newcomer, document)
        transaction.set_rollback(True)


class TestCaseRoutes:
    """Every case route for members, non-members and the anonymous, over one set of fixtures
    made once for the class (a case with a document, a production, packets, drafts and runs:
    about a third of a second to make) instead of once for each of its 900-odd tests. The set
    is made in a transaction that is rolled back after the class; each test runs in a
    savepoint inside it and is rolled back to it, so every test starts from the same rows."""

    # The suite's personas, from the class's set (each test's own transaction is `db`'s).
    @pytest.fixture
    def lawyer(self, db: None, world: _World) -> User:
        return world.lawyer

    @pytest.fixture
    def outsider(self, db: None, world: _World) -> User:
        return world.outsider

    @pytest.fixture
    def other_case(self, db: None, world: _World) -> Case:
        return world.other_case

    @pytest.fixture
    def case(self, db: None, world: _World) -> Case:
        return world.case

    @pytest.fixture
    def junior(self, db: None, world: _World) -> User:
        return world.junior

    @pytest.fixture
    def newcomer(self, db: None, world: _World) -> User:
        return world.newcomer

    @pytest.fixture
    def document(self, db: None, world: _World) -> Document:
        return world.document

    @pytest.mark.django_db
    @pytest.mark.parametrize(("entry", "method", "via"), PROBES)
    def test_member_is_served_on_listed_methods_and_gets_405_on_the_others(
        self,
        lawyer: User,
        junior: User,
        newcomer: User,
        case: Case,
        document: Document,
        entry: Route,
        method: str,
        via: str,
    ) -> None:
        client = token_client(lawyer) if via == "token" else session_client(lawyer)
        path = _path(entry.route, **_ids(case, junior, document, entry))

        response = _send(client, entry, method, path)

        if method not in entry.methods:
            assert response.status_code == 405
            return
        assert response.status_code < 400, response.content
        if response.status_code == 302:
            if entry.redirect is None:
                assert response["Location"] == reverse("cases:detail", kwargs={"case_id": case.pk})
            else:
                assert response["Location"].startswith(_path(entry.redirect, case_id=case.pk))

    @pytest.mark.django_db
    @pytest.mark.parametrize(("entry", "method"), HTTP_CALLS)
    def test_non_member_session_gets_404_like_a_missing_case_and_nothing_changes(
        self,
        outsider: User,
        other_case: Case,
        junior: User,
        newcomer: User,
        case: Case,
        document: Document,
        entry: Route,
        method: str,
    ) -> None:
        _assert_refused_like_a_missing_case(
            session_client(outsider), entry, method, case, junior, document
        )

    @pytest.mark.django_db
    @pytest.mark.parametrize(("entry", "method"), API_CALLS)
    def test_non_member_token_gets_404_like_a_missing_case_and_nothing_changes(
        self,
        outsider: User,
        other_case: Case,
        junior: User,
        newcomer: User,
        case: Case,
        document: Document,
        entry: Route,
        method: str,
    ) -> None:
        response = _assert_refused_like_a_missing_case(
            token_client(outsider), entry, method, case, junior, document
        )
        assert response.json()["code"] == "not_found"

    @pytest.mark.django_db
    @pytest.mark.parametrize(("entry", "method"), HTTP_CALLS)
    def test_anonymous_is_sent_to_sign_in_or_gets_401_and_nothing_changes(
        self,
        junior: User,
        newcomer: User,
        case: Case,
        document: Document,
        entry: Route,
        method: str,
    ) -> None:
        client = Client()
        ids = _ids(case, junior, document, entry)
        path = _path(entry.route, **ids)
        before = _snapshot(case)

        response = _send(client, entry, method, path)
        missing = _send(
            client, entry, method, _path(entry.route, **{**ids, "case_id": MISSING_CASE_ID})
        )

        if entry.kind == API:
            assert response.status_code == missing.status_code == 401
            assert response.json() == missing.json()
            assert response.json()["code"] == "unauthenticated"
        else:
            assert response.status_code == missing.status_code == 302
            query = entry.payloads.get(method) if method == "GET" else None
            assert response["Location"] == _login_url(path, query)
        _assert_nothing_about(case, response.content.decode())
        assert _snapshot(case) == before


# --- Websockets ---------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize("entry", SOCKETS)
async def test_websocket_refuses_non_member_anonymous_and_missing_case_with_4404(
    outsider: User, other_case: Case, case: Case, entry: Route
) -> None:
    issued = await sync_to_async(account_services.token_create)(user=outsider, name="agent")
    run_id = await sync_to_async(_socket_run)(case)
    before = await sync_to_async(_snapshot)(case)
    path = _path(entry.route, case_id=case.pk, run_id=run_id)

    answers = [
        (await ws_connect(path, cookie_user=outsider))[1],
        (await ws_connect(path, bearer=issued.secret, origin=None))[1],
        (await ws_connect(path))[1],
        (
            await ws_connect(
                _path(entry.route, case_id=MISSING_CASE_ID, run_id=run_id), cookie_user=outsider
            )
        )[1],
    ]

    assert answers == [(False, 4404)] * 4
    assert await sync_to_async(_snapshot)(case) == before


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize("entry", SOCKETS)
async def test_websocket_accepts_members_by_session_and_by_token(
    lawyer: User, case: Case, entry: Route
) -> None:
    issued = await sync_to_async(account_services.token_create)(user=lawyer, name="agent")
    path = _path(entry.route, case_id=case.pk, run_id=await sync_to_async(_socket_run)(case))

    by_session, session_state = await ws_connect(path, cookie_user=lawyer)
    by_token, token_state = await ws_connect(path, bearer=issued.secret, origin=None)

    assert session_state == token_state == (True, None)
    await by_session.disconnect()
    await by_token.disconnect()


def _socket_run(case: Case) -> int:
    """A run of `case` for the run stream's socket (its packet frozen, as a run's always is)."""
    user = case.memberships.get(role="lawyer").user
    packet = Packet.objects.create(
        case=case, title="MATRIX socket", status=Packet.Status.FROZEN, content_hash="0" * 64,
        created_by=user,
    )  # fmt: skip
    run = Run.objects.create(
        case=case, kind=Run.Kind.SUMMARY, packet=packet, instructions="MATRIX socket",
        created_by=user,
    )  # fmt: skip
    return run.pk


# --- Routes that are not about one case ---------------------------------------------------


def _argument_free_routes() -> list[str]:
    return sorted(
        "/" + r
        for r in _walk(get_resolver().url_patterns)
        if not _kwargs(r) and not r.startswith("admin/")
    )


@pytest.mark.django_db
@pytest.mark.parametrize("via", ["session", "token"])
@pytest.mark.slow
def test_no_other_route_shows_another_case_to_a_non_member(
    outsider: User, other_case: Case, case: Case, via: str
) -> None:
    client = session_client(outsider) if via == "session" else token_client(outsider)
    routes = _argument_free_routes()
    assert {"/", "/accounts/tokens/", "/api/v1/cases", "/api/v1/me", "/api/v1/tokens"} <= set(
        routes
    )

    bodies = {path: client.get(path).content.decode() for path in routes}

    for path, body in bodies.items():
        assert case.title not in body, path
        assert case.number not in body, path
    # Not vacuous: the lists do show the outsider's own case.
    assert other_case.number in bodies["/api/v1/cases"]
    if via == "session":
        assert other_case.title in bodies["/"]


@pytest.mark.django_db
def test_case_lists_show_the_case_to_its_members(lawyer: User, case: Case) -> None:
    page = session_client(lawyer).get("/").content.decode()
    api = token_client(lawyer).get("/api/v1/cases").json()

    assert case.title in page and case.number in page
    assert [item["number"] for item in api["items"]] == [case.number]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_health_probes_need_no_sign_in(path: str) -> None:
    response = Client().get(path)

    assert response.status_code in (200, 503)
    assert response["Content-Type"] == "application/json"
    assert "status" in response.json()


# --- Django admin -------------------------------------------------------------------------


@pytest.fixture
def case_event(lawyer: User, case: Case) -> AuditEvent:
    case_services.case_update(actor=lawyer, case=case, changes={"status": "stayed"})
    return AuditEvent.objects.get(case=case, action="case.update")


@pytest.mark.django_db
def test_admin_lists_show_only_cases_the_admin_belongs_to(
    admin_user: User, case: Case, case_event: AuditEvent
) -> None:
    client = session_client(admin_user)

    def pages() -> tuple[str, str]:
        cases = client.get("/admin/cases/case/")
        events = client.get("/admin/accounts/auditevent/")
        assert cases.status_code == events.status_code == 200
        return cases.content.decode(), events.content.decode()

    cases_page, events_page = pages()
    for text in (cases_page, events_page):
        _assert_nothing_about(case, text)
    # Neither the row nor the action filter, which lists the actions of visible events.
    assert case_event.action not in events_page
    # Events of no case are the admin's business: the admin's own sign-in is listed.
    assert "auth.login" in events_page

    MembershipFactory(case=case, user=admin_user)
    cases_page, events_page = pages()

    assert case.number in cases_page and case.title in cases_page
    assert case_event.action in events_page and case.title in events_page


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "/admin/cases/case/{case_id}/change/",
        "/admin/cases/case/{case_id}/history/",
        "/admin/accounts/auditevent/{event_id}/change/",
        "/admin/accounts/auditevent/{event_id}/history/",
    ],
)
def test_admin_pages_of_a_case_the_admin_is_not_on_say_it_does_not_exist(
    admin_user: User, case: Case, case_event: AuditEvent, url: str
) -> None:
    client = session_client(admin_user)

    response = client.get(url.format(case_id=case.pk, event_id=case_event.pk), follow=True)
    missing = client.get(url.format(case_id=MISSING_CASE_ID, event_id=MISSING_CASE_ID))

    assert response.redirect_chain == [(reverse("admin:index"), 302)]
    assert missing.status_code == 302 and missing["Location"] == reverse("admin:index")
    body = response.content.decode()
    assert "doesn\u2019t exist" in body  # Django's message, with its apostrophe
    _assert_nothing_about(case, body)
