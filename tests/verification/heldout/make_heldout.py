# ruff: noqa: E501  (the sources and drafts are text, one line of a page or paragraph per line)
"""Write the verifier's held-out evaluation set (this folder) in the format of
../shared/eval/verifier/ (its README describes it): three cases of our own invention, with
other prefixes than the dev set's (a hyphenated one and 7 digits from 120; 6 digits from 3001;
an underscore and 8 digits from 40), text-layer PDFs made with PyMuPDF and one scanned page per
case, drafts with labelled claims of every error kind, ranges, and wrong-page cites whose words
the wrong page shares while the distinctive facts are on another page. The third case holds
year-less dates, references to lexweb's work in running prose and junk cites with few digits.

Every person, company, vessel, document and opinion here is invented; the opinions are not
real authority. Deterministic: `python tests/verification/heldout/make_heldout.py` rewrites the
same files.

Drafts are written with inline marks: `{kind|error|text}` is a labelled claim (error "none":
supported), the mark replaced by its text. Kinds are the README's: bates, date, amount, quote
(the words inside the quotation marks), case_citation.
"""

import json
import re
import sys
from pathlib import Path

import pymupdf

HERE = Path(__file__).resolve().parent
MARK = re.compile(r"\{(bates|date|amount|quote|case_citation)\|([a-z_]+)\|([^{}]+)\}")

