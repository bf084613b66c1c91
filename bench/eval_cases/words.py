"""Vocabularies and small grammars of the generated evaluation set: names, domains, value
forms (dates and amounts as figures and in words). Every choice goes through a seeded
`random.Random`, so a seed gives one set and another seed another."""

import random
from dataclasses import dataclass
from datetime import date, timedelta

FIRST = [
    "Adaeze",
    "Alban",
    "Anouk",
    "Aurelio",
    "Beatrix",
    "Bertil",
    "Calla",
    "Cormac",
    "Dagny",
    "Delfina",
    "Eamon",
    "Elspeth",
    "Fenna",
    "Florian",
    "Gideon",
    "Greer",
    "Halvard",
    "Hesper",
    "Ignatius",
    "Imogen",
    "Jarrah",
    "Jovana",
    "Kasimir",
    "Kestrel",
    "Leontyne",
    "Lisandro",
    "Maelle",
    "Marek",
    "Nerys",
    "Niklas",
    "Odalys",
    "Orrin",
    "Pilar",
    "Quillan",
    "Radomir",
    "Rosalind",
    "Saoirse",
    "Severin",
    "Tamsin",
    "Thaddeus",
    "Ulla",
    "Valentin",
    "Vesna",
    "Wendell",
    "Xiomara",
    "Yannick",
    "Zelda",
    "Zoltan",
    "Ione",
    "Casimir",
    "Briony",
    "Anselm",
    "Liesel",
    "Tobiah",
    "Marisol",
    "Evander",
    "Oona",
    "Caspian",
    "Honora",
    "Lucan",
    "Philippa",
]
LAST = [
    "Abernathy",
    "Achterberg",
    "Balasubramanian",
    "Bellweather",
    "Castellanos",
    "Drummond",
    "Eisenhardt",
    "Falkenrath",
    "Garroway",
    "Haverkamp",
    "Ingersoll",
    "Jablonski",
    "Kettleborough",
    "Lindqvist",
    "Marchetti",
    "Nakagawa",
    "Oyelaran",
    "Pemberton",
    "Quaresma",
    "Rautenbach",
    "Szczepanski",
    "Thistlewood",
    "Uhlmann",
    "Valderrama",
    "Whitcombe",
    "Yarborough",
    "Zabriskie",
    "Ashgrove",
    "Brannigan",
    "Corriveau",
    "Delacroix",
    "Esterhazy",
    "Fairweather",
    "Gravenor",
    "Holloway",
    "Ibarguen",
    "Juskowiak",
    "Kilbride",
    "Lowenthal",
    "Mavrogordato",
    "Northcott",
    "Ostrowski",
    "Prendergast",
    "Quigley",
    "Rosenkrantz",
    "Sandoval",
    "Tremayne",
    "Vanterpool",
    "Wolcott",
    "Xanthopoulos",
    "Yeardley",
    "Zwicker",
    "Ferreira",
]
COMPANY_A = [
    "Ashcombe",
    "Bramblewood",
    "Cinderford",
    "Dunmore",
    "Elmstead",
    "Foxhollow",
    "Glenrock",
    "Harrowgate",
    "Ivybridge",
    "Juniper",
    "Kestrel",
    "Larkspur",
    "Meadowvale",
    "Northbrook",
    "Oakhurst",
    "Pinecrest",
    "Quarrystone",
    "Redfern",
    "Silverlake",
    "Thornbury",
    "Upland",
    "Vantage",
    "Westmarch",
    "Yarrow",
    "Zephyr",
    "Copperline",
    "Halcyon",
    "Stonebridge",
]
COMPANY_B = [
    "Holdings",
    "Partners",
    "Group",
    "Systems",
    "Works",
    "Industries",
    "Labs",
    "Associates",
    "Logistics",
    "Therapeutics",
    "Capital",
    "Builders",
    "Analytics",
    "Health",
    "Manufacturing",
    "Foods",
    "Media",
    "Robotics",
    "Materials",
]
SUFFIX = ("Inc.", "LLC", "Corp.", "L.P.", "Co.", "Ltd.")
TITLES = (
    "Vice President of Operations",
    "Project Manager",
    "Controller",
    "Director of Compliance",
    "General Manager",
    "Chief Financial Officer",
    "Senior Engineer",
    "Claims Supervisor",
    "Office Manager",
    "Head of Sales",
)
COURTS = (
    ("United States District Court for the District of Oregon", "D. Or."),
    ("United States District Court for the Northern District of Illinois", "N.D. Ill."),
    ("United States District Court for the Western District of Texas", "W.D. Tex."),
    ("United States District Court for the District of New Jersey", "D.N.J."),
    ("Superior Court of California, County of Alameda", "Cal. Super."),
    ("Superior Court of California, County of San Diego", "Cal. Super."),
    ("United States District Court for the Eastern District of Michigan", "E.D. Mich."),
    ("Supreme Court of the State of New York, County of Kings", "N.Y. Sup."),
)
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
MONTH_ABBR = [
    "Jan.",
    "Feb.",
    "Mar.",
    "Apr.",
    "May",
    "June",
    "July",
    "Aug.",
    "Sept.",
    "Oct.",
    "Nov.",
    "Dec.",
]


