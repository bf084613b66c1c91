"""Text fingerprints (apps.evidence.fingerprint): what they must survive, on the eval's real
drafts (read in place from ../shared/eval/verifier), and what they must not confuse.

Each transformation is made for real: PDFs typeset and re-saved with PyMuPDF and read back
through lexweb's own text extraction, pages rendered to images and read by Tesseract through
lexweb's OCR, e-mails built with the standard library and parsed by lexweb's intake. No
database here.
"""

import hashlib
import html
import io
import os
import random
import re
import tempfile
import textwrap
from email.message import EmailMessage
from pathlib import Path

import pymupdf
import pytest
from django.conf import settings
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from PIL import Image

from apps.documents import extraction, intake
from apps.evidence import fingerprint as fp

EVAL = Path(settings.BASE_DIR).parent / "shared" / "eval" / "verifier"
REAL = Path(settings.BASE_DIR).parent / "shared" / "fixtures" / "real"
# The eval's four drafts (model-written Markdown), read in place.
DRAFTS = sorted(EVAL.glob("*/drafts/*.md"))


def draft_text(n: int = 0) -> str:
    """The text of the n-th eval draft. Outside CI a checkout without ../shared skips; under
    CI=true a missing ../shared fails."""
    if not DRAFTS:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{EVAL} is missing; the registry tests read its drafts")
        pytest.skip(f"{EVAL} is not here")
    return DRAFTS[n % len(DRAFTS)].read_text(encoding="utf-8")


def share(artifact: str, document: str) -> float:
    """How much of the artifact's fingerprint the document holds (what the registry compares
    with the threshold)."""
    return fp.containment(fp.fingerprint(artifact), fp.fingerprint(document))


# --- Real transformations ----------------------------------------------------------------------


def typeset_pdf(markdown: str, *, width: float = 468, font_size: float = 11) -> bytes:
    """The draft as a PDF: paragraphs set in a column of `width` points."""
    paragraphs = [p for p in markdown.split("\n\n") if p.strip()]
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    story = pymupdf.Story(html=body, user_css=f"p {{font-size: {font_size}pt; margin: 0 0 6pt}}")
    out = io.BytesIO()
    writer = pymupdf.DocumentWriter(out)
    page = pymupdf.Rect(0, 0, width + 144, 792)
    more = True
    while more:
        device = writer.begin_page(page)
        more, _ = story.place(pymupdf.Rect(72, 72, page.width - 72, page.height - 72))
        story.draw(device)
        writer.end_page()
    writer.close()
    return out.getvalue()


def pdf_text(data: bytes, *, stamps: bool = False) -> str:
    """All pages' text as lexweb reads it; with `stamps`, every page gets a running head, a
    page footer and a Bates number, as a production's pages have."""
    pages = []
    with pymupdf.open(stream=data, filetype="pdf") as document:
        for n, page in enumerate(document, start=1):
            text = page.get_text()
            if stamps:
                text = (
                    f"Case 2:23-cv-41877 Document 42 Filed 09/14/23 Page {n} of "
                    f"{document.page_count}\n{text}\nCONFIDENTIAL ADY{n:07d}"
                )
            pages.append(text)
    return "\n\n".join(pages)


def ocr_text(data: bytes, *, dpi: int) -> str:
    """The PDF printed to page images and read back by Tesseract (lexweb's OCR)."""
    pages = []
    with pymupdf.open(stream=data, filetype="pdf") as document:
        for n, page in enumerate(document, start=1):
            pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            image = Image.frombytes("L", (pixmap.width, pixmap.height), pixmap.samples)
            pages.append(extraction.ocr_image(image, number=n, dpi=dpi).text)
    return "\n\n".join(pages)


def hyphenated(text: str, width: int = 48) -> str:
    """Wrapped at `width` with the next word split by a hyphen at every line end, as a
    typesetter with hyphenation would."""
    out = []
    for line in textwrap.wrap(" ".join(text.split()), width):
        words = line.split(" ")
        last = words[-1]
        if len(last) > 5 and last.isalpha():
            words[-1] = last[:3] + "-\n" + last[3:]
        out.append(" ".join(words))
    return "\n".join(out)


def ocr_noise(text: str, *, rate: float, seed: int = 3) -> str:
    """Words misread the way Tesseract misreads them (l/1, rn/m, O/0, e/c, a dropped letter)
    at `rate` of the words."""
    rng = random.Random(seed)  # noqa: S311  (repeatable noise, not a secret)
    swaps = [("l", "1"), ("rn", "m"), ("o", "0"), ("e", "c"), ("i", "l"), ("s", "5")]

    def misread(word: str) -> str:
        for wrong, right in rng.sample(swaps, len(swaps)):
            if wrong in word:
                return word.replace(wrong, right, 1)
        return word[:-1] if len(word) > 1 else word

    return " ".join(misread(w) if rng.random() < rate else w for w in text.split(" "))


