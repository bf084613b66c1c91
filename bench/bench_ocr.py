"""OCR throughput on image-only pages: lexweb's ingest path (render + one Tesseract pass per page
giving text, boxes and confidences, one single-threaded Tesseract per core) against, on the
same pages in the same run:

  (a) `ocrmypdf --jobs N` (the common tool; it also writes a PDF);
  (b) a bare pool of N processes calling pytesseract with OMP_THREAD_LIMIT=1 (the practical
      limit: nothing but Tesseract);
  (c) the same bare pool with OpenMP threads unbounded (why we set OMP_THREAD_LIMIT=1).

Targets (issue 3): >= 1.2x ocrmypdf, >= 0.85x the bare pool. Also checks that a text PDF
of the same length costs zero Tesseract calls.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

import pymupdf  # noqa: E402
import pytesseract  # noqa: E402
from django.conf import settings  # noqa: E402
from PIL import Image  # noqa: E402

from apps.documents import extraction  # noqa: E402

REAL = Path(settings.BASE_DIR).parent / "shared" / "fixtures" / "real"
SOURCE = "ca5_st-pierre-v-standard-ins_21-50498.pdf"
PAGES = 8
SCAN_DPI = 200


def _scanned(out: Path) -> None:
    with pymupdf.open(REAL / SOURCE) as original, pymupdf.open() as scan:
        for page in list(original)[:PAGES]:
            pixmap = page.get_pixmap(dpi=SCAN_DPI, colorspace=pymupdf.csGRAY)
            target = scan.new_page(width=page.rect.width, height=page.rect.height)
            target.insert_image(target.rect, stream=pixmap.tobytes("png"))
        scan.save(out)


def _ours(path: Path) -> tuple[float, int]:
    started = time.perf_counter()
    pages = list(extraction.pdf_pages(path))
    elapsed = time.perf_counter() - started
    assert all(p.source == "ocr" and p.words for p in pages)
    return elapsed, sum(len(p.text) for p in pages)


def _ocrmypdf(path: Path, out: Path, jobs: int) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ocrmypdf",
            "--rasterizer",
            "pypdfium",
            "--jobs",
            str(jobs),
            "--output-type",
            "pdf",
            "--optimize",
            "0",
            "-q",
            str(path),
            str(out),
        ],
        check=True,
    )
    return time.perf_counter() - started


def _tesseract_page(png: str) -> int:
    data = pytesseract.image_to_data(Image.open(png), output_type=pytesseract.Output.DICT)
    return len(data["text"])


def _bare_pool(images: list[str], workers: int, omp_limit: str | None) -> float:
    saved = os.environ.pop("OMP_THREAD_LIMIT", None)
    if omp_limit is not None:
        os.environ["OMP_THREAD_LIMIT"] = omp_limit
    try:
        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=workers) as pool:
            list(pool.map(_tesseract_page, images))
        return time.perf_counter() - started
    finally:
        os.environ.pop("OMP_THREAD_LIMIT", None)
        if saved is not None:
            os.environ["OMP_THREAD_LIMIT"] = saved


def _text_pdf_ocr_pages() -> int:
    """Pages of the original text PDF sent to Tesseract (each OCR page is one call)."""
    return sum(1 for page in extraction.pdf_pages(REAL / SOURCE) if page.source == "ocr")


def main() -> None:
    workers = settings.LEXWEB_OCR_WORKERS
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        scan = folder / "scan.pdf"
        _scanned(scan)
        images = []
        with pymupdf.open(scan) as document:
            for index, page in enumerate(document):
                png = folder / f"p{index}.png"
                # The same pixels lexweb gives Tesseract.
                dpi = extraction.ocr_dpi(page)
                page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY).save(png)
                images.append(str(png))
        ours, characters = _ours(scan)
        rival = _ocrmypdf(scan, folder / "out.pdf", workers)
        bare = _bare_pool(images, workers, "1")
        unbounded = _bare_pool(images, workers, None)
    print(
        json.dumps(
            {
                "benchmark": "ocr_image_only_pages",
                "pages": PAGES,
                "workers": workers,
                "scan_dpi": SCAN_DPI,
                "lexweb_pages_per_second": round(PAGES / ours, 3),
                "ocrmypdf_pages_per_second": round(PAGES / rival, 3),
                "bare_pool_pages_per_second": round(PAGES / bare, 3),
                "bare_pool_unbounded_openmp_pages_per_second": round(PAGES / unbounded, 3),
                "speed_vs_ocrmypdf": round(rival / ours, 2),
                "speed_vs_bare_pool": round(bare / ours, 2),
                "unbounded_openmp_slowdown": round(unbounded / bare, 2),
                "targets": {"vs_ocrmypdf": 1.2, "vs_bare_pool": 0.85},
                "characters_read": characters,
                "tesseract_calls_for_text_pdf": _text_pdf_ocr_pages(),
            }
        )
    )


if __name__ == "__main__":
    main()