@dataclass(frozen=True)
class Domain:
    """A practice area: its parties' roles, the agreement, what happens and what is paid."""

    name: str
    roles: tuple[str, str]  # (ours, theirs)
    agreement: str
    objects: tuple[str, ...]  # things the events are about
    verbs: tuple[tuple[str, str], ...]  # (source verb, draft paraphrase), past tense
    payments: tuple[str, ...]  # what an amount is for
    documents: tuple[str, ...]  # kinds of documents beside the agreement
    issue: str  # what the dispute is about, for the drafts' prose


DOMAINS = (
    Domain(
        "construction",
        ("Owner", "Contractor"),
        "Construction Agreement",
        (
            "north retaining wall",
            "foundation pour",
            "change order",
            "steel delivery",
            "roof membrane",
            "drainage swale",
            "punch list",
            "concrete cylinder tests",
            "site survey",
            "window package",
            "elevator shaft",
            "mechanical rough-in",
        ),
        (
            ("inspected", "looked over"),
            ("rejected", "refused"),
            ("approved", "signed off on"),
            ("suspended work on", "stopped work on"),
            ("completed", "finished"),
            ("invoiced", "billed for"),
            ("disputed", "challenged"),
        ),
        (
            "retainage",
            "progress payment",
            "change order price",
            "liquidated damages",
            "repair estimate",
        ),
        (
            "Daily Field Report",
            "Inspection Report",
            "Change Order",
            "Payment Application",
            "Notice of Delay",
            "Meeting Minutes",
        ),
        "delay and defective work",
    ),
    Domain(
        "employment",
        ("Employee", "Employer"),
        "Employment Agreement",
        (
            "performance review",
            "commission plan",
            "overtime records",
            "severance offer",
            "reference letter",
            "expense report",
            "bonus calculation",
            "leave request",
            "training certificate",
            "sales quota",
            "non-solicitation clause",
            "exit interview",
        ),
        (
            ("reviewed", "went over"),
            ("denied", "turned down"),
            ("approved", "signed off on"),
            ("revised", "changed"),
            ("submitted", "sent in"),
            ("withdrew", "took back"),
            ("questioned", "challenged"),
        ),
        (
            "unpaid commission",
            "severance payment",
            "annual bonus",
            "overtime wages",
            "signing bonus",
        ),
        (
            "HR Memorandum",
            "Email",
            "Payroll Register",
            "Termination Letter",
            "Performance Review",
            "Commission Statement",
        ),
        "unpaid commissions and wrongful termination",
    ),
    Domain(
        "insurance",
        ("Insured", "Insurer"),
        "Commercial Property Policy",
        (
            "proof of loss",
            "roof claim",
            "adjuster's estimate",
            "water damage report",
            "reservation of rights letter",
            "contents inventory",
            "business income worksheet",
            "engineer's report",
            "mitigation invoice",
            "appraisal demand",
            "coverage position",
            "supplemental claim",
        ),
        (
            ("received", "got"),
            ("denied", "refused"),
            ("accepted", "took"),
            ("inspected", "looked at"),
            ("reopened", "opened again"),
            ("acknowledged", "confirmed"),
            ("reserved rights on", "reserved its position on"),
        ),
        (
            "claim payment",
            "deductible",
            "actual cash value",
            "replacement cost holdback",
            "business income loss",
        ),
        (
            "Claim Note",
            "Adjuster Report",
            "Coverage Letter",
            "Proof of Loss",
            "Engineering Report",
            "Email",
        ),
        "the denial of a storm claim",
    ),
    Domain(
        "ip-licensing",
        ("Licensor", "Licensee"),
        "Patent License Agreement",
        (
            "royalty report",
            "sublicense",
            "audit request",
            "field-of-use restriction",
            "quarterly statement",
            "patent marking notice",
            "improvement disclosure",
            "minimum royalty",
            "source code escrow",
            "technical assistance plan",
            "territory amendment",
            "licensed product list",
        ),
        (
            ("delivered", "handed over"),
            ("rejected", "refused"),
            ("audited", "examined"),
            ("amended", "changed"),
            ("terminated", "ended"),
            ("disclosed", "revealed"),
            ("challenged", "contested"),
        ),
        (
            "running royalty",
            "minimum annual royalty",
            "audit shortfall",
            "upfront fee",
            "milestone payment",
        ),
        (
            "Royalty Report",
            "Audit Letter",
            "Amendment",
            "Email",
            "Notice of Breach",
            "Board Minutes",
        ),
        "underpaid royalties",
    ),
    Domain(
        "landlord-tenant",
        ("Landlord", "Tenant"),
        "Commercial Lease",
        (
            "HVAC replacement",
            "common area charges",
            "renewal option",
            "rent abatement",
            "security deposit",
            "move-out inspection",
            "sublease request",
            "roof leak",
            "estoppel certificate",
            "parking allocation",
            "signage approval",
            "CAM reconciliation",
        ),
        (
            ("requested", "asked for"),
            ("refused", "turned down"),
            ("granted", "allowed"),
            ("repaired", "fixed"),
            ("inspected", "walked through"),
            ("exercised", "invoked"),
            ("disputed", "contested"),
        ),
        (
            "monthly base rent",
            "CAM reconciliation charge",
            "security deposit",
            "late fee",
            "repair cost",
        ),
        (
            "Notice to Tenant",
            "Rent Ledger",
            "Inspection Checklist",
            "Email",
            "Estoppel Certificate",
            "Repair Invoice",
        ),
        "unpaid rent and a withheld deposit",
    ),
    Domain(
        "securities",
        ("Investor", "Issuer"),
        "Subscription Agreement",
        (
            "private placement memorandum",
            "capitalization table",
            "investor update",
            "redemption request",
            "audit opinion",
            "offering deck",
            "board consent",
            "side letter",
            "valuation report",
            "quarterly NAV statement",
            "lock-up notice",
            "risk factor disclosure",
        ),
        (
            ("circulated", "sent around"),
            ("revised", "rewrote"),
            ("approved", "signed off on"),
            ("restated", "corrected"),
            ("withheld", "held back"),
            ("distributed", "sent out"),
            ("certified", "vouched for"),
        ),
        (
            "subscription amount",
            "redemption proceeds",
            "management fee",
            "placement fee",
            "capital call",
        ),
        (
            "Investor Letter",
            "Board Minutes",
            "Email",
            "Valuation Memo",
            "Capital Account Statement",
            "Redemption Notice",
        ),
        "misstatements in an offering",
    ),
    Domain(
        "medical-malpractice",
        ("Patient", "Hospital"),
        "Admission Consent",
        (
            "discharge summary",
            "sepsis screen",
            "medication order",
            "nursing flowsheet",
            "CT scan",
            "consult request",
            "informed consent form",
            "lab panel",
            "vital signs chart",
            "transfer note",
            "fall risk assessment",
            "antibiotic order",
        ),
        (
            ("ordered", "called for"),
            ("cancelled", "called off"),
            ("reviewed", "went over"),
            ("documented", "recorded"),
            ("delayed", "held off on"),
            ("signed", "put a name to"),
            ("escalated", "raised"),
        ),
        (
            "billed charges",
            "physician fee",
            "lost wages",
            "follow-up surgery cost",
            "rehabilitation cost",
        ),
        (
            "Nursing Note",
            "Physician Order",
            "Discharge Summary",
            "Lab Report",
            "Billing Statement",
            "Incident Report",
        ),
        "a delayed diagnosis",
    ),
    Domain(
        "trade-secrets",
        ("Company", "Former Employee"),
        "Confidentiality and Invention Assignment Agreement",
        (
            "customer list",
            "pricing model",
            "badge records",
            "USB transfer log",
            "exit certification",
            "formulation notebook",
            "cloud upload",
            "competitor offer",
            "device return form",
            "forensic image",
            "access revocation",
            "supplier contract",
        ),
        (
            ("downloaded", "copied"),
            ("returned", "gave back"),
            ("deleted", "erased"),
            ("accessed", "opened"),
            ("signed", "executed"),
            ("forwarded", "sent on"),
            ("concealed", "hid"),
        ),
        ("forensic fee", "lost profits", "signing bonus", "consulting fee", "unjust enrichment"),
        (
            "Forensic Report",
            "Exit Interview Form",
            "Email",
            "Access Log",
            "Offer Letter",
            "Incident Memo",
        ),
        "misappropriated pricing data",
    ),
    Domain(
        "logistics",
        ("Shipper", "Carrier"),
        "Master Transportation Agreement",
        (
            "bill of lading",
            "temperature log",
            "delivery receipt",
            "freight claim",
            "detention invoice",
            "load tender",
            "seal record",
            "cargo survey",
            "rate confirmation",
            "proof of delivery",
            "reefer download",
            "accessorial schedule",
        ),
        (
            ("tendered", "offered"),
            ("refused", "turned away"),
            ("signed", "put a name to"),
            ("surveyed", "inspected"),
            ("rejected", "sent back"),
            ("invoiced", "billed for"),
            ("acknowledged", "confirmed"),
        ),
        ("freight charge", "cargo loss", "detention fee", "salvage value", "claim payment"),
        ("Delivery Receipt", "Claim Letter", "Survey Report", "Email", "Invoice", "Dispatch Log"),
        "a spoiled refrigerated load",
    ),
)

