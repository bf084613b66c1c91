"""The demo case's evidence: a small contract dispute (Acme Corp. buys valves from Widget Ltd.;
the delivery is late and short; the balance is disputed), written here and made into PDFs at
seed time, uploaded through the document intake, stamped as a Bates production and frozen
as a packet that a demo run can draft from.

1. `demo_documents_seed(case)` (from `manage.py seed_demo`, before any worker runs): uploads
   each demo document the case does not hold yet (by file name), which queues its ingest on
   the `cpu` queue, then queues the job "lexweb_dev.demo_seed_continue". Quick: five small
   PDFs.
2. That job (`demo_seed_continue`) waits for the ingest without blocking a worker: while a
   document is still being read it queues itself again DEMO_RETRY_SECONDS later, at most
   DEMO_TRIES times. Once all are ready it reserves the Bates numbers (production ACME001,
   prefix ACME; its stamping job follows on `cpu`) and freezes the packet of the originals,
   whose pages carry the Bates labels from that moment.
Every step looks for what an earlier run made first: run again, it does nothing.
"""

import contextlib
import io
import logging
from dataclasses import dataclass
from typing import Literal

import pymupdf
from django.db import transaction
from procrastinate.exceptions import AlreadyEnqueued

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import production_services
from apps.documents import services as document_services
from apps.documents.models import Document, Production
from apps.evidence.models import Packet
from apps.evidence.services import packets as packet_services
from lexweb.jobs import job_defer

logger = logging.getLogger(__name__)

CONTINUE_TASK = "lexweb_dev.demo_seed_continue"
DEMO_PREFIX = "ACME"
DEMO_VOLUME = "ACME001"
DEMO_PACKET = "Delivery dispute: the record"
DEMO_RETRY_SECONDS = 2
DEMO_TRIES = 300  # ten minutes of waiting for the ingest, then the job gives up, saying so


class DemoSeedError(Exception):
    """A demo document could not be uploaded; the message says which and why."""


@dataclass(frozen=True)
class DemoDocument:
    filename: str
    origin: str
    custodian: str
    pages: tuple[str, ...]  # each page's text, paragraphs separated by blank lines


