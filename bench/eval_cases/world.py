# ruff: noqa: E501, S311  (seeded test-data grammars: long vocabulary lines, list concatenation of pieces, random.Random on purpose)
"""One generated case: its parties, the events of the dispute (facts), the source documents
that record them (letters, reports, a deposition transcript with numbered lines, court
opinions with reporter pages, some star-paged with footnotes) and the productions that stamp
them (several in some cases, other productions' stamps printed on some pages)."""

import random
import string
import textwrap
from dataclasses import dataclass, field
from datetime import date, timedelta

from bench.eval_cases import words as w


@dataclass
class Fact:
    """One event of the dispute, recorded on one source page."""

    actor: tuple[str, str]
    verb: tuple[str, str]  # (as the source says it, as a drafter paraphrases it)
    obj: str
    when: date
    cents: int | None
    purpose: str
    quote: str  # a sentence of the page a draft can quote
    page: "Page | None" = None
    lines: tuple[int, int] | None = None  # transcript lines of the testimony


@dataclass
class Page:
    doc: "Doc"
    number: int  # 1-based in its document
    text: str = ""
    facts: list[Fact] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # its Bates numbers, one per production
    stamp: str = ""  # another production's number printed on the page
    transcript_page: int = 0


@dataclass
class Doc:
    name: str
    title: str
    origin: str  # client, public, opposing
    scanned: bool = False
    pages: list[Page] = field(default_factory=list)
    kind: str = "record"  # record, transcript, opinion
    exhibit: int = 0


@dataclass
class Opinion:
    full: str  # "Pellham Yachts, Inc. v. Corvo Charters, LLC"
    short: str  # "Pellham"
    volume: int
    reporter: str
    first: int
    court: str
    year: int
    star: bool
    california: bool
    holdings: dict[int, list[str]] = field(default_factory=dict)  # reporter page -> holdings
    notes: dict[int, tuple[int, str]] = field(default_factory=dict)  # n -> (page, text)
    doc: Doc | None = None

    @property
    def last(self) -> int:
        return max(self.holdings)


@dataclass
class Production:
    volume: str
    prefix: str
    start: int
    digits: int
    docs: list[Doc]
    party: str
    suffix_digits: int = 0
    legend: str = ""


@dataclass
class World:
    seed: int
    index: int
    domain: w.Domain
    ours: str
    theirs: str
    people: list[tuple[str, str, str]]  # (first, last, title)
    court: tuple[str, str]
    case_number: str
    docs: list[Doc]
    facts: list[Fact]
    opinions: list[Opinion]
    productions: list[Production]
    california: bool
    foreign_stamps: list[str]
    dates_used: set[date]
    cents_used: set[int]

    @property
    def folder(self) -> str:
        return f"case-{self.index:02d}-{self.domain.name}"

    @property
    def pages(self) -> list[Page]:
        return [p for d in self.docs for p in d.pages]


def _prefix(rng: random.Random, name: str, taken: set[str]) -> str:
    letters = "".join(c for c in name.upper() if c.isalpha())
    while True:
        size = rng.randint(2, 6)
        core = (letters[:1] + "".join(rng.sample(string.ascii_uppercase, size - 1)))[:size]
        if core not in taken and not any(core.startswith(t) or t.startswith(core) for t in taken):
            taken.add(core)
            return core + rng.choice(("", "", " ", "-"))


def _quote(rng: random.Random, domain: w.Domain, fact_obj: str, who: str) -> str:
    other = rng.choice([o for o in domain.objects if o != fact_obj])
    condition = rng.choice(w.CONDITIONS).format(noun=other, pp=rng.choice(w.PPS), who=who)
    thing = rng.choice((fact_obj, rng.choice(domain.payments)))
    body = f"we {rng.choice(w.MODALS)} {rng.choice(w.VERBS_INF)} the {thing} {condition}"
    return f"{rng.choice(w.HEDGES)}, {body}" + ("" if body.endswith(".") else ".")


