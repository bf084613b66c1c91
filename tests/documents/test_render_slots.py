"""Page images are drawn at most LEXWEB_PAGE_IMAGE_CONCURRENCY at a time per process (issue 21,
finding 4): a request that finds no slot free within LEXWEB_PAGE_IMAGE_WAIT_SECONDS gets 503
with Retry-After, and many requests for a large scan at once cost the memory of a few."""

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.conf import settings as django_settings
from django.test import Client

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import render_slots
from tests.conftest import database_url_for_tests, session_client
from tests.documents.test_hostile_files import huge_bilevel_tiff, upload_one, written
from tests.documents.test_production_pages import _doc, _preview

# Requests from several threads at once: each thread has its own connection, so the rows must
# be committed.
through_the_api = pytest.mark.django_db(transaction=True, databases="__all__")

# 36 dpi of the 14,000-pixel TIFF: about a second and 200 MB a render, whatever the dpi (the
# frame is decoded whole before it is scaled down).
DPI = 36


def large_text_pdf() -> bytes:
    """One 3,000-point page with a text layer (read without OCR): its image, scaled into
    LEXWEB_MAX_RENDER_PIXELS, takes most of a second to draw."""
    with pymupdf.open() as pdf:
        page = pdf.new_page(width=3000, height=3000)
        for line in range(60):
            text = f"Line {line} of a large page. " * 8
            page.insert_text((72, 72 + line * 45), text, fontsize=30)
        return bytes(pdf.tobytes())


@pytest.fixture
def large_page(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> str:
    result = upload_one(lawyer_api, case, "large page.pdf", large_text_pdf())
    assert result["status"] == "created", result
    run_jobs()
    document_id = result["document"]["id"]
    return f"/api/v1/cases/{case.pk}/documents/{document_id}/pages/1/image?dpi=100"


def _clients(user: User, count: int) -> list[Client]:
    """One API client per thread, all with the same token (made once)."""
    secret = account_services.token_create(user=user, name="viewer").secret
    return [Client(headers={"authorization": f"Bearer {secret}"}) for _ in range(count)]


@through_the_api
def test_a_request_that_finds_no_free_slot_gets_503_with_retry_after(
    lawyer_api: Client, large_page: str, settings: Any
) -> None:
    settings.LEXWEB_PAGE_IMAGE_CONCURRENCY = 1
    settings.LEXWEB_PAGE_IMAGE_WAIT_SECONDS = 0

    with render_slots.render_slot():  # another request is drawing the one page image allowed
        busy = lawyer_api.get(large_page)
    after = lawyer_api.get(large_page)

    assert busy.status_code == 503
    assert busy["Retry-After"] == "2"
    assert busy.json() == {
        "detail": "The server is drawing 1 page image already; try again in 2 seconds.",
        "code": "page_images_busy",
    }
    assert after.status_code == 200 and after["Content-Type"] == "image/png"


@through_the_api
@pytest.mark.slow
def test_concurrent_requests_draw_at_most_the_limit_at_once_and_all_get_their_image(
    lawyer: User, large_page: str, settings: Any
) -> None:
    settings.LEXWEB_PAGE_IMAGE_CONCURRENCY = 3
    settings.LEXWEB_PAGE_IMAGE_WAIT_SECONDS = 120
    slots = render_slots.slots()
    statuses: list[int] = []
    start = threading.Barrier(6)

    def fetch(client: Client) -> None:
        start.wait()
        statuses.append(client.get(large_page).status_code)

    threads = [threading.Thread(target=fetch, args=(c,)) for c in _clients(lawyer, 6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    assert sorted(statuses) == [200] * 6
    # All six asked at once: never more than three drew at a time, and some drew together (how
    # many overlap depends on how busy the machine is; on an idle one, three).
    assert 2 <= slots.peak <= 3
    assert slots.in_use == 0


@through_the_api
def test_waiting_past_the_limit_gets_503_while_the_limit_draws(
    lawyer: User, large_page: str, settings: Any
) -> None:
    settings.LEXWEB_PAGE_IMAGE_CONCURRENCY = 1
    settings.LEXWEB_PAGE_IMAGE_WAIT_SECONDS = 0
    answers: list[tuple[int, str | None]] = []
    start = threading.Barrier(4)

    def fetch(client: Client) -> None:
        start.wait()
        response = client.get(large_page)
        answers.append((response.status_code, response.get("Retry-After")))

    threads = [threading.Thread(target=fetch, args=(c,)) for c in _clients(lawyer, 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    # Four at once, one slot, no waiting: one drew its page, and every other one was refused.
    assert (200, None) in answers
    assert {answer for answer in answers if answer[0] != 200} == {(503, "2")}
    assert len(answers) == 4


_MEASURE = """
import json, sys, threading
from pathlib import Path
import django
django.setup()
from apps.documents import extraction

def status(key):
    with open("/proc/self/status") as handle:
        return next(int(l.split()[1]) for l in handle if l.startswith(key)) // 1024

path, count = Path(sys.argv[1]), int(sys.argv[2])
start = threading.Barrier(count)
def render():
    start.wait()
    extraction.page_png(path, kind="image", number=1, dpi=int(sys.argv[3]))
threads = [threading.Thread(target=render) for _ in range(count)]
with open("/proc/self/clear_refs", "w") as handle:  # 5: the peak (VmHWM) starts again from now
    handle.write("5")
before = status("VmRSS")
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps({"peak_mb": status("VmHWM") - before}))
"""


def _peak_mb(path: Path, *, renders: int, limit: int) -> int:
    """The resident memory a fresh web-like process grew by, at its peak, while `renders`
    threads drew the page image at once under LEXWEB_PAGE_IMAGE_CONCURRENCY=`limit`."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "lexweb.settings",
        "DATABASE_URL": database_url_for_tests(),
        "LEXWEB_LOG_LEVEL": "WARNING",
        "LEXWEB_PAGE_IMAGE_CONCURRENCY": str(limit),
        "LEXWEB_PAGE_IMAGE_WAIT_SECONDS": "300",
    }
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), str(renders), str(DPI)],
        cwd=django_settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return int(json.loads(done.stdout.strip().splitlines()[-1])["peak_mb"])


@pytest.mark.slow
def test_eight_renders_at_once_of_a_large_scan_cost_about_two_renders(tmp_path: Path) -> None:
    """Before the limit, eight at once of one large TIFF page added 1.7 GB to the process."""
    path = written(tmp_path, "large.tif", huge_bilevel_tiff())

    one = _peak_mb(path, renders=1, limit=2)
    eight = _peak_mb(path, renders=8, limit=2)

    assert one > 100, one  # the frame itself: 14,000 x 14,000 bytes
    assert eight < one * 2.6, (one, eight)


@pytest.mark.django_db
def test_the_production_stamp_preview_takes_a_slot_too(
    lawyer: User, case: Case, blob_root: Path, settings: Any
) -> None:
    settings.LEXWEB_PAGE_IMAGE_CONCURRENCY = 1
    settings.LEXWEB_PAGE_IMAGE_WAIT_SECONDS = 0
    document = _doc(case, lawyer, "a.pdf", pages=1)
    client = session_client(lawyer)

    with render_slots.render_slot():
        busy = _preview(client, case, document)
    after = _preview(client, case, document)

    assert (busy.status_code, busy["Retry-After"]) == (503, "2")
    assert busy.content.decode() == (
        "The server is drawing 1 page image already; try again in 2 seconds."
    )
    assert after.status_code == 200 and after["Content-Type"] == "image/png"
