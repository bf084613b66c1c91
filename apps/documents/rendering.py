"""Documents rendered to PDF for viewing and production: a deterministic transform (no database).

1. Word and Excel files: LibreOffice headless (`soffice --convert-to pdf`) converts a copy of
   the original in a folder of its own, with a private profile (-env:UserInstallation), in a
   network namespace of its own where `unshare` can make one (no network then), with a time
   budget (on timeout the whole process group is killed), each file it writes capped near
   LEXWEB_RENDER_MAX_BYTES (RLIMIT_FSIZE), the PDF at it, and its pages at
   LEXWEB_MAX_PDF_PAGES.
2. Text files, e-mails and Outlook messages (read as ingest reads them) are laid out
   by our own code, flowed over Letter pages by PyMuPDF's Story in a monospaced font (MuPDF's
   own fonts, with its fallbacks for other scripts): for an e-mail its headers (labels in
   bold), a rule, then the body. Long lines wrap; a form feed starts a new page.
3. Every PDF is normalised: fixed metadata and dates, no XMP, no file identifier, unused
   objects dropped. Same bytes in, same PDF bytes out (same tool versions assumed: the tool
   string names them, and the caller records it).
A file that cannot be rendered raises RenderFailedError with the reason; a missing LibreOffice
raises RenderUnavailableError (the document is still stored and searchable).
"""

import contextlib
import functools
import html
import io
import logging
import os
import resource
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymupdf
from django.conf import settings

from apps.documents import formats, intake
from lexweb.errors import DomainError

logger = logging.getLogger(__name__)

VERSION = "1"
TEXT_TRANSFORM = "render-text"  # our own layout of a text file
EMAIL_TRANSFORM = "render-email"  # our own layout of an e-mail's headers and body
OFFICE_TRANSFORM = "render-office"  # LibreOffice's conversion of a Word or Excel file
OFFICE_SUFFIX = {"word": ".docx", "spreadsheet": ".xlsx"}
TEXT_KINDS = ("text", "email", "outlook")
RENDERED_KINDS = (*TEXT_KINDS, *OFFICE_SUFFIX)

_FIXED_DATE = "D:20000101000000Z"
_MARGIN = 54.0  # points around the text
# Text longer than this many characters per allowed page is refused before it is laid out.
_MAX_CHARACTERS_A_PAGE = 20_000
_PROFILE_ROOM = 16 * 1024 * 1024  # bytes a LibreOffice profile file may take


class RenderFailedError(DomainError):
    code = "render_failed"


class RenderUnavailableError(DomainError):
    code = "render_unavailable"


@dataclass(frozen=True)
class Rendered:
    """A rendered PDF at `path`, with what made it (for the rendition's lineage)."""

    path: Path
    page_count: int
    transform: str
    version: str
    tool: str  # e.g. "LibreOffice 7.4.7.2 40(Build:2)" or "PyMuPDF 1.28.2, DejaVu Sans Mono"
    network_isolated: bool | None = None  # LibreOffice only: ran without a network


def render(kind: str, source: Path, *, work: Path) -> Rendered:
    """Render the original at `source` (a Document.Kind value `kind`) into `work`/render.pdf.
    `work` is an empty folder the caller owns and removes."""
    out = work / "render.pdf"
    if kind in OFFICE_SUFFIX:
        return office_to_pdf(source, kind=kind, work=work, out=out)
    if kind == "text":
        body, _damaged = intake.read_text(source)
        return _laid_out(TEXT_TRANSFORM, [], body, out)
    if kind == "email":
        headers, _, body = intake.parse_email(source).text.partition("\n\n")
        return _laid_out(EMAIL_TRANSFORM, headers.splitlines(), body, out)
    if kind == "outlook":
        headers, _, body = formats.parse_outlook(source).text.partition("\n\n")
        return _laid_out(EMAIL_TRANSFORM, headers.splitlines(), body, out)
    raise RenderFailedError(f"Documents of kind {kind!r} are not rendered.")


# --- Text and e-mails: our own layout ---------------------------------------------------------


# MuPDF's own fonts (Nimbus Mono; Charis SIL and Droid Sans Fallback for the characters it
# lacks, CJK included): the output does not depend on the fonts a machine has installed.
_CSS = (
    "pre, p { font-family: monospace; font-size: 9.5pt; line-height: 1.3; margin: 0; } "
    "pre { white-space: pre-wrap; } hr { margin: 4pt 0; }"
)