DOCUMENTS: tuple[DemoDocument, ...] = (
    DemoDocument(
        "supply-agreement.pdf",
        Document.Origin.CLIENT,
        "Acme Corp. (contracts)",
        (
            "SUPPLY AGREEMENT\n\n"
            "This Supply Agreement is made on 6 January 2025 between Acme Corp., of 12 Harbour "
            "Road, Springfield (the Buyer), and Widget Ltd., of 4 Mill Lane, Riverton (the "
            "Supplier).\n\n"
            "1. Goods. The Supplier shall deliver 2,000 industrial valves of model WV-40 to the "
            "Buyer's warehouse at 12 Harbour Road, Springfield.\n\n"
            "2. Delivery. The Supplier shall deliver all 2,000 valves no later than 14 March "
            "2025.\n\n"
            "3. Price. The price is $24.00 per valve, $48,000.00 in all, payable within 30 days "
            "of a complete delivery.",
            "4. Late delivery. If the Supplier delivers fewer valves than ordered, the Buyer "
            "shall pay only for the valves delivered until the rest arrive.\n\n"
            "5. Termination. If any part of the delivery is more than 10 days late, the Buyer "
            "may terminate this Agreement by written notice.\n\n"
            "6. Notices. Notices under this Agreement are given in writing to the addresses "
            "above.\n\n"
            "Signed for Acme Corp. by Helen Park, Director of Purchasing, on 6 January 2025.\n\n"
            "Signed for Widget Ltd. by Tom Reyes, Sales Director, on 6 January 2025.",
        ),
    ),
    DemoDocument(
        "widget-invoice-W-1187.pdf",
        Document.Origin.OPPOSING,
        "Widget Ltd.",
        (
            "WIDGET LTD.\n4 Mill Lane, Riverton\n\n"
            "INVOICE No. W-1187\n\n"
            "Invoice date: 2 April 2025\n\n"
            "Bill to: Acme Corp., 12 Harbour Road, Springfield\n\n"
            "Widget Ltd. invoiced Acme Corp. for 2,000 industrial valves of model WV-40 at "
            "$24.00 each.\n\n"
            "The amount due on this invoice is $48,000.00, payable by 2 May 2025.\n\n"
            "Delivery note D-332 records that 1,200 valves were delivered on 28 March 2025.",
        ),
    ),
    DemoDocument(
        "acme-letter-2025-04-07.pdf",
        Document.Origin.CLIENT,
        "Acme Corp. (Helen Park)",
        (
            "ACME CORP.\n12 Harbour Road, Springfield\n\n"
            "7 April 2025\n\n"
            "Widget Ltd., 4 Mill Lane, Riverton\nAttention: Tom Reyes, Sales Director\n\n"
            "Re: your invoice No. W-1187\n\n"
            "Acme Corp. received only 1,200 of the 2,000 valves, on 28 March 2025, fourteen days "
            "after the delivery date in the Supply Agreement.\n\n"
            "Under clause 4 of the Supply Agreement, Acme Corp. will pay $28,800.00 for the "
            "1,200 valves delivered and disputes the balance of $19,200.00 until the rest "
            "arrive.\n\n"
            "Acme Corp. reserves its right to terminate the Supply Agreement under clause 5.\n\n"
            "Yours faithfully,\nHelen Park, Director of Purchasing",
        ),
    ),
    DemoDocument(
        "widget-email-2025-04-09.pdf",
        Document.Origin.OPPOSING,
        "Widget Ltd. (Tom Reyes)",
        (
            "From: Tom Reyes <tom.reyes@widget.example>\n"
            "To: Helen Park <helen.park@acme.example>\n"
            "Date: 9 April 2025\n"
            "Subject: RE: Invoice W-1187\n\n"
            "Helen,\n\n"
            "Widget Ltd. will ship the remaining 800 valves by 30 April 2025.\n\n"
            "The delay was caused by a fault at our casting subcontractor, which Widget Ltd. did "
            "not control.\n\n"
            "Widget Ltd. expects payment of the full $48,000.00 on invoice W-1187 by 2 May "
            "2025.\n\n"
            "Regards,\nTom Reyes, Sales Director, Widget Ltd.",
        ),
    ),
    DemoDocument(
        "springfield-bank-statement-april-2025.pdf",
        Document.Origin.THIRD_PARTY,
        "Springfield Savings Bank",
        (
            "SPRINGFIELD SAVINGS BANK\nStatement of account: Acme Corp., business account "
            "4471\nPeriod: 1 April 2025 to 30 April 2025\n\n"
            "On 10 April 2025 Acme Corp. paid $28,800.00 to Widget Ltd. with the reference "
            "W-1187 part payment.\n\n"
            "On 22 April 2025 Acme Corp. paid $1,150.00 to Harbour Freight Co. with the "
            "reference storage April.\n\n"
            "The closing balance on 30 April 2025 was $212,430.17.",
        ),
    ),
)


def pdf_bytes(document: DemoDocument) -> bytes:
    """The document as a PDF with a text layer, one page per entry of `pages`."""
    with pymupdf.open() as pdf:
        for text in document.pages:
            page = pdf.new_page(width=612, height=792)
            left = page.insert_textbox(
                pymupdf.Rect(72, 72, 540, 720), text, fontsize=11, fontname="helv"
            )
            if left < 0:
                raise DemoSeedError(f"{document.filename}: a page's text does not fit the page.")
        pdf.set_metadata({"title": document.filename, "producer": "lexweb demo"})
        return pdf.tobytes(garbage=3, deflate=True)


