"""Lineage: the Derivation table instead of a parent link. E-mail attachments, production
volumes and what derives from generated documents, on real PostgreSQL with real files, real
ingest and real stamping."""

import io
import itertools
import threading
import zipfile
from collections.abc import Callable
from email.message import EmailMessage
from typing import Any

import pymupdf
import pytest
from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.db.models import ProtectedError
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import lineage_selectors as provenance
from apps.documents import production_services, selectors, services
from apps.documents.models import Derivation, Document, Page, Production
from apps.documents.production_door_services import Inclusion
from apps.evidence.models import ArtifactMatch, GeneratedArtifact
from apps.evidence.services import registry
from lexweb.errors import DomainError
from tests.documents.files import REAL, real, scanned_pdf, text_pdf

pytestmark = pytest.mark.django_db(databases="__all__")

JSON = "application/json"
SEP, QUOTE = "\x14", "\u00fe"
ORDER = "ca10_order_in-re-liebowitz_21-800.pdf"
NOTICE = "ca2_docketing-notice_17-3510.pdf"
FEDEX = "ca7_order_in-re-fedex-ground_17-2400.pdf"


def _email(*attachments: tuple[str, bytes]) -> bytes:
    message = EmailMessage()
    message["From"] = "Client <client@acme.test>"
    message["To"] = "Counsel <counsel@firm.test>"
    message["Subject"] = "The orders"
    message["Date"] = "Mon, 02 Nov 2026 10:00:00 +0000"
    message.set_content("Dear counsel,\nthe orders are attached.\n")
    for name, data in attachments:
        message.add_attachment(data, maintype="application", subtype="pdf", filename=name)
    return message.as_bytes()


def _upload(user: User, case: Case, name: str, data: bytes, origin: str = "client") -> Document:
    outcome = services.document_upload(
        case=case, uploaded_by=user, filename=name, source=io.BytesIO(data), origin=origin
    )
    assert outcome.status == "created", outcome.error
    assert outcome.document is not None
    return outcome.document


def _produce(
    user: User,
    case: Case,
    documents: list[Document],
    volume: str = "ACME001",
    include: tuple[Document, ...] = (),
) -> Production:
    """`include`: documents the door out holds back that the lawyer produces all the same."""
    return production_services.production_create(
        case=case,
        actor=user,
        volume=volume,
        prefix="ACME",
        document_ids=[d.pk for d in documents],
        inclusions=[
            Inclusion(document_id=d.pk, reason="Ordered produced by the court, see the order.")
            for d in include
        ],
    )


def _parse_dat(raw: bytes) -> list[dict[str, str]]:
    rows = [line for line in raw.decode("utf-8-sig").split("\r\n") if line]
    fields = [f.strip(QUOTE) for f in rows[0].split(SEP)]
    return [
        dict(zip(fields, (v.strip(QUOTE) for v in row.split(SEP)), strict=True)) for row in rows[1:]
    ]


# --- E-mail attachments --------------------------------------------------------------------------


def test_attachments_are_derivations_of_their_message_and_keep_its_origin(
    lawyer: User, case: Case, blob_root: Any, run_jobs: Callable[[], None]
) -> None:
    message = _upload(
        lawyer,
        case,
        "orders.eml",
        _email(("order.pdf", real(ORDER)), ("notice.pdf", real(NOTICE))),
        origin="opposing",
    )
    run_jobs()

    rows = list(Derivation.objects.order_by("child__filename"))
    assert [(r.child.filename, r.parent_id) for r in rows] == [
        ("notice.pdf", message.pk),
        ("order.pdf", message.pk),
    ]
    assert {(r.transform, r.version, r.deterministic, r.order) for r in rows} == {
        ("email-attachment", "1", True, 1)
    }
    assert set(Document.objects.values_list("origin", flat=True)) == {"opposing"}
    attachment = Document.objects.get(filename="order.pdf")
    (link,) = provenance.provenance_chain(attachment)
    assert (link.document_id, link.filename, link.origin, link.transform, link.depth) == (
        message.pk,
        "orders.eml",
        "opposing",
        "email-attachment",
        1,
    )
    assert provenance.generated_ancestor(attachment) is None
    listed = {d.filename: d for d in selectors.document_list_for_user(user=lawyer, case_id=case.pk)}
    assert listed["orders.eml"].attachment_count == 2
    assert listed["order.pdf"].attachment_count == 0
    children = selectors.attachment_list_for_user(
        user=lawyer, case_id=case.pk, document_id=message.pk
    )
    assert [d.filename for d in children] == ["notice.pdf", "order.pdf"]