# Words for the grammars of quotable sentences.
MODALS = ("will", "cannot", "must", "should not", "may", "shall")
VERBS_INF = (
    "approve",
    "release",
    "accept",
    "process",
    "schedule",
    "finalize",
    "pay",
    "close out",
    "sign",
    "reopen",
    "waive",
    "certify",
    "extend",
    "return",
)
CONDITIONS = (
    "until the {noun} has been {pp} by {who}",
    "unless {who} confirms the {noun} in writing",
    "before the {noun} is {pp} and filed",
    "while the {noun} remains open with {who}",
    "without a signed {noun} from {who}",
    "after {who} has {pp} the {noun}",
)
PPS = ("reviewed", "countersigned", "verified", "approved", "corrected", "received", "logged")
HEDGES = (
    "In our view",
    "As we discussed",
    "To be clear",
    "For the record",
    "Frankly",
    "As of today",
    "Going forward",
    "Please note that",
    "Candidly",
)
FILLERS = (
    "This {doc} is kept in the ordinary course of business and is retained for seven years.",
    "Capitalized terms have the meaning given to them in the {agreement}.",
    "Nothing in this {doc} waives any right or remedy under the {agreement}.",
    "Questions about this {doc} should be directed to the {role} representative.",
    "All times are local and all figures are stated in United States dollars.",
    "The parties reserve all rights under the {agreement} and applicable law.",
    "Copies of this {doc} were provided to each party's designated contact.",
    "This {doc} supersedes any earlier version circulated between the parties.",
)
SWAPS = {  # a word of a quotation and what a careless drafter writes instead
    "cannot": "will not",
    "must": "should",
    "will": "shall",
    "should": "must",
    "may": "will",
    "until": "unless",
    "before": "after",
    "after": "before",
    "unless": "until",
    "reviewed": "approved",
    "approved": "reviewed",
    "countersigned": "signed",
    "verified": "checked",
    "corrected": "amended",
    "received": "accepted",
    "logged": "recorded",
    "open": "pending",
    "signed": "executed",
    "written": "signed",
}


