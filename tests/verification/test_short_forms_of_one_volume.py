"""Two opinions of the packet reported in one volume (Bluebook 10.9: a short form names a
party of the case it shortens): "Larkspur, 192 P.3d at 1413" after a full cite of Stonebridge
in 192 P.3d is Larkspur's pin, and an "Id." after it is Larkspur's too. And an opinion's notes,
read as sentences of their own."""

from apps.verification.checks.weighing import page_sentences
from tests.verification.packets import findings_by_claim, text_index

HEAD_S = "Stonebridge Co. v. Juniper Capital Ltd., 192 P.3d 989 (Colo. 2014)"
HEAD_L = "Larkspur Systems Inc. v. Kestrel Industries L.P., 192 P.3d 1412 (Colo. 2001)"
INDEX = text_index(
    "OG",
    [
        (
            "05-opinion-stonebridge.pdf",
            [
                f"{HEAD_S}\n989\nAn insurer that accepts partial performance waives strict "
                "compliance with the notice clause.",
                f"{HEAD_S}\n990\nA release signed after the loss binds the insured only to the "
                "amounts it names.",
            ],
        ),
        (
            "06-opinion-larkspur.pdf",
            [
                f"{HEAD_L}\n1412\nThe parties dispute little about the facts.",
                f"{HEAD_L}\n1413\nAn insurer that fails to give written notice while the dispute "
                "is pending cannot later recover the deductible.",
                f"{HEAD_L}\n1414\nAn insurer that withholds payment without reserving its "
                "rights forfeits the defense of prior breach.",
            ],
        ),
    ],
)


def test_a_short_form_naming_the_other_opinion_of_the_volume_is_checked_against_it() -> None:
    text = (
        "Partial performance waives strict compliance with notice. "
        f"{HEAD_S.replace(' (Colo', ', 989 (Colo')}. "
        "Without written notice while the dispute is pending the insurer cannot recover the "
        "deductible. Larkspur, 192 P.3d at 1413. Withholding payment without reserving rights "
        "forfeits the prior breach defense. Id. at 1414. A wrong pin fails. "
        "Larkspur, 192 P.3d at 990."
    )
    findings = findings_by_claim(text, INDEX, "OG")

    short = findings["Larkspur, 192 P.3d at 1413"]
    assert short.status == "supported", short.message
    assert short.page is not None and short.page.filename == "06-opinion-larkspur.pdf"
    again = findings["Id. at 1414"]
    assert again.status == "supported", again.message
    assert again.page is not None and again.page.filename == "06-opinion-larkspur.pdf"
    wrong = findings["Larkspur, 192 P.3d at 990"]
    assert wrong.status == "unsupported" and "1412-1414" in wrong.message


def test_a_note_at_a_pages_foot_is_a_sentence_of_its_own() -> None:
    """Notes printed at a page's foot ("1 A landlord that ...", "2 A tenant that ...") after a
    sentence that ended are sentences of their own, never the end of the sentence above: two
    notes joined would carry together words that neither states (generated seed 20's
    "Redfern, 357 A.3d at 925", a wrong pin, passed on such a joint). A line starting with a
    number inside a sentence that goes on stays in it."""
    page = (
        "A landlord that relies on an oral assurance forfeits the defense of prior breach.2 "
        "Neither party contends that the agreement is ambiguous.\n"
        "1 A landlord that relies on an oral assurance in the face of a clear contractual term "
        "forfeits the defense of prior breach.\n"
        "2 A tenant that terminates the agreement without reserving its rights forfeits the "
        "defense of prior breach.\n"
        "The rent was due on the first of each month and the tenant paid\n"
        "12 Cedar Lane Holdings the amount in full."
    )

    assert page_sentences(page) == [
        # (the note's call after the stop is no word of either sentence)
        "A landlord that relies on an oral assurance forfeits the defense of prior breach.",
        "Neither party contends that the agreement is ambiguous.",
        "1 A landlord that relies on an oral assurance in the face of a clear contractual term "
        "forfeits the defense of prior breach.",
        "2 A tenant that terminates the agreement without reserving its rights forfeits the "
        "defense of prior breach.",
        "The rent was due on the first of each month and the tenant paid 12 Cedar Lane "
        "Holdings the amount in full.",
    ]