@pytest.mark.slow
def test_load_file_families_come_from_the_attachment_derivations(
    lawyer: User,
    lawyer_api: Client,
    case: Case,
    blob_root: Any,
    run_jobs: Callable[[], None],
) -> None:
    """An attachment made the new way (a Derivation, no parent column) still forms its family:
    BEGATTACH/ENDATTACH span the message's produced attachments; a loose document has none."""
    loose = _upload(lawyer, case, "fedex.pdf", real(FEDEX))
    _upload(
        lawyer, case, "orders.eml", _email(("order.pdf", real(ORDER)), ("notice.pdf", real(NOTICE)))
    )
    run_jobs()
    order = Document.objects.get(filename="order.pdf")
    notice = Document.objects.get(filename="notice.pdf")
    production = _produce(lawyer, case, [loose, order, notice])
    run_jobs()
    production.refresh_from_db()
    export = production_services.production_export_request(production=production, actor=lawyer)
    run_jobs()

    base = f"/api/v1/cases/{case.pk}/productions/{production.pk}/exports/{export.pk}/zip"
    response = lawyer_api.get(base)
    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    rows = _parse_dat(archive.read("ACME001/ACME001.dat"))
    # fedex: 1 page (ACME000001); order: 1 page (…02); notice: 2 pages (…03-…04).
    assert [(r["FILENAME"], r["BEGBATES"], r["ENDBATES"]) for r in rows] == [
        ("fedex.pdf", "ACME000001", "ACME000001"),
        ("order.pdf", "ACME000002", "ACME000002"),
        ("notice.pdf", "ACME000003", "ACME000004"),
    ]
    assert [(r["BEGATTACH"], r["ENDATTACH"]) for r in rows] == [
        ("", ""),
        ("ACME000002", "ACME000004"),
        ("ACME000002", "ACME000004"),
    ]


# Migrations alter tables: they cannot run inside a transaction with pending trigger events.
@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.slow
def test_parent_links_of_before_become_email_attachment_derivations(
    lawyer: User, case: Case
) -> None:
    """The data migration, run for real: back to 0005 (the parent column exists), links
    written there, forward again. The column is gone and each link is a Derivation."""
    executor = MigrationExecutor(connection)
    target = [("documents", "0005_origins_provenance_derivation")]
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate(target)
    try:
        old = MigrationExecutor(connection).loader.project_state(target).apps
        OldDocument = old.get_model("documents", "Document")
        OldBlob = old.get_model("documents", "Blob")
        rows = []
        for n in range(3):
            blob = OldBlob.objects.create(sha256=f"{n:064x}", size=10)
            rows.append(
                OldDocument.objects.create(
                    case_id=case.pk,
                    blob=blob,
                    filename=f"doc{n}.pdf",
                    kind="pdf",
                    content_type="application/pdf",
                    origin="client",
                    uploaded_by_id=lawyer.pk,
                    parent=rows[0] if rows else None,
                )
            )
        message, first, second = (row.pk for row in rows)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(leaves)

    with connection.cursor() as cursor:
        columns = {
            c.name
            for c in connection.introspection.get_table_description(cursor, "documents_document")
        }
    assert "parent_id" not in columns
    links = Derivation.objects.order_by("child_id").values_list(
        "child_id", "parent_id", "transform", "version", "deterministic"
    )
    assert list(links) == [
        (first, message, "email-attachment", "1", True),
        (second, message, "email-attachment", "1", True),
    ]
    children = selectors.attachment_list_for_user(user=lawyer, case_id=case.pk, document_id=message)
    assert [d.pk for d in children] == [first, second]