CASES = [
    {
        "folder": "case-saltwren-charter",
        "title": "Brannock Marine Supply LLC v. Tideline Charters Inc.",
        "court": "United States District Court for the Central District of California",
        "case_number": "2:24-cv-03391",
        "prefix": "BMS-",
        "start": 120,
        "digits": 7,
        "documents": [
            (
                "01-charter-agreement.pdf",
                "client",
                False,
                [
                    """BAREBOAT CHARTER AGREEMENT
Date: April 18, 2023
Owner: BRANNOCK MARINE SUPPLY LLC ("Owner")
Charterer: TIDELINE CHARTERS INC. ("Charterer")
Vessel: M/V Saltwren, a 58-foot motor yacht, hull no. BRX-58-0192
1. TERM. The charter runs from May 1, 2023 through October 31, 2023.
2. CHARTER HIRE. Charterer shall pay charter hire of $18,750.00 per month, in advance,
on the first business day of each month.
3. SECURITY DEPOSIT. Charterer has deposited $40,000.00 with Owner as security for the
performance of this Agreement.
4. MAINTENANCE. Charterer shall keep the engines serviced at intervals of no more than
250 running hours and shall log every service in the vessel's maintenance book.
Saltwren Charter - Page 1 of 2""",
                    """5. RETURN OF VESSEL. Charterer shall redeliver the Vessel at Harbor Slip 14, Ventana
Marina, in the same condition as delivered, ordinary wear excepted.
6. DAMAGE. Charterer is liable for all damage to the Vessel caused by its failure to
maintain the engines as required by Section 4.
7. CLAIMS. Any claim for damage must be made in writing within twenty-one (21) days
after redelivery.
8. GOVERNING LAW. This Agreement is governed by the general maritime law and, where it
is silent, by the laws of the State of California.
OWNER: /s/ Delphine Brannock, Managing Member
CHARTERER: /s/ Rafael Okonkwo-Reyes, President
Saltwren Charter - Page 2 of 2""",
                ],
            ),
            (
                "02-service-log.pdf",
                "client",
                True,
                [
                    """SALTWREN MAINTENANCE BOOK - ENGINE SERVICE LOG
Date  Engine hours  Work done  By
05/02/2023  1,104  oil and filters, both engines  R. Okonkwo-Reyes
06/14/2023  1,338  oil and filters, both engines  Ventana Diesel
Next service due at 1,588 hours.""",
                ],
            ),
            (
                "03-emails.pdf",
                "client",
                False,
                [
                    """From: Rafael Okonkwo-Reyes <rafael@tidelinecharters.com>
To: Delphine Brannock <delphine@brannockmarine.com>
Date: August 22, 2023, 6:41 AM
Subject: Saltwren port engine
Delphine, the port engine alarm went off near Anacapa Island and the temperature kept
climbing, so we shut it down and came home on the starboard engine. The guests were
refunded for the lost day. We will have someone look at the port engine this week.
Rafael""",
                    """From: Delphine Brannock <delphine@brannockmarine.com>
To: Rafael Okonkwo-Reyes <rafael@tidelinecharters.com>
Date: August 23, 2023, 9:02 AM
Subject: RE: Saltwren port engine
Rafael, please do not run the port engine again until our surveyor has inspected it. The
charter requires service every 250 hours and I see no entry in the maintenance book since
June. Please send me the log.
Delphine""",
                ],
            ),
            (
                "04-survey-report.pdf",
                "client",
                False,
                [
                    """MARINE SURVEY REPORT
Vessel: M/V Saltwren  Surveyor: Ines Halvorsen, AMS  Inspection: September 6, 2023
Findings - port engine
The raw-water impeller had lost five of its six vanes; fragments were lodged in the heat
exchanger, which restricted cooling flow. The engine overheated, and the cylinder head
gasket failed. The hour meter read 1,797 hours.
Halvorsen Marine Surveys - Page 1 of 2""",
                    """Opinion of cause
In my opinion the failure resulted from running the engine well past its service interval.
An impeller of this type should be replaced at every 250-hour service.
Estimated cost of repair: $61,380.00, including haul-out, new head gasket and heat exchanger.
/s/ Ines Halvorsen, Accredited Marine Surveyor
Halvorsen Marine Surveys - Page 2 of 2""",
                ],
            ),
            (
                "05-opinion-pellham.pdf",
                "public",
                False,
                [
                    """Pellham Yachts, Inc. v. Corvo Charters, LLC, 41 F.4th 880 (9th Cir. 2022)
880
PELLHAM YACHTS, INC. v. CORVO CHARTERS, LLC
Before: WENDT, ALCOTT and MARSH, Circuit Judges.
A bareboat charterer takes the vessel into its possession and control and stands in the
owner's shoes for the voyage; it bears the duty to maintain the vessel that the charter
places on it.""",
                    """Pellham Yachts, Inc. v. Corvo Charters, LLC, 41 F.4th 880 (9th Cir. 2022)
881
Where a charterer fails to perform maintenance that the charter requires and the vessel is
damaged as a result, the charterer is liable for the cost of repair, and the owner need not
prove negligence beyond the breach of the maintenance covenant.""",
                ],
            ),
        ],
        "drafts": {
            "declaration-brannock.md": """# DECLARATION OF DELPHINE BRANNOCK

I, Delphine Brannock, declare:

1. I am the managing member of Brannock Marine Supply LLC, which owns the motor yacht Saltwren.

2. On {date|none|April 18, 2023}, Brannock chartered the Saltwren to Tideline Charters Inc. under a bareboat charter ({bates|none|BMS-0000120}). The charter ran through {date|none|October 31, 2023} ({bates|none|BMS-0000120}).

3. Tideline agreed to pay hire of {amount|none|$18,750.00} per month (Ex. 1 at {bates|none|BMS-0000120}) and posted a security deposit of {amount|amount_altered|$45,000.00} ({bates|none|BMS-0000120}).

4. The charter obliged Tideline to have the engines serviced at least every 250 running hours and to record each service in the maintenance book ({bates|none|BMS-0000120}).

5. The maintenance book records the last service on {date|none|June 14, 2023} ({bates|none|BMS-0000122}).

6. On {date|date_shifted|August 21, 2023}, Tideline's president wrote that "{quote|none|the port engine alarm went off near Anacapa Island and the temperature kept climbing}" ({bates|none|BMS-0000123}).

7. The next morning I told him "{quote|quote_altered|please do not run the port engine again until our surveyor has examined it}" ({bates|none|BMS-0000124}).

8. The surveyor found that the raw-water impeller had lost most of its vanes and that the port engine overheated as a result ({bates|bates_wrong_page|BMS-0000123}).

9. She attributed the failure to running the engine far beyond its service interval ({bates|none|BMS-0000126}) and estimated the repair at {amount|none|$61,380.00} ({bates|none|BMS-0000126}).

10. I made a written claim for the damage on {date|date_not_in_source|September 12, 2023}, within the twenty-one days the charter allows ({bates|none|BMS-0000121}).

11. Tideline's president later conceded that "{quote|quote_fabricated|nobody on my crew had serviced the engines since the spring}" ({bates|none|BMS-0000123}).

12. Tideline also owes {amount|amount_not_in_source|$7,215.50} in unpaid dockage at Ventana Marina.

13. The complete survey is attached ({bates|none|BMS-0000125}-{bates|bates_out_of_range|BMS-0000131}).

14. The hull number appears in the earlier intake notes ({bates|self_generated_reference|intake summary draft v2}).
""",
            "motion-liability.md": """## ARGUMENT

### A. Tideline, as bareboat charterer, owed the duty to maintain the engines.

A bareboat charterer "{quote|none|stands in the owner's shoes for the voyage}" and bears the maintenance duty the charter gives it. {case_citation|none|Pellham Yachts, Inc. v. Corvo Charters, LLC, 41 F.4th 880, 880 (9th Cir. 2022)}. The Saltwren charter gave Tideline that duty in terms: engines serviced every 250 running hours, each service logged ({bates|none|BMS-0000120}).

### B. Tideline breached it, and the breach caused the loss.

The log shows no service after June (Ex. 2 at {bates|none|BMS-0000122}), although the engine had run to 1,797 hours by the survey ({bates|none|BMS-0000125}). The surveyor traced the overheating to a worn impeller that should have been replaced at the 250-hour service ({bates|bates_wrong_page|BMS-0000124}). A charterer that skips required maintenance is liable for the repair without further proof of negligence. {case_citation|none|Pellham, 41 F.4th at 881}. The same court held that the owner must also show the charterer's gross negligence. {case_citation|citation_pin_cite_wrong|Id. at 886}.

Courts elsewhere agree. See {case_citation|citation_not_in_packet|Marlowe v. Keel & Anchor Co., 602 F.3d 211, 215 (5th Cir. 2010)}.

### C. Damages.

Repair is estimated at {amount|none|$61,380.00} ({bates|none|BMS-0000126}), and the hire of {amount|none|$18,750.00} a month ran from {date|none|May 1, 2023} ({bates|none|BMS-0000120}). The survey is the best evidence of the loss ({bates|none|BMS-0000125}-{bates|none|BMS-0000126}). The refund to the guests on the lost day is documented too ({bates|bates_not_a_bates_number|A100}).

Nothing in the record supports the figure of {amount|amount_not_in_source|$12,940.00} for lost charters that Tideline asserts ({bates|bates_out_of_range|BMS-0000119}).
""",
        },
    },
    {
        "folder": "case-fernhill-addition",
        "title": "Ostrander v. Velloria Home Builders Inc.",
        "court": "Circuit Court of the State of Oregon for Deschutes County",
        "case_number": "24CV55102",
        "prefix": "OVH",
        "start": 3001,
        "digits": 6,
        "documents": [
            (
                "01-construction-contract.pdf",
                "client",
                False,
                [
                    """RESIDENTIAL CONSTRUCTION CONTRACT
Date: February 6, 2024
Owner: MARGIT OSTRANDER, 4417 Fernhill Road, Bend, Oregon
Contractor: VELLORIA HOME BUILDERS INC.
1. WORK. Contractor shall build a two-story addition with a primary suite and a covered
deck, per plans dated January 19, 2024.
2. PRICE. The contract price is $184,600.00, payable in draws as the work progresses.
3. COMPLETION. Contractor shall substantially complete the work by August 30, 2024.
4. DELAY. For each day of delay past the completion date, Contractor shall credit Owner
$150.00 as liquidated damages, up to a total of $9,000.00.
Ostrander Addition Contract - Page 1 of 2""",
                    """5. CHANGE ORDERS. No change to the work or the price is valid unless it is written and
signed by both parties before the changed work begins.
6. WARRANTY. Contractor warrants its workmanship for two (2) years after completion.
7. DISPUTES. The parties shall mediate any dispute before filing suit.
OWNER: /s/ Margit Ostrander
CONTRACTOR: /s/ Teodor Velloria, President
Ostrander Addition Contract - Page 2 of 2""",
                ],
            ),
            (
                "02-draw-ledger.pdf",
                "client",
                False,
                [
                    """VELLORIA HOME BUILDERS - DRAW LEDGER - OSTRANDER ADDITION
Draw  Date  Amount  Status
1  03/01/2024  36,920.00  paid 03/04/2024
2  05/01/2024  46,150.00  paid 05/09/2024
3  07/01/2024  46,150.00  paid 07/12/2024
4  09/03/2024  55,380.00  withheld by owner
Balance of contract price: 55,380.00""",
                ],
            ),
            (
                "03-text-messages.pdf",
                "client",
                True,
                [
                    """Messages with Teodor Velloria
Aug 27, 2024 4:52 PM Teodor: The trusses for the deck roof came in wrong. Supplier
says three weeks for new ones. I'm sorry.
Aug 27, 2024 5:10 PM Margit: Three weeks? You promised me it would be done before my
mother moves in.
Sep 18, 2024 8:03 AM Teodor: Crew is back Monday. We will finish the deck and the
punch list by October 4.""",
                ],
            ),
            (
                "04-inspection-report.pdf",
                "client",
                False,
                [
                    """CITY OF BEND - BUILDING SAFETY DIVISION
FINAL INSPECTION REPORT  Permit B-24-00817
Address: 4417 Fernhill Road  Inspector: Lucia Pardo  Date: October 22, 2024
Result: NOT APPROVED
1. The deck ledger board is fastened with nails only; lag screws or through-bolts are
required.
2. The guardrail on the deck stair is 34 inches high; 36 inches is the minimum.""",
                    """3. The bathroom exhaust fan in the primary suite vents into the attic, not to the
exterior.
Corrections must be made and a re-inspection requested within 30 days.
Re-inspection fee: $95.00.""",
                ],
            ),
            (
                "05-opinion-harrow.pdf",
                "public",
                False,
                [
                    """Harrow v. Kinsale Builders, Inc., 318 Or. App. 402 (2022)
402
HARROW v. KINSALE BUILDERS, INC.
Before ORTEGA, Presiding Judge, and LINDLEY and PRUETT, Judges.
A liquidated damages clause in a construction contract is enforceable when the amount
was a reasonable forecast of the owner's harm from delay and that harm was hard to
estimate.""",
                    """Harrow v. Kinsale Builders, Inc., 318 Or. App. 402 (2022)
403
An owner who withholds a progress payment because of defective work does not breach
the contract if the defects were material and the contractor had notice of them.""",
                ],
            ),
        ],
        "drafts": {
            "owner-brief.md": """# OWNER'S TRIAL MEMORANDUM

## Facts

Margit Ostrander hired Velloria Home Builders Inc. on {date|none|February 6, 2024} to build a two-story addition for {amount|none|$184,600.00} ({bates|none|OVH003001}). Velloria promised substantial completion by {date|date_shifted|August 31, 2024} ({bates|none|OVH003001}), and agreed to credit {amount|none|$150.00} for each day of delay ({bates|none|OVH003001}).

Ms. Ostrander paid the first three draws: {amount|none|$36,920.00} on {date|none|March 4, 2024} and {amount|amount_altered|$46,510.00} on {date|none|May 9, 2024} ({bates|none|OVH003003}). She withheld the fourth draw ({bates|none|OVH003003}).

On {date|none|August 27}, Velloria's president admitted that the deck trusses "{quote|none|came in wrong}" and that new ones would take three weeks ({bates|none|OVH003004}). Ms. Ostrander answered that "{quote|quote_altered|You promised me it would be finished before my mother moves in}" ({bates|none|OVH003004}).

The city refused final approval: the deck ledger was nailed rather than bolted and the stair guardrail was two inches too low ({bates|bates_wrong_page|OVH003006}). The exhaust fan of the primary suite vented into the attic ({bates|none|OVH003006}). The city charged a re-inspection fee of {amount|none|$95.00} ({bates|none|OVH003006}).

## Argument

The delay credit is enforceable: it was "{quote|none|a reasonable forecast of the owner's harm from delay}" when the contract was signed. {case_citation|none|Harrow v. Kinsale Builders, Inc., 318 Or. App. 402, 402 (2022)}. An owner who withholds a draw for material defects of which the contractor knew does not breach. {case_citation|none|Id. at 403}. The inspector listed the defects: the deck ledger, the stair guardrail and the exhaust fan ({bates|none|OVH003005}-{bates|none|OVH003006}).

Velloria relies on an oral change order, but the contract requires every change to be in writing and signed by both parties ({bates|bates_wrong_page|OVH003001}). Velloria's reliance on {case_citation|citation_not_in_packet|Dunmore Homes, Inc. v. Peck, 287 Or. App. 77, 81 (2017)} is misplaced; that case concerned a written change order. Harrow itself says an owner "{quote|quote_fabricated|forfeits the delay credit by withholding any payment}". {case_citation|citation_pin_cite_wrong|Harrow, 318 Or. App. at 409}.
""",
            "letter-to-counsel.md": """Dear Counsel,

Your client's contract is plain: "{quote|none|No change to the work or the price is valid unless it is written and signed by both parties}" ({bates|none|OVH003002}). Its completion clause reads: “{quote|none|Contractor shall substantially complete the work by August 30, 2024}” ({bates|none|OVH003001}). The contract was made on the {date|none|6th day of February, 2024} ({bates|none|OVH003001}).

Ms. Ostrander paid the first draw of {amount|none|USD 36,920} on time (Ex. 2 at {bates|none|OVH003003}). The fourth draw was withheld ({bates|none|OVH003003}). She has not paid it since ({bates|none|OVH003003}).

Mr. Velloria's own message says: "{quote|none|The trusses for the deck roof came in wrong. Supplier says three weeks for new ones}" ({bates|none|OVH003004}). On {date|none|2024-09-18} he promised that "{quote|none|[c]rew is back Monday}" and that "{quote|none|We will finish the deck . . . by October 4}" ({bates|none|OVH003004}).

The inspector found the ledger only nailed, although "{quote|none|lag screws or through-bolts are required}" ({bates|none|OVH003005}). The report also requires that "{quote|quote_altered|Corrections must be made and a re-inspection requested within 60 days}" ({bates|none|OVH003006}).

The contract warrants the workmanship for two years after completion ({bates|bates_wrong_page|OVH003001}).

Withholding a draw for defective work is no breach: "{quote|none|An owner who withholds a progress payment because of defective work does not breach the contract}" when the defects are material. {case_citation|none|Harrow v. Kinsale Builders, Inc., 318 Or. App. 402, 403 (2022)}.

Sincerely,
Counsel for Margit Ostrander
""",
            "timeline.md": """# Timeline (Ostrander v. Velloria)

- {date|none|January 19, 2024}: plans for the addition ({bates|none|OVH003001}).
- Contract price {amount|none|$184,600.00}; delay credit capped at {amount|none|$9,000.00} ({bates|none|OVH003001}).
- {date|none|07/12/2024}: third draw paid ({bates|none|OVH003003}).
- Fourth draw of {amount|none|$55,380.00} withheld ({bates|none|OVH003003}).
- {date|none|Sep. 18, 2024}: Velloria says the crew is back and the punch list will be done by {date|date_not_in_source|October 11, 2024} ({bates|none|OVH003004}).
- {date|none|October 22, 2024}: final inspection not approved; inspector Lucia Pardo ({bates|none|OVH003005}).
- Warranty: two years of workmanship after completion ({bates|none|OVH003002}).
- Full production: {bates|none|OVH003001}-{bates|bates_out_of_range|OVH003011}.
- Mediation is required before suit ({bates|none|OVH003002}).
- Days of delay counted ({bates|self_generated_reference|lexweb timeline summary v1}).
- Permit number confirmed ({bates|bates_not_a_bates_number|RTX 4090}).
- Balance owed: {amount|amount_not_in_source|$61,420.00}.
""",
        },
    },
    {
        "folder": "case-halvex-colocation",
        "title": "Brightwater Analytics LLC v. Halvex Data Centers Inc.",
        "court": "United States District Court for the District of Nevada",
        "case_number": "3:24-cv-00618",
        "prefix": "HLX_",
        "start": 40,
        "digits": 8,
        "documents": [
            (
                "01-colocation-agreement.pdf",
                "client",
                False,
                [
                    """COLOCATION SERVICES AGREEMENT
Date: January 9, 2024
Provider: HALVEX DATA CENTERS INC. ("Halvex")
Customer: BRIGHTWATER ANALYTICS LLC ("Customer")
1. SPACE AND POWER. Halvex provides eight racks in Hall C of its Reno facility, each with
two independent power feeds of 17.3 kW.
2. FEES. Customer shall pay a monthly service fee of $14,200.00, invoiced on the first day
of each month.
3. POWER AVAILABILITY. Halvex guarantees power availability of 100% to each rack with
both feeds connected.
Halvex Colocation Agreement - Page 1 of 2""",
                    """4. SERVICE CREDITS. For each full 30 minutes of power loss to a rack, Customer receives a
credit of 5% of the monthly service fee, up to 50% in any month.
5. NOTICE. Customer must request a credit in writing within ten (10) business days after
the power loss.
6. LIMITATION. Service credits are Customer's sole remedy for a power loss.
HALVEX: /s/ Corinne Adebayo-Lund, VP Operations
CUSTOMER: /s/ Milo Trevanian, Chief Technology Officer
Halvex Colocation Agreement - Page 2 of 2""",
                ],
            ),
            (
                "02-noc-log.pdf",
                "client",
                False,
                [
                    """HALVEX NOC SHIFT LOG - RENO HALL C
Oct 11 02:14 UPS bank C2 fault alarm; racks C-14 through C-19 lost both feeds.
Oct 11 03:40 Power restored to racks C-14 through C-19 after transfer to bank C3.
Oct 14 09:00 Root cause review opened, ticket NOC-5521 (battery string failure).
Logged by: shift lead P. Osei""",
                ],
            ),
            (
                "03-emails.pdf",
                "client",
                False,
                [
                    """From: Milo Trevanian <milo@brightwater-analytics.com>
To: Corinne Adebayo-Lund <cadebayo@halvex.net>
Date: October 12, 2024, 8:05 AM
Subject: Hall C power loss
Corinne, our training cluster in Hall C went dark for 86 minutes early yesterday. Six
of our eight racks lost both feeds at once, which your agreement says cannot happen.
We lost a four-day training run. Please treat this as our written request for credits.
Milo""",
                    """From: Corinne Adebayo-Lund <cadebayo@halvex.net>
To: Milo Trevanian <milo@brightwater-analytics.com>
Date: October 15, 2024, 4:30 PM
Subject: RE: Hall C power loss
Milo, we confirm the loss of power to racks C-14 through C-19. A battery string in UPS
bank C2 failed during a routine transfer. Under Section 4 we will apply a credit of
$2,840.00 to your November invoice. We regret the disruption.
Corinne""",
                ],
            ),
            (
                "04-invoice.pdf",
                "client",
                True,
                [
                    """HALVEX DATA CENTERS INC. - INVOICE 24-1187
Invoice date: 11/01/2024
Customer: Brightwater Analytics LLC
Monthly service fee, November 2024    14,200.00
Service credit, Hall C power loss    -2,840.00
Total due $11,360.00""",
                ],
            ),
        ],
        "drafts": {
            "demand-letter.md": """Dear Ms. Adebayo-Lund,

We write for Brightwater Analytics LLC about the loss of power in Hall C of your Reno facility on {date|none|October 11}.

Under the agreement of {date|none|January 9, 2024}, Halvex guaranteed power availability of 100% to each rack with both feeds connected ({bates|none|HLX_00000040}). The monthly service fee is {amount|none|$14,200.00} ({bates|none|HLX_00000040}).

On {date|none|Oct. 11th}, a fault in UPS bank C2 cut both feeds to racks C-14 through C-19 ({bates|none|HLX_00000042}). Power was restored after a transfer to bank C3 ({bates|none|HLX_00000042}). Halvex opened its root cause review on {date|date_shifted|October 16} ({bates|none|HLX_00000042}).

Mr. Trevanian asked for credits in writing on {date|none|Oct. 12th}, the day after the outage ({bates|none|HLX_00000043}). He wrote that the cluster "{quote|none|went dark for 86 minutes early yesterday}" ({bates|none|HLX_00000043}). Your reply of {date|none|October 15, 2024} confirmed that "{quote|quote_altered|a battery string in UPS bank C2 failed during a scheduled transfer}" ({bates|none|HLX_00000044}) and offered a credit of {amount|amount_altered|$2,480.00} ({bates|none|HLX_00000044}).

The October 11 loss cost Brightwater a four-day training run on six of its eight racks ({bates|bates_wrong_page|HLX_00000041}). Halvex's own capacity plan shows that the hall was overloaded ({bates|bates_not_a_bates_number|A100 80GB}), and the failed racks held the training nodes ({bates|bates_not_a_bates_number|GPU-7}).

The credit schedule (Section 4) and the sole-remedy clause ({bates|none|HLX_00000041}) do not excuse a breach of the 100% guarantee. As the {bates|self_generated_reference|earlier memo generated by lexweb} says, the guarantee is absolute. According to the {bates|self_generated_reference|lexweb incident summary v2}, the credit owed is larger.

The November invoice applied the credit and billed {amount|none|$11,360.00} ({bates|none|HLX_00000045}). Brightwater's lost compute time is worth {amount|amount_not_in_source|$48,600.00}. The full production is {bates|none|HLX_00000040}-{bates|bates_out_of_range|HLX_00000052}.

Halvex promised its written root cause report by {date|date_not_in_source|November 30}. Nothing in its letter of {date|none|October 15} says otherwise ({bates|none|HLX_00000044}).

Sincerely,
Counsel for Brightwater Analytics LLC
""",
            "incident-chronology.md": """# Chronology (Brightwater v. Halvex)

- {date|none|January 9, 2024}: colocation agreement signed ({bates|none|HLX_00000040}).
- {date|none|Oct 11}, 02:14: UPS bank C2 fault; racks C-14 through C-19 lost both feeds ({bates|none|HLX_00000042}).
- {date|none|Oct 11}, 03:40: power restored after a transfer to bank C3 ({bates|none|HLX_00000042}).
- {date|date_shifted|Oct 13}: root cause review opened, ticket NOC-5521 ({bates|none|HLX_00000042}).
- {date|none|October 12, 2024}: Trevanian's written request for credits ({bates|none|HLX_00000043}).
- {date|none|October 15}: Halvex confirms the battery string failure and offers a credit of {amount|none|$2,840.00} ({bates|none|HLX_00000044}).
- Invoice of {date|none|11/01/2024} applies the credit ({bates|none|HLX_00000045}).
- Credit requests must be made in writing within ten business days ({bates|bates_wrong_page|HLX_00000040}).
- Outage length, per the {bates|self_generated_reference|lexweb timeline summary v1}: two hours.
- Rack hardware ({bates|bates_not_a_bates_number|H100 SXM5}).
- Power feeds: two per rack, 17.3 kW each ({bates|none|HLX_00000040}); notice under Rule 56 is not at issue (Form 10-K).
""",
        },
    },
]