def emailed(text: str) -> str:
    """The draft sent as the body of an e-mail (quoted-printable, long lines wrapped by the
    encoder), then read by lexweb's intake."""
    message = EmailMessage()
    message["From"] = "Paralegal <paralegal@firm.test>"
    message["To"] = "client@example.test"
    message["Subject"] = "Fwd: case summary (please review)"
    message.set_content("See below.\n\n-----Original Message-----\n" + text, cte="quoted-printable")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "message.eml"
        path.write_bytes(bytes(message))
        return intake.parse_email(path).text


REWORDINGS = {
    "the": "this",
    "a": "one",
    "and": "as well as",
    "that": "which",
    "is": "was",
    "was": "had been",
    "of": "regarding",
    "to": "towards",
    "in": "within",
    "on": "upon",
    "for": "on behalf of",
    "with": "alongside",
}


def reorder_and_reword(markdown: str, *, seed: int = 1) -> str:
    """Paragraphs shuffled; a third of the sentences reworded (every third word swapped for a
    synonym where one is known, a word added in the middle)."""
    rng = random.Random(seed)  # noqa: S311
    paragraphs = [p for p in markdown.split("\n\n") if p.strip()]
    rng.shuffle(paragraphs)
    out = []
    for paragraph in paragraphs:
        sentences = re.split(r"(?<=[.!?])\s+", paragraph)
        for i, sentence in enumerate(sentences):
            if i % 3 == rng.randrange(3):
                words = sentence.split()
                words = [REWORDINGS.get(w.lower(), w) if j % 3 == 0 else w
                         for j, w in enumerate(words)]  # fmt: skip
                words.insert(len(words) // 2, "indeed")
                sentences[i] = " ".join(words)
        out.append(" ".join(sentences))
    return "\n\n".join(out)


# --- normalise -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The \u201cLender\u2019s\u201d claim", 'the "lenders" CLAIM'),
        ("don\u2019t", "dont"),
        ("evi-\ndence of fraud", "evidence of fraud"),
        ("follow-up", "followup"),
        ("follow\u2010up", "follow-up"),
        ("USD 45,000.00 on 05/02/2022", "usd 4500000 on 05022022"),
        ("ﬁnal ﬂow", "final flow"),
        ("\uff26\uff35\uff2c\uff2c\u3000\uff37\uff29\uff24\uff34\uff28", "full width"),
        ("Straße", "STRASSE"),
        ("café naïve", "cafe naive"),
        ("evi\u200bdence\u00ad \ufeffof\u200d fraud", "evidence of fraud"),
        ("\u0421l\u0430im b\u0443 \u0440l\u0430intiff", "claim by plaintiff"),  # Cyrillic
        ("claim — see ¶ 3; cf. § 2", "claim see 3 cf 2"),
        ("**Bold** _claim_ [link](#x)", "bold claim link x"),
    ],
)
def test_normalise_reads_disguised_forms_of_the_same_words_alike(a: str, b: str) -> None:
    assert fp.normalise(a) == fp.normalise(b)


def test_normalise_keeps_numbers_as_words_and_splits_at_punctuation() -> None:
    assert fp.normalise("Wire of $45,000 sent 2022-04-30 (ADY0000004).") == [
        "wire", "of", "45000", "sent", "20220430", "ady0000004",
    ]  # fmt: skip
    assert fp.normalise("end.\n\nStart; next—word") == ["end", "start", "next", "word"]


def test_a_dash_before_a_blank_line_does_not_join_paragraphs() -> None:
    assert fp.normalise("the end -\n\nNew paragraph") == ["the", "end", "new", "paragraph"]


# --- hashes ----------------------------------------------------------------------------------


def test_the_shingle_hash_is_pinned_because_fingerprints_are_stored() -> None:
    words = ["the", "quick", "brown", "fox", "jumps"]
    expected = int.from_bytes(
        hashlib.blake2b(b"the quick brown fox jumps", digest_size=8).digest(), "big", signed=True
    )
    assert fp.shingle_hash(words) == expected == -7_413_287_084_136_464_255
    assert fp.fingerprint("The quick brown fox jumps!") == {expected}


def test_hashes_fit_a_postgres_bigint_and_the_fingerprint_is_deterministic() -> None:
    text = draft_text(0)
    first = fp.fingerprint(text)
    assert first == fp.fingerprint(text)
    assert all(-(2**63) <= h < 2**63 for h in first)
    hashes = fp.shingle_hashes(fp.normalise(text))
    assert len(first) < len(hashes) * 0.6  # winnowing keeps about 2 / (w + 1)


def test_empty_and_short_texts() -> None:
    assert fp.fingerprint("") == set()
    assert fp.fingerprint(" \n\t—…") == set()
    assert len(fp.fingerprint("two words")) == 1
    assert fp.containment(set(), {1, 2}) == 0.0


@hypothesis_settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from("abcdefghij"), min_size=0, max_size=40),
    st.lists(st.sampled_from("klmnopqrst"), min_size=0, max_size=40),
    st.lists(st.sampled_from("uvwxyz0123"), min_size=fp.WINDOW + fp.SHINGLE_WORDS - 1,
             max_size=30),
)  # fmt: skip
def test_a_passage_of_w_plus_k_minus_1_words_is_always_caught(
    before: list[str], after: list[str], passage: list[str]
) -> None:
    """Winnowing's guarantee: two texts that share a passage of at least w + k - 1 words
    share a hash, whatever surrounds the passage."""
    words = [f"w{c}{i % 7}" for i, c in enumerate(passage)]
    one = " ".join(["x" + c for c in before] + words)
    two = " ".join(words + ["y" + c for c in after])
    assert fp.fingerprint(one) & fp.fingerprint(two)