def _holding(rng: random.Random, domain: w.Domain) -> str:
    party = rng.choice(domain.roles).lower()
    act = rng.choice(
        (
            "withholds payment",
            "terminates the agreement",
            "fails to give written notice",
            "accepts partial performance",
            "delays its inspection",
            "keeps the benefit of the work",
            "relies on an oral assurance",
            "ignores a written demand",
            "changes its position",
        )
    )
    manner = rng.choice(
        (
            "without written notice of the defect",
            "after the cure period has run",
            "while the dispute is pending",
            "in the face of a clear contractual term",
            "without reserving its rights",
            "before any loss is shown",
            "for more than sixty days",
        )
    )
    result = rng.choice(
        (
            f"waives the right to offset the {rng.choice(domain.payments)}",
            "bears the cost of the resulting delay",
            f"cannot later recover the {rng.choice(domain.payments)}",
            "is bound by its earlier election",
            "forfeits the defense of prior breach",
            "must show prejudice before it may rely on the clause",
            "carries the burden of proving the amount of its loss",
        )
    )
    article = "An" if party[0] in "aeiou" else "A"
    return f"{article} {party} that {act} {manner} {result}."


# Reporters with the years they cover (a cite's year must fall in its reporter's years).
REPORTERS = (
    ("F.4th", "9th Cir.", (2021, 2024)),
    ("F.3d", "7th Cir.", (1994, 2020)),
    ("F. Supp. 3d", "D. Minn.", (2014, 2024)),
    ("N.E.3d", "Mass.", (2014, 2024)),
    ("P.3d", "Colo.", (2001, 2024)),
    ("A.3d", "Del.", (2011, 2024)),
)
REPORTERS_CA = (
    ("Cal.App.5th", "", (2015, 2024)),
    ("Cal.App.4th", "", (1992, 2013)),
    ("Cal.5th", "", (2016, 2024)),
)
FILLER_LAW = (
    "We review the grant of summary judgment de novo.",
    "The parties dispute little about the facts and much about their consequence.",
    "The district court entered judgment, and this appeal followed.",
    "We read the contract as a whole and give effect to each of its terms.",
    "The argument was not raised below, and we decline to reach it.",
    "Neither party contends that the agreement is ambiguous.",
)