def _pdf(pages: list[str], scanned: bool) -> tuple[bytes, list[str]]:
    """The PDF of `pages` (one line of text per line) and each page's text as read back."""
    with pymupdf.open() as pdf:
        pdf.set_metadata({"producer": "lexweb heldout", "creationDate": "", "modDate": ""})
        for text in pages:
            page = pdf.new_page(width=612, height=792)
            page.insert_text((54, 72), text, fontsize=10, fontname="helv", lineheight=1.5)
            if scanned:
                pixmap = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
                pdf.delete_page(-1)
                scan = pdf.new_page(width=612, height=792)
                scan.insert_image(scan.rect, stream=pixmap.tobytes("png"))
        data = pdf.tobytes(garbage=3, deflate=True, no_new_id=True)
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        read = [page.get_text().strip() for page in pdf]
    return data, (pages if scanned else read)


def _draft(marked: str, name: str) -> tuple[str, list[dict[str, object]]]:
    text, labels, at, seen = "", [], 0, {}
    pieces: list[tuple[int, int, str, str, str]] = []
    for match in MARK.finditer(marked):
        text += marked[at : match.start()]
        kind, error, claim = match.groups()
        pieces.append((len(text), len(text) + len(claim), kind, error, claim))
        text += claim
        at = match.end()
    text += marked[at:]
    for start, end, kind, error, claim in pieces:
        occurrence, i = 0, -1
        while True:
            i = text.find(claim, i + 1)
            occurrence += 1
            if i == start:
                break
        seen[claim] = occurrence
        labels.append(
            {
                "draft": f"drafts/{name}",
                "kind": kind,
                "text": claim,
                "occurrence": occurrence,
                "supported": error == "none",
                "error": error,
                "start": start,
                "end": end,
            }
        )
    return text, labels


