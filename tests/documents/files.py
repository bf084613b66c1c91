"""Real and derived files for document tests. Real ones come from ../shared/fixtures/real."""

import io
from pathlib import Path

import pymupdf
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

REAL = Path(settings.BASE_DIR).parent / "shared" / "fixtures" / "real"


def real(name: str) -> bytes:
    return (REAL / name).read_bytes()


def upload(
    name: str, data: bytes, content_type: str = "application/octet-stream"
) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type=content_type)


def scanned_pdf(source: str, pages: int | None = None, dpi: int = 200) -> bytes:
    """An image-only PDF made from a real text PDF: every page rasterised, no text layer left.
    This is what a scanner produces from the printed document."""
    with pymupdf.open(REAL / source) as original, pymupdf.open() as scan:
        for page in list(original)[:pages]:
            pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            target = scan.new_page(width=page.rect.width, height=page.rect.height)
            target.insert_image(target.rect, stream=pixmap.tobytes("png"))
        return scan.tobytes()


def text_pdf(lines: list[str]) -> bytes:
    with pymupdf.open() as document:
        page = document.new_page()
        page.insert_text((72, 72), "\n".join(lines), fontsize=11)
        return document.tobytes()


def png_of(source: str, page: int = 0, dpi: int = 200) -> bytes:
    with pymupdf.open(REAL / source) as original:
        return original[page].get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY).tobytes("png")


def tiff_of(source: str, pages: int, dpi: int = 200) -> bytes:
    from PIL import Image

    frames = []
    with pymupdf.open(REAL / source) as original:
        for page in list(original)[:pages]:
            pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            frames.append(Image.frombytes("L", (pixmap.width, pixmap.height), pixmap.samples))
    buffer = io.BytesIO()
    frames[0].save(
        buffer,
        format="TIFF",
        save_all=True,
        append_images=frames[1:],
        compression="group4" if False else "tiff_lzw",
        dpi=(dpi, dpi),
    )
    return buffer.getvalue()
