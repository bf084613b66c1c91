"""Office rendering: pages per second of lexweb's rendering of Word and Excel files to PDF (the
`documents.render` job in a real worker: rendition rows, LibreOffice with a private profile per
job in its own network namespace, normalised PDF stored by hash), against bare
`soffice --convert-to pdf` of the same files in the same run. The files are uploaded first
(intake, ingest and render, timed as `upload_to_rendered`); the render jobs are then run again
on their own, which is the figure compared with the peers:

  (a) bare, one soffice per file, each with a fresh profile (what each of our jobs starts);
  (b) bare, one soffice for all the files with one profile (LibreOffice's best case: one start).

The files are made here with python-docx and openpyxl (memos of several pages, invoice sheets).
Also our own layout of text files (no LibreOffice), pages per second, against PyMuPDF's
Story flowing the same text over the same pages. Prints one JSON object with the load average
(shared machine; the ratios are within one run).
"""

import html
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

import docx  # noqa: E402
import openpyxl  # noqa: E402
import pymupdf  # noqa: E402
from django.db import transaction  # noqa: E402
from procrastinate.contrib.django import app as procrastinate_app  # noqa: E402

from apps.accounts.models import User  # noqa: E402
from apps.cases.models import Case, Membership  # noqa: E402
from apps.documents import rendering, rendition_services, services  # noqa: E402
from apps.documents.models import Document, Rendition  # noqa: E402

WORD_FILES = 8
WORD_PARAGRAPHS = 120  # about 4 pages each
EXCEL_FILES = 4
EXCEL_ROWS = 400  # about 8 pages each
TEXT_FILES = 20
TEXT_LINES = 600  # about 12 pages each


def _make_files(folder: Path) -> list[tuple[Path, str]]:
    files = []
    for n in range(WORD_FILES):
        memo = docx.Document()
        memo.add_heading(f"Memorandum {n} on the lease dispute", level=1)
        for k in range(WORD_PARAGRAPHS):
            memo.add_paragraph(
                f"{k}. The tenant paid the rent for month {k % 12 + 1} late; the landlord's "
                "letter of that month asked for the arrears and the costs of collection."
            )
        path = folder / f"memo{n}.docx"
        memo.save(str(path))
        files.append((path, "word"))
    for n in range(EXCEL_FILES):
        workbook = openpyxl.Workbook()
        sheet = workbook.active
        assert sheet is not None
        sheet.append(["Invoice", "Client", "Date", "Amount"])
        for k in range(1, EXCEL_ROWS + 1):
            sheet.append(
                [f"INV-{n}-{k:05d}", "Acme Holdings", f"2026-{k % 12 + 1:02d}-01", k * 7.5]
            )
        path = folder / f"invoices{n}.xlsx"
        workbook.save(path)
        files.append((path, "spreadsheet"))
    return files


def _run_worker() -> None:
    with procrastinate_app.replace_connector(procrastinate_app.connector.get_worker_connector()):
        procrastinate_app.run_worker(wait=False, install_signal_handlers=False, listen_notify=False)


def _lexweb(files: list[tuple[Path, str]]) -> tuple[float, float, int]:
    """The files uploaded (intake, ingest, then the render job: one worker); then their
    renditions made again by the render job alone. Seconds of each, and the rendered pages."""
    user = User.objects.create_user(
        f"bench{time.time_ns()}@bench.test", None, full_name="Bench", role="lawyer"
    )
    case = Case.objects.create(
        title="Bench", number=f"R-{time.time_ns()}", client="Bench", created_by=user
    )
    Membership.objects.create(case=case, user=user, role="lawyer")
    started = time.perf_counter()
    summary = services.documents_upload(
        case=case,
        uploaded_by=user,
        files=[(path.name, path.open("rb")) for path, _ in files],
        origin="client",
    )
    _run_worker()
    end_to_end = time.perf_counter() - started
    documents = [outcome.document for outcome in summary.results if outcome.document]
    if summary.errors or {d.kind for d in documents} != {kind for _, kind in files}:
        raise SystemExit(f"upload failed: {[o.error for o in summary.results if o.error][:3]}")
    _check(documents)
    Rendition.objects.filter(document__in=documents).delete()
    started = time.perf_counter()
    with transaction.atomic():
        for document in documents:
            rendition_services.rendition_queue(document)
    _run_worker()
    render_only = time.perf_counter() - started
    return end_to_end, render_only, _check(documents)


