"""Downloads under ASGI are read a block at a time (lexweb/downloads.py FileDownload).

Django serves a FileResponse under ASGI by reading the whole file into a list first, and says
so with a warning ("StreamingHttpResponse must consume synchronous iterators"): every download
of a large volume held all of it in the web process's memory. Here the product's ASGI app is
served by uvicorn, as `make run` serves it, and an original of a few megabytes is downloaded
over real HTTP: it arrives whole, in many blocks, and Django never had to buffer it."""

import io
import warnings
from pathlib import Path
from typing import Any

import httpx
import pytest

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import services as document_services
from tests.harness.sse import served_asgi, token_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_original_is_served_under_asgi_a_block_at_a_time_and_whole(
    lawyer: User, case: Case, settings: Any, tmp_path: Path
) -> None:
    settings.LEXWEB_BLOB_ROOT = tmp_path / "blobs"
    data = b"".join(
        b"%07d the lessee paid the rent on the first of the month.\n" % n for n in range(60_000)
    )
    outcome = document_services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="ledger.txt",
        source=io.BytesIO(data),
        origin="client",
    )
    assert outcome.document is not None, outcome.error
    secret, _ = token_for(lawyer)
    path = f"/api/v1/cases/{case.pk}/documents/{outcome.document.pk}/original"

    with warnings.catch_warnings(record=True) as caught, served_asgi() as url:
        warnings.simplefilter("always")
        with (
            httpx.Client(base_url=url, timeout=30) as http,
            http.stream("GET", path, headers={"Authorization": f"Bearer {secret}"}) as response,
        ):
            assert response.status_code == 200
            assert response.headers["content-length"] == str(len(data))
            blocks = list(response.iter_raw())

    assert b"".join(blocks) == data
    assert len(blocks) > 1
    buffered = [w for w in caught if "must consume synchronous iterators" in str(w.message)]
    assert buffered == []
