"""Issue 10's measurement: how well the text fingerprint tells a draft lexweb wrote, coming back
in disguise, from a real document that merely shares words with a draft.

Artifacts (what the registry holds): every draft of ../shared/eval/verifier/*/drafts/ (its
Markdown, and its PDF export's text), and for every file of ../shared/fixtures/real/ a
legitimate brief that quotes 2-4 of its passages plus its caption and a signature block
(tests/evidence/attacks.quoting_draft). Each is registered as lexweb registers a draft written
from a frozen packet (issue 20 req 8): an eval draft's packet is its case's sources, a quoting
brief's the file it quotes, and the hashes that are shingles of the packet's text are left out
(fingerprint.without_evidence). `PROVENANCE_EVAL_NO_PACKET=1` measures without that rule.

Attacks, made from every eval draft by tests/evidence/attacks.py and read back exactly as
ingest reads an upload (apps.documents.extraction: text layer, else real Tesseract OCR; e-mail
and text files through apps.documents.intake):
  (b) the exported PDF; (c) the export with its metadata/producer rewritten, and the draft set
  again in another font and page size; (d) the text pasted into a new PDF and into a .txt;
  (e) a production volume holding the exported draft among the case's real sources; (f) the
  export printed to a TIFF and an image-only PDF (200 dpi), to a worse scan (turned, blurred,
  JPEG; attacks.degraded_scan_pdf), and each of its pages to a PNG
  (300 dpi) uploaded alone, all OCR'd; (g) e-mailed as the body of an .eml, and as its
  attachment (the attachment's text); (h) paragraphs reordered and a third of the sentences
  reworded.
Legitimate documents: every source PDF of the eval set and every file of fixtures/real, read
the same way (image-only pages by OCR), a firm's production cover letter per eval case (the
caption and the very Bates ranges the drafts cite, the briefs' signature block), excerpts of
the very passages the drafts quote, and (i) a client receipt full of "RTX 3060" tokens.

For each document: share = |artifact fp ∩ document fp| / |artifact fp| (max over artifacts),
document_share = |∩| / |document fp|, and the share of the document that is the artifact's own
(unquoted) words. Rules "a", "b" and "registry" (lexweb's: share >= threshold, or a piece of the
artifact) are compared; see RULES below. Prints one JSON object: per attack kind and per rule
refused/total and the refusal rate, the legitimate documents' false refusals, the share
distributions, the gap between them, the proposed threshold (the middle of the gap) and the
results at it and at LEXWEB_ARTIFACT_MATCH_THRESHOLD.

Run: .venv/bin/python -m bench.provenance_eval
"""

import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

import pymupdf  # noqa: E402
from django.conf import settings  # noqa: E402

from apps.documents import extraction, intake  # noqa: E402
from apps.evidence import fingerprint as fp  # noqa: E402
from apps.evidence.selectors import registry as registry_selectors  # noqa: E402
from tests.evidence import attacks  # noqa: E402

# Rules measured (the threshold T applies to `share` in each):
#   a: share >= T.
#   b: a, or document_share >= DOCUMENT_SHARE with >= MIN_COMMON hashes in common (a document
#      that is mostly one artifact's text; measured to show why it is not the rule: it refuses
#      short excerpts of the very passages a draft quotes).
#   registry: a, or the document is a piece of the artifact (registry.document_is_piece:
#      enough of the artifact's own hashes, the ones not inside its quotation marks, make up at
#      least half of the document). This is lexweb's rule (apps.evidence.selectors.registry);
#      artifacts with fewer than MIN_FINGERPRINTS hashes match by bytes only, as there.
DOCUMENT_SHARE = 0.75
MIN_COMMON = 12
RULES = ("a", "b", "registry")


@dataclass
class Artifact:
    label: str
    hashes: set[int]
    own: set[int]  # the hashes not inside the artifact's quotation marks
    draft: str = ""  # the eval draft it belongs to ("" for fixture briefs)


def artifact(
    label: str, text: str, draft: str = "", evidence: frozenset[int] = frozenset()
) -> Artifact:
    hashes, quoted = fp.fingerprint_with_quotes(text)
    if os.environ.get("PROVENANCE_EVAL_NO_PACKET") != "1":
        hashes, quoted, _left_out = fp.without_evidence(hashes, quoted, evidence)
    return Artifact(label, hashes, hashes - quoted, draft)


