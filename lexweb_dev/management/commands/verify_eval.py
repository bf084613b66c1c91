"""`manage.py verify_eval DIR --out findings.jsonl`: the verifier on a folder in the format of
../shared/eval/verifier/ (its README describes it), end to end, on a database of its own.

1. The folder is read and checked (`evaluation.load_set`) before anything else happens. A
   case folder of a set that cannot be read is reported as failed; the others run.
2. A temporary database `lexweb_eval_<hex>` is created on the configured PostgreSQL server (the
   embedded one, or DATABASE_URL's; with DATABASE_URL unset and the embedded one not running, a
   private embedded server in the temporary folder), and a temporary folder for the blobs and
   var/ files. The product's database, blob store and var/ are never written: the work runs in
   a child process whose settings point at the temporary ones (DATABASE_URL, LEXWEB_BLOB_ROOT,
   LEXWEB_VAR_DIR).
   Where no database may be created, the command refuses and says why.
3. The child (this command with --inside-temporary-database NAME) checks that it is on that
   empty database, migrates it, and for each case folder:
   a. a lawyer and a case; every source uploaded with the real upload service (origin from
      case.json, "public" as a public record) and read by the real ingest service, in process
      (text layer, else Tesseract OCR), batch after batch until the document is ready;
   b. case.json's productions in order (or the one production of every document in
      case.json's order, with its prefix, first number and digits), each with its documents,
      prefix, start, digits and legend, stamped by the real stamping service; every page's
      Bates labels are compared with case.json's bates_map;
   c. a packet of every source document, frozen;
   d. every draft: the claims (apps.verification.claims.extract_claims, with the case's prefix)
      checked by apps.verification.checks.verify_text over PageRecords of the frozen pages.
   A case that cannot run (a source refused, a production refused, a crash) stops there and
   is reported with its step and reason; the other cases run and are scored (the failed
   cases' labels are left out of the figures).
   It writes one JSON line per finding to --out and prints the figures as JSON (the README's
   rules: lexweb_dev/evaluation.py).
4. The temporary database is dropped and the folder removed, however the child ended. The
   report is printed; when a case failed, the command then ends with an error naming it (exit
   status 1), after the other cases' figures.
"""

import functools
import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from argparse import SUPPRESS, ArgumentParser
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import psycopg
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import services as case_services
from apps.cases.models import Case as CaseRow
from apps.documents import production_services
from apps.documents import services as document_services
from apps.documents.models import Document, Page, Production
from apps.evidence.models import FrozenPage
from apps.evidence.selectors import packets as packet_selectors
from apps.evidence.services import packets as packet_services
from apps.verification import checks, claims, index
from apps.verification import services as verification_services
from lexweb.errors import DomainError
from lexweb_dev import evaluation

TEMP_DATABASE = re.compile(r"^lexweb_eval_[0-9a-f]{16}$")


