"""A DOCX is a zip that python-docx unpacks in memory: what it unpacks to is bounded first."""

import io
import zipfile

import docx
import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.drafting.services import drafts as services
from lexweb.errors import DomainError


def _docx(text: str) -> bytes:
    document = docx.Document()
    document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_a_zip_bomb_named_docx_is_refused_before_it_is_unpacked(settings: SettingsWrapper) -> None:
    settings.LEXWEB_MAX_DRAFT_BYTES = 1_000_000
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * 50_000_000)  # ~50 kB packed
    data = bomb.getvalue()
    assert len(data) < settings.LEXWEB_MAX_DRAFT_BYTES

    with pytest.raises(DomainError, match=r"unpacks to 50,000,000 bytes in 1 parts"):
        services.uploaded_content(data=data, filename="brief.docx")


def test_too_many_parts_are_refused(settings: SettingsWrapper) -> None:
    many = io.BytesIO()
    with zipfile.ZipFile(many, "w") as archive:
        for n in range(services.DOCX_MAX_PARTS + 1):
            archive.writestr(f"word/part{n}.xml", b"")
    with pytest.raises(DomainError, match=r"in 1,001 parts"):
        services.uploaded_content(data=many.getvalue(), filename="brief.docx")


def test_a_damaged_zip_and_an_ordinary_docx(settings: SettingsWrapper) -> None:
    with pytest.raises(DomainError, match="could not be read as a Word document"):
        services.uploaded_content(data=b"PK\x03\x04 not really a zip", filename="brief.docx")
    content = services.uploaded_content(data=_docx("The lease began on March 3, 2024."),
                                        filename="brief.docx")  # fmt: skip
    assert "The lease began on March 3, 2024." in content.text
