# ruff: noqa: E501  (drafts are text, one paragraph per line)
"""Hand-written cases the checks were tuned on (see build.py for the notation). Invented
people, companies, documents and opinions; the opinions are not real authority."""

ORCHARD = {
    "folder": "case-orchard-masonry",
    "prefix": "KVN",
    "start": 2001,
    "digits": 6,
    "origin": {"05-opinion-halloran.pdf": "public"},
    "documents": {
        "01-subcontract.pdf": [
            """SUBCONTRACT AGREEMENT
This Subcontract is entered into on April 2, 2021 by Brightwater Builders Co. ("Contractor")
and Tallis Masonry LLC ("Subcontractor") for the Orchard Street library project.
1. SCOPE. Subcontractor shall furnish all labor and materials for the brick veneer and
the limestone cornice described in Drawings A-201 through A-214.
2. PRICE. Contractor shall pay Subcontractor the fixed sum of $418,600.00.
Subcontract - Page 1 of 3""",
            """3. SCHEDULE. Subcontractor shall complete the brick veneer by September 30, 2021.
Time is of the essence. For each day of delay Subcontractor shall pay liquidated damages
of $1,250.00 per day.
4. RETAINAGE. Contractor shall withhold ten percent retainage from each progress payment
until final completion and acceptance by the Owner.
Subcontract - Page 2 of 3""",
            """5. CHANGES. No change in the work shall be paid unless authorized by a written change
order signed by the Contractor's project manager before the changed work begins.
6. DISPUTES. Any dispute shall first be submitted to mediation in Franklin County.
Subcontract - Page 3 of 3""",
        ],
        "02-email-osei.pdf": [
            """From: Renata Osei <rosei@brightwater.example>
To: Marcus Tallis
Date: October 14, 2021
Subject: Cornice delay
Marcus, the limestone cornice is still not set and the scaffold rental keeps running.
We will assess liquidated damages from October 1 forward. Renata""",
        ],
        "03-daily-log.pdf": [
            """DAILY LOG - ORCHARD STREET LIBRARY
Date: 09/28/2021  Weather: rain, 0.8 in.
Crew: 6 masons. Work stopped at 10:15 due to rain. Mortar covered.
Superintendent: G. Pruitt""",
            """DAILY LOG - ORCHARD STREET LIBRARY
Date: 09/29/2021  Weather: clear
Crew: 2 masons. Crane inspection failed; hoist tagged out by inspector Lyle Dunmore.
Superintendent: G. Pruitt""",
            """DAILY LOG - ORCHARD STREET LIBRARY
Date: 09/30/2021  Weather: clear
Crew: 7 masons. Cornice stones delivered cracked; 14 stones rejected.
Superintendent: G. Pruitt""",
        ],
        "04-change-order.pdf": [
            """CHANGE ORDER NO. 7
Project: Orchard Street Library   Date: August 19, 2021
Description: Substitute Indiana limestone for cast stone at the cornice.
Add to subcontract price: $36,775.00
Approved: Renata Osei, Project Manager
Produced by Owner DEF 004411""",
        ],
        "05-opinion-halloran.pdf": [
            """Halloran Stone Co. v. Pruett Constr., Inc., 341 P.3d 882 (Colo. App. 2014)
882
HALLORAN STONE CO. v. PRUETT CONSTRUCTION, INC.
Judge WEBB delivered the opinion of the court.
A subcontractor that proceeds with extra work without the written change order its contract
requires waives payment for that work, unless the contractor's conduct excused the
requirement.""",
            """Halloran Stone Co. v. Pruett Constr., Inc., 341 P.3d 882 (Colo. App. 2014)
883
An owner's delay in furnishing materials does not by itself excuse a subcontractor's late
performance where the subcontract allocates the risk of supply delays to the subcontractor.""",
            """Halloran Stone Co. v. Pruett Constr., Inc., 341 P.3d 882 (Colo. App. 2014)
884
Liquidated damages are enforceable when the anticipated damages were difficult to ascertain
and the stipulated sum was a reasonable estimate at the time of contracting.""",
        ],
    },
    "drafts": {
        "declaration-osei.md": """# DECLARATION OF RENATA OSEI

1. I am the project manager of Brightwater Builders Co. on the Orchard Street library project.

2. Brightwater and Tallis Masonry LLC signed the Subcontract on [[April 2, 2021|date]] ([[KVN002001|bates]]). The fixed price was [[$418,600.00|amount]] ([[KVN002001|bates]]).

3. Tallis had to finish the brick veneer by [[September 30, 2021|date]], and time was of the essence ([[KVN002002|bates]]). Delay cost Tallis [[$1,250.00|amount]] for each day ([[KVN002002|bates]]).

4. Ten percent of every progress payment was to be held back until the Owner accepted the work ([[KVN002003|bates|bates_wrong_page]]).

5. On [[September 29, 2021|date]] the hoist was tagged out after a failed crane inspection ([[KVN002006|bates]]). The next day fourteen cornice stones arrived cracked and were rejected ([[KVN002006|bates|bates_wrong_page]]).

6. I approved Change Order No. 7 on [[August 19, 2021|date]], adding [[$36,775.00|amount]] for Indiana limestone ([[KVN002008|bates]]). The change order was signed on [[August 12, 2021|date|date_shifted]] ([[KVN002008|bates]]).

7. I wrote to Mr. Tallis that "[[the limestone cornice is still not set and the crane rental keeps running|quote|quote_altered]]" ([[KVN002004|bates]]).

8. I told him we would assess liquidated damages "[[from October 1 forward|quote]]" ([[KVN002004|bates]]).

9. Tallis never asked for a written change order for the cornice anchors ([[DEF 004411|bates|bates_not_a_bates_number]]).

10. The rain delay on [[09/28/2021|date]] stopped the crew at 10:15 ([[KVN002005|bates]]), and the weather log for that week is at [[KVN002019|bates|bates_out_of_range]].

11. Brightwater's scaffold costs reached [[$48,210.00|amount|amount_not_in_source]] by October ([[KVN002004|bates]]).

12. The cornice delay is also described in our internal timeline ([[timeline_v3_final.docx|bates|self_generated_reference]]).
""",
        "brief-argument.md": """## ARGUMENT

### I. Tallis waived payment for the anchors.

The Subcontract forbids payment for changed work without a signed written change order issued before the work begins ([[KVN002003|bates]]). "[[A subcontractor that proceeds with extra work without the written change order its contract requires waives payment for that work|quote]]." [[Halloran Stone Co. v. Pruett Constr., Inc., 341 P.3d 882, 882 (Colo. App. 2014)|case_citation]]. Tallis proceeded anyway (see [[KVN002007|bates|bates_wrong_page]]).

### II. The supply delay is Tallis's risk.

An owner's late materials do not excuse a subcontractor whose contract puts supply risk on it. [[Halloran, 341 P.3d at 883|case_citation]]. Tallis's stones came in cracked on [[September 30, 2021|date]] ([[KVN002007|bates]]), and it bore that risk.

### III. Liquidated damages are enforceable.

A stipulated sum that was a reasonable estimate when the contract was made is enforceable. [[Halloran, 341 P.3d at 883|case_citation|citation_pin_cite_wrong]]. The parties set [[$1,250.00|amount]] per day ([[KVN002001|bates]]; [[KVN002002|bates]]). The same rule appears in [[Morrow v. Keel, 212 P.3d 100, 104 (Colo. 2009)|case_citation|citation_not_in_packet]].

Brightwater notified Tallis on [[October 14, 2021|date]] ([[KVN002004|bates]]) and the crane was back in service by [[October 2, 2021|date|date_not_in_source]] ([[KVN002006|bates]]). The hoist problem is also noted in the run log ([[see H100-NODE-3|bates|bates_not_a_bates_number]]).
""",
    },
}


