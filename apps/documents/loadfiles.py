"""A production volume as litigation-support tools expect it (no database here).

Layout inside the zip, with at most 1,000 files per folder:

    ACME001/ACME001.dat                 Concordance load file (one row per document)
    ACME001/ACME001.opt                 Opticon image cross-reference (one line per page)
    ACME001/PDF/ACME001.pdf             the stamped volume
    ACME001/IMAGES/0001/ACME000001.tif  one single-page image per Bates number
    ACME001/TEXT/0001/ACME000001.txt    one text file per document, named by its BEGBATES

Concordance: header row; fields separated by 0x14 (DC4) and qualified by þ (U+00FE); a newline
inside a field is written as ® (U+00AE); rows end with CRLF; the encoding is explicit (UTF-8
with a byte-order mark, or CP1252). Paths use backslashes, relative to the volume folder.
"""

import io
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pymupdf
from PIL import Image

FIELD_SEPARATOR = "\x14"
QUOTE = "\u00fe"
NEWLINE_IN_FIELD = "\u00ae"
DAT_FIELDS = (
    "BEGBATES",
    "ENDBATES",
    "BEGATTACH",
    "ENDATTACH",
    "CUSTODIAN",
    "FILENAME",
    "PGCOUNT",
    "SHA256",
    "TEXTPATH",
)
FILES_PER_FOLDER = 1000


@dataclass(frozen=True)
class VolumeDocument:
    begbates: str
    endbates: str
    begattach: str
    endattach: str
    custodian: str
    filename: str
    page_count: int
    sha256: str
    text: str


@dataclass(frozen=True)
class VolumePage:
    bates: str
    first_of_document: bool
    document_page_count: int


def folder(index: int) -> str:
    """Folder number for the index-th file (0-based): 0001 holds the first 1,000."""
    return f"{index // FILES_PER_FOLDER + 1:04d}"


def _field(value: str) -> str:
    value = value.replace("\r\n", "\n").replace("\r", "\n").replace("\n", NEWLINE_IN_FIELD)
    # The qualifier itself cannot appear inside a field; nor can the separator.
    value = value.replace(QUOTE, "").replace(FIELD_SEPARATOR, " ")
    return f"{QUOTE}{value}{QUOTE}"


def dat_text(documents: Sequence[VolumeDocument], text_paths: Sequence[str]) -> str:
    rows = [FIELD_SEPARATOR.join(_field(name) for name in DAT_FIELDS)]
    for document, text_path in zip(documents, text_paths, strict=True):
        values = (
            document.begbates,
            document.endbates,
            document.begattach,
            document.endattach,
            document.custodian,
            document.filename,
            str(document.page_count),
            document.sha256,
            text_path,
        )
        rows.append(FIELD_SEPARATOR.join(_field(v) for v in values))
    return "\r\n".join(rows) + "\r\n"


def opt_text(volume: str, pages: Sequence[VolumePage], image_paths: Sequence[str]) -> str:
    lines = []
    for page, path in zip(pages, image_paths, strict=True):
        first = "Y" if page.first_of_document else ""
        count = str(page.document_page_count) if page.first_of_document else ""
        lines.append(f"{page.bates},{volume},{path},{first},,,{count}")
    return "\r\n".join(lines) + "\r\n"


def encode(text: str, encoding: str) -> bytes:
    if encoding == "utf-8":
        return ("\ufeff" + text).encode("utf-8")
    # Characters CP1252 lacks become '?': the load file stays parseable for old tools.
    return text.encode("cp1252", errors="replace")


def tiff_pages(volume_pdf: Path, dpi: int) -> Iterator[bytes]:
    """Each page of the stamped volume as a bilevel CCITT Group IV TIFF."""
    with pymupdf.open(volume_pdf) as document:
        for page in document:
            pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
            image = Image.frombytes("L", (pixmap.width, pixmap.height), pixmap.samples)
            buffer = io.BytesIO()
            image.convert("1").save(buffer, format="TIFF", compression="group4", dpi=(dpi, dpi))
            yield buffer.getvalue()


def write_volume(
    *,
    out: Path,
    volume: str,
    volume_pdf: Path,
    documents: Sequence[VolumeDocument],
    pages: Sequence[VolumePage],
    encoding: str,
    dpi: int,
    extra: Mapping[str, bytes] | None = None,
) -> None:
    """Write the whole volume as a zip at `out`; `extra`: more files (name: bytes) in the
    volume's folder, such as its privilege log."""
    image_paths = [f"IMAGES\\{folder(i)}\\{p.bates}.tif" for i, p in enumerate(pages)]
    text_paths = [f"TEXT\\{folder(i)}\\{d.begbates}.txt" for i, d in enumerate(documents)]
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:

        def put(relative: str, data: bytes, *, stored: bool = False) -> None:
            name = f"{volume}/" + relative.replace("\\", "/")
            kind = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            archive.writestr(name, data, compress_type=kind)

        put(f"{volume}.dat", encode(dat_text(documents, text_paths), encoding))
        put(f"{volume}.opt", encode(opt_text(volume, pages, image_paths), encoding))
        archive.write(volume_pdf, f"{volume}/PDF/{volume}.pdf")
        for name, data in (extra or {}).items():
            put(name, data)
        for document, path in zip(documents, text_paths, strict=True):
            put(path, encode(document.text, encoding))
        for tiff, path in zip(tiff_pages(volume_pdf, dpi), image_paths, strict=True):
            put(path, tiff, stored=True)  # Group IV is compressed already
