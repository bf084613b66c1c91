"""Fixtures for document tests: a private blob root, one way to upload through the API, and a
channel layer per async test."""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from channels.layers import channel_layers
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
def fresh_channel_layer() -> Iterator[None]:
    """A channel layer made on this test's event loop, dropped afterwards.

    channels_postgres ties its LISTEN task to the first event loop that receives. Each async
    test runs on a new loop; a layer kept from an earlier test starts one more listener per
    receive() and so delivers every message several times.
    """
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


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