def write(root: Path = HERE) -> None:
    for case in CASES:
        folder = root / case["folder"]
        (folder / "sources").mkdir(parents=True, exist_ok=True)
        (folder / "drafts").mkdir(exist_ok=True)
        number, bates_map, page_text = case["start"], [], []
        for name, _origin, scanned, pages in case["documents"]:
            data, read = _pdf(pages, scanned)
            (folder / "sources" / name).write_bytes(data)
            for page, text in enumerate(read, 1):
                label = f"{case['prefix']}{number:0{case['digits']}d}"
                bates_map.append(
                    {"bates": label, "document": name, "page": page, "image_only": scanned}
                )
                page_text.append({"bates": label, "text": text})
                number += 1
        meta = {
            "title": case["title"],
            "court": case["court"],
            "case_number": case["case_number"],
            "bates_prefix": case["prefix"],
            "bates_start": case["start"],
            "bates_digits": case["digits"],
            "documents": [d[0] for d in case["documents"]],
            "origin": {d[0]: d[1] for d in case["documents"]},
            "image_only": [d[0] for d in case["documents"] if d[2]],
            "bates_map": bates_map,
        }
        (folder / "case.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        (folder / "page_text.jsonl").write_text(
            "".join(json.dumps(row) + "\n" for row in page_text), encoding="utf-8"
        )
        labels: list[dict[str, object]] = []
        for name, marked in case["drafts"].items():
            text, found = _draft(marked, name)
            (folder / "drafts" / name).write_text(text, encoding="utf-8")
            labels += found
        (folder / "labels.jsonl").write_text(
            "".join(json.dumps(row) + "\n" for row in labels), encoding="utf-8"
        )


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