def test_deleting_a_parent_is_refused_while_it_has_derivations(
    lawyer: User, case: Case, blob_root: Any
) -> None:
    message = _upload(lawyer, case, "orders.eml", _email(("order.pdf", real(ORDER))))
    attachment = Document.objects.get(filename="order.pdf")

    with pytest.raises(ProtectedError):
        message.delete()
    with pytest.raises(ProtectedError):
        attachment.delete()  # the child's own row is protected too: lineage is kept
    assert Document.objects.count() == 2 and Derivation.objects.count() == 1


# --- derivation_record and the rule -------------------------------------------------------------


def _generated(user: User, case: Case, text: str, parents: tuple[Document, ...] = ()) -> Document:
    return services.document_create_generated(
        case=case,
        actor=user,
        filename="summary.md",
        data=text.encode(),
        text=text,
        media_type="text/markdown",
        source="test: drafter",
        parents=parents,
    )


SUMMARY = (
    "Summary of the orders. The court ordered counsel to show cause why he should not be "
    "sanctioned for repeated failures to comply with the rules of this court and its orders."
)


def test_a_generated_grand_parent_makes_the_grand_child_generated(
    lawyer: User, case: Case, blob_root: Any
) -> None:
    evidence = _upload(lawyer, case, "order.pdf", real(ORDER), origin="court")
    draft = _generated(lawyer, case, SUMMARY, parents=(evidence,))
    middle = _upload(lawyer, case, "copy-1.pdf", text_pdf(["a rendering of the summary"]))
    grandchild = _upload(lawyer, case, "copy-2.pdf", text_pdf(["a copy of that rendering"]))

    services.derivation_record(
        child=middle, parents=[draft], transform="render-pdf", version="1", deterministic=True
    )
    services.derivation_record(
        child=grandchild, parents=[middle], transform="page-split", version="2", deterministic=True
    )

    middle.refresh_from_db()
    grandchild.refresh_from_db()
    evidence.refresh_from_db()
    assert draft.origin == middle.origin == grandchild.origin == "system_generated"
    assert evidence.origin == "court"  # lineage never changes a parent
    chain = provenance.provenance_chain(grandchild)
    assert [
        (link.document_id, link.transform, link.deterministic, link.depth) for link in chain
    ] == [
        (middle.pk, "page-split", True, 1),
        (draft.pk, "render-pdf", True, 2),
        (evidence.pk, "model-output", False, 3),
    ]
    nearest = provenance.generated_ancestor(grandchild)
    assert nearest is not None and nearest.document_id == middle.pk
    assert provenance.generated_ancestor(draft) is not None  # reached by model-output
    assert provenance.generated_ancestor(evidence) is None


@pytest.mark.slow
def test_marking_an_existing_chain_generated_reaches_every_descendant(
    lawyer: User, case: Case, blob_root: Any
) -> None:
    """A deterministic chain deeper than the chain's read limit, then a model-written edge at
    its top: every document below becomes system generated (propagation is not bounded)."""
    chain = [
        _upload(lawyer, case, f"page-{n}.txt", f"page {n} of the exhibit\n".encode())
        for n in range(provenance.MAX_DEPTH + 5)
    ]
    for parent, child in itertools.pairwise(chain):
        services.derivation_record(
            child=child, parents=[parent], transform="page-split", version="1", deterministic=True
        )
    assert set(Document.objects.values_list("origin", flat=True)) == {"client"}
    source = _upload(lawyer, case, "prompt.txt", b"what the model was given\n")

    services.derivation_record(
        child=chain[0], parents=[source], transform="model-output", version="1", deterministic=False
    )

    origins = dict(Document.objects.values_list("pk", "origin"))
    assert {origins[d.pk] for d in chain} == {"system_generated"}
    assert origins[source.pk] == "client"
    # The chain's read stops at MAX_DEPTH steps; the origin needs no walk.
    assert len(provenance.provenance_chain(chain[-1])) == provenance.MAX_DEPTH