class Command(BaseCommand):
    help = (
        "Verify every draft of an evaluation set folder against its sources (ingested, "
        "Bates-stamped and frozen for real, on a temporary database), write the findings as "
        "JSON lines and print recall per error kind, precision and the false-flag rate."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("dir", type=Path, help="a set folder, or one case folder")
        parser.add_argument("--out", type=Path, required=True, help="findings.jsonl to write")
        parser.add_argument("--details", action="store_true", help="list misses, wrong flags")
        parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
        # Internal: the child process of step 3, on the temporary database.
        parser.add_argument("--inside-temporary-database", default="", help=SUPPRESS)

    def handle(self, *args: Any, **options: Any) -> None:
        set_dir = Path(options["dir"]).resolve()
        out = Path(options["out"]).resolve()
        unreadable: list[evaluation.CaseFailure] = []
        try:
            cases = evaluation.load_set(set_dir, failures=unreadable)
        except evaluation.EvalSetError as exc:
            raise CommandError(f"Not an evaluation set: {exc}") from None
        if not out.parent.is_dir():
            raise CommandError(f"{out.parent} does not exist; choose where to write --out.")
        if options["inside_temporary_database"]:
            # The child reports failed cases in its JSON and ends well; the parent says so.
            report = _inside(
                options["inside_temporary_database"],
                cases,
                out,
                quiet=options["quiet"],
                failed=unreadable,
            )
            report["result"] = evaluation.summary(report["result"], details=options["details"])
            self.stdout.write(json.dumps(report, indent=1, ensure_ascii=False))
            return
        printed = _outside(set_dir, out, options)
        self.stdout.write(printed)
        _fail_if_a_case_failed(printed)


def _fail_if_a_case_failed(printed: str) -> None:
    """CommandError (exit status 1) naming the cases that could not run, if any did not."""
    try:
        report = json.loads(printed)
    except ValueError:
        raise CommandError("The evaluation's report is not JSON; see above.") from None
    failed = report.get("failed_cases") or []
    if failed:
        total = len(failed) + len(report.get("cases") or [])
        named = "; ".join(f"{f['case']} ({f['stage']}: {f['reason'][:300]})" for f in failed)
        raise CommandError(
            f"{len(failed)} of {total} cases could not run, the others are scored above: {named}"
        )


# --- 2 and 4: the temporary database and folder, around the child -----------------------------


def _outside(set_dir: Path, out: Path, options: dict[str, Any]) -> str:
    """Create the database and folder, run the child on them, drop and remove them; the
    child's JSON report."""
    name = f"lexweb_eval_{secrets.token_hex(8)}"
    work = Path(tempfile.mkdtemp(prefix="lexweb-eval-"))
    try:
        with _temporary_database(name, work) as url:
            env = {
                **os.environ,
                "DATABASE_URL": url,
                "LEXWEB_BLOB_ROOT": str(work / "blobs"),
                "LEXWEB_VAR_DIR": str(work / "var"),
            }
            argv = [
                sys.executable,
                str(Path(settings.BASE_DIR) / "manage.py"),
                "verify_eval",
                str(set_dir),
                "--out",
                str(out),
                "--inside-temporary-database",
                name,
                *(["--details"] if options["details"] else []),
                *(["--quiet"] if options["quiet"] else []),
            ]
            # Progress and errors go straight to our stderr; the report comes back on stdout.
            done = subprocess.run(  # noqa: S603  (this interpreter and manage.py)
                argv, env=env, stdout=subprocess.PIPE, text=True, check=False
            )
        if done.returncode != 0:
            raise CommandError(
                f"The evaluation stopped (exit status {done.returncode}); its error is above."
            )
        return done.stdout.rstrip("\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextmanager
def _temporary_database(name: str, work: Path) -> Iterator[str]:
    """A DATABASE_URL for a new, empty database `name`, dropped on the way out.

    On the configured server when it can be reached. With DATABASE_URL unset and the embedded
    PostgreSQL not running (no `make run`), a private embedded server in `work` instead,
    stopped on the way out: the product's var/pgdata is not started or touched.
    """
    if settings.DATABASE_URL or _server_reachable():
        _create_database(name)
        try:
            yield _database_url(name)
        finally:
            _drop_database(name)
        return
    from lexweb import embedded_db

    # pgserver's inter-process lock file: where the launcher keeps it (never in `work`, which is
    # removed while pgserver may still hold its lock at exit).
    run_dir = Path(settings.VAR_DIR) / "run"
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(run_dir))
    try:
        embedded_db.start(work / "pgdata")
        url = embedded_db.ensure_database(name)
    except embedded_db.EmbeddedDatabaseError as exc:
        raise CommandError(f"No database for the evaluation: {exc}") from None
    try:
        yield url
    finally:
        embedded_db.stop()


def _server_reachable() -> bool:
    try:
        _admin_connection().close()
    except CommandError:
        return False
    return True


def _admin_connection() -> psycopg.Connection[Any]:
    """A connection of its own (autocommit) to the configured server, for CREATE/DROP DATABASE,
    which cannot run inside a transaction."""
    params = connection.get_connection_params()
    try:
        return psycopg.connect(**params, autocommit=True)
    except psycopg.Error as exc:
        raise CommandError(
            f"Cannot reach the configured PostgreSQL to create a temporary database: {exc}. "
            "Check DATABASE_URL."
        ) from None


def _create_database(name: str) -> None:
    with _admin_connection() as admin:
        try:
            # `name` is ours: lexweb_eval_ and 16 hex digits (TEMP_DATABASE).
            admin.execute(f'CREATE DATABASE "{name}"')
        except psycopg.Error as exc:
            user = connection.settings_dict.get("USER") or "the configured user"
            raise CommandError(
                f"Cannot create a temporary database on the configured PostgreSQL ({exc}). "
                f"verify_eval runs only on a database of its own: grant CREATEDB to {user}, or "
                "point DATABASE_URL at a server where it may create one."
            ) from None


def _drop_database(name: str) -> None:
    if not TEMP_DATABASE.match(name):
        raise CommandError(f"Refusing to drop {name!r}: not a temporary evaluation database.")
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _database_url(name: str) -> str:
    """A DATABASE_URL for database `name` on the server, as the user, of the configuration."""
    db = connection.settings_dict
    user = quote(str(db.get("USER") or ""), safe="")
    password = quote(str(db.get("PASSWORD") or ""), safe="")
    host = quote(str(db.get("HOST") or ""), safe="")
    port = f":{db['PORT']}" if db.get("PORT") else ""
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    options = {k: v for k, v in (db.get("OPTIONS") or {}).items() if isinstance(v, str | int)}
    query = f"?{urlencode(options)}" if options else ""
    return f"postgres://{auth}{host}{port}/{name}{query}"


# --- 3: inside the child, on the temporary database ------------------------------------------


def _inside(
    name: str,
    cases: list[evaluation.Case],
    out: Path,
    *,
    quiet: bool,
    failed: list[evaluation.CaseFailure],
) -> dict[str, Any]:
    """Step 3: every case that can run, run and scored; the others in `failed_cases`."""
    _check_temporary(name)
    call_command("migrate", verbosity=0, interactive=False)
    # One "Deferred 1 job" line per document would bury the progress lines.
    logging.getLogger("procrastinate").setLevel(logging.WARNING)
    say = _say_to_stderr if not quiet else None
    started = time.perf_counter()
    rows: list[evaluation.FindingRow] = []
    reports, ran = [], []
    failed = list(failed)
    for failure in failed:
        _say_to_stderr(f"{failure.case}: could not be read: {failure.reason}")
    for case in cases:
        try:
            case_rows, report = _run_case(case, say=say)
        except _CaseStopped as stop:
            failed.append(_failure(case, stop))
            _say_to_stderr(f"{case.name}: could not run ({stop.stage}): {stop.reason}")
            continue
        rows += case_rows
        reports.append(report)
        ran.append(case)
    evaluation.write_findings(rows, out)
    return {
        "mode": "real",
        "set": str(cases[0].path.parent if cases[0].prefixed else cases[0].path),
        "seconds": round(time.perf_counter() - started, 1),
        "findings_file": str(out),
        "cases": reports,
        "failed_cases": [f.__dict__ for f in sorted(failed, key=lambda f: f.case)],
        "result": evaluation.score(evaluation.all_labels(ran), rows),
    }


class _CaseStopped(Exception):
    """One case could not go on: the step it stopped at and why (a message to show)."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage, self.reason = stage, reason


@contextmanager
def _stage(name: str) -> Iterator[None]:
    """Whatever stops this step of a case stops only that case, as _CaseStopped(name, why)."""
    try:
        yield
    except CommandError as exc:
        raise _CaseStopped(name, str(exc)) from exc
    except DomainError as exc:
        raise _CaseStopped(name, exc.message) from exc
    # A crash in one case (a bug, a file the reader chokes on) must not take the other cases'
    # figures with it; its traceback goes to stderr for whoever debugs it.
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        raise _CaseStopped(name, f"{type(exc).__name__}: {exc}"[:2000]) from exc


def _failure(case: evaluation.Case, stop: _CaseStopped) -> evaluation.CaseFailure:
    return evaluation.CaseFailure(
        case=case.name,
        stage=stop.stage,
        reason=stop.reason,
        labels=len(case.labels),
        unsupported_labels=sum(1 for label in case.labels if not label.supported),
    )


def _check_temporary(name: str) -> None:
    """Only ever on an empty database this command created (step 2)."""
    if not TEMP_DATABASE.match(name) or connection.settings_dict["NAME"] != name:
        raise CommandError(
            "--inside-temporary-database is verify_eval's own step; run verify_eval DIR --out "
            "FILE, which creates the temporary database."
        )
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        (tables,) = cursor.fetchone() or (0,)
    if tables:
        raise CommandError(f"{name} is not empty; verify_eval works only on a fresh database.")


def _say_to_stderr(message: str) -> None:
    sys.stderr.write(f"verify_eval: {message}\n")
    sys.stderr.flush()


Say = Callable[[str], None] | None

# Ingest reads LEXWEB_INGEST_BATCH_PAGES pages a call; a document is given this many calls more
# than its batches need before it counts as stuck.
_SPARE_BATCHES = 3


def _run_case(case: evaluation.Case, *, say: Say) -> tuple[list[evaluation.FindingRow], dict]:
    """Steps 3a-3d for one case folder: its findings, and what happened on the way.
    _CaseStopped, naming the step, when the case cannot go on."""
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    with _stage("ingest"):
        user = _user(case)
        lexweb_case = case_services.case_create(
            actor=user,
            title=case.title[:300],
            number=(case.case_number or case.name)[:100],
            client="Evaluation",
            court=case.court[:200],
        )
        documents = [_ingest(case, lexweb_case, user, name, say=say) for name in case.documents]
    timings["ingest_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    with _stage("stamp"):
        _stamp(case, lexweb_case, user, dict(zip(case.documents, documents, strict=True)), say=say)
    timings["stamp_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    with _stage("freeze"):
        frozen = _freeze(case, lexweb_case, user, documents)
        pages = [verification_services.page_record(page) for page in frozen]
    # case.json's names of the documents (upload may tidy a filename).
    names = {d.pk: name for d, name in zip(documents, case.documents, strict=True)}
    mismatches = _bates_mismatches(case, pages, names)
    if mismatches and say:
        say(f"{case.name}: {len(mismatches)} pages carry other Bates labels than case.json says")
    timings["freeze_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    with _stage("verify"):
        rows = evaluation.verify_case(
            case,
            pages,
            extract=claims.extract_claims,
            # As the product's runs: OCR'd support below the review confidence needs review.
            verify=functools.partial(
                checks.verify_text, ocr_review_confidence=settings.LEXWEB_OCR_REVIEW_CONFIDENCE
            ),
            build_index=index.PacketIndex.build,
        )
    timings["verify_s"] = time.perf_counter() - clock
    if say:
        say(f"{case.name}: {len(pages)} pages frozen, {len(rows)} findings")
    return rows, _case_report(case, pages, names, timings, mismatches)


def _user(case: evaluation.Case) -> User:
    """The lawyer who does everything in the temporary database (one per case folder)."""
    slug = re.sub(r"[^a-z0-9]+", "-", case.name.lower()).strip("-")[:40] or "case"
    email = f"eval-{slug}-{secrets.token_hex(3)}@lexweb.invalid"
    return account_services.user_create(
        email=email, full_name="Evaluation", role=User.Role.LAWYER, password=None, actor=None
    )


def _ingest(
    case: evaluation.Case, lexweb_case: CaseRow, user: User, name: str, *, say: Say
) -> Document:
    """Step 3a for one source: uploaded, then read batch after batch until ready."""
    with (case.path / "sources" / name).open("rb") as source:
        outcome = document_services.document_upload(
            case=lexweb_case,
            uploaded_by=user,
            filename=name,
            source=source,
            origin=case.origins[name],
        )
    if outcome.status != "created" or outcome.document is None:
        reason = outcome.error or (
            f"the same bytes as {outcome.document.filename}" if outcome.document else "refused"
        )
        raise CommandError(f"{case.name}/sources/{name} was not taken in: {reason}.")
    document = outcome.document
    batches = -(-document.page_count // settings.LEXWEB_INGEST_BATCH_PAGES) + _SPARE_BATCHES
    for _ in range(batches):
        document_services.document_extract_text(document_id=document.pk)
        document.refresh_from_db()
        if document.status in (Document.Status.READY, Document.Status.FAILED):
            break
    if document.status != Document.Status.READY:
        reason = document.error or "its ingest did not finish"
        raise CommandError(f"{case.name}/sources/{name} could not be read: {reason}")
    if say:
        ocr = document.pages.filter(source=Page.Source.OCR).count()
        say(f"{case.name}: {name} read, {document.page_count} pages ({ocr} by OCR)")
    return document


def _stamp(
    case: evaluation.Case,
    lexweb_case: CaseRow,
    user: User,
    documents: dict[str, Document],
    *,
    say: Say,
) -> None:
    """Step 3b: case.json's productions, in order, each with its documents and settings,
    stamped. CommandError saying which and why when one cannot be made as case.json says."""
    for spec in case.productions:
        try:
            production = production_services.production_create(
                case=lexweb_case,
                actor=user,
                volume=spec.volume,
                prefix=spec.prefix,
                document_ids=[documents[name].pk for name in spec.documents],
                start_number=spec.start,
                digits=spec.digits,
                legend=spec.legend,
                page_suffix_digits=spec.page_suffix_digits,
            )
        except DomainError as exc:
            raise CommandError(
                f"stamping {spec.volume} as case.json says is refused: {exc.message}"
            ) from None
        production_services.production_stamp(production_id=production.pk)
        production.refresh_from_db()
        if production.status != Production.Status.READY:
            raise CommandError(f"stamping {spec.volume} failed: {production.error}")
        if say:
            first, last = production.first_number, production.last_number
            say(f"{case.name}: stamped {production.bates(first)}-{production.bates(last)}")


def _freeze(
    case: evaluation.Case, lexweb_case: CaseRow, user: User, documents: list[Document]
) -> list[FrozenPage]:
    """Step 3c: a packet of every source document, frozen; its pages in position order."""
    try:
        packet = packet_services.packet_create(
            user=user, case_id=lexweb_case.pk, title=f"Evaluation: {case.name}"[:200]
        )
        packet_services.packet_items_add(
            user=user,
            case_id=lexweb_case.pk,
            packet_id=packet.pk,
            selections=[
                packet_services.Selection(document_id=d.pk, reason="Every source of the case.")
                for d in documents
            ],
        )
        packet_services.packet_freeze(user=user, case_id=lexweb_case.pk, packet_id=packet.pk)
    except DomainError as exc:
        raise CommandError(f"{case.name}: the packet could not be frozen: {exc}") from None
    return list(
        packet_selectors.packet_pages_for_user(
            user=user, case_id=lexweb_case.pk, packet_id=packet.pk
        )
    )


def _bates_mismatches(case: evaluation.Case, pages: list[Any], names: dict[int, str]) -> list[str]:
    """Pages whose Bates labels are not what case.json's bates_map gives them (every label of a
    page that several productions stamped, in any order)."""
    expected: dict[tuple[str, int], list[str]] = {}
    for entry in case.bates_map:
        expected.setdefault((entry.document, entry.page), []).append(entry.bates)
    wrong = []
    for page in pages:
        name = names[page.document_id]
        want = expected.pop((name, page.page_number), None)
        if want is None or sorted(page.bates) != sorted(want):
            shown = None if want is None else ", ".join(want)
            wrong.append(f"{name} p.{page.page_number}: {list(page.bates)}, not {shown}")
    wrong += [
        f"{doc} p.{n}: not frozen (case.json: {', '.join(b)})" for (doc, n), b in expected.items()
    ]
    return wrong


def _case_report(
    case: evaluation.Case,
    pages: list[Any],
    names: dict[int, str],
    timings: dict[str, float],
    mismatches: list[str],
) -> dict[str, Any]:
    ocr = [p for p in pages if p.source == Page.Source.OCR]
    confidences = [p.ocr_confidence for p in ocr if p.ocr_confidence is not None]
    image_only = {(e.document, e.page) for e in case.bates_map if e.image_only}
    return {
        "case": case.name,
        "documents": len(case.documents),
        "productions": len(case.productions),
        "pages": len(pages),
        "ocr_pages": len(ocr),
        "image_only_pages_without_ocr": sorted(
            f"{names[p.document_id]} p.{p.page_number}"
            for p in pages
            if (names[p.document_id], p.page_number) in image_only and p.source != Page.Source.OCR
        ),
        "mean_ocr_confidence": round(sum(confidences) / len(confidences), 1)
        if confidences
        else None,
        "ocr_pages_below_review_confidence": sum(
            1 for c in confidences if c < settings.LEXWEB_OCR_REVIEW_CONFIDENCE
        ),
        "bates_mismatches": mismatches[:20],
        **{k: round(v, 2) for k, v in timings.items()},
    }