# --- What it must survive --------------------------------------------------------------------


@pytest.mark.parametrize("n", range(4))
def test_retypesetting_and_pdf_metadata_rewrites_keep_the_fingerprint(n: int) -> None:
    text = draft_text(n)
    exported = typeset_pdf(text)
    with pymupdf.open(stream=exported, filetype="pdf") as document:
        document.set_metadata({"producer": "Microsoft Word", "title": "Client notes", "author": ""})
        rewritten = document.tobytes(garbage=3, deflate=True)

    assert rewritten != exported
    assert share(text, pdf_text(exported)) > 0.95
    assert share(text, pdf_text(rewritten)) == share(text, pdf_text(exported))
    assert share(text, pdf_text(typeset_pdf(text, width=250, font_size=9))) > 0.95


@pytest.mark.parametrize("n", range(4))
def test_hyphenation_at_line_breaks_keeps_the_fingerprint(n: int) -> None:
    text = draft_text(n)
    assert share(text, hyphenated(text)) > 0.97


@pytest.mark.parametrize("n", range(4))
def test_running_heads_footers_and_bates_stamps_keep_most_of_it(n: int) -> None:
    text = draft_text(n)
    assert share(text, pdf_text(typeset_pdf(text, width=300), stamps=True)) > 0.9


@pytest.mark.parametrize(("n", "dpi"), [(0, 200), (1, 150), (2, 300), (3, 200)])
@pytest.mark.slow
def test_printing_to_images_and_ocr_keeps_most_of_it(n: int, dpi: int) -> None:
    text = draft_text(n)
    assert share(text, ocr_text(typeset_pdf(text), dpi=dpi)) > 0.7


@pytest.mark.parametrize("rate", [0.02, 0.05])
def test_ocr_like_misreadings_keep_most_of_it(rate: float) -> None:
    text = draft_text(1)
    assert share(text, ocr_noise(text, rate=rate)) > 1 - rate * 7


@pytest.mark.parametrize("n", range(4))
def test_emailing_keeps_the_fingerprint(n: int) -> None:
    text = draft_text(n)
    quoted_reply = "\n".join("> " + line for line in text.splitlines())
    assert share(text, emailed(text)) > 0.98
    assert share(text, quoted_reply) > 0.98


@pytest.mark.parametrize("n", range(4))
def test_reordered_paragraphs_with_a_third_reworded_stay_far_above_legitimate_documents(
    n: int,
) -> None:
    text = draft_text(n)
    # Measured 0.56-0.77 on the four drafts; the eval's sources hold at most 0.13 of any draft
    # (test_sources_that_the_drafts_quote_hold_only_a_small_share_of_them).
    assert share(text, reorder_and_reword(text)) > 0.45


def test_pasting_into_a_text_file_and_a_new_pdf_keeps_it() -> None:
    text = draft_text(2)
    plain = re.sub(r"[#*_`>]", "", text)
    with pymupdf.open() as document:
        page = document.new_page()
        page.insert_textbox(pymupdf.Rect(36, 36, page.rect.width - 36, 806), plain, fontsize=6)
        pasted = document.tobytes()
    assert share(text, plain) > 0.98
    assert share(text, pdf_text(pasted)) > 0.9


# --- What it must not confuse ----------------------------------------------------------------


def _sources_text(case: Path) -> list[tuple[str, str]]:
    texts = []
    for path in sorted((case / "sources").glob("*.pdf")):
        texts.append((path.name, pdf_text(path.read_bytes())))
    return texts


def test_sources_that_the_drafts_quote_hold_only_a_small_share_of_them() -> None:
    """The converse: the eval's source documents (text layers) share quotes, captions and
    Bates citations with the drafts that cite them, and stay far below any threshold."""
    draft_text(0)
    highest = 0.0
    for case in sorted(p for p in EVAL.iterdir() if p.is_dir()):
        drafts = [d.read_text(encoding="utf-8") for d in sorted((case / "drafts").glob("*.md"))]
        sources = _sources_text(case)
        everything = "\n\n".join(text for _, text in sources)
        for draft in drafts:
            for _name, source in sources:
                highest = max(highest, share(draft, source))
            # Even all of a case's sources together hold well under half of any draft.
            assert share(draft, everything) < 0.35
    assert highest < 0.2


def test_real_court_documents_share_almost_nothing_with_the_drafts() -> None:
    draft_text(0)
    for path in sorted(REAL.glob("*.pdf")):
        text = pdf_text(path.read_bytes())
        for n in range(4):
            assert share(draft_text(n), text) < 0.05, path.name


def test_bates_like_junk_is_not_a_match() -> None:
    text = draft_text(0)
    junk = "Receipt: RTX 3060 graphics card, qty 1, ADY0000012, EX-14, Bates RTX3060-0001."
    assert share(text, junk) < 0.02