@dataclass
class Scored:
    label: str
    kind: str
    words: int
    share: float  # best share (of an artifact's hashes found in the document)
    artifact: str  # whose
    document_share: float  # best |∩| / |document| among artifacts with >= MIN_COMMON in common
    # best |artifact's own ∩ document| / |document| among artifacts with >= PIECE_MIN_COMMON
    # of their own hashes in common
    own_document_share: float
    piece: bool  # registry.document_is_piece for some artifact

    def refused(self, rule: str, threshold: float) -> bool:
        if self.share >= threshold:
            return True
        if rule == "b":
            return self.document_share >= DOCUMENT_SHARE
        if rule == "registry":
            return self.piece
        return False


def score(label: str, kind: str, text: str, artifacts: list[Artifact]) -> Scored:
    """`text` against `artifacts` (for an attack: the artifacts of its own draft, so what is
    measured is how much of that draft survived; for a legitimate document: all of them)."""
    hashes = fp.fingerprint(text)
    usable = [a for a in artifacts if len(a.hashes) >= registry_selectors.MIN_FINGERPRINTS]

    def ratio(common: int) -> float:
        return common / len(hashes) if hashes else 0.0

    best = max(usable, key=lambda a: fp.containment(a.hashes, hashes))
    return Scored(
        label=label,
        kind=kind,
        words=len(fp.normalise(text)),
        share=fp.containment(best.hashes, hashes),
        artifact=best.label,
        document_share=max(
            ratio(len(a.hashes & hashes)) if len(a.hashes & hashes) >= MIN_COMMON else 0.0
            for a in usable
        ),
        own_document_share=max(
            ratio(len(a.own & hashes))
            if len(a.own & hashes) >= registry_selectors.PIECE_MIN_COMMON
            else 0.0
            for a in usable
        ),
        piece=any(
            registry_selectors.document_is_piece(
                own_common=len(a.own & hashes), document_hashes=len(hashes)
            )
            for a in usable
        ),
    )


def read_back(data: bytes, name: str) -> str:
    """The text ingest would store for this upload, pages joined as document_check_text reads
    them. E-mails: the message's own text (its attachments become documents of their own)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "upload"
        path.write_bytes(data)
        sniffed = intake.sniff(path, name)
        if sniffed.kind == "pdf":
            pages = extraction.pdf_pages(path)
        elif sniffed.kind == "image":
            pages = extraction.image_pages(path)
        elif sniffed.kind == "email":
            return intake.parse_email(path).text
        else:
            return intake.read_text(path)[0]
        return "\n".join(page.text for page in pages)


def email_attachments(data: bytes) -> list[tuple[str, bytes]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "message.eml"
        path.write_bytes(data)
        return [(a.filename, a.payload) for a in intake.parse_email(path).attachments]


def production_volume(draft: attacks.EvalDraft, export: bytes) -> bytes:
    """(e) A volume of three of the case's real sources with the exported draft among them."""
    sources = sorted((attacks.EVAL / draft.case / "sources").glob("*.pdf"))[:3]
    with pymupdf.open() as volume:
        for source in sources:
            with pymupdf.open(source) as original:
                volume.insert_pdf(original)
        with pymupdf.open(stream=export, filetype="pdf") as generated:
            volume.insert_pdf(generated)
        return volume.tobytes()