def _clean(text: str) -> str:
    """Printable text for layout: tabs expanded, control characters (but line ends and form
    feeds) dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").expandtabs(8)
    return "".join(ch for ch in text if ch in "\n\f" or ch.isprintable())


def _blocks_html(headers: list[str], body: str) -> list[str]:
    """One HTML fragment per run of pages: the body split at form feeds, e-mail headers (the
    labels in bold) and a rule before the first."""
    head = []
    for header in headers:
        label, colon, value = _clean(header).partition(":")
        if colon:
            head.append(f"<p><b>{html.escape(label)}:</b>{html.escape(value)}</p>")
        else:
            head.append(f"<p>{html.escape(label)}</p>")
    if head:
        head.append("<hr/>")
    blocks = [f"<pre>{html.escape(block)}</pre>" for block in _clean(body).split("\f")]
    blocks[0] = "".join(head) + blocks[0]
    return blocks


def _laid_out(transform: str, headers: list[str], body: str, out: Path) -> Rendered:
    """Text flowed over Letter pages by PyMuPDF's Story (long lines wrap, a form feed starts a
    new page), at most LEXWEB_MAX_PDF_PAGES pages."""
    limit = settings.LEXWEB_MAX_PDF_PAGES
    if len(body) > limit * _MAX_CHARACTERS_A_PAGE:
        raise RenderFailedError(
            f"The text has {len(body):,} characters, more than {limit:,} pages can hold; split "
            "it and upload the parts."
        )
    mediabox = pymupdf.paper_rect("letter")
    where = pymupdf.Rect(_MARGIN, _MARGIN, mediabox.width - _MARGIN, mediabox.height - _MARGIN)
    buffer = io.BytesIO()
    writer = pymupdf.DocumentWriter(buffer)
    pages = 0
    for fragment in _blocks_html(headers, body):
        story = pymupdf.Story(html=fragment, user_css=_CSS)
        more = True
        while more:
            pages += 1
            if pages > limit:
                raise RenderFailedError(
                    f"The text needs more than {limit:,} pages; split it and upload the parts."
                )
            device = writer.begin_page(mediabox)
            more, _ = story.place(where)
            story.draw(device)
            writer.end_page()
    writer.close()
    tool = f"PyMuPDF {pymupdf.VersionBind} Story"
    with pymupdf.open("pdf", buffer.getvalue()) as document:
        _normalised_save(document, out, producer=f"lexweb {transform}/{VERSION} ({tool})")
    return Rendered(out, pages, transform, VERSION, tool)


def _normalised_save(document: pymupdf.Document, out: Path, *, producer: str) -> None:
    """Save with nothing that changes from run to run: fixed dates and metadata, no XMP, no
    file identifier."""
    document.set_metadata(
        {
            "title": "",
            "author": "",
            "subject": "",
            "keywords": "",
            "creator": "lexweb",
            "producer": producer,
            "creationDate": _FIXED_DATE,
            "modDate": _FIXED_DATE,
            "trapped": "",
        }
    )
    document.del_xml_metadata()
    document.xref_set_key(-1, "ID", "null")
    document.save(out, garbage=3, deflate=True, no_new_id=True)


# --- Word and Excel: LibreOffice --------------------------------------------------------------


def soffice_path() -> str | None:
    """The LibreOffice program LEXWEB_SOFFICE names (on PATH or as a path), if there is one."""
    return shutil.which(settings.LEXWEB_SOFFICE)


@functools.cache
def soffice_version(program: str) -> str:
    """`soffice --version` of `program` (one line), read once per process."""
    try:
        done = subprocess.run(  # noqa: S603  (our configured program, no shell)
            [program, "--version"],
            capture_output=True,
            timeout=60,
            env=_environment(Path("/tmp")),  # noqa: S108  (--version writes nothing)
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RenderUnavailableError(f"LibreOffice ({program}) does not start: {exc}.") from None
    line = done.stdout.decode("utf-8", "replace").strip().splitlines()
    if done.returncode != 0 or not line:
        raise RenderUnavailableError(f"LibreOffice ({program}) does not report its version.")
    return line[0][:200]


@functools.cache
def _network_isolation() -> tuple[str, ...]:
    """The command prefix that runs a program without a network (a new, empty network
    namespace), or () where this machine does not allow one (logged once)."""
    unshare = shutil.which("unshare")
    if unshare is not None:
        for prefix in ((unshare, "--net"), (unshare, "--map-root-user", "--net")):
            try:
                done = subprocess.run(  # noqa: S603  (fixed arguments, no shell)
                    [*prefix, "true"], capture_output=True, timeout=10, check=False
                )
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0:
                return prefix
    logger.warning("LibreOffice runs with the network: unshare cannot make a network namespace")
    return ()


def _environment(home: Path) -> dict[str, str]:
    """A minimal environment: no proxies, no display, the job's own home."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "SAL_USE_VCLPLUGIN": "svp",
    }


