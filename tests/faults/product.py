"""A real `make run` (python -m lexweb.launcher run) to hurt on purpose, and the scenarios that
hurt it: SIGKILL of a worker during ingest, OCR, stamping or an export, of the web server
during an upload, of PostgreSQL during a job, and Ctrl-C during work followed by another run.

Used by tests/faults/ (each scenario once) and bench/faults.py (`make faults`, each scenario N
times). Everything is driven from outside, as an admin or an agent would: the API with a bearer
token, signals to the pids in var/run/processes.json, and SQL on the product's own database
only to read the outcome.
"""

import contextlib
import hashlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pymupdf

BASE_DIR = Path(__file__).resolve().parent.parent.parent
REAL = BASE_DIR.parent / "shared" / "fixtures" / "real"
ADMIN_PASSWORD = "Faults-test-password-1"
START_TIMEOUT = 240.0
RECOVERY_TIMEOUT = 420.0

# Short enough that a killed job comes back within a test, long enough for a busy 2-core box.
FAULT_ENV = {
    "LEXWEB_DEMO_DATA": "false",
    "LEXWEB_JOB_STALLED_SECONDS": "10",
    "LEXWEB_JOB_RECOVERY_CRON": "* * * * * */10",
    "LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS": "5",
    "LEXWEB_SWEEP_CRON": "* * * * * */20",
    "LEXWEB_OCR_WORKERS": "1",
    "LEXWEB_CLUSTER_HEALTH_CRON": "",
}


class FaultError(AssertionError):
    """A scenario could not be carried out as planned (not the product's failure to recover)."""