def person(rng: random.Random, used: set[str]) -> tuple[str, str]:
    while True:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        if last not in used:
            used.add(last)
            return first, last


def company(rng: random.Random, used: set[str]) -> str:
    while True:
        a = rng.choice(COMPANY_A)
        if a not in used:
            used.add(a)
            return f"{a} {rng.choice(COMPANY_B)} {rng.choice(SUFFIX)}"


# --- Values ----------------------------------------------------------------------------------

ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
ORDINALS = {
    1: "first",
    2: "second",
    3: "third",
    4: "fourth",
    5: "fifth",
    6: "sixth",
    7: "seventh",
    8: "eighth",
    9: "ninth",
    10: "tenth",
    11: "eleventh",
    12: "twelfth",
    13: "thirteenth",
    14: "fourteenth",
    15: "fifteenth",
    16: "sixteenth",
    17: "seventeenth",
    18: "eighteenth",
    19: "nineteenth",
    20: "twentieth",
    30: "thirtieth",
}


def words(n: int) -> str:
    """A whole number in words ("eighty-four thousand two hundred fifty")."""
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else "-" + ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + words(rest))
    for size, name in ((1_000_000, "million"), (1000, "thousand")):
        if n >= size:
            rest = n % size
            return words(n // size) + f" {name}" + ("" if rest == 0 else " " + words(rest))
    raise ValueError(n)


def ordinal_day(day: int) -> str:
    if day in ORDINALS:
        return ORDINALS[day]
    return TENS[day // 10] + "-" + ORDINALS[day % 10]


def suffix_day(day: int) -> str:
    tail = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{tail}"


def year_words(year: int) -> str:
    """A year as English writes it in words: "two thousand and seven", "two thousand
    twenty-three", "twenty twenty-three", "nineteen ninety-nine", "nineteen oh five"."""
    century, rest = divmod(year, 100)
    if 2000 <= year < 2100 and (rest < 10 or year % 2):
        return "two thousand" + ("" if rest == 0 else (" and " if rest < 10 else " ") + words(rest))
    if rest == 0:
        return f"{words(century)} hundred"
    return f"{words(century)} " + (f"oh {words(rest)}" if rest < 10 else words(rest))


def date_forms(d: date) -> dict[str, str]:
    # Testimony, deeds and formal notices write the year in words too (issue 28 req 4): which
    # dates do is decided by the date itself, so the generator's seeded choices stay the same.
    year = year_words(d.year) if d.toordinal() % 3 == 0 else str(d.year)
    return {
        "long": f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
        "abbr": f"{MONTH_ABBR[d.month - 1]} {d.day}, {d.year}",
        "intl": f"{d.day} {MONTHS[d.month - 1]} {d.year}",
        "us": f"{d.month:02d}/{d.day:02d}/{d.year}",
        "us_short": f"{d.month}/{d.day}/{d.year % 100:02d}",
        "iso": d.isoformat(),
        "words": f"the {ordinal_day(d.day)} of {MONTHS[d.month - 1]}, {year}",
        "day_of": f"the {suffix_day(d.day)} day of {MONTHS[d.month - 1]}, {year}",
    }


SOURCE_DATE_FORMS = ("long", "long", "abbr", "intl", "us", "iso", "day_of", "words")
DRAFT_DATE_FORMS = ("long", "long", "long", "abbr", "intl", "us", "us_short", "iso", "words")


def amount_forms(cents: int) -> dict[str, str]:
    dollars, rest = divmod(cents, 100)
    figure = f"{dollars:,}"
    forms = {
        "full": f"${figure}.{rest:02d}",
        "usd": f"USD {figure}" + (f".{rest:02d}" if rest else ""),
        "plain": f"{figure}.{rest:02d} dollars",
    }
    # In words, with the cents in words or as a check writes them (issue 28 req 4).
    forms["words"] = f"{words(dollars)} dollars" + (f" and {words(rest)} cents" if rest else "")
    forms["check"] = f"{words(dollars).title()} and {rest:02d}/100 Dollars"
    if rest == 0:
        forms["short"] = f"${figure}"
        if dollars >= 1_000_000 and dollars % 100_000 == 0:
            whole, tenth = divmod(dollars // 100_000, 10)
            forms["million"] = f"${whole}" + (f".{tenth}" if tenth else "") + " million"
            forms["words"] = (
                words(whole) + (f" point {ONES[tenth]}" if tenth else "") + " million dollars"
            )
    return forms


def new_amount(rng: random.Random) -> int:
    """Cents: a mix of exact figures, round figures and millions."""
    roll = rng.random()
    if roll < 0.45:
        return rng.randrange(1_200_00, 480_000_00, 1)
    if roll < 0.85:
        return rng.randrange(2_000, 900_000, 250) * 100
    return rng.randrange(11, 96) * 100_000 * 100


def altered_amount(rng: random.Random, cents: int) -> int:
    """The amount with two digits swapped or one digit changed (never the same value)."""
    digits = list(str(cents // 100))
    for _ in range(20):
        new = digits[:]
        if len(new) > 2 and rng.random() < 0.5:
            i = rng.randrange(len(new) - 1)
            new[i], new[i + 1] = new[i + 1], new[i]
        else:
            i = rng.randrange(len(new))
            new[i] = str((int(new[i]) + rng.randrange(1, 9)) % 10)
        if new[0] != "0" and new != digits:
            return int("".join(new)) * 100 + cents % 100
    return cents + 100_00


def shifted_date(rng: random.Random, d: date) -> date:
    if rng.random() < 0.3:
        return d.replace(month=d.month % 12 + 1) if d.day <= 28 else d + timedelta(days=31)
    return d + timedelta(days=rng.choice((-9, -3, -2, -1, 1, 2, 3, 7, 12)))