def build(seed: int, index: int, *, scans: bool) -> World:
    rng = random.Random(f"{seed}:{index}")
    domain = w.DOMAINS[(index + seed) % len(w.DOMAINS)]
    used_names: set[str] = set()
    used_companies: set[str] = set()
    ours, theirs = w.company(rng, used_companies), w.company(rng, used_companies)
    people = [(*w.person(rng, used_names), rng.choice(w.TITLES)) for _ in range(5)]
    court = rng.choice(w.COURTS)
    california = "California" in court[0]
    year = rng.randint(2016, 2024)
    dates_used: set[date] = set()
    cents_used: set[int] = set()

    def new_date() -> date:
        while True:
            d = date(year, 1, 1) + timedelta(days=rng.randrange(0, 600))
            if all(abs((d - u).days) > 14 for u in dates_used):
                dates_used.add(d)
                return d

    def new_cents() -> int:
        while True:
            c = w.new_amount(rng)
            if c not in cents_used:
                cents_used.add(c)
                return c

    objects = rng.sample(domain.objects, len(domain.objects))
    facts: list[Fact] = []
    for obj in objects[:10]:
        who = rng.choice(people)
        facts.append(
            Fact(
                actor=(who[0], who[1]),
                verb=rng.choice(domain.verbs),
                obj=obj,
                when=new_date(),
                cents=new_cents() if rng.random() < 0.6 else None,
                purpose=rng.choice(domain.payments),
                quote=_quote(rng, domain, obj, rng.choice((theirs, ours, f"{who[0]} {who[1]}"))),
            )
        )
    facts.sort(key=lambda f: f.when)
    docs: list[Doc] = []
    # The agreement: two pages, the first naming the parties.
    kinds = rng.sample(domain.documents, 4)
    agreement = Doc("01-" + _slug(domain.agreement) + ".pdf", domain.agreement.upper(), "client")
    docs.append(agreement)
    for n, kind in enumerate(kinds, 2):
        docs.append(Doc(f"{n:02d}-{_slug(kind)}.pdf", kind.upper(), "client"))
    transcript = None
    if rng.random() < 0.6:
        deponent = rng.choice(people)
        transcript = Doc(
            f"{len(docs) + 1:02d}-deposition-{deponent[1].lower()}.pdf",
            f"DEPOSITION OF {deponent[0].upper()} {deponent[1].upper()}",
            "client",
            kind="transcript",
        )
        docs.append(transcript)
    # Facts onto pages: agreement gets two, each other document two to four (1-2 pages).
    queue = list(facts)
    rng.shuffle(queue)
    for doc in docs:
        pages = 2 if doc is agreement or doc.kind == "transcript" else rng.choice((1, 2, 2))
        for number in range(1, pages + 1):
            page = Page(doc, number)
            doc.pages.append(page)
            for _ in range(rng.choice((1, 1, 2)) if queue else 0):
                if queue:
                    fact = queue.pop()
                    fact.page = page
                    page.facts.append(fact)
    while queue:  # any left over go to the last record pages
        fact = queue.pop()
        page = rng.choice([p for d in docs[1:] if d.kind == "record" for p in d.pages])
        fact.page = page
        page.facts.append(fact)
    # Opinions (public records in the packet).
    opinions = [
        _opinion(rng, domain, used_names, california, star=i == 1 or rng.random() < 0.3)
        for i in range(rng.choice((1, 2, 2)))
    ]
    for op in opinions:
        doc = Doc(
            f"{len(docs) + 1:02d}-opinion-{op.short.lower()}.pdf", op.full, "public", kind="opinion"
        )
        op.doc = doc
        docs.append(doc)
    # Opposing production in some cases: their letters, produced under their own prefix.
    taken: set[str] = set()
    own = Production(
        "VOL001",
        _prefix(rng, ours, taken),
        rng.choice((1, 1, 101, 1001, 3470, rng.randrange(2, 90_000))),
        rng.choice((6, 7, 7, 8)),
        [],
        "ours",
    )
    productions = [own]
    record_docs = [d for d in docs if d.kind == "record" and d is not agreement]
    if rng.random() < 0.4 and len(record_docs) >= 2:
        moved = record_docs[-2:]
        for d in moved:
            d.origin = "opposing"
        other = Production(
            "OPP001",
            _prefix(rng, theirs, taken),
            rng.randrange(1, 20_000),
            rng.choice((6, 7, 8)),
            moved,
            "opposing",
            suffix_digits=4 if rng.random() < 0.3 else 0,
            legend=rng.choice(("", "CONFIDENTIAL", "HIGHLY CONFIDENTIAL - ATTORNEYS' EYES ONLY")),
        )
        own.docs = [d for d in docs if d not in moved]
        productions.append(other)
    else:
        own.docs = list(docs)
    if rng.random() < 0.4:
        own.legend = rng.choice(("CONFIDENTIAL", "SUBJECT TO PROTECTIVE ORDER"))
    # Documents are numbered in production order.
    ordered = [d for p in productions for d in p.docs]
    for n, d in enumerate(ordered, 1):
        d.exhibit = n
        d.name = f"{n:02d}-" + d.name.split("-", 1)[1]
    docs[:] = ordered
    # Another production's stamps printed on some source pages (earlier productions).
    foreign_prefix = _prefix(rng, rng.choice(w.COMPANY_A), set(taken))
    foreign_stamps = []
    for page in rng.sample([p for d in docs if d.kind == "record" for p in d.pages], 2):
        page.stamp = f"{foreign_prefix.strip(' -')}{rng.choice(('', '-', ' '))}{rng.randrange(1, 99999):0{rng.choice((5, 6, 7))}d}"
        foreign_stamps.append(page.stamp)
    # Scans: at most one small document per case, only where asked.
    if scans:
        small = [d for d in docs if d.kind == "record" and len(d.pages) == 1]
        if small and rng.random() < 0.5:
            rng.choice(small).scanned = True
    world = World(
        seed,
        index,
        domain,
        ours,
        theirs,
        people,
        court,
        f"{rng.randint(1, 5)}:{year % 100:02d}-cv-{rng.randrange(100, 9999):04d}",
        docs,
        facts,
        opinions,
        productions,
        california,
        foreign_stamps,
        dates_used,
        cents_used,
    )
    _write_pages(rng, world)
    _number(world)
    return world


