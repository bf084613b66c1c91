"""Documents rendered to PDF for viewing and production: a deterministic transform (no database).

1. Word and Excel files: LibreOffice headless (`soffice --convert-to pdf`, its import filter
   fixed to the OOXML one of the kind) converts a copy of the original from which every link
   to another file, program or address has been taken out (office_links.py), with a private
   profile (-env:UserInstallation), with a time budget (on timeout the whole process group is
   killed), each file it writes capped near LEXWEB_RENDER_MAX_BYTES (RLIMIT_FSIZE), the PDF
   at it, and its pages at LEXWEB_MAX_PDF_PAGES. It runs in a sandbox (_SANDBOX): new mount,
   network and process namespaces whose root holds the system's programs, libraries and fonts
   read-only and one folder of the job's own (the copy, its profile and the output), as an
   unprivileged user without capabilities; the store, the project and every other private
   file are not there, so a link the sanitising missed has nothing to read and no network to
   reach. Where this machine cannot make the namespaces (not root and no user namespaces),
   LibreOffice runs without them (logged once); the Rendered result says which held.
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
import pwd
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf
from django.conf import settings
from lxml import etree

from apps.documents import formats, intake, office_links, sheet_columns
from lexweb.errors import DomainError

logger = logging.getLogger(__name__)

VERSION = "1"
TEXT_TRANSFORM = "render-text"  # our own layout of a text file
EMAIL_TRANSFORM = "render-email"  # our own layout of an e-mail's headers and body
OFFICE_TRANSFORM = "render-office"  # LibreOffice's conversion of a Word or Excel file
OFFICE_SUFFIX = {"word": ".docx", "spreadsheet": ".xlsx"}
# The import filter for each kind: LibreOffice never guesses another format from the bytes.
OFFICE_FILTER = {"word": "MS Word 2007 XML", "spreadsheet": "Calc MS Excel 2007 XML"}
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
    filesystem_isolated: bool | None = None  # LibreOffice only: ran in the sandbox
    # LibreOffice only: the links taken out before it ran, counted by kind (office_links.py)
    links_removed: dict[str, int] = field(default_factory=dict)


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


# The sandbox, run by `unshare` as `sh -c _SANDBOX ROOT JOB UID GID [FOLDER...] -- PROGRAM ARGS`
# in new mount, network and PID namespaces: a small tmpfs at ROOT becomes the root, holding the
# system's programs and libraries (/usr and its links), the font and LibreOffice configuration
# (read-only), a passwd of two lines, five device nodes, its own /proc and /tmp, the folders of
# a program installed elsewhere (read-only) and JOB at /job; then pivot_root, the old root
# unmounted, and the program runs as UID:GID (none given: stays as it is, in a user namespace)
# with no capabilities and no way to gain any.
_SANDBOX = r"""
set -eu
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
root=$1 job=$2 uid=$3 gid=$4
shift 4
mount -t tmpfs -o mode=0755,nosuid,size=8m lexweb-render "$root"
for name in usr bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$name" ]; then ln -s "$(readlink "/$name")" "$root/$name"
  elif [ -d "/$name" ]; then mkdir "$root/$name"; mount --rbind -o ro "/$name" "$root/$name"
  fi
done
mkdir -p "$root/etc" "$root/var/cache" "$root/dev" "$root/proc" "$root/tmp" "$root/job"
for name in etc/fonts etc/libreoffice var/cache/fontconfig; do
  if [ -d "/$name" ]; then mkdir "$root/$name"; mount --bind -o ro "/$name" "$root/$name"; fi
done
if [ -f /etc/ld.so.cache ]; then
  touch "$root/etc/ld.so.cache"; mount --bind -o ro /etc/ld.so.cache "$root/etc/ld.so.cache"
fi
printf 'root:x:0:0::/:/bin/false\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"
drop=""
if [ -n "$uid" ]; then
  printf 'render:x:%s:%s::/job/home:/bin/false\n' "$uid" "$gid" >> "$root/etc/passwd"
  printf 'render:x:%s:\n' "$gid" >> "$root/etc/group"
  drop="--reuid=$uid --regid=$gid --clear-groups"
fi
for name in null zero full random urandom; do
  touch "$root/dev/$name"; mount --bind "/dev/$name" "$root/dev/$name"