def demo_documents_seed(*, case: Case, user: User) -> int:
    """Upload the demo documents `case` does not hold yet (by file name) as `user`, and queue
    the job that finishes the seeding. The number of documents uploaded."""
    if Packet.objects.filter(case=case, title=DEMO_PACKET).exists():
        return 0
    held = set(Document.objects.filter(case=case).values_list("filename", flat=True))
    uploaded = 0
    for document in DOCUMENTS:
        if document.filename in held:
            continue
        outcome = document_services.document_upload(
            case=case,
            uploaded_by=user,
            filename=document.filename,
            source=io.BytesIO(pdf_bytes(document)),
            origin=document.origin,
            custodian=document.custodian,
        )
        if outcome.status == "error":
            raise DemoSeedError(
                f"The demo document {document.filename} was refused: {outcome.error}"
            )
        uploaded += outcome.status == "created"
    continue_defer(case_id=case.pk, attempt=1, delay=0)
    return uploaded


def continue_defer(*, case_id: int, attempt: int, delay: int) -> None:
    """Queue the next try of `demo_seed_continue` (one waiting try at a time)."""
    # A try already waiting will do; the savepoint keeps a caller's transaction usable.
    with contextlib.suppress(AlreadyEnqueued), transaction.atomic():
        job_defer(
            CONTINUE_TASK,
            queueing_lock=f"demo-seed:{case_id}",
            schedule_in={"seconds": delay} if delay else None,
            case_id=case_id,
            attempt=attempt,
        )


Step = Literal["done", "waiting", "gave_up", "failed", "nothing"]


def demo_seed_continue(*, case_id: int, attempt: int) -> Step:
    """One try at finishing the seeding (see the module docstring)."""
    case = Case.objects.filter(pk=case_id).first()
    if case is None or Packet.objects.filter(case=case, title=DEMO_PACKET).exists():
        return "nothing"
    names = [document.filename for document in DOCUMENTS]
    found = {d.filename: d for d in Document.objects.filter(case=case, filename__in=names)}
    failed = [d for d in found.values() if d.status == Document.Status.FAILED]
    if failed or len(found) < len(names):
        missing = ", ".join(sorted(set(names) - set(found))) or failed[0].error
        logger.warning("The demo seeding stops: %s (%s).", missing, "not read" if failed else "")
        return "failed"
    if any(d.status != Document.Status.READY for d in found.values()):
        if attempt >= DEMO_TRIES:
            logger.warning("The demo documents were not read in time; the seeding stops.")
            return "gave_up"
        continue_defer(case_id=case_id, attempt=attempt + 1, delay=DEMO_RETRY_SECONDS)
        return "waiting"
    user = found[names[0]].uploaded_by
    documents = [found[name] for name in names]
    production = Production.objects.filter(case=case, volume=DEMO_VOLUME).first()
    if production is None:
        production = production_services.production_create(
            case=case,
            actor=user,
            volume=DEMO_VOLUME,
            prefix=DEMO_PREFIX,
            document_ids=[d.pk for d in documents],
            legend="CONFIDENTIAL - DEMO",
        )
    with transaction.atomic():
        packet = packet_services.packet_create(
            user=user,
            case_id=case.pk,
            title=DEMO_PACKET,
            purpose="The demo's record: the agreement, the invoice, the letters and the bank "
            "statement.",
        )
        packet_services.packet_items_add(
            user=user,
            case_id=case.pk,
            packet_id=packet.pk,
            selections=[
                packet_services.Selection(document_id=d.pk, reason="Part of the demo record")
                for d in documents
            ],
        )
        packet = packet_services.packet_freeze(user=user, case_id=case.pk, packet_id=packet.pk)
    logger.info(
        "The demo case %s is ready: Bates numbers from %s (production %s), packet “%s” frozen "
        "(%d pages).",
        case.number,
        production.bates(production.first_number),
        production.volume,
        packet.title,
        packet.page_count,
    )
    return "done"
