# ruff: noqa: E501  (drafts are text, one paragraph per line)
"""Hand-written cases written before the checks were changed and never used to tune them (see
build.py for the notation): their figures are reported, not fitted. Invented people,
companies, vessels, documents and opinions; the opinions are not real authority."""

MERIDIAN = {
    "folder": "case-meridian-cargo",
    "prefix": "TQ_",
    "start": 7700,
    "digits": 8,
    "origin": {"06-opinion-castellan.pdf": "public"},
    "documents": {
        "01-bill-of-lading.pdf": [
            """BILL OF LADING No. MSC-88213
Shipper: Orrefors Frozen Seafood AB, Gothenburg
Consignee: Pellham Provisions Inc., Baltimore
Vessel: M/V Saltire Dawn   Voyage 22W
Cargo: 1 x 40' reefer container TRKU 5521087, frozen cod fillets, 24,800 kg
Set temperature: -20 C.  Shipped on board: 4 December 2023""",
        ],
        "02-reefer-download.pdf": [
            """REEFER DATA DOWNLOAD - TRKU 5521087
Period: 04 Dec 2023 to 11 Dec 2023
Supply air held at -20 C until 08 Dec 2023 14:00.
Power off alarm 08 Dec 2023 14:06 - compressor fault code E311.""",
            """REEFER DATA DOWNLOAD - TRKU 5521087
Period: 04 Dec 2023 to 11 Dec 2023
Supply air rose to -4 C by 09 Dec 2023 06:00.
Unit restarted by ship's engineer 09 Dec 2023 11:30; set point restored.""",
        ],
        "03-survey-report.pdf": [
            """MARINE SURVEY REPORT - Halvard Brekke, Surveyor
Inspection at Baltimore terminal on 19 December 2023.
Cartons on the door end showed thaw and refreeze: drip stains and ice crystals.
Core temperatures of sampled cartons ranged from -6 C to -9 C.""",
            """MARINE SURVEY REPORT - Halvard Brekke, Surveyor
Conclusion: the cargo was exposed to temperatures above -12 C for at least 20 hours
as a result of the compressor failure. Salvage sale recommended.
Loss assessed at USD 187,340.00 less salvage of USD 22,500.00.""",
        ],
        "04-policy.pdf": [
            """OPEN CARGO POLICY No. OCP-4410 - Harwick Mutual Marine
Assured: Pellham Provisions Inc.
Clause 12. Refrigerating Machinery: This insurance covers loss of or damage to the
subject-matter insured resulting from any variation in temperature attributable to the
breakdown of refrigerating machinery resulting in its stoppage for a period of not less
than 24 consecutive hours.""",
            """OPEN CARGO POLICY No. OCP-4410 - Harwick Mutual Marine
Clause 14. Deductible: USD 10,000 each shipment.
Clause 18. Notice: The Assured shall give notice of any loss within 30 days of discovery.""",
        ],
        "05-claim-denial.pdf": [
            """HARWICK MUTUAL MARINE
January 30, 2024
Re: Claim 24-MC-0093, TRKU 5521087
We decline the claim. The reefer data shows the unit was restarted 21 hours and 24
minutes after the power off alarm, so the machinery was not stopped for 24 consecutive
hours as Clause 12 requires.
Imogen Sallis, Claims Manager""",
        ],
        "06-opinion-castellan.pdf": [
            """Castellan Foods Ltd. v. Ardent Marine Ins. Co., 77 F.4th 512 (4th Cir. 2023)
512
CASTELLAN FOODS LTD. v. ARDENT MARINE INSURANCE CO.
Before the court is whether a reefer breakdown clause requires continuous stoppage.
We hold that the clause is satisfied only by a stoppage lasting the full stated period.""",
            """Castellan Foods Ltd. v. Ardent Marine Ins. Co., 77 F.4th 512 (4th Cir. 2023)
513
Intermittent operation that fails to hold the set temperature is not a stoppage, but an
insurer that relies on a restart must show the unit in fact resumed cooling the cargo.""",
            """Castellan Foods Ltd. v. Ardent Marine Ins. Co., 77 F.4th 512 (4th Cir. 2023)
514
Ambiguities in a cargo policy are construed against the insurer that drafted them.""",
        ],
    },
    "drafts": {
        "complaint-facts.md": """FACTUAL ALLEGATIONS

14. On [[4 December 2023|date]], Orrefors shipped 24,800 kg of frozen cod fillets in container TRKU 5521087 aboard the M/V Saltire Dawn for Pellham ([[TQ_00007700|bates]]).

15. The container's supply air held at -20 C until the compressor failed on [[08 Dec 2023|date]] ([[TQ_00007701|bates]]). The supply air then rose to -4 C before the ship's engineer restarted the unit ([[TQ_00007701|bates|bates_wrong_page]]).

16. At Baltimore, surveyor Halvard Brekke found thaw and refreeze on the door-end cartons, with drip stains and ice crystals ([[TQ_00007703|bates]]). He assessed the loss at [[USD 187,340.00|amount]] less salvage of [[USD 22,500.00|amount]] (Ex. 3 at [[TQ_00007704|bates]]).

17. Brekke concluded that the cargo sat above -12 C "[[for at least 20 hours as a result of the compressor failure|quote]]" ([[TQ_00007704|bates]]). His sampled cartons had core temperatures between -6 C and -9 C ([[TQ_00007704|bates|bates_wrong_page]]).

18. Clause 12 of the Policy covers temperature damage from a breakdown of refrigerating machinery "[[resulting in its stoppage for a period of not less than 24 consecutive hours|quote]]" ([[TQ_00007705|bates]]). The Policy's deductible is [[USD 10,000|amount]] per shipment ([[TQ_00007706|bates]]).

19. Harwick denied the claim by letter of [[January 30, 2024|date]], asserting that the unit was "[[restarted 21 hours and 42 minutes after the power off alarm|quote|quote_altered]]" ([[TQ_00007707|bates]]).

20. Pellham gave notice of loss on [[December 21, 2023|date|date_not_in_source]], well within the 30 days the Policy allows ([[TQ_00007706|bates]]).

21. Pellham's net loss after salvage and the deductible is [[$154,840.00|amount|amount_not_in_source]] ([[TQ_00007704|bates]]).

22. The carrier's own stowage plan confirms the container position ([[MSC-88213|bates|bates_not_a_bates_number]]), and the temperature history is also in the survey annex at [[TQ_00007715|bates|bates_out_of_range]].
""",
        "opposition-brief.md": """## ARGUMENT

Harwick's reading of Clause 12 asks too much. [[Castellan Foods, 77 F.4th at 513|case_citation]] recognises that intermittent operation that fails to hold the set temperature is not a stoppage, but it also puts the burden on an insurer relying on a restart to show the unit "[[in fact resumed cooling the cargo|quote]]." [[Id.|case_citation]] Harwick has not made that showing: after the restart the set point was restored but nothing shows the cargo cooled ([[TQ_00007702|bates]]).

Any doubt about the clause runs against Harwick, which drafted it. [[Castellan Foods Ltd. v. Ardent Marine Ins. Co., 77 F.4th 512, 514 (4th Cir. 2023)|case_citation]]. Harwick's own letter says the clause "[[is satisfied only by machinery that never restarts|quote|quote_fabricated]]" ([[TQ_00007707|bates]]).

Harwick argues that continuous stoppage is required. [[Castellan Foods, 77 F.4th at 514|case_citation|citation_pin_cite_wrong]]. Even so, the alarm sounded at 14:06 on [[08 Dec 2023|date]] ([[TQ_00007701|bates]]) and the engineer did not restart the unit until [[10 Dec 2023|date|date_shifted]] ([[TQ_00007702|bates]]). See also [[Norrland Fisk AB v. Hale Underwriters, 912 F.3d 77, 81 (2d Cir. 2019)|case_citation|citation_not_in_packet]].

Harwick's denial relied on an internal adjuster worksheet ([[see ClaimsAI summary v2|bates|self_generated_reference]]) that is not in the record.
""",
    },
}