def attack_uploads(draft: attacks.EvalDraft) -> Iterator[tuple[str, str, bytes]]:
    """(kind, filename, bytes) of every attack made from one draft; an e-mail's attachment is
    its own upload (ingest makes it a document of its own)."""
    md = draft.text
    plain = attacks.plain_text(md)
    title = draft.name.removesuffix(".md")
    export = attacks.export_pdf(md, title=title)
    yield "b_export_pdf", f"{title}.pdf", export
    yield "c_metadata_rewritten", f"{title}-final.pdf", attacks.rewrite_pdf_metadata(export)
    yield "c_retypeset", f"{title}-a4.pdf", attacks.retypeset_pdf(md)
    yield "d_pasted_pdf", "pasted.pdf", attacks.paste_pdf(plain)
    yield "d_pasted_txt", "pasted.txt", attacks.paste_txt(plain)
    yield "e_production_volume", "volume-001.pdf", production_volume(draft, export)
    for number, png in enumerate(attacks.page_pngs(export, dpi=300), start=1):
        yield "f_png_each_page_300dpi", f"page-{number}.png", png
    yield "f_tiff_200dpi", "scan.tiff", attacks.pages_tiff(export, dpi=200)
    yield "f_image_only_pdf_200dpi", "scan.pdf", attacks.image_only_pdf(export, dpi=200)
    yield "f_degraded_scan_200dpi", "bad-scan.pdf", attacks.degraded_scan_pdf(export, dpi=200)
    yield "g_eml_body", "summary.eml", attacks.eml_with_body(plain)
    message = attacks.eml_with_attachment(
        export, filename=f"{title}.pdf", media_type="application/pdf"
    )
    for filename, payload in email_attachments(message):
        yield "g_eml_attachment", filename, payload
    yield "h_reordered_reworded", "reworded.txt", attacks.reorder_and_reword(md).encode()


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def measure() -> dict[str, object]:
    started = time.perf_counter()
    drafts = attacks.eval_drafts()
    legitimate: list[tuple[str, str]] = []  # (label, text)
    packets: dict[str, list[str]] = {}  # an eval case's frozen packet: its sources' text
    for source in attacks.eval_sources():
        label = f"{source.parent.parent.name}/sources/{source.name}"
        text = read_back(source.read_bytes(), source.name)
        legitimate.append((label, text))
        packets.setdefault(source.parent.parent.name, []).append(text)
    evidence = {case: frozenset(fp.evidence_shingles(texts)) for case, texts in packets.items()}

    artifacts: list[Artifact] = []
    for draft in drafts:
        of_case = evidence.get(draft.case, frozenset())
        artifacts.append(artifact(draft.label, draft.text, draft.label, of_case))
        export_text = read_back(attacks.export_pdf(draft.text, title=draft.name), "x.pdf")
        artifacts.append(artifact(draft.label + " (PDF export)", export_text, draft.label, of_case))
    for fixture in attacks.real_fixtures():
        text = read_back(fixture.read_bytes(), fixture.name)
        legitimate.append((f"fixtures/real/{fixture.name}", text))
        brief = attacks.quoting_draft(fixture.name, text)
        quoted_from = frozenset(fp.evidence_shingles([text]))
        artifacts.append(artifact(f"brief quoting {fixture.name}", brief, "", quoted_from))
    for folder in attacks.eval_cases():
        letter = attacks.text_pdf(attacks.production_cover_letter(folder))
        legitimate.append((f"{folder.name} production cover letter", read_back(letter, "l.pdf")))
    receipt = read_back(attacks.text_pdf(attacks.junk_receipt_text()), "receipt.pdf")
    legitimate.append(("(i) client receipt with RTX 3060 tokens", receipt))

    for folder in attacks.eval_cases():
        for document, excerpt in attacks.clause_excerpts(folder).items():
            label = f"{folder.name} excerpt of the passages quoted from {document}"
            legitimate.append((label, read_back(attacks.text_pdf(excerpt), "e.pdf")))

    scored_attacks = [
        score(
            draft.label,
            kind,
            read_back(data, name),
            [a for a in artifacts if a.draft == draft.label],
        )
        for draft in drafts
        for kind, name, data in attack_uploads(draft)
    ]
    scored_legit = [score(label, "legitimate", text, artifacts) for label, text in legitimate]

    single_pages = [s for s in scored_attacks if s.kind == "f_png_each_page_300dpi"]
    whole = [s for s in scored_attacks if s not in single_pages]
    legit_max = max(s.share for s in scored_legit)
    attack_min = min(s.share for s in whole)
    proposed = round((legit_max + attack_min) / 2, 2)
    configured = getattr(settings, "LEXWEB_ARTIFACT_MATCH_THRESHOLD", None)
    thresholds = {"proposed": proposed, "setting": float(configured or proposed)}

    def rates(threshold: float) -> dict[str, object]:
        out: dict[str, object] = {}
        for rule in RULES:
            attacks_refused = sum(s.refused(rule, threshold) for s in scored_attacks)
            legit_refused = [s.label for s in scored_legit if s.refused(rule, threshold)]
            out[f"rule_{rule}"] = {
                "attacks_refused": f"{attacks_refused}/{len(scored_attacks)}",
                "attack_refusal_rate": _rate(attacks_refused, len(scored_attacks)),
                "attacks_passed": [
                    f"{s.label} {s.kind} (share {s.share:.3f})"
                    for s in scored_attacks
                    if not s.refused(rule, threshold)
                ],
                "legitimate_refused": f"{len(legit_refused)}/{len(scored_legit)}",
                "false_refusal_rate": _rate(len(legit_refused), len(scored_legit)),
                "legitimate_refused_documents": legit_refused,
            }
        return out

    kinds = {}
    for kind in dict.fromkeys(s.kind for s in scored_attacks):
        of_kind = [s for s in scored_attacks if s.kind == kind]
        kinds[kind] = {
            "uploads": len(of_kind),
            "refused_rule_a": sum(s.refused("a", thresholds["setting"]) for s in of_kind),
            "refused_registry_rule": sum(
                s.refused("registry", thresholds["setting"]) for s in of_kind
            ),
            "min_share": round(min(s.share for s in of_kind), 3),
            "min_document_share": round(min(s.document_share for s in of_kind), 3),
        }
    return {
        "command": ".venv/bin/python -m bench.provenance_eval",
        "fingerprint": {"shingle_words": fp.SHINGLE_WORDS, "window": fp.WINDOW},
        "packet_evidence_left_out": os.environ.get("PROVENANCE_EVAL_NO_PACKET") != "1",
        "artifacts": len(artifacts),
        "attack_uploads": len(scored_attacks),
        "legitimate_documents": len(scored_legit),
        "rules": {
            "a": "share >= T (share = |artifact ∩ document| / |artifact|)",
            "b": f"a, or document_share >= {DOCUMENT_SHARE} with >= {MIN_COMMON} in common",
            "registry": "a, or a piece of the artifact: >= "
            f"{registry_selectors.PIECE_MIN_COMMON} of its own (unquoted) hashes in common, "
            f"and they are >= {registry_selectors.PIECE_DOCUMENT_SHARE} of the document's",
        },
        "share_gap": {
            "legitimate_max": round(legit_max, 3),
            "attack_min_whole_documents": round(attack_min, 3),
            "attack_min_single_pages": round(min(s.share for s in single_pages), 3),
        },
        "document_share_gap": {
            "legitimate_max": round(max(s.document_share for s in scored_legit), 3),
            "attack_min_single_pages": round(min(s.document_share for s in single_pages), 3),
        },
        "own_document_share_gap": {
            "legitimate_max": round(max(s.own_document_share for s in scored_legit), 3),
            "attack_min_single_pages_below_T": round(
                min(
                    (s.own_document_share for s in single_pages if s.share < proposed),
                    default=1.0,
                ),
                3,
            ),
        },
        "proposed_threshold": proposed,
        "margins_at_proposed": {
            "above_legitimate": round(proposed - legit_max, 3),
            "below_attacks": round(attack_min - proposed, 3),
        },
        "results": {f"T={t} ({name})": rates(t) for name, t in thresholds.items()},
        "attacks": kinds,
        "legitimate_per_document": [
            {
                "document": s.label,
                "share": round(s.share, 3),
                "artifact": s.artifact,
                "document_share": round(s.document_share, 3),
                "own_document_share": round(s.own_document_share, 3),
                "words": s.words,
            }
            for s in sorted(scored_legit, key=lambda s: -s.share)
        ],
        "attacks_per_upload": [
            {
                "draft": s.label,
                "kind": s.kind,
                "share": round(s.share, 3),
                "document_share": round(s.document_share, 3),
                "own_document_share": round(s.own_document_share, 3),
                "words": s.words,
            }
            for s in sorted(scored_attacks, key=lambda s: s.share)
        ],
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    if not attacks.shared_available():
        print(json.dumps({"error": attacks.shared_missing_reason()}))
        sys.exit(1)
    print(json.dumps(measure(), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