def _slug(text: str) -> str:
    return "-".join("".join(c for c in part if c.isalnum()) for part in text.lower().split())


def _opinion(
    rng: random.Random, domain: w.Domain, used: set[str], california: bool, star: bool
) -> Opinion:
    a, b = w.company(rng, used), w.company(rng, used)
    reporter, court, (low, high) = rng.choice(REPORTERS_CA if california else REPORTERS)
    year = rng.randint(low, high)
    op = Opinion(
        f"{a} v. {b}",
        a.split()[0],
        rng.randint(12, 399),
        reporter,
        rng.randint(101, 1490),
        court,
        year,
        star,
        california,
    )
    count = 4 if star else rng.choice((2, 3))
    stated: set[str] = set()

    def fresh() -> str:
        """A holding this opinion does not state yet: a pin to a page stating the same
        holding as the right one would be no wrong pin (seed 202 labelled one so)."""
        while (holding := _holding(rng, domain)) in stated:
            pass
        stated.add(holding)
        return holding

    for offset in range(count):
        op.holdings[op.first + offset] = [fresh()]
    if star:
        pages = list(op.holdings)
        for n, page in enumerate(sorted(rng.sample(pages[1:], 2)), 1):
            op.notes[n] = (page, fresh())
    return op


def _fact_lines(rng: random.Random, world: World, fact: Fact) -> list[str]:
    first, last = fact.actor
    title = next(t for f, la, t in world.people if la == last)
    form = rng.choice(w.SOURCE_DATE_FORMS)
    when = w.date_forms(fact.when)[form]
    lead = rng.choice(
        (
            f"On {when}, {first} {last}, {title}, {fact.verb[0]} the {fact.obj}.",
            f"{first} {last} ({title}) {fact.verb[0]} the {fact.obj} on {when}.",
            f"Entry of {when}: {first} {last} {fact.verb[0]} the {fact.obj}.",
        )
    )
    out = [lead]
    if fact.cents is not None:
        forms = w.amount_forms(fact.cents)
        keys = ("full", "full", "usd", "short", "words", "check")
        amount = forms[rng.choice([k for k in keys if k in forms])]
        out.append(
            rng.choice(
                (
                    f"The {fact.purpose} stated for it was {amount}.",
                    f"{last} put the {fact.purpose} at {amount}.",
                    f"A {fact.purpose} of {amount} was recorded against it.",
                )
            )
        )
    out.append(f"{first} wrote: {fact.quote}")
    return out


def _write_pages(rng: random.Random, world: World) -> None:
    d = world.domain
    for doc in world.docs:
        if doc.kind == "opinion":
            continue
        for page in doc.pages:
            if doc.kind == "transcript":
                _transcript_page(rng, world, doc, page)
                continue
            lines = [doc.title if page.number == 1 else f"{doc.title} (continued)"]
            if doc.title == d.agreement.upper() and page.number == 1:
                lines.append(
                    f'This {d.agreement} is made between {world.ours} ("{d.roles[0]}") '
                    f'and {world.theirs} ("{d.roles[1]}").'
                )
            for fact in page.facts:
                lines += _fact_lines(rng, world, fact)
            for filler in rng.sample(w.FILLERS, 2):
                lines.append(
                    filler.format(
                        doc=doc.title.title(), agreement=d.agreement, role=rng.choice(d.roles)
                    )
                )
            if len(doc.pages) > 1 and rng.random() < 0.7:
                lines.append(f"{doc.title.title()} - Page {page.number} of {len(doc.pages)}")
            if page.stamp:
                lines.append(page.stamp)
            page.text = "\n".join(wrapped for line in lines for wrapped in textwrap.wrap(line, 92))
    for op in world.opinions:
        _opinion_pages(rng, op)