done
ln -s /proc/self/fd "$root/dev/fd"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m tmp "$root/tmp"
mount --bind -o nosuid,nodev "$job" "$root/job"
while [ "$1" != "--" ]; do
  mkdir -p "$root$1"; mount --rbind -o ro "$1" "$root$1"; shift
done
shift
mkdir "$root/.old"
mount -o remount,bind,ro "$root"
cd "$root"
pivot_root . .old
umount -l /.old
cd /job
exec setpriv $drop --no-new-privs --bounding-set=-all --inh-caps=-all -- "$@"
"""
_SANDBOX_NAME = "lexweb-render"  # $0 of the script
_SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@dataclass(frozen=True)
class _Isolation:
    prefix: tuple[str, ...]  # the `unshare ...` that starts the program (or the sandbox)
    sandbox: bool  # the program runs in the sandbox above (then without a network too)
    network: bool  # the program runs without a network
    user: tuple[int, int] | None = None  # the user it runs as in the sandbox, when we are root

    def command(self, root: Path, job: Path, folders: list[str], program: list[str]) -> list[str]:
        if not self.sandbox:
            return [*self.prefix, *program]
        uid, gid = (str(self.user[0]), str(self.user[1])) if self.user else ("", "")
        return [
            *self.prefix,
            "/bin/sh",
            "-c",
            _SANDBOX,
            _SANDBOX_NAME,
            str(root),
            str(job),
            uid,
            gid,
            *folders,
            "--",
            *program,
        ]


def _unprivileged_user() -> tuple[int, int]:
    """nobody's uid and gid (65534 where the system has no such account)."""
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return 65534, 65534
    return entry.pw_uid, entry.pw_gid


def _prepare_job(job: Path, user: tuple[int, int] | None) -> None:
    """Give the job's folder, and all in it, to the user the sandbox runs as."""
    if user is None:
        return
    for path in [job, *job.rglob("*")]:
        os.chown(path, *user, follow_symlinks=False)


_sandbox_found: list[_Isolation] = []  # the sandbox that worked in this process, once found


def _isolation() -> _Isolation:
    """How this machine runs LibreOffice: in the sandbox where `unshare` can make its
    namespaces (as root: as the unprivileged user; otherwise in a user namespace of its own),
    tried on a throwaway folder and kept once it works; failing that (tried again next time,
    so a passing failure does not leave the process unsandboxed) with no network but with
    the files, or as it is (each logged once)."""
    if _sandbox_found:
        return _sandbox_found[0]
    unshare = shutil.which("unshare")
    if unshare is not None:
        namespaces = ("--mount", "--net", "--pid", "--fork", "--kill-child")
        sandboxes = [_Isolation((unshare, "--map-root-user", *namespaces), True, True)]
        if os.geteuid() == 0:
            user = _unprivileged_user()
            sandboxes.insert(0, _Isolation((unshare, *namespaces), True, True, user))
        for candidate in sandboxes:
            with tempfile.TemporaryDirectory(prefix="lexweb-render-probe-") as folder:
                root, job = Path(folder, "root"), Path(folder, "job")
                root.mkdir()
                job.mkdir()
                _prepare_job(job, candidate.user)
                if _runs(candidate.command(root, job, [], ["true"])):
                    _sandbox_found.append(candidate)
                    return candidate
    return _unsandboxed()


