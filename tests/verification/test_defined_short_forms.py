"""A name the draft gives a full citation in a parenthetical right after it is that
authority's short form (Bluebook rule 4.2(b), "hereinafter"; appellate briefs name the opinion
below '(the "Opinion" or "Op.")'): "Op. at *2" is a pin of that opinion, checked against its
page like any other, and only after the definition."""

from tests.verification.packets import findings_by_claim, text_index

HEAD = "Vantreight v. Osterholt, 2024 WL 881234 (Del. Ch. Mar. 4, 2024)"
INDEX = text_index(
    "A",
    [
        (
            "08-post-trial-opinion.pdf",
            [
                f"{HEAD}\n*1\nThe manager issued the preferred units to itself on three days' "
                "notice.",
                f"{HEAD}\n*2\nThe court credits the defense expert's valuation over the "
                "plaintiff's.",
                f"{HEAD}\n*3\nThe plaintiff has not proven that she would have funded her share.",
            ],
        ),
    ],
)


def test_a_named_opinions_pins_are_checked_against_its_pages() -> None:
    text = (
        "The manager issued the units to itself on three days' notice. Vantreight v. "
        'Osterholt, 2024 WL 881234, at *1 (Del. Ch. Mar. 4, 2024) (A101) (the "Opinion" or '
        '"Op."). The court credited the defense expert\'s valuation. Op. at *2. It found that '
        "she had not proven she would have funded her share. Opinion at *3. It credited the "
        "defense expert's valuation over the plaintiff's. Op. at *1."
    )
    findings = findings_by_claim(text, INDEX, "A")

    for right in ("Op. at *2", "Opinion at *3"):
        assert findings[right].status == "supported", findings[right].message
        assert findings[right].page is not None
    wrong = findings["Op. at *1"]
    assert wrong.status != "supported", wrong.message


def test_hereinafter_names_it_too_and_the_name_before_its_definition_is_no_cite() -> None:
    text = (
        "Op. at 2 is a docket entry's name here. The court credited the defense expert's "
        "valuation over the plaintiff's. Vantreight v. Osterholt, 2024 WL 881234, at *2 (Del. "
        'Ch. Mar. 4, 2024) (hereinafter "Mem. Op."). The plaintiff had not proven that she '
        "would have funded her share. Mem. Op. at *2."
    )
    findings = findings_by_claim(text, INDEX, "A")

    assert "Op. at 2" not in findings
    assert findings["Mem. Op. at *2"].status != "supported"