def test_deterministic_transforms_of_evidence_stay_evidence(
    lawyer: User, case: Case, blob_root: Any
) -> None:
    first = _upload(lawyer, case, "a.txt", b"first exhibit\n", origin="third_party")
    second = _upload(lawyer, case, "b.txt", b"second exhibit\n", origin="court")
    merged = _upload(lawyer, case, "merged.txt", b"first exhibit\nsecond exhibit\n", origin="court")

    rows = services.derivation_record(
        child=merged,
        parents=[first, second],
        transform="merge",
        version="3",
        deterministic=True,
        parameters={"by": "test"},
        parameters_each=[{"part": 1}, {"part": 2}],
    )

    merged.refresh_from_db()
    assert merged.origin == "court"
    assert [(r.parent_id, r.order, r.parameters) for r in rows] == [
        (first.pk, 1, {"by": "test", "part": 1}),
        (second.pk, 2, {"by": "test", "part": 2}),
    ]
    assert provenance.generated_ancestor(merged) is None
    assert [link.document_id for link in provenance.provenance_chain(merged)] == [
        first.pk,
        second.pk,
    ]


def test_bad_derivations_are_refused_with_the_reason(
    lawyer: User, case: Case, other_case: Case, outsider: User, blob_root: Any
) -> None:
    a = _upload(lawyer, case, "a.txt", b"a\n")
    b = _upload(lawyer, case, "b.txt", b"b\n")
    c = _upload(lawyer, case, "c.txt", b"c\n")
    foreign = _upload(outsider, other_case, "x.txt", b"x\n")
    services.derivation_record(child=b, parents=[a], transform="t", version="1", deterministic=True)
    services.derivation_record(child=c, parents=[b], transform="t", version="1", deterministic=True)

    def refused(**kwargs: Any) -> str:
        arguments = {"transform": "t", "version": "1", "deterministic": True, **kwargs}
        with pytest.raises(DomainError) as caught:
            services.derivation_record(**arguments)
        return caught.value.message

    assert "in a circle" in refused(child=a, parents=[c])
    assert "from itself" in refused(child=a, parents=[a])
    assert "another case" in refused(child=a, parents=[foreign])
    assert "at least one parent" in refused(child=a, parents=[])
    assert "only once" in refused(child=c, parents=[a, a])
    assert "1-60 characters" in refused(child=c, parents=[a], transform="x" * 61)
    assert "1-60 characters" in refused(child=c, parents=[a], version="")
    assert "one set of parameters per parent" in refused(
        child=c, parents=[a], parameters_each=[{}, {}]
    )
    assert "are JSON" in refused(child=c, parents=[a], parameters={"when": object()})
    assert "are JSON" in refused(child=c, parameters_each=[{"n": float("nan")}], parents=[a])
    assert "at most 10,000" in refused(child=c, parents=[a], parameters={"x": "y" * 10_001})
    assert Derivation.objects.count() == 2


def test_chain_reads_are_cycle_safe_even_over_rows_written_around_the_service(
    lawyer: User, case: Case, blob_root: Any
) -> None:
    a = _upload(lawyer, case, "a.txt", b"a\n")
    b = _upload(lawyer, case, "b.txt", b"b\n")
    for child, parent in ((a, b), (b, a)):
        Derivation.objects.create(
            child=child, parent=parent, transform="t", version="1", deterministic=True
        )

    chain = provenance.provenance_chain(a)

    assert [(link.document_id, link.depth) for link in chain] == [(b.pk, 1)]
    assert provenance.generated_ancestor(a) is None
    assert provenance.descendant_ids([a.pk]) == {a.pk, b.pk}


# --- Production volumes ------------------------------------------------------------------------


