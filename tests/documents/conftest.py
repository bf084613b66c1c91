"""Fixtures for document tests: a private blob root and one way to upload through the API."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import MULTIPART_CONTENT

from apps.cases.models import Case


@pytest.fixture
def blob_root(settings: Any, tmp_path: Path) -> Path:
    """An empty blob root for this test only, so counting its files means something."""
    root = tmp_path / "blobs"
    settings.LEXWEB_BLOB_ROOT = root
    return root


@pytest.fixture
def post_files() -> Callable[..., Any]:
    """`post_files(client, case, *files, origin="client")` -> the API response.

    Files go to the real endpoint as multipart, the field `files` repeated.
    """

    def post(client: Client, case: Case, *files: SimpleUploadedFile, origin: str = "client") -> Any:
        return client.post(
            f"/api/v1/cases/{case.pk}/documents",
            {"files": list(files), "origin": origin},
            content_type=MULTIPART_CONTENT,
        )

    return post