ASHGROVE = {
    "folder": "case-ashgrove-royalties",
    "prefix": "NOVA",
    "start": 90000,
    "digits": 6,
    "documents": {
        "01-license.pdf": [
            """PATENT LICENSE AGREEMENT
Effective Date: June 1, 2020
Licensor: Ashgrove Optics Ltd.   Licensee: Tillerman Devices Corp.
Section 3.1 Running Royalty. Licensee shall pay a royalty of four percent of Net Sales of
each Licensed Product.
Section 3.2 Minimum Royalty. The royalty for any calendar year shall be not less than
$250,000.00.""",
            """Section 4.1 Reports. Within thirty days after each calendar quarter, Licensee shall
deliver a report of Net Sales by product.
Section 4.3 Audit. Licensor may audit Licensee's books once per year on fifteen days'
notice. If the audit reveals an underpayment of more than five percent, Licensee shall
bear the cost of the audit.""",
        ],
        "02-royalty-reports.pdf": [
            """TILLERMAN DEVICES CORP. - QUARTERLY ROYALTY REPORT
Quarter: Q1 2022   Submitted: April 28, 2022
Licensed Product: LX-40 lens module   Units: 61,200   Net Sales: $2,142,000.00
Royalty at 4%: $85,680.00""",
            """TILLERMAN DEVICES CORP. - QUARTERLY ROYALTY REPORT
Quarter: Q2 2022   Submitted: July 29, 2022
Licensed Product: LX-40 lens module   Units: 58,950   Net Sales: $2,063,250.00
Royalty at 4%: $82,530.00""",
            """TILLERMAN DEVICES CORP. - QUARTERLY ROYALTY REPORT
Quarter: Q3 2022   Submitted: October 31, 2022
Licensed Product: LX-40 lens module   Units: 47,400   Net Sales: $1,659,000.00
Royalty at 4%: $66,360.00
Note: LX-44 module excluded as a non-licensed product.""",
        ],
        "03-audit-report.pdf": [
            """INDEPENDENT AUDIT OF ROYALTIES - Prewitt & Sandoval LLP
Audit period: January 1, 2022 to December 31, 2022
Finding 1: The LX-44 module uses the same patented lens stack as the LX-40 and falls
within the definition of Licensed Product.
Finding 2: Unreported LX-44 Net Sales for 2022 were $3,870,500.00.""",
            """INDEPENDENT AUDIT OF ROYALTIES - Prewitt & Sandoval LLP
Finding 3: Royalty due on unreported sales is $154,820.00, an underpayment of 41
percent of royalties reported for 2022.
Audit fees billed: $38,900.00. Report date: March 17, 2023.""",
        ],
        "04-letter.pdf": [
            """TILLERMAN DEVICES CORP.
April 10, 2023
To: Ashgrove Optics Ltd.
We dispute the auditor's conclusion. The LX-44 uses a molded aspheric element that
is not covered by any licensed claim. We will not pay the audit fees.
Signed: Corinne Abernathy, General Counsel""",
        ],
    },
    "drafts": {
        "summary-judgment-facts.md": """Statement of Undisputed Facts

- The License took effect on [[June 1, 2020|date]] and sets a running royalty of four percent of Net Sales ([[NOVA090000|bates]]).
- The minimum annual royalty is [[$250,000.00|amount]] ([[NOVA090000|bates]]).
- If an audit reveals an underpayment of more than five percent, Tillerman bears the audit cost ([[NOVA090001|bates]]).
- Tillerman reported LX-40 Net Sales of [[$2,063,250.00|amount]] for the second quarter of 2022 ([[NOVA090003|bates]]), and royalty of [[$66,360.00|amount]] for the third quarter ([[NOVA090004|bates]]).
- Its first-quarter report, submitted [[April 28, 2022|date]], showed 61,200 units ([[NOVA090002|bates]]).
- Tillerman excluded the LX-44 module as a non-licensed product ([[NOVA090003|bates|bates_wrong_page]]).
- The auditors found that the LX-44 "[[uses the same patented lens stack as the LX-40|quote]]" ([[NOVA090005|bates]]) and that unreported LX-44 Net Sales were [[$3,870,500.00|amount]] ([[NOVA090005|bates]]).
- The royalty due on unreported sales is an underpayment of 41 percent of the royalties reported ([[NOVA090005|bates|bates_wrong_page]]).
- Audit fees were [[$38,900.00|amount]] ([[NOVA090006|bates]]), and the report is dated [[March 17, 2023|date]] ([[NOVA090006|bates]]).
- Tillerman's general counsel refused to pay the audit fees by letter of [[April 10, 2023|date]] ([[NOVA090007|bates]]).
- She asserted that the LX-44 "[[uses a molded spherical element that is not covered by any licensed claim|quote|quote_altered]]" ([[NOVA090007|bates]]).
- The second-quarter report was submitted on [[July 19, 2022|date|date_shifted]] ([[NOVA090003|bates]]).
- Units shipped in the third quarter were 47,400 ([[NOVA-090004|bates]]), and royalties for the year totalled [[$412,000.00|amount|amount_not_in_source]] ([[NOVA090002|bates]]-[[NOVA090004|bates]]).
- The auditor's workpapers are at [[NOVA090011|bates|bates_out_of_range]]; the sales ledger was exported as [[NOVA_sales_2022.csv|bates|bates_not_a_bates_number]].
- Tillerman's counsel did not answer the audit notice of [[May 2, 2023|date|date_not_in_source]] ([[NOVA090007|bates]]).
""",
    },
}

CASES = [MERIDIAN, ASHGROVE]