@pytest.mark.slow
def test_stamped_volume_is_a_ready_document_with_the_originals_pages_and_lineage(
    lawyer: User, case: Case, blob_root: Any, run_jobs: Callable[[], None]
) -> None:
    notice = _upload(lawyer, case, "notice.pdf", real(NOTICE), origin="court")
    scan = _upload(lawyer, case, "scan.pdf", scanned_pdf(ORDER), origin="court")  # OCR'd
    run_jobs()
    production = _produce(lawyer, case, [scan, notice])
    run_jobs()

    production.refresh_from_db()
    volume = production.volume_document
    assert volume is not None
    assert (volume.filename, volume.kind, volume.status, volume.origin, volume.provenance) == (
        "ACME001.pdf",
        "pdf",
        "ready",
        "production",  # the firm's outgoing production (issue 25 req 1), not its originals'
        "clear",
    )
    assert volume.blob_id == production.output_id
    assert (volume.page_count, volume.pages_done) == (3, 3)
    fields = ("text", "source", "ocr_confidence", "words", "ocr_dpi", "needs_review")
    expected = [
        *Page.objects.filter(document=scan).order_by("number").values_list(*fields),
        *Page.objects.filter(document=notice).order_by("number").values_list(*fields),
    ]
    copied = Page.objects.filter(document=volume).order_by("number")
    assert [p.number for p in copied] == [1, 2, 3]
    assert list(copied.values_list(*fields)) == expected
    assert expected[0][1] == "ocr" and expected[0][3]  # the OCR page's words came along
    rows = list(Derivation.objects.filter(child=volume).order_by("order"))
    assert [(r.parent_id, r.transform, r.version, r.deterministic) for r in rows] == [
        (scan.pk, "bates-stamp", "2", True),
        (notice.pk, "bates-stamp", "2", True),
    ]
    assert rows[1].parameters == {
        "production": production.pk,
        "volume": "ACME001",
        "prefix": "ACME",
        "digits": 6,
        "order": 2,
        "first": 2,
        "last": 3,
    }
    # No ingest was queued for the volume: its pages were never read again.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE task_name = 'documents.extract_text' "
            "AND args->>'document_id' = %s",  # as text: other tests queue hostile arguments
            [str(volume.pk)],
        )
        assert cursor.fetchone() == (0,)
    assert [link.document_id for link in provenance.provenance_chain(volume)] == [
        scan.pk,
        notice.pk,
    ]
    with pytest.raises(ProtectedError):
        notice.delete()


def test_volumes_are_listed_with_their_label_and_left_out_of_search_hits(
    lawyer: User, case: Case, blob_root: Any, run_jobs: Callable[[], None]
) -> None:
    notice = _upload(lawyer, case, "notice.pdf", real(NOTICE), origin="court")
    run_jobs()
    production = _produce(lawyer, case, [notice])
    run_jobs()
    production.refresh_from_db()

    listed = {d.pk: d for d in selectors.document_list_for_user(user=lawyer, case_id=case.pk)}
    table = {d.pk: d for d in selectors.document_table_for_user(user=lawyer, case_id=case.pk)}
    hits = selectors.page_search_for_user(user=lawyer, case_id=case.pk, query="Second Circuit")
    in_volume = selectors.page_search_for_user(
        user=lawyer,
        case_id=case.pk,
        query="Second Circuit",
        document_id=production.volume_document_id,
    )

    assert listed[production.volume_document_id].production_volume == "ACME001"
    assert table[production.volume_document_id].production_volume == "ACME001"
    assert listed[notice.pk].production_volume is None
    assert {hit.document_id for hit in hits} == {notice.pk}
    assert {hit.document_id for hit in in_volume} == {production.volume_document_id}