def _file_size_limit(max_bytes: int) -> Callable[[], None]:
    def limit() -> None:  # runs in the child before LibreOffice starts
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return limit


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the process group LibreOffice started in (its launcher, soffice.bin, helpers)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def office_to_pdf(source: Path, *, kind: str, work: Path, out: Path) -> Rendered:
    """LibreOffice's PDF of a Word or Excel file, normalised (see the module docstring)."""
    program = soffice_path()
    if program is None:
        raise RenderUnavailableError(
            f"rendering unavailable: LibreOffice ({settings.LEXWEB_SOFFICE}) is not installed "
            "on this worker (apt-get install libreoffice-writer-nogui libreoffice-calc-nogui)."
        )
    tool = soffice_version(program)
    converted = _convert(program, source, kind=kind, work=work)
    try:
        document = pymupdf.open(converted, filetype="pdf")
    except Exception:
        raise RenderFailedError("LibreOffice wrote a PDF that cannot be opened.") from None
    with document:
        pages = document.page_count
        if pages == 0:
            raise RenderFailedError("LibreOffice's PDF has no pages.")
        if pages > settings.LEXWEB_MAX_PDF_PAGES:
            raise RenderFailedError(
                f"The rendered file has {pages:,} pages; the limit is "
                f"{settings.LEXWEB_MAX_PDF_PAGES:,}."
            )
        _normalised_save(document, out, producer=f"lexweb {OFFICE_TRANSFORM}/{VERSION} ({tool})")
    isolated = bool(_network_isolation())
    return Rendered(out, pages, OFFICE_TRANSFORM, VERSION, tool, network_isolated=isolated)


def _convert(program: str, source: Path, *, kind: str, work: Path) -> Path:
    """Run the conversion; the PDF LibreOffice wrote, or RenderFailedError."""
    seconds, max_bytes = settings.LEXWEB_RENDER_SECONDS, settings.LEXWEB_RENDER_MAX_BYTES
    # LibreOffice picks its import filter by the name's extension: the copy gets a fixed one.
    original = work / f"original{OFFICE_SUFFIX[kind]}"
    shutil.copyfile(source, original)
    outdir, home = work / "out", work / "home"
    outdir.mkdir()
    home.mkdir()
    command = [
        *_network_isolation(),
        program,
        f"-env:UserInstallation={(work / 'profile').as_uri()}",
        "--headless",
        "--invisible",
        "--norestore",
        "--nologo",
        "--nolockcheck",
        "--convert-to",
        "pdf",
        "--outdir",
        str(outdir),
        str(original),
    ]
    process = subprocess.Popen(  # noqa: S603  (our configured program, no shell)
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_environment(home),
        cwd=work,
        start_new_session=True,
        # The cap on any one file it writes leaves room for its profile's own files; the PDF
        # itself is held to `max_bytes` below.
        preexec_fn=_file_size_limit(max_bytes + _PROFILE_ROOM),
    )
    try:
        output, _ = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise RenderFailedError(
            f"LibreOffice took longer than {seconds} s and was stopped (LEXWEB_RENDER_SECONDS)."
        ) from None
    finally:
        _kill_group(process)  # helpers it left behind go too
    converted = outdir / "original.pdf"
    too_large = process.returncode == -signal.SIGXFSZ  # a write past RLIMIT_FSIZE
    if too_large or (converted.is_file() and converted.stat().st_size >= max_bytes):
        raise RenderFailedError(
            f"The rendered PDF is larger than {max_bytes:,} bytes (LEXWEB_RENDER_MAX_BYTES)."
        )
    if process.returncode != 0 or not converted.is_file():
        said = output.decode("utf-8", "replace").strip().splitlines()
        reason = said[-1][:200] if said else f"exit status {process.returncode}"
        raise RenderFailedError(
            f"LibreOffice could not convert the file ({reason}); it may be damaged or "
            "password-protected."
        )
    return converted