def _transcript_page(rng: random.Random, world: World, doc: Doc, page: Page) -> None:
    if page.number == 1:
        page.transcript_page = rng.randint(8, 140)
    else:
        page.transcript_page = doc.pages[0].transcript_page + page.number - 1
    rows: list[str] = []

    def say(text: str) -> None:
        rows.extend(textwrap.wrap(text, 58))

    say(rng.choice(("Q. Let's turn to the events of that year.", "Q. Are you ready to go on?")))
    say("A. Yes.")
    for fact in page.facts:
        form = rng.choice(("words", "long", "words"))
        when = w.date_forms(fact.when)[form]
        say(f"Q. What happened with the {fact.obj}?")
        first_line = len(rows) + 1
        say(f"A. {fact.actor[0]} {fact.actor[1]} {fact.verb[0]} the {fact.obj} on {when}.")
        if fact.cents is not None:
            forms = w.amount_forms(fact.cents)
            say(f"The {fact.purpose} was {forms.get('words') or forms['full']}.")
        say(fact.quote)
        fact.lines = (first_line, len(rows))
        say(
            rng.choice(
                (
                    "Q. Anything else?",
                    "MR. " + rng.choice(w.LAST).upper() + ": Objection, form.",
                    "Q. Did you keep a copy?",
                )
            )
        )
        say(rng.choice(("A. Not that I recall.", "A. I believe so.", "A. No.")))
    while len(rows) < 25:
        say(
            rng.choice(
                (
                    "Q. Who else was there?",
                    "A. I don't remember.",
                    "Q. Okay.",
                    "A. That's right.",
                    "Q. Please go on.",
                )
            )
        )
    rows = rows[:25]
    page.text = f"Page {page.transcript_page}\n" + "\n".join(
        f"{n:>2}  {row}" for n, row in enumerate(rows, 1)
    )


def _opinion_pages(rng: random.Random, op: Opinion) -> None:
    assert op.doc is not None
    cite = f"{op.volume} {op.reporter} {op.first}"
    court = f"({op.court} {op.year})" if op.court else f"({op.year})"
    note_on = {page: n for n, (page, _) in op.notes.items()}
    pages = list(op.holdings)

    def body(page: int) -> str:
        parts = [rng.choice(FILLER_LAW)]
        for holding in op.holdings[page]:
            parts.append(holding[:-1] + (f".{note_on[page]}" if page in note_on else "."))
        parts.append(rng.choice(FILLER_LAW))
        return " ".join(parts)

    if not op.star:
        for number, reporter_page in enumerate(pages, 1):
            text = f"{op.full}, {cite} {court}\n{reporter_page}\n" + "\n".join(
                textwrap.wrap(body(reporter_page), 92)
            )
            op.doc.pages.append(Page(op.doc, number, text=text))
        return
    for number in range(len(pages) // 2):
        a, b = pages[2 * number], pages[2 * number + 1]
        head = f"{op.full}, {cite} {court}\n" if number == 0 else ""
        joined = (f"*{a} " if number else "") + body(a) + f" *{b} " + body(b)
        notes = [f"{n} {text}" for n, (page, text) in op.notes.items() if page in (a, b)]
        text = head + "\n".join(textwrap.wrap(joined, 92))
        if notes:
            text += "\n" + "\n".join(line for note in notes for line in textwrap.wrap(note, 92))
        op.doc.pages.append(Page(op.doc, number + 1, text=text))


def _number(world: World) -> None:
    for prod in world.productions:
        counter = prod.start
        for doc in prod.docs:
            for page in doc.pages:
                if prod.suffix_digits:
                    label = f"{prod.prefix}{counter:0{prod.digits}d}.{page.number:0{prod.suffix_digits}d}"
                else:
                    label = f"{prod.prefix}{counter:0{prod.digits}d}"
                    counter += 1
                page.labels.append(label)
            if prod.suffix_digits:
                counter += 1