def _check(documents: list[Document]) -> int:
    renditions = Rendition.objects.filter(document__in=documents)
    failed = [r.label for r in renditions if r.status != Rendition.Status.READY]
    if failed or len(renditions) != len(documents):
        raise SystemExit(f"lexweb rendering failed: {failed[:3]}")
    return sum(r.page_count for r in renditions)


def _soffice(program: str, profile: Path, outdir: Path, sources: list[Path]) -> None:
    subprocess.run(
        [
            program,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--norestore",
            "--convert-to",
            "pdf",
            "--outdir",
            str(outdir),
            *map(str, sources),
        ],
        check=True,
        capture_output=True,
    )


def _bare_each(program: str, files: list[tuple[Path, str]], folder: Path) -> tuple[float, int]:
    started = time.perf_counter()
    for k, (path, _) in enumerate(files):
        _soffice(program, folder / f"profile-each-{k}", folder / "each", [path])
    return time.perf_counter() - started, _pages(folder / "each")


def _bare_batch(program: str, files: list[tuple[Path, str]], folder: Path) -> tuple[float, int]:
    started = time.perf_counter()
    _soffice(program, folder / "profile-batch", folder / "batch", [path for path, _ in files])
    return time.perf_counter() - started, _pages(folder / "batch")


def _pages(outdir: Path) -> int:
    total = 0
    for pdf in outdir.glob("*.pdf"):
        with pymupdf.open(pdf) as document:
            total += document.page_count
    return total


def _story_pages(text: str) -> int:
    """The peer: PyMuPDF's Story flowing the same text, preformatted, over Letter pages."""
    story = pymupdf.Story(html=f"<pre>{html.escape(text)}</pre>")
    writer = pymupdf.DocumentWriter(io.BytesIO())
    mediabox = pymupdf.paper_rect("letter")
    where = pymupdf.Rect(54, 54, mediabox.width - 54, mediabox.height - 54)
    pages, more = 0, True
    while more:
        device = writer.begin_page(mediabox)
        more, _ = story.place(where)
        story.draw(device)
        writer.end_page()
        pages += 1
    writer.close()
    return pages


def _text(folder: Path) -> dict[str, float]:
    """Our text layout against PyMuPDF's Story flowing the same text over pages."""
    body = "\n".join(
        f"Line {k}: the tenant's notes on the lease, the rent and the letters." for k in range(600)
    )
    sources = []
    for n in range(TEXT_FILES):
        path = folder / f"notes{n}.txt"
        path.write_text(f"Notes {n}\n{body}", encoding="utf-8")
        sources.append(path)
    started, pages = time.perf_counter(), 0
    for n, path in enumerate(sources):
        work = folder / f"text-work-{n}"
        work.mkdir()
        pages += rendering.render("text", path, work=work).page_count
    ours = time.perf_counter() - started
    started, peer_pages = time.perf_counter(), 0
    for path in sources:
        peer_pages += _story_pages(path.read_text(encoding="utf-8"))
    peer = time.perf_counter() - started
    return {
        "text_pages": pages,
        "text_lexweb_pages_per_second": round(pages / ours, 1),
        "text_story_pages": peer_pages,
        "text_story_pages_per_second": round(peer_pages / peer, 1),
        "text_speed_vs_story_same_files": round(peer / ours, 2),
    }


def main() -> None:
    program = rendering.soffice_path()
    if program is None:
        print(json.dumps({"benchmark": "office_rendering", "error": "soffice is not installed"}))
        sys.exit(1)
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        files = _make_files(folder)
        end_to_end, ours, pages = _lexweb(files)
        each, each_pages = _bare_each(program, files, folder)
        batch, batch_pages = _bare_batch(program, files, folder)
        text = _text(folder)
    print(
        json.dumps(
            {
                "benchmark": "office_rendering",
                "files": len(files),
                "pages": pages,
                "bare_pages": [each_pages, batch_pages],
                "tool": rendering.soffice_version(program),
                "lexweb_render_job_seconds": round(ours, 2),
                "lexweb_pages_per_second": round(pages / ours, 2),
                "lexweb_upload_to_rendered_seconds": round(end_to_end, 2),
                "bare_soffice_per_file_seconds": round(each, 2),
                "bare_soffice_per_file_pages_per_second": round(each_pages / each, 2),
                "bare_soffice_one_batch_seconds": round(batch, 2),
                "bare_soffice_one_batch_pages_per_second": round(batch_pages / batch, 2),
                "speed_vs_bare_per_file": round(each / ours, 2),
                "speed_vs_bare_one_batch": round(batch / ours, 2),
                **text,
                "load_average": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