def wait_for(what: str, check: Callable[[], Any], timeout: float, every: float = 0.2) -> Any:
    """Poll `check` until it returns something truthy; FaultError naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise FaultError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def _free_port() -> int:
    """A free port below the ephemeral range, so that nothing takes it while the web server is
    killed and started again."""
    import socket

    start = 20_000 + random.randrange(12_000)  # noqa: S311  (not a secret)
    for offset in range(12_000):
        port = 20_000 + (start - 20_000 + offset) % 12_000
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise FaultError("no free port in 20000-32000")


class Product:
    """One launched lexweb in its own var folder, its output drained into `lines` (a child
    writing to a full pipe would block)."""

    def __init__(self, var_dir: Path, **extra_env: str) -> None:
        self.var_dir = var_dir
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key not in {"DATABASE_URL", "XDG_RUNTIME_DIR", "LEXWEB_VAR_DIR", "REDIS_URL"}
        }
        self.env.update(
            FAULT_ENV,
            LEXWEB_VAR_DIR=str(var_dir),
            LEXWEB_PORT=str(self.port),
            LEXWEB_ADMIN_PASSWORD=ADMIN_PASSWORD,
            PYTHONUNBUFFERED="1",
            **extra_env,
        )
        self.lines: list[str] = []
        self.process: subprocess.Popen[str] | None = None
        self.token = ""
        self._reader: threading.Thread | None = None
        self._db: psycopg.Connection[Any] | None = None

    # --- the launcher -----------------------------------------------------------------------
    def start(self) -> None:
        mark = len(self.lines)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lexweb.launcher", "run"],
            cwd=BASE_DIR,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._drain, args=(self.process,), daemon=True)
        self._reader.start()
        self.wait_line("running at", since=mark, timeout=START_TIMEOUT)
        wait_for("both workers", lambda: self.pid("cpu-worker") and self.pid("cluster-worker"), 60)
        if not self.token:
            self.token = self._make_token()

    def _drain(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.append(line)

    def wait_line(self, needle: str, *, since: int = 0, timeout: float = 120) -> str:
        def seen() -> str | None:
            if self.process is not None and self.process.poll() is not None:
                raise FaultError(
                    f"the launcher ended (exit {self.process.returncode}) before {needle!r}:\n"
                    + "".join(self.lines[-60:])
                )
            return next((line for line in self.lines[since:] if needle in line), None)

        try:
            line: str = wait_for(repr(needle), seen, timeout)
        except FaultError as exc:
            raise FaultError(f"{exc}; output:\n{''.join(self.lines[-60:])}") from None
        return line

    def interrupt(self, *, times: int = 1, timeout: float = 120) -> int:
        """Ctrl-C (SIGINT to the launcher, as a terminal sends), `times` times; its exit status."""
        assert self.process is not None
        for n in range(times):
            if n:
                time.sleep(0.5)
            self.process.send_signal(signal.SIGINT)
        returncode = self.process.wait(timeout=timeout)
        if self._reader is not None:
            self._reader.join(timeout=10)
        self.close_db()
        return returncode

    def close(self) -> None:
        """Stop it, whatever state it is in; no PostgreSQL outlives it."""
        if self.process is not None and self.process.poll() is None:
            try:
                self.interrupt(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.close_db()
        # Everything the launcher and its children said, beside the var folder, for a post-mortem.
        (self.var_dir.parent / "launcher-output.log").write_text("".join(self.lines))
        pid_file = self.var_dir / "pgdata" / "postmaster.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError, IndexError):
                os.kill(int(pid_file.read_text().splitlines()[0]), signal.SIGTERM)

    def processes(self) -> dict[str, Any]:
        try:
            record: dict[str, Any] = json.loads(
                (self.var_dir / "run" / "processes.json").read_text(encoding="utf-8")
            )
        except (OSError, ValueError):
            return {}
        return record

    def pid(self, child: str) -> int | None:
        entry = self.processes().get("children", {}).get(child) or {}
        pid: int | None = entry.get("pid")
        return pid

    def kill_child(self, child: str) -> int:
        """SIGKILL one child (web, cpu-worker, cluster-worker) and wait until the launcher has
        started it again; its old pid."""
        old = self.pid(child)
        if old is None:
            raise FaultError(f"{child} is not running")
        mark = len(self.lines)
        os.kill(old, signal.SIGKILL)
        self.wait_line(f"(pid {old}) was killed by SIGKILL", since=mark, timeout=60)
        wait_for(f"{child} started again", lambda: self.pid(child) not in (None, old), 120)
        return old

    def kill_database(self) -> int:
        old = self.processes().get("database", {}).get("pid")
        if not old:
            raise FaultError("the embedded PostgreSQL's pid is not recorded")
        mark = len(self.lines)
        self.close_db()
        os.kill(old, signal.SIGKILL)
        self.wait_line("PostgreSQL is running again", since=mark, timeout=180)
        return int(old)

    # --- reading the outcome ------------------------------------------------------------------
    def db(self) -> "psycopg.Connection[Any]":
        if self._db is None or self._db.closed or self._db.broken:
            from lexweb.embedded_db import socket_dir

            def connect() -> psycopg.Connection[Any] | None:
                try:
                    return psycopg.connect(
                        host=str(socket_dir(self.var_dir / "pgdata")),
                        dbname="lexweb",
                        user="postgres",
                        autocommit=True,
                        connect_timeout=5,
                    )
                except psycopg.OperationalError:
                    return None

            self._db = wait_for("the database", connect, 120, every=1)
        return self._db

    def close_db(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def one(self, query: str, *args: object) -> Any:
        for attempt in range(3):
            try:
                row = self.db().execute(query, args).fetchone()
                return None if row is None else row[0]
            except psycopg.OperationalError:
                self.close_db()
                if attempt == 2:
                    raise
                time.sleep(2)
        return None

    def all(self, query: str, *args: object) -> list[tuple[Any, ...]]:
        for attempt in range(3):
            try:
                return list(self.db().execute(query, args).fetchall())
            except psycopg.OperationalError:
                self.close_db()
                if attempt == 2:
                    raise
                time.sleep(2)
        return []

    # --- driving it ---------------------------------------------------------------------------
    def _make_token(self, email: str = "admin@lexweb.local") -> str:
        """An API token of the account with this e-mail address, made through the services in
        the product's own database (`manage shell`); its secret."""
        code = (
            "from apps.accounts import services; from apps.accounts.models import User; "
            f"user = User.objects.get(email={email!r}); "
            "print('TOKEN=' + services.token_create(user=user, name='faults-"
            + uuid.uuid4().hex[:8]
            + "').secret)"
        )
        result = subprocess.run(
            [sys.executable, "-m", "lexweb.launcher", "manage", "shell", "-c", code],
            cwd=BASE_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        for line in result.stdout.splitlines():
            if line.startswith("TOKEN="):
                return line.removeprefix("TOKEN=")
        raise FaultError(f"no token made: {result.stdout}\n{result.stderr}")

    def client(self, timeout: float = 60) -> httpx.Client:
        return httpx.Client(
            base_url=f"{self.base}/api/v1",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=timeout,
            trust_env=False,
        )

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One API call; retried while the web server is down (it is being restarted)."""

        def call() -> httpx.Response | None:
            try:
                with self.client() as client:
                    response = client.request(method, path, **kwargs)
            except httpx.TransportError:
                return None
            return None if response.status_code in (502, 503) else response

        response: httpx.Response = wait_for(f"{method} {path}", call, 120, every=1)
        return response

    def new_case(self, title: str) -> int:
        response = self.api(
            "POST",
            "/cases",
            json={"title": title, "number": uuid.uuid4().hex[:12], "client": "Faults LLC"},
        )
        if response.status_code != 201:
            raise FaultError(f"case not created: {response.status_code} {response.text}")
        case_id: int = response.json()["id"]
        return case_id

    def upload(self, case_id: int, files: list[tuple[str, bytes]]) -> list[int]:
        response = self.api(
            "POST",
            f"/cases/{case_id}/documents",
            files=[("files", (name, data, "application/pdf")) for name, data in files],
            data={"origin": "client"},
        )
        if response.status_code != 201:
            raise FaultError(f"upload refused: {response.status_code} {response.text}")
        return [r["document"]["id"] for r in response.json()["results"] if r["document"]]

    def document_state(self, document_id: int) -> tuple[str, int, int]:
        row = self.all(
            "SELECT status, pages_done, page_count FROM documents_document WHERE id = %s",
            document_id,
        )
        return (row[0][0], row[0][1], row[0][2]) if row else ("missing", 0, 0)


# --- files ------------------------------------------------------------------------------------
def scanned_pdf(pages: int, dpi: int = 150) -> bytes:
    """An image-only PDF from a real court order: what a scanner makes of the printout."""
    source = REAL / "ca5_st-pierre-v-standard-ins_21-50498.pdf"
    with pymupdf.open(source) as original, pymupdf.open() as scan:
        for n in range(pages):
            page = original[n % len(original)]
            pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            target = scan.new_page(width=page.rect.width, height=page.rect.height)
            target.insert_image(target.rect, stream=pixmap.tobytes("png"))
        data: bytes = scan.tobytes()
        return data


def text_pdf(pages: int, marker: str) -> bytes:
    """A born-digital PDF of `pages` pages, each saying its number (and `marker`)."""
    words = " ".join(f"word{n}" for n in range(60))
    with pymupdf.open() as document:
        for n in range(1, pages + 1):
            page = document.new_page()
            page.insert_text((72, 72), f"{marker} page {n} of {pages}.", fontsize=11)
            page.insert_textbox(pymupdf.Rect(72, 100, 520, 700), words, fontsize=10)
        data: bytes = document.tobytes()
        return data


def bulky_pdf(marker: str, size: int) -> bytes:
    """A one-page text PDF carrying `size` bytes of incompressible image, so that an upload
    of a few of them is spooled to disk by the web server."""
    noise = random.Random(marker).randbytes(size)  # noqa: S311
    side = int((size / 3) ** 0.5) + 1
    pixels = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, side, side), False)
    pixels.set_rect(pixels.irect, (0, 0, 0))
    samples = (noise * (len(pixels.samples) // len(noise) + 1))[: len(pixels.samples)]
    image = pymupdf.Pixmap(pymupdf.csRGB, side, side, samples, False)
    words = " ".join(f"term{n}" for n in range(60))
    with pymupdf.open() as document:
        page = document.new_page()
        page.insert_text((72, 72), f"Exhibit {marker}.", fontsize=11)
        page.insert_textbox(pymupdf.Rect(72, 100, 520, 300), words, fontsize=10)
        page.insert_image(pymupdf.Rect(72, 320, 520, 760), pixmap=image)
        data: bytes = document.tobytes()
        return data


# --- outcome checks ---------------------------------------------------------------------------
@dataclass
class Outcome:
    recovered: bool = False
    duplicates: int = 0
    missing: int = 0
    orphaned: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        found = list(self.notes)
        if not self.recovered:
            found.append("did not finish by itself")
        if self.duplicates:
            found.append(f"{self.duplicates} duplicated pages or Bates numbers")
        if self.missing:
            found.append(f"{self.missing} missing pages or Bates numbers")
        return found


def check_document_pages(product: Product, document_id: int, outcome: Outcome) -> None:
    """Pages 1..N, each once."""
    status, _, page_count = product.document_state(document_id)
    numbers = [
        row[0]
        for row in product.all(
            "SELECT number FROM documents_page WHERE document_id = %s ORDER BY number",
            document_id,
        )
    ]
    outcome.duplicates += len(numbers) - len(set(numbers))
    outcome.missing += len(set(range(1, page_count + 1)) - set(numbers))
    if status != "ready" or page_count == 0:
        outcome.notes.append(f"document {document_id} is {status} with {page_count} pages")


def wait_document_ready(product: Product, document_id: int, outcome: Outcome) -> None:
    def settled() -> bool:
        status = product.document_state(document_id)[0]
        return status == "ready" or (status == "failed" and not _job_pending(product, document_id))

    try:
        wait_for(f"document {document_id} ready", settled, RECOVERY_TIMEOUT, every=1)
    except FaultError as exc:
        outcome.notes.append(str(exc))
        return
    outcome.recovered = product.document_state(document_id)[0] == "ready"
    check_document_pages(product, document_id, outcome)


def _job_pending(product: Product, document_id: int) -> bool:
    """A job for this document is queued or running (a failed attempt may still be retried)."""
    return bool(
        product.one(
            "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing') "
            "AND args ->> 'document_id' = %s",
            str(document_id),
        )
    )


def orphaned_files(var_dir: Path, known_blobs: set[str] | None = None) -> list[str]:
    """Temporary files of processes that are gone (anywhere under var/tmp and <blobs>/tmp), loose
    temporaries there, and stored files that no Blob row names (`known_blobs`)."""
    found: list[str] = []
    for root in (var_dir / "tmp", var_dir / "blobs" / "tmp"):
        if not root.is_dir():
            continue
        for entry in root.iterdir():
            owner = _owner_pid(entry.name)
            if entry.is_dir() and owner is not None and _alive(owner):
                continue
            if entry.is_dir():
                found += [str(path) for path in entry.rglob("*") if path.is_file()] or [str(entry)]
            else:
                found.append(str(entry))
    if known_blobs is not None:
        store = var_dir / "blobs"
        for path in store.glob("??/??/*"):
            if path.is_file() and path.name not in known_blobs:
                found.append(str(path))
    return found


def _owner_pid(name: str) -> int | None:
    """The pid in a process folder's name (lexweb/tempdirs.py: p-<boot>-<pid>-<start>-<host>)."""
    parts = name.split("-")
    if len(parts) >= 5 and parts[0] == "p" and parts[2].isdigit():
        return int(parts[2])
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def known_blobs(product: Product) -> set[str]:
    return {row[0] for row in product.all("SELECT sha256 FROM documents_blob")}


# --- the scenarios ----------------------------------------------------------------------------
def _job_doing(product: Product, task: str, key: str, value: int) -> bool:
    found = product.one(
        "SELECT count(*) FROM procrastinate_jobs WHERE task_name = %s AND status = 'doing' "
        "AND args ->> %s = %s",
        task,
        key,
        str(value),
    )
    return bool(found)


def worker_killed_during_ingest(product: Product) -> Outcome:
    """A 300-page born-digital PDF; the cpu worker is SIGKILLed while it reads the pages."""
    started = time.monotonic()
    outcome = Outcome()
    case_id = product.new_case("Fault: worker killed during ingest")
    (document_id,) = product.upload(case_id, [("long.pdf", text_pdf(300, uuid.uuid4().hex))])
    wait_for(
        "ingest under way",
        lambda: (
            product.document_state(document_id)[0] == "processing"
            and product.document_state(document_id)[1] > 0
        ),
        180,
        every=0.05,
    )
    product.kill_child("cpu-worker")
    if product.document_state(document_id)[0] == "ready":
        outcome.notes.append("the ingest finished before the kill")
    wait_document_ready(product, document_id, outcome)
    outcome.seconds = time.monotonic() - started
    return outcome


def worker_killed_during_ocr(product: Product) -> Outcome:
    """A 4-page scan; the cpu worker is SIGKILLed after Tesseract read the first page."""
    started = time.monotonic()
    outcome = Outcome()
    case_id = product.new_case("Fault: worker killed during OCR")
    (document_id,) = product.upload(case_id, [("scan.pdf", scan_bytes())])
    wait_for(
        "OCR under way",
        lambda: (
            product.document_state(document_id)[0] == "processing"
            and 1 <= product.document_state(document_id)[1] < product.document_state(document_id)[2]
        ),
        300,
        every=0.1,
    )
    product.kill_child("cpu-worker")
    wait_document_ready(product, document_id, outcome)
    outcome.seconds = time.monotonic() - started
    return outcome


@dataclass
class Source:
    """A case with a ready document, for productions and exports."""

    case_id: int
    document_id: int
    pages: int


_SOURCES: dict[tuple[int, int], Source] = {}

# Stamping runs at about 1,000-2,500 pages a second (1,000 on a 2-core machine four times slower
# than others), so a 120-page volume is stamped between two looks at its state (every 20 ms): the
# kill during stamping needs a document that takes some tenths of a second. 1,000 pages give
# 0.4-1 s; 3,000 did too, but their ingest, two stampings and the check of every stamped page
# cost three times as much (245 s of that slow machine's suite).
STAMPING_SOURCE_PAGES = 1000


def source(product: Product, pages: int = 120) -> Source:
    key = (id(product), pages)
    if key not in _SOURCES:
        case_id = product.new_case(f"Fault: production source ({pages} pages)")
        (document_id,) = product.upload(case_id, [("bundle.pdf", text_pdf(pages, "bundle"))])
        wait_for(
            "the source document",
            lambda: product.document_state(document_id)[0] == "ready",
            RECOVERY_TIMEOUT,
            every=1,
        )
        _SOURCES[key] = Source(case_id, document_id, pages)
    return _SOURCES[key]


def _production_state(product: Product, production_id: int) -> str:
    return str(
        product.one("SELECT status FROM documents_production WHERE id = %s", production_id)
        or "missing"
    )


def _new_production(product: Product, src: Source, volume: str) -> tuple[int, str]:
    prefix = "F" + hashlib.sha256(volume.encode()).hexdigest()[:6].upper()
    response = product.api(
        "POST",
        f"/cases/{src.case_id}/productions",
        json={"volume": volume, "prefix": prefix, "document_ids": [src.document_id]},
    )
    if response.status_code != 201:
        raise FaultError(f"production refused: {response.status_code} {response.text}")
    production_id: int = response.json()["id"]
    return production_id, prefix


def check_production(
    product: Product, src: Source, production_id: int, prefix: str, outcome: Outcome
) -> None:
    """Bates index: every number once, first..last; the stamped PDF: one page per number, each
    page carrying its own."""
    rows = product.all(
        "SELECT number, production_page FROM documents_batespage WHERE production_id = %s",
        production_id,
    )
    numbers = [row[0] for row in rows]
    first, last, page_count = product.all(
        "SELECT first_number, last_number, page_count FROM documents_production WHERE id = %s",
        production_id,
    )[0]
    outcome.duplicates += len(numbers) - len(set(numbers))
    outcome.missing += len(set(range(first, last + 1)) - set(numbers))
    response = product.api("GET", f"/cases/{src.case_id}/productions/{production_id}/pdf")
    if response.status_code != 200:
        outcome.notes.append(f"the stamped PDF answers {response.status_code}")
        outcome.missing += page_count
        return
    with pymupdf.open(stream=response.content, filetype="pdf") as pdf:
        stamps = []
        for page in pdf:
            text = page.get_text()
            stamps += [token for token in text.split() if token.startswith(prefix)]
        if len(pdf) != page_count:
            outcome.notes.append(f"the stamped PDF has {len(pdf)} pages, not {page_count}")
    expected = {f"{prefix}{n:06d}" for n in range(first, last + 1)}
    outcome.duplicates += len(stamps) - len(set(stamps))
    outcome.missing += len(expected - set(stamps))


def worker_killed_during_stamping(product: Product) -> Outcome:
    src = source(product, STAMPING_SOURCE_PAGES)
    started = time.monotonic()
    outcome = Outcome()
    production_id, prefix = _new_production(product, src, "S" + uuid.uuid4().hex[:8])
    wait_for(
        "stamping under way",
        lambda: _production_state(product, production_id) != "queued",
        180,
        every=0.02,
    )
    product.kill_child("cpu-worker")
    if _production_state(product, production_id) != "processing":
        # Stamped (or failed) before the kill landed: this run tested nothing, so say so.
        outcome.notes.append(
            "the production was no longer stamping when its worker was killed; "
            f"STAMPING_SOURCE_PAGES ({STAMPING_SOURCE_PAGES}) is too small for this machine"
        )
    try:
        wait_for(
            "the production stamped",
            lambda: _production_state(product, production_id) in ("ready", "failed"),
            RECOVERY_TIMEOUT,
            every=1,
        )
        outcome.recovered = _production_state(product, production_id) == "ready"
    except FaultError as exc:
        outcome.notes.append(str(exc))
    check_production(product, src, production_id, prefix, outcome)
    outcome.seconds = time.monotonic() - started
    return outcome


def _ready_production(product: Product) -> tuple[Source, int, str]:
    src = source(product)
    key = ("ready-production", id(product))
    if key not in _READY:
        production_id, prefix = _new_production(product, src, "E" + uuid.uuid4().hex[:8])
        wait_for(
            "a production to export",
            lambda: _production_state(product, production_id) == "ready",
            RECOVERY_TIMEOUT,
            every=1,
        )
        _READY[key] = (production_id, prefix)
    production_id, prefix = _READY[key]
    return src, production_id, prefix


_READY: dict[tuple[str, int], tuple[int, str]] = {}


def worker_killed_during_export(product: Product) -> Outcome:
    src, production_id, prefix = _ready_production(product)
    started = time.monotonic()
    outcome = Outcome()
    base = f"/cases/{src.case_id}/productions/{production_id}/exports"
    response = product.api("POST", base, json={"image_dpi": 100})
    if response.status_code not in (200, 201, 202):
        raise FaultError(f"export refused: {response.status_code} {response.text}")
    export_id: int = response.json()["id"]

    def state() -> str:
        return str(
            product.one("SELECT status FROM documents_productionexport WHERE id = %s", export_id)
        )

    wait_for("export under way", lambda: state() == "processing", 180, every=0.05)
    product.kill_child("cpu-worker")
    try:
        wait_for("the export", lambda: state() in ("ready", "failed"), RECOVERY_TIMEOUT, every=1)
        outcome.recovered = state() == "ready"
    except FaultError as exc:
        outcome.notes.append(str(exc))
    if outcome.recovered:
        archive = product.api("GET", f"{base}/{export_id}/zip")
        with zipfile.ZipFile(io.BytesIO(archive.content)) as volume:
            opt = next(name for name in volume.namelist() if name.endswith(".opt"))
            lines = volume.read(opt).decode("utf-8-sig").splitlines()
        bates = [line.split(",")[0] for line in lines if line.strip()]
        first, last = product.all(
            "SELECT first_number, last_number FROM documents_production WHERE id = %s",
            production_id,
        )[0]
        expected = {f"{prefix}{n:06d}" for n in range(first, last + 1)}
        outcome.duplicates += len(bates) - len(set(bates))
        outcome.missing += len(expected - set(bates))
    outcome.seconds = time.monotonic() - started
    return outcome


def _multipart(files: list[tuple[str, bytes]], boundary: str) -> Iterator[bytes]:
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="origin"\r\n\r\n'
    yield (head + "client\r\n").encode()
    for name, data in files:
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"'
            "\r\nContent-Type: application/pdf\r\n\r\n"
        ).encode()
        for offset in range(0, len(data), 64 * 1024):
            yield data[offset : offset + 64 * 1024]
        yield b"\r\n"
    yield f"--{boundary}--\r\n".encode()