@functools.cache
def _unsandboxed() -> _Isolation:
    """Without the sandbox: in a network namespace where one can be made (logged once)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        logger.warning("LibreOffice runs unsandboxed, with the network: no unshare program")
        return _Isolation((), sandbox=False, network=False)
    for prefix in ((unshare, "--net"), (unshare, "--map-root-user", "--net")):
        if _runs([*prefix, "true"]):
            logger.warning(
                "LibreOffice runs unsandboxed (no mount namespace): it can read this machine's "
                "files; only the network is cut"
            )
            return _Isolation(prefix, sandbox=False, network=True)
    logger.warning("LibreOffice runs unsandboxed, with the network: unshare makes no namespace")
    return _Isolation((), sandbox=False, network=False)


def _runs(command: list[str]) -> bool:
    try:
        done = subprocess.run(  # noqa: S603  (fixed arguments, no shell)
            command, capture_output=True, timeout=30, check=False, env=_environment(Path("/"))
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _program_folders(program: str) -> list[str]:
    """The folders a program installed outside the system's trees needs to be seen in the
    sandbox: its own, or for a LibreOffice install (…/program/soffice) the install's."""
    folders: list[str] = []
    for path in (Path(program).absolute(), Path(program).resolve()):
        if any(path.is_relative_to(tree) for tree in _SYSTEM_TREES):
            continue
        folder = path.parent.parent if path.parent.name == "program" else path.parent
        if str(folder) not in folders and folder != Path("/"):
            folders.append(str(folder))
    return folders


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
    sanitised = work / f"sanitised{OFFICE_SUFFIX[kind]}"
    try:
        removed = office_links.strip_links(source, sanitised)
    except DomainError as exc:  # never the file as it is: its links would go with it
        raise RenderFailedError(f"The file was not given to LibreOffice: {exc.message}") from None
    if kind == "spreadsheet":
        _fit_columns(sanitised)
    converted, isolation = _convert(program, sanitised, kind=kind, work=work)
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
    return Rendered(
        out,
        pages,
        OFFICE_TRANSFORM,
        VERSION,
        tool,
        network_isolated=isolation.network,
        filesystem_isolated=isolation.sandbox,
        links_removed=dict(sorted(removed.items())),
    )


def _fit_columns(workbook: Path) -> None:
    """Widen the sanitised copy's columns to their values (sheet_columns.py), so no value is
    cut or shown as ###; a workbook whose sheets cannot be read so is rendered as it is."""
    try:
        sheet_columns.fit_columns(workbook)
    except (etree.LxmlError, zipfile.BadZipFile, ValueError, KeyError) as exc:
        logger.warning("Columns of %s not widened: %s", workbook.name, exc.__class__.__name__)


def _convert(program: str, source: Path, *, kind: str, work: Path) -> tuple[Path, _Isolation]:
    """Run the conversion of `source` as it is (office_to_pdf strips its links first) in the
    sandbox where this machine has one; the PDF LibreOffice wrote and how it ran, or
    RenderFailedError."""
    seconds, max_bytes = settings.LEXWEB_RENDER_SECONDS, settings.LEXWEB_RENDER_MAX_BYTES
    isolation = _isolation()
    # What the sandbox sees: the job's folder, at /job there. LibreOffice's import filter is
    # fixed; the name's extension matches it all the same.
    job, root = work / "job", work / "root"
    job.mkdir()
    root.mkdir()
    original = job / f"original{OFFICE_SUFFIX[kind]}"
    shutil.copyfile(source, original)
    (job / "out").mkdir()
    (job / "home").mkdir()
    _prepare_job(job, isolation.user)
    inside = Path("/job") if isolation.sandbox else job
    command = isolation.command(
        root,
        job,
        _program_folders(program) if isolation.sandbox else [],
        [
            program,
            f"-env:UserInstallation={(inside / 'profile').as_uri()}",
            "--headless",
            "--invisible",
            "--norestore",
            "--nologo",
            "--nolockcheck",
            f"--infilter={OFFICE_FILTER[kind]}",
            "--convert-to",
            "pdf",
            "--outdir",
            str(inside / "out"),
            str(inside / original.name),
        ],
    )
    process = subprocess.Popen(  # noqa: S603  (our configured program, no shell)
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_environment(inside / "home"),
        cwd=job,
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
    converted = job / "out" / "original.pdf"
    try:  # plain files: never a link LibreOffice left to something outside its folder
        plain = stat.S_ISDIR((job / "out").lstat().st_mode)
        written = converted.lstat()
        plain = plain and stat.S_ISREG(written.st_mode)
    except FileNotFoundError:
        written, plain = None, False
    too_large = process.returncode == -signal.SIGXFSZ  # a write past RLIMIT_FSIZE
    if too_large or (plain and written is not None and written.st_size >= max_bytes):
        raise RenderFailedError(
            f"The rendered PDF is larger than {max_bytes:,} bytes (LEXWEB_RENDER_MAX_BYTES)."
        )
    if process.returncode != 0 or not plain:
        said = output.decode("utf-8", "replace").strip().splitlines()
        reason = said[-1][:200] if said else f"exit status {process.returncode}"
        raise RenderFailedError(
            f"LibreOffice could not convert the file ({reason}); it may be damaged or "
            "password-protected."
        )
    return converted, isolation