CLINIC = {
    "folder": "case-linden-clinic",
    "prefix": "MED-",
    "start": 1,
    "digits": 7,
    "documents": {
        "01-triage-record.pdf": [
            """LINDEN VALLEY MEDICAL CENTER - EMERGENCY DEPARTMENT
Patient: Harold Brisco   MRN 448120   Arrival: 03/11/2023 21:42
Chief complaint: chest pressure radiating to left arm, onset 2 hours.
Triage nurse: Amy Kowalczyk, RN. Acuity: ESI 3.
Vitals: BP 168/94, HR 104, SpO2 95%.
Page 1 of 2""",
            """LINDEN VALLEY MEDICAL CENTER - EMERGENCY DEPARTMENT
Patient: Harold Brisco   MRN 448120
Waiting room reassessment 23:10: patient reports pain unchanged. No ECG obtained.
Nurse note: physician paged twice, no response from Dr. Farrow.
Page 2 of 2""",
        ],
        "02-physician-note.pdf": [
            """PHYSICIAN NOTE - Dr. Nolan Farrow
Date of service: March 12, 2023 00:55
Patient seen at 00:55. ECG shows ST elevation in leads II, III and aVF.
Impression: inferior STEMI. Cardiology consulted; catheterization lab activated at 01:20.""",
        ],
        "03-deposition-kowalczyk.pdf": [
            """DEPOSITION OF AMY KOWALCZYK, RN - June 6, 2024
Page 22
1 Q. When did you first page Dr. Farrow?
2 A. About ten after eleven, right after the reassessment.
3 Q. Did he answer?
4 A. No. I paged him again at eleven thirty.
5 Q. Did you obtain an ECG on your own?
6 A. Our protocol at the time required a physician order for that.""",
            """DEPOSITION OF AMY KOWALCZYK, RN - June 6, 2024
Page 23
1 Q. Was that protocol written down?
2 A. It was in the triage manual, the 2019 edition.
3 Q. Did anyone tell you to skip the ECG?
4 A. No. I was told the waiting room was full and the
5 doctors were with trauma patients.""",
        ],
        "04-expert-report.pdf": [
            """EXPERT REPORT OF DR. PRIYA RAMANATHAN, MD, FACC
I was retained by counsel for the plaintiff. I have reviewed the triage record, the
physician note and the deposition of Nurse Kowalczyk.
Opinion 1. The standard of care required an ECG within ten minutes of arrival for a
patient presenting with chest pressure radiating to the arm.""",
            """EXPERT REPORT OF DR. PRIYA RAMANATHAN, MD, FACC
Opinion 2. The delay of more than three hours in obtaining an ECG caused additional
myocardial damage, reducing Mr. Brisco's ejection fraction to 35 percent.
Opinion 3. Earlier reperfusion would more likely than not have preserved heart muscle.
Signed: May 2, 2024""",
        ],
        "05-billing-statement.pdf": [
            """LINDEN VALLEY MEDICAL CENTER - STATEMENT OF CHARGES
Patient: Harold Brisco   Account 7730-221
Emergency department services   $4,860.00
Cardiac catheterization         $38,415.50
Inpatient stay, 4 days          $22,900.00
Total charges                   $66,175.50
Statement date: April 20, 2023""",
        ],
    },
    "drafts": {
        "memo-liability.md": """MEMORANDUM

To: Trial team
Re: Brisco v. Linden Valley Medical Center, liability facts

Mr. Brisco arrived at the emergency department at 21:42 on [[03/11/2023|date]] with chest pressure radiating to his left arm. See [[MED-0000001|bates]]. At the reassessment at 23:10 no ECG had been obtained, and the nurse had paged Dr. Farrow twice without a response. See [[MED-0000002|bates]].

Nurse Kowalczyk testified that she paged him again "[[at eleven thirty|quote]]" and that the protocol "[[required a physician order for that|quote]]." [[MED-0000004|bates]] at 22:4-6. She also said the waiting room was full because "[[the doctors were with trauma patients|quote]]." [[MED-0000004|bates|bates_wrong_page]].

Dr. Farrow first saw the patient on [[March 12, 2023|date]] at 00:55, and the ECG showed an inferior STEMI. See [[MED-0000003|bates]]. The catheterization lab was activated at 01:20 ([[MED-0000003|bates]]).

Our expert will testify that the standard of care required an ECG "[[within ten minutes of arrival|quote]]" ([[MED-0000006|bates]]) and that the delay reduced the ejection fraction to 35 percent ([[MED-0000006|bates|bates_wrong_page]]). Her report is dated [[May 2, 2024|date]] ([[MED-0000007|bates]]).

Damages: the hospital billed [[$66,175.50|amount]] in total ([[MED-0000008|bates]]), including [[$38,415.50|amount]] for the catheterization ([[MED-0000008|bates]]) and [[$24,900.00|amount|amount_altered]] for the inpatient stay ([[MED-0000008|bates]]). The statement is dated [[April 20, 2023|date]] ([[MED-0000008|bates]]).

The triage nurse's notes are also in [[MED-0000012|bates|bates_out_of_range]]. The earlier case assessment prepared for this memo reached the same view ([[prior memo draft, p. 3|bates|self_generated_reference]]).
""",
        "brief-facts.md": """STATEMENT OF FACTS

Harold Brisco came to Linden Valley's emergency department complaining of chest pressure ([[MED-0000001|bates]]; [[MED-0000002|bates]]). Triage nurse Amy Kowalczyk assigned acuity ESI 3 ([[MED-0000002|bates|bates_wrong_page]]).

No ECG was done at the reassessment, and Dr. Farrow did not answer two pages ([[MED-0000002|bates]]). Kowalczyk explained: "[[Our protocol at the time required a physician order for that|quote]]." ([[MED-0000004|bates]] at 22:6.) The protocol was in "[[the triage manual, the 2021 edition|quote|quote_altered]]" ([[MED-0000005|bates]]).

By the time Dr. Farrow saw him on [[March 13, 2023|date|date_shifted]] ([[MED-0000003|bates]]), the ECG showed ST elevation in leads II, III and aVF ([[MED-0000003|bates]]).

Dr. Ramanathan concludes that "[[earlier reperfusion would more likely than not have preserved heart muscle|quote]]" ([[MED-0000007|bates]]) and that the nurse "[[should have ordered the ECG without waiting for a physician|quote|quote_fabricated]]" ([[MED-0000006|bates]]).

The emergency department charges alone were [[$4,860.00|amount]] ([[MED-0000008|bates]]); the hospital has since written off [[$12,000.00|amount|amount_not_in_source]] ([[MED-0000008|bates]]). Charges were pulled from the billing export ([[Account 7730-221.xlsx|bates|bates_not_a_bates_number]]).
""",
    },
}