def web_killed_during_upload(product: Product) -> Outcome:
    """20 files of ~600 kB in one request; the web server is SIGKILLed as soon as it spools
    them to its temporary files (after Django has read the body: from then on it stores
    originals and writes rows). Every document of the case that exists afterwards is whole (its
    original stored), the same upload again brings the case to all 20, each read to the end,
    and the killed process's temporaries are swept (see orphaned_files)."""
    started = time.monotonic()
    outcome = Outcome()
    case_id = product.new_case("Fault: web killed during upload")
    marker = uuid.uuid4().hex[:8]
    files = [(f"exhibit-{n:02d}.pdf", bulky_pdf(f"{marker}-{n}", 600_000)) for n in range(20)]
    boundary = uuid.uuid4().hex
    body = b"".join(_multipart(files, boundary))
    web = product.pid("web")
    killed = threading.Event()

    def kill_when_spooling() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _spooling(product, web):
            time.sleep(0.005)
        if web is not None and _spooling(product, web):
            os.kill(web, signal.SIGKILL)
            killed.set()

    killer = threading.Thread(target=kill_when_spooling, daemon=True)
    mark = len(product.lines)
    killer.start()
    try:
        with product.client(timeout=180) as client:
            answer = client.post(
                f"/cases/{case_id}/documents",
                content=body,
                headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
            )
        outcome.notes.append(f"the upload was answered ({answer.status_code}) before the kill")
    except httpx.TransportError:
        pass
    killer.join(timeout=130)
    if not killed.is_set():
        outcome.notes.append("the web server was not killed")
        return outcome
    product.wait_line(f"(pid {web}) was killed by SIGKILL", since=mark, timeout=60)
    wait_for("the web server again", lambda: product.pid("web") not in (None, web), 120)
    for document_id, sha256 in product.all(
        "SELECT d.id, b.sha256 FROM documents_document d JOIN documents_blob b ON b.id = d.blob_id "
        "WHERE d.case_id = %s",
        case_id,
    ):
        stored = product.var_dir / "blobs" / sha256[:2] / sha256[2:4] / sha256
        if not stored.is_file():
            outcome.notes.append(f"document {document_id} has no stored original")
    response = product.api(
        "POST",
        f"/cases/{case_id}/documents",
        files=[("files", (name, data, "application/pdf")) for name, data in files],
        data={"origin": "client"},
    )
    results = response.json().get("results", [])
    answered = sum(1 for r in results if r["status"] in ("created", "duplicate"))
    outcome.missing += 20 - answered
    ids = [
        row[0]
        for row in product.all("SELECT id FROM documents_document WHERE case_id = %s", case_id)
    ]
    outcome.duplicates += max(0, len(ids) - 20)
    outcome.missing += max(0, 20 - len(ids))
    for document_id in ids:
        wait_document_ready(product, document_id, outcome)
    outcome.recovered = len(ids) == 20 and all(product.document_state(d)[0] == "ready" for d in ids)
    outcome.seconds = time.monotonic() - started
    return outcome