def test_volume_is_an_outgoing_production_and_takes_its_originals_flags(
    lawyer: User, case: Case, blob_root: Any, run_jobs: Callable[[], None]
) -> None:
    # A model once wrote out the FedEx order's text: the registry knows it before the upload.
    with pymupdf.open(REAL / FEDEX) as pdf:
        fedex_text = "\n".join(page.get_text() for page in pdf)
    artifact = registry.artifact_register(
        data=fedex_text.encode(),
        text=fedex_text,
        kind=GeneratedArtifact.Kind.MODEL_OUTPUT,
        media_type="text/plain",
        title="Transcript of the FedEx order",
        case=case,
    )
    court = _upload(lawyer, case, "notice.pdf", real(NOTICE), origin="court")
    theirs = _upload(lawyer, case, "order.pdf", real(ORDER), origin="opposing")
    client = _upload(lawyer, case, "fedex.pdf", real(FEDEX), origin="client")
    run_jobs()
    client.refresh_from_db()
    assert client.provenance == "flagged"  # the registry's text check at ingest
    (flag,) = ArtifactMatch.objects.filter(document=client)

    mixed = _produce(lawyer, case, [court, theirs], volume="V1")
    plain = _produce(lawyer, case, [court, client], volume="V2", include=(client,))
    run_jobs()

    mixed_volume = Production.objects.get(pk=mixed.pk).volume_document
    plain_volume = Production.objects.get(pk=plain.pk).volume_document
    assert mixed_volume is not None and plain_volume is not None
    assert (mixed_volume.origin, mixed_volume.provenance) == ("production", "clear")
    assert (plain_volume.origin, plain_volume.provenance) == ("production", "flagged")
    assert list(
        ArtifactMatch.objects.filter(document=plain_volume).values_list(
            "artifact_id", "by", "share"
        )
    ) == [(artifact.pk, "text", flag.share)]


def test_a_volume_of_a_generated_document_is_system_generated(
    lawyer: User, case: Case, blob_root: Any, run_jobs: Callable[[], None]
) -> None:
    evidence = _upload(lawyer, case, "notice.pdf", real(NOTICE), origin="court")
    run_jobs()
    draft = services.document_create_generated(
        case=case,
        actor=None,
        filename="draft.pdf",
        data=text_pdf(SUMMARY.split(". ")),
        text=SUMMARY,
        media_type="application/pdf",
        source="test: drafter",
        parents=[evidence],
    )
    run_jobs()
    # Held back at the door out; a lawyer includes it (issue 25 req 1), and lineage still wins.
    production = _produce(lawyer, case, [evidence, draft], include=(draft,))
    run_jobs()

    volume = Production.objects.get(pk=production.pk).volume_document
    assert volume is not None and volume.origin == "system_generated"
    nearest = provenance.generated_ancestor(volume)
    assert nearest is not None
    assert (nearest.document_id, nearest.transform, nearest.depth) == (draft.pk, "bates-stamp", 1)


def test_restamping_after_a_kill_or_twice_at_once_makes_one_volume_document(
    lawyer: User, case: Case, blob_root: Any, run_jobs: Callable[[], None]
) -> None:
    notice = _upload(lawyer, case, "notice.pdf", real(NOTICE), origin="court")
    order = _upload(lawyer, case, "order.pdf", real(ORDER), origin="court")
    run_jobs()
    production = _produce(lawyer, case, [notice, order])
    # A worker killed mid-stamping leaves the production "processing" with no volume.
    Production.objects.filter(pk=production.pk).update(status="processing", pages_done=2)

    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def stamp() -> None:
        try:
            start.wait()
            production_services.production_stamp(production_id=production.pk)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=stamp) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    production_services.production_stamp(production_id=production.pk)  # the requeued job
    run_jobs()  # and the job created with the production

    assert errors == []
    production.refresh_from_db()
    assert production.status == "ready" and production.volume_document_id is not None
    volumes = Document.objects.filter(derived_from__transform="bates-stamp").distinct()
    assert [d.pk for d in volumes] == [production.volume_document_id]
    assert Page.objects.filter(document_id=production.volume_document_id).count() == 3
    assert Derivation.objects.filter(child_id=production.volume_document_id).count() == 2
    (audited,) = AuditEvent.objects.filter(action="document.production_volume")
    assert (audited.actor_id, audited.actor_label, audited.target_id) == (
        None,
        "lexweb stamping",
        str(production.volume_document_id),
    )
