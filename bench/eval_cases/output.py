# ruff: noqa: S311  (seeded test-data grammars: long vocabulary lines, list concatenation of pieces, random.Random on purpose)
"""Writing a generated case in the shared set format: sources as PDFs (text layer made with
PyMuPDF, or a scan: the page rendered to a noisy grey image with no text layer, which the
ingest OCRs), case.json with its productions and Bates map, page_text.jsonl, the drafts and
labels.jsonl."""

import json
import random
from pathlib import Path

import pymupdf

from bench.eval_cases.drafts import Sentence
from bench.eval_cases.world import Doc, World


def _pdf(doc: Doc, rng: random.Random) -> tuple[bytes, list[str]]:
    with pymupdf.open() as pdf:
        pdf.set_metadata({"producer": "lexweb eval_cases", "creationDate": "", "modDate": ""})
        for page in doc.pages:
            out = pdf.new_page(width=612, height=792)
            out.insert_text(
                (54, 64),
                page.text,
                fontsize=9.5,
                fontname=rng.choice(("helv", "tiro", "cour"))
                if doc.kind != "transcript"
                else "cour",
                lineheight=1.45,
            )
            if doc.scanned:
                pixmap = out.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
                pixmap = _noise(pixmap, rng)
                pdf.delete_page(-1)
                scan = pdf.new_page(width=612, height=792)
                scan.insert_image(scan.rect, stream=pixmap.tobytes("png"), rotate=0)
        data = pdf.tobytes(garbage=3, deflate=True, no_new_id=True)
    if doc.scanned:
        return data, [p.text for p in doc.pages]
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        return data, [p.get_text().strip() for p in pdf]


def _noise(pixmap: "pymupdf.Pixmap", rng: random.Random) -> "pymupdf.Pixmap":
    """Speckles, a grey cast and a few faint streaks, like a photocopy."""
    width, height = pixmap.width, pixmap.height
    samples = bytearray(pixmap.samples)
    stride = pixmap.stride
    for _ in range(width * height // 250):
        x, y = rng.randrange(width), rng.randrange(height)
        samples[y * stride + x] = rng.choice((40, 90, 160))
    for _ in range(3):
        x = rng.randrange(width)
        for y in range(0, height, 2):
            at = y * stride + x
            samples[at] = min(samples[at], 200)
    for i in range(0, len(samples), 7):
        if samples[i] > 240:
            samples[i] = 236
    return pymupdf.Pixmap(pymupdf.csGRAY, width, height, bytes(samples), False)


def write(world: World, drafts: dict[str, list[Sentence]], root: Path) -> dict[str, int]:
    rng = random.Random(f"{world.seed}:{world.index}:pdf")
    folder = root / world.folder
    (folder / "sources").mkdir(parents=True, exist_ok=True)
    (folder / "drafts").mkdir(exist_ok=True)
    page_rows, bates_map = [], []
    for prod in world.productions:
        for doc in prod.docs:
            data, texts = _pdf(doc, rng)
            (folder / "sources" / doc.name).write_bytes(data)
            for page, text in zip(doc.pages, texts, strict=True):
                label = page.labels[0]
                row = {
                    "bates": label,
                    "document": doc.name,
                    "page": page.number,
                    "image_only": doc.scanned,
                    "production": prod.volume,
                }
                if prod.legend:
                    row["legend"] = prod.legend
                bates_map.append(row)
                page_rows.append({"bates": label, "text": text})
    first = world.productions[0]
    meta = {
        "title": f"{world.ours} v. {world.theirs}",
        "court": world.court[0],
        "case_number": world.case_number,
        "bates_prefix": first.prefix,
        "bates_start": first.start,
        "bates_digits": first.digits,
        "documents": [d.name for p in world.productions for d in p.docs],
        "origin": {d.name: d.origin for d in world.docs},
        "image_only": [d.name for d in world.docs if d.scanned],
        "productions": [
            {
                "volume": p.volume,
                "bates_prefix": p.prefix,
                "bates_start": p.start,
                "bates_digits": p.digits,
                "documents": [d.name for d in p.docs],
                "page_suffix_digits": p.suffix_digits,
                "legend": p.legend,
                "party": p.party,
            }
            for p in world.productions
        ],
        "bates_map": bates_map,
        "generator": {
            "module": "bench.eval_cases",
            "seed": world.seed,
            "case": world.index,
            "domain": world.domain.name,
        },
    }
    (folder / "case.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    (folder / "page_text.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in page_rows), encoding="utf-8"
    )
    labels = []
    for name, pieces in drafts.items():
        text, found = _render(pieces, f"drafts/{name}")
        (folder / "drafts" / name).write_text(text, encoding="utf-8")
        labels += found
    (folder / "labels.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in labels), encoding="utf-8"
    )
    return {
        "pages": len(page_rows),
        "labels": len(labels),
        "unsupported": sum(1 for r in labels if not r["supported"]),
    }


def _render(paragraphs: list[Sentence], draft: str) -> tuple[str, list[dict[str, object]]]:
    text, spans = "", []
    for paragraph in paragraphs:
        for piece in paragraph:
            if isinstance(piece, str):
                text += piece
            else:
                kind, error, claim = piece
                spans.append((len(text), kind, error, claim))
                text += claim
    rows = []
    for start, kind, error, claim in spans:
        occurrence, at = 0, -1
        while True:
            at = text.find(claim, at + 1)
            occurrence += 1
            if at == start:
                break
        rows.append(
            {
                "draft": draft,
                "kind": kind,
                "text": claim,
                "occurrence": occurrence,
                "supported": error == "none",
                "error": error,
                "start": start,
                "end": start + len(claim),
            }
        )
    return text, rows