def _spooling(product: Product, web: int | None) -> bool:
    for root in (product.var_dir / "tmp", product.var_dir / "blobs" / "tmp"):
        if root.is_dir():
            for entry in root.iterdir():
                if _owner_pid(entry.name) == web and any(p.is_file() for p in entry.rglob("*")):
                    return True
    return False


def database_killed_during_job(product: Product) -> Outcome:
    """A 4-page scan; PostgreSQL is SIGKILLed while the worker reads it; the launcher starts it
    again, the workers reconnect and the document finishes."""
    started = time.monotonic()
    outcome = Outcome()
    case_id = product.new_case("Fault: database killed during a job")
    (document_id,) = product.upload(case_id, [("scan.pdf", scan_bytes())])
    wait_for(
        "OCR under way",
        lambda: product.document_state(document_id)[0] == "processing",
        300,
        every=0.1,
    )
    product.kill_database()
    wait_document_ready(product, document_id, outcome)
    outcome.seconds = time.monotonic() - started
    return outcome


def ctrl_c_during_work(product: Product) -> Outcome:
    """A 4-page scan; Ctrl-C (twice) while the worker reads it: the launcher stops everything
    without killing the job mid-write and exits 0; `make run` again finishes the document."""
    started = time.monotonic()
    outcome = Outcome()
    case_id = product.new_case("Fault: Ctrl-C during work")
    (document_id,) = product.upload(case_id, [("scan.pdf", scan_bytes())])
    wait_for(
        "OCR under way",
        lambda: product.document_state(document_id)[0] == "processing",
        300,
        every=0.1,
    )
    mark = len(product.lines)
    returncode = product.interrupt(times=2, timeout=180)
    said = "".join(product.lines[mark:])
    if returncode != 0:
        outcome.notes.append(f"the launcher exited {returncode}")
    if "did not stop in time; killing it" in said:
        outcome.notes.append("the launcher killed a worker that was stopping")
    if "still stopping, waiting up to" not in said:
        outcome.notes.append("the second Ctrl-C was not answered")
    if (product.var_dir / "pgdata" / "postmaster.pid").exists():
        outcome.notes.append("PostgreSQL was left running")
    product.start()
    wait_document_ready(product, document_id, outcome)
    outcome.seconds = time.monotonic() - started
    return outcome


_SCAN: list[bytes] = []


def scan_bytes() -> bytes:
    if not _SCAN:
        _SCAN.append(scanned_pdf(4))
    return _SCAN[0]


SCENARIOS: dict[str, Callable[[Product], Outcome]] = {
    "worker_killed_during_ingest": worker_killed_during_ingest,
    "worker_killed_during_ocr": worker_killed_during_ocr,
    "worker_killed_during_stamping": worker_killed_during_stamping,
    "worker_killed_during_export": worker_killed_during_export,
    "web_killed_during_upload": web_killed_during_upload,
    "database_killed_during_job": database_killed_during_job,
    "ctrl_c_during_work": ctrl_c_during_work,
}