WRENFIELD = {
    "folder": "case-wrenfield-retaliation",
    "prefix": "ARL ",
    "start": 450,
    "digits": 6,
    "documents": {
        "01-review-2021.pdf": [
            """WRENFIELD LOGISTICS - ANNUAL PERFORMANCE REVIEW 2021
Employee: Dolores Achebe   Position: Dispatch Supervisor   Manager: Kyle Varnum
Overall rating: Exceeds Expectations
Strengths: reduced late deliveries by 18 percent; trained four new dispatchers.
Merit increase approved: $3,400.00 effective January 1, 2022.""",
        ],
        "02-review-2022.pdf": [
            """WRENFIELD LOGISTICS - ANNUAL PERFORMANCE REVIEW 2022
Employee: Dolores Achebe   Position: Dispatch Supervisor   Manager: Kyle Varnum
Overall rating: Meets Expectations
Strengths: handled the peak season with two vacancies on the team.
Merit increase approved: $1,900.00 effective January 1, 2023.""",
        ],
        "03-hotline-complaint.pdf": [
            """ETHICS HOTLINE REPORT No. 2023-0417
Received: February 9, 2023   Channel: web form
Reporter: Dolores Achebe (not anonymous)
Summary: Reporter states that drivers were told to falsify hours-of-service logs to
meet delivery windows, and that her manager Kyle Varnum instructed dispatchers to
ignore the fourteen-hour limit.""",
        ],
        "04-emails.pdf": [
            """From: Kyle Varnum
To: HR Business Partner Tessa Lund
Sent: February 21, 2023 4:02 PM
Subject: Dispatch restructuring
Tessa - after the hotline thing I think we restructure dispatch and eliminate the
supervisor role. Let's move quickly on this. Kyle""",
            """From: Tessa Lund
To: Kyle Varnum
Sent: February 22, 2023 9:15 AM
Subject: RE: Dispatch restructuring
Kyle, please do not reference the hotline report in any restructuring discussion. Legal
needs to review before any decision affecting the reporter. Tessa""",
        ],
        "05-termination-letter.pdf": [
            """WRENFIELD LOGISTICS
March 15, 2023
Dear Ms. Achebe:
Your position of Dispatch Supervisor has been eliminated as part of a restructuring,
effective March 31, 2023. You will receive severance of $9,250.00 upon signing the
enclosed release. Sincerely, Kyle Varnum""",
        ],
    },
    "drafts": {
        "demand-letter.md": """Dear Counsel:

We represent Dolores Achebe. Ms. Achebe's 2021 review rated her "[[Exceeds Expectations|quote]]" and approved a merit increase of [[$3,400.00|amount]] ([[ARL 000450|bates]]). Her 2022 review approved a merit increase of [[$1,900.00|amount]] ([[ARL 000451|bates]]) and noted that she handled peak season with two vacancies ([[ARL 000450|bates|bates_wrong_page]]).

On [[February 9, 2023|date]], Ms. Achebe reported to the ethics hotline that drivers were told to falsify hours-of-service logs ([[ARL 000452|bates]]). Twelve days later, Mr. Varnum wrote to HR that "[[after the hotline thing I think we restructure dispatch and eliminate the supervisor role|quote]]" ([[ARL-000453|bates]]). HR's response the next morning told him not to reference the hotline report ([[ARL000453|bates|bates_wrong_page]]).

Ms. Achebe's position was eliminated by letter dated [[March 15, 2023|date]], effective [[March 31, 2023|date]] ([[ARL 000455|bates]]), with severance of [[$9,250.00|amount]] conditioned on a release ([[ARL 000455|bates]]).

The timing speaks for itself. Mr. Varnum asked HR to "[[move quickly on this|quote]]" ([[ARL 000453|bates]]). HR warned that "[[Legal needs to review before any decision affecting the employee|quote|quote_altered]]" ([[ARL 000454|bates]]).

Ms. Achebe's lost wages through trial exceed [[$86,000.00|amount|amount_not_in_source]] ([[ARL 000455|bates]]). Her complaint was logged as [[ARL 2023-0417|bates|bates_not_a_bates_number]], and the hotline's records run through [[ARL 000461|bates|bates_out_of_range]].

Very truly yours,
""",
    },
}

CASES = [ORCHARD, CLINIC, WRENFIELD]
