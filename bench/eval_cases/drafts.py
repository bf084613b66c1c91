# ruff: noqa: E501, RUF005  (seeded test-data grammars: long vocabulary lines, list concatenation of pieces, random.Random on purpose)
"""The drafts of a generated case and their labels: sentences about the case's facts and
opinions, most supported, some with one planted error each (every error kind of the format),
laid out in a drafting style (declaration, letter, chronology, motion, memo, California brief).

A sentence is a list of pieces: plain text, or a labelled claim (kind, error, text) with error
"none" when the sources support it."""

import random
import re
from datetime import date, timedelta

from bench.eval_cases import words as w
from bench.eval_cases.world import Doc, Fact, Opinion, Page, World

Piece = str | tuple[str, str, str]
Sentence = list[Piece]

RECORD_ERRORS = (
    "bates_wrong_page",
    "bates_out_of_range",
    "bates_not_a_bates_number",
    "self_generated_reference",
    "date_shifted",
    "date_not_in_source",
    "amount_altered",
    "amount_not_in_source",
    "quote_altered",
    "quote_fabricated",
)
CITATION_ERRORS = ("citation_not_in_packet", "citation_pin_cite_wrong")
ERRORS = RECORD_ERRORS + CITATION_ERRORS
LEADS = (
    "",
    "",
    "The record shows that ",
    "It is undisputed that ",
    "Notably, ",
    "The documents confirm that ",
    "As the file reflects, ",
    "Importantly, ",
)


class Writer:
    def __init__(self, rng: random.Random, world: World):
        self.rng = rng
        self.world = world
        self.texts = [p.text for p in world.pages]

    # --- pieces ---------------------------------------------------------------------------

    def who(self, fact: Fact) -> str:
        first, last = fact.actor
        return self.rng.choice((f"{first} {last}", last, f"{first} {last}"))

    def when(self, d: date) -> str:
        return w.date_forms(d)[self.rng.choice(w.DRAFT_DATE_FORMS)]

    def money(self, cents: int) -> str:
        forms = w.amount_forms(cents)
        keys = [k for k in ("full", "full", "short", "usd", "million", "words") if k in forms]
        return forms[self.rng.choice(keys)]

    def cite(self, page: Page, fact: Fact | None = None) -> Sentence:
        """A correct record cite of `page` in one of the forms drafters write."""
        rng, label = self.rng, page.labels[0]
        if fact is not None and fact.lines and page.transcript_page:
            a, b = fact.lines
            return [("bates", "none", f"{label} at {page.transcript_page}:{a}-{b}")]
        roll = rng.random()
        if roll < 0.15 and page.doc.kind == "record" and rng.random() < 0.5:
            # The document by its exhibit number or its name, and its page (issue 20 req 1).
            return [("bates", "none", self.named_cite(page.doc, page.number))]
        if roll < 0.15:
            return [f"Ex. {page.doc.exhibit} at ", ("bates", "none", label)]
        doc = page.doc
        if roll < 0.25 and page.number < len(doc.pages):
            nxt = doc.pages[page.number].labels[0]
            return [("bates", "none", cite_range(rng, label, nxt))]
        if roll < 0.32 and page.number > 1:
            other = doc.pages[page.number - 2].labels[0]
            return [("bates", "none", f"{other}; {label}")]
        if roll < 0.4 and label[:1].isalpha():
            spaced = cite_spaced(rng, label)
            if spaced:
                return [("bates", "none", spaced)]
        return [("bates", "none", label)]

    def named_cite(self, doc: Doc, number: int) -> str:
        """A cite of page `number` of `doc` by exhibit number, title or quoted file name."""
        form = self.rng.choice(("exhibit", "exhibit", "title", "title", "file"))
        if form == "exhibit":
            return self.rng.choice(("Ex. {n} at {p}", "Exhibit {n}, p. {p}")).format(
                n=doc.exhibit, p=number
            )
        if form == "file":
            return f'"{doc.name}" at {number}'
        return f"{title_case(doc.title)}{self.rng.choice((' at ', ', p. '))}{number}"

    def unknown_title(self) -> str | None:
        """A document title of the case's kind that names no document of this packet (no word
        in common with any of its documents' titles or file names)."""
        taken = {
            word
            for doc in self.world.docs
            for word in re.findall(r"[a-z]+", f"{doc.title} {doc.name}".lower())
        }
        options = [
            kind
            for domain in w.DOMAINS
            for kind in domain.documents
            if not set(re.findall(r"[a-z]+", kind.lower())) - {"of", "and", "the", "to"} & taken
        ]
        return self.rng.choice(options) if options else None

    def wrap_cite(self, pieces: Sentence) -> Sentence:
        return [" ("] + pieces + [")."]

    # --- record sentences -----------------------------------------------------------------

    def fact_core(self, fact: Fact) -> str:
        return f"{self.rng.choice(LEADS)}{self.who(fact)} {fact.verb[1]} the {fact.obj}"

    def supported(self, fact: Fact) -> Sentence:
        assert fact.page is not None
        s: Sentence = [self.fact_core(fact) + " on ", ("date", "none", self.when(fact.when))]
        if fact.cents is not None and self.rng.random() < 0.7:
            s += [f", and the {fact.purpose} was ", ("amount", "none", self.money(fact.cents))]
        return s + self.wrap_cite(self.cite(fact.page, fact))

    def quoted(self, fact: Fact, text: str, error: str) -> Sentence:
        assert fact.page is not None
        verb = "testified" if fact.page.transcript_page else self.rng.choice(("wrote", "stated"))
        opening: Sentence = [f'{fact.actor[1]} {verb} that "', ("quote", error, text), '"']
        return opening + self.wrap_cite(self.cite(fact.page, fact))

    def quote_text(self, fact: Fact) -> str:
        body = fact.quote.rstrip(".")
        return body.split(", ", 1)[1] if self.rng.random() < 0.6 else body

    def in_sources(self, text: str) -> bool:
        flat = " ".join(text.split()).lower()
        return any(flat in " ".join(t.split()).lower() for t in self.texts)

    def error(self, kind: str, fact: Fact, facts: list[Fact]) -> Sentence:
        rng, world = self.rng, self.world
        assert fact.page is not None
        bare = self.fact_core(fact)
        if kind == "bates_wrong_page":
            page = self.wrong_page(fact)
            if page.doc.kind == "record" and rng.random() < 0.25:
                named = self.named_cite(page.doc, page.number)
                return [bare] + self.wrap_cite([("bates", kind, named)])
            return [bare] + self.wrap_cite(self.wrong_cite(fact, page))
        if kind == "bates_out_of_range" and rng.random() < 0.25:
            # An exhibit past the packet's documents, or a page past a document's pages.
            doc = fact.page.doc if fact.page.doc.kind == "record" else world.docs[0]
            if rng.random() < 0.5:
                cite = f"Ex. {len(world.docs) + rng.randint(1, 9)} at 1"
            else:
                cite = self.named_cite(doc, len(doc.pages) + rng.randint(1, 6))
                if cite.startswith("Ex"):
                    cite = f"{title_case(doc.title)} at {len(doc.pages) + rng.randint(1, 6)}"
            return [bare] + self.wrap_cite([("bates", kind, cite)])
        if kind == "bates_out_of_range":
            prod = next(p for p in world.productions if not p.suffix_digits)
            used = [p.labels[0] for d in prod.docs for p in d.pages]
            last = int(used[-1][len(prod.prefix) :])
            n = last + rng.randint(1, 60)
            if prod.start > 40 and rng.random() < 0.4:
                n = prod.start - rng.randint(1, 30)
            return [bare] + self.wrap_cite([("bates", kind, f"{prod.prefix}{n:0{prod.digits}d}")])
        if kind == "bates_not_a_bates_number":
            title = self.unknown_title() if rng.random() < 0.2 else None
            if title is not None:  # a title that is no document of this packet
                cite = f"{title} at {rng.randint(1, 4)}"
                return [bare] + self.wrap_cite([("bates", kind, cite)])
            return [bare] + self.wrap_cite([("bates", kind, self.junk(fact))])
        if kind == "self_generated_reference":
            return [bare] + self.wrap_cite([("bates", kind, self.generated())])
        if kind == "date_shifted":
            shifted = w.shifted_date(rng, fact.when)
            while shifted in world.dates_used:
                shifted += timedelta(days=1)
            dated: Sentence = [bare + " on ", ("date", kind, self.when(shifted))]
            return dated + self.wrap_cite(self.cite(fact.page, fact))
        if kind == "date_not_in_source":
            d = date(fact.when.year, 1, 1) + timedelta(days=rng.randrange(700))
            while any(abs((d - u).days) < 3 for u in world.dates_used):
                d += timedelta(days=5)
            s: Sentence = [
                f"{self.who(fact)} {rng.choice(('later', 'then', 'also'))} "
                f"{fact.verb[1]} the {fact.obj} a second time on ",
                ("date", kind, self.when(d)),
            ]
            if rng.random() < 0.5:
                return s + ["."]
            return s + self.wrap_cite(self.cite(fact.page, fact))
        if kind == "amount_altered":
            target = fact if fact.cents else next(f for f in facts if f.cents)
            assert target.cents is not None and target.page is not None
            wrong = w.altered_amount(rng, target.cents)
            while wrong in world.cents_used:
                wrong += 1000
            valued: Sentence = [
                self.fact_core(target) + f", and the {target.purpose} was ",
                ("amount", kind, self.money(wrong)),
            ]
            return valued + self.wrap_cite(self.cite(target.page, target))
        if kind == "amount_not_in_source":
            cents = w.new_amount(rng)
            while cents in world.cents_used:
                cents += 2500
            party = rng.choice((world.theirs, world.ours)).split()[0]
            return [
                f"{party} {rng.choice(('also owes', 'separately claims', 'incurred'))} ",
                ("amount", kind, self.money(cents)),
                f" in {rng.choice(world.domain.payments)} {rng.choice(('as well', 'on top of that', 'for the same period'))}.",
            ]
        if kind == "quote_altered":
            text = self.quote_text(fact)
            tokens = text.split(" ")
            spots = [i for i, t in enumerate(tokens) if t in w.SWAPS]
            i = rng.choice(spots)
            tokens[i] = w.SWAPS[tokens[i]]
            return self.quoted(fact, " ".join(tokens), kind)
        if kind == "quote_fabricated":
            from bench.eval_cases.world import _quote

            for _ in range(50):
                text = _quote(rng, world.domain, fact.obj, world.theirs).rstrip(".")
                text = text.split(", ", 1)[1]
                if not self.in_sources(text):
                    break
            return self.quoted(fact, text, kind)
        raise ValueError(kind)

    def wrong_cite(self, fact: Fact, page: Page) -> Sentence:
        """A cite that does not carry `fact`, of `page` (not the fact's) in one of the forms
        `cite` writes correct ones in: its number alone, the prefix spaced or hyphenated, after
        an exhibit number, a range, two cites, or a transcript's page and lines (the fact's page
        with other lines, or another page with the fact's lines). The form is drawn from a
        generator of its own, seeded by the cite, so that the case's other draws (and so every
        other label of a seed) stay as they were before these forms were written."""
        label = page.labels[0]
        form = random.Random(f"wrong form|{fact.obj}|{label}")  # noqa: S311  (test data)
        roll = form.random()
        right = fact.page
        assert right is not None
        if fact.lines and right.transcript_page and page.transcript_page:
            a, b = fact.lines
            if roll < 0.5:  # the testimony's page, lines that do not hold it
                span = b - a
                starts = [n for n in range(1, 26 - span) if n + span < a or n > b]
                if starts:
                    n = form.choice(starts)
                    cite = f"{right.labels[0]} at {right.transcript_page}:{n}-{n + span}"
                    return [("bates", "bates_wrong_page", cite)]
            cite = f"{label} at {page.transcript_page}:{a}-{b}"
            return [("bates", "bates_wrong_page", cite)]
        doc = page.doc
        following = doc.pages[page.number] if page.number < len(doc.pages) else None
        if roll < 0.15:
            return [f"Ex. {doc.exhibit} at ", ("bates", "bates_wrong_page", label)]
        if roll < 0.3 and following is not None and following is not right:
            return [("bates", "bates_wrong_page", cite_range(form, label, following.labels[0]))]
        others = [
            p
            for p in doc.pages
            if p is not page and p is not right and fact.obj not in " ".join(p.text.split())
        ]
        if roll < 0.45 and others:
            other = form.choice(others).labels[0]
            return [("bates", "bates_wrong_page", f"{other}; {label}")]
        if roll < 0.6 and label[:1].isalpha():
            spaced = cite_spaced(form, label)
            if spaced:
                return [("bates", "bates_wrong_page", spaced)]
        return [("bates", "bates_wrong_page", label)]

    def wrong_page(self, fact: Fact) -> Page:
        assert fact.page is not None
        doc = fact.page.doc
        near = [p for p in doc.pages if p is not fact.page]
        pool = near or [
            p for p in self.world.pages if p.doc.kind == "record" and p is not fact.page
        ]
        pool = [p for p in pool if fact.obj not in " ".join(p.text.split())] or pool
        return self.rng.choice(pool)

    def junk(self, fact: Fact) -> str:
        rng, world = self.rng, self.world
        prefix = world.productions[0].prefix.strip(" -")
        options = [
            rng.choice(("RTX 3060", "A100", "H100 SXM", "GTX 1080", "TPU v4", "RTX4090", "L40S")),
            f"{rng.choice(('INC', 'CHG', 'TKT'))}{rng.randrange(10**6, 10**7)}",
            f"{rng.choice(('JIRA', 'OPS', 'SEC', 'HR'))}-{rng.randrange(100, 9999)}",
            f"{rng.choice(('export', 'ledger', 'claims', 'notes'))}_{fact.when.year}_{rng.randrange(1, 99):02d}.{rng.choice(('xlsx', 'csv', 'pdf'))}",
            f"{rng.choice(('DATA_DIR', 'S3_BUCKET', 'APP_ENV'))}_{rng.randrange(2, 9)}",
            f"{prefix}-{fact.when.year}-{rng.randrange(1, 99):02d}",
            f"Acct. No. {rng.randrange(1000, 9999)}-{rng.randrange(1000, 9999)}",
            f"Report No. {rng.choice(('R', 'QA', 'LAB'))}-{rng.randrange(10000, 99999)}",
        ]
        if world.foreign_stamps and rng.random() < 0.35:
            return rng.choice(world.foreign_stamps)
        return rng.choice(options)

    def generated(self) -> str:
        rng = self.rng
        adjective = rng.choice(
            (
                "Draft",
                "AI-generated",
                "lexweb",
                "generated",
                "earlier draft",
                "machine-drafted",
                "prior AI",
            )
        )
        noun = rng.choice(
            (
                "memo",
                "case summary",
                "chronology",
                "timeline",
                "outline",
                "brief",
                "fact sheet",
                "research note",
            )
        )
        tail = rng.choice(
            (
                f" v{rng.randint(2, 6)}",
                f", rev. {rng.randint(2, 5)}",
                f" at {rng.randint(2, 9)}",
                f" draft {rng.randint(1, 4)}",
                "",
            )
        )
        return f"{adjective} {noun}{tail}"

    # --- opinions -------------------------------------------------------------------------

    def full_cite(self, op: Opinion, pin: int) -> str:
        if op.california:
            return f"{op.full} ({op.year}) {op.volume} {op.reporter} {op.first}, {pin}"
        court = f"{op.court} {op.year}"
        return f"{op.full}, {op.volume} {op.reporter} {op.first}, {pin} ({court})"

    def short_cite(self, op: Opinion, pin: str) -> str:
        if op.california:
            return f"{op.short}, supra, {op.volume} {op.reporter} at p. {pin}"
        return f"{op.short}, {op.volume} {op.reporter} at {pin}"

    def proposition(self, holding: str) -> str:
        lead = self.rng.choice(
            (
                "Courts hold that ",
                "The rule is settled: ",
                "It follows that ",
                "Under the governing law, ",
                "",
            )
        )
        return lead + (holding[0].lower() + holding[1:] if lead else holding)

    def case_sentence(self, op: Opinion, cite: str, error: str, holding: str) -> Sentence:
        text = self.proposition(holding).rstrip(".")
        if op.california:
            return [text + ". (", ("case_citation", error, cite), ".)"]
        return [text + ". ", ("case_citation", error, cite), "."]

    def opinion_sentences(self, errors: list[str]) -> list[Sentence]:
        rng, out = self.rng, []
        for op in self.world.opinions:
            pages = list(op.holdings)
            first_page = rng.choice(pages)
            holding = op.holdings[first_page][0]
            if rng.random() < 0.2:  # a first use in short form
                out.append(
                    self.case_sentence(op, self.short_cite(op, str(first_page)), "none", holding)
                )
            else:
                out.append(self.case_sentence(op, self.full_cite(op, first_page), "none", holding))
            other = rng.choice([p for p in pages if p != first_page])
            idp = f"Id. at p. {other}" if op.california else f"Id. at {other}"
            out.append(self.case_sentence(op, idp, "none", op.holdings[other][0]))
            if op.california and rng.random() < 0.6:
                out.append(
                    [
                        self.proposition(op.holdings[other][0]).rstrip(".") + ". (",
                        ("case_citation", "none", "Ibid."),
                        ")",
                    ]
                )
            for n, (page, note) in op.notes.items():
                if rng.random() < 0.7:
                    out.append(
                        self.case_sentence(op, self.short_cite(op, f"{page} n.{n}"), "none", note)
                    )
            third = rng.choice(pages)
            out.append(
                self.case_sentence(
                    op, self.short_cite(op, str(third)), "none", op.holdings[third][0]
                )
            )
        for kind in errors:
            op = rng.choice(self.world.opinions)
            pages = list(op.holdings)
            if kind == "citation_pin_cite_wrong":
                page = rng.choice(pages)
                holding = op.holdings[page][0]
                roll = rng.random()
                if roll < 0.5:
                    wrong = str(rng.choice([p for p in pages if p != page]))
                elif roll < 0.75 or not op.notes:
                    wrong = str(op.last + rng.randint(2, 40))
                else:
                    wrong = f"{page} n.{len(op.notes) + rng.randint(1, 6)}"
                cite = (
                    self.short_cite(op, wrong)
                    if rng.random() < 0.6
                    else (
                        self.full_cite(op, int(wrong))
                        if wrong.isdigit()
                        else self.short_cite(op, wrong)
                    )
                )
                out.append(self.case_sentence(op, cite, kind, holding))
            else:
                from bench.eval_cases.world import REPORTERS, REPORTERS_CA

                reporter, court, (low, high) = rng.choice(
                    REPORTERS_CA if self.world.california else REPORTERS
                )
                fake = Opinion(
                    f"{rng.choice(w.LAST)} v. {w.company(rng, set())}",
                    "",
                    rng.randint(10, 600),
                    reporter,
                    rng.randint(100, 1400),
                    court,
                    rng.randint(low, high),
                    False,
                    self.world.california,
                )
                pin = fake.first + rng.randint(1, 9)
                from bench.eval_cases.world import _holding

                out.append(
                    self.case_sentence(
                        fake, self.full_cite(fake, pin), kind, _holding(rng, self.world.domain)
                    )
                )
        return out


def cite_range(rng: random.Random, label: str, following: str) -> str:
    """A cite of a page and the one after it: "ABC000101-02" (the end's last two digits) or
    "ABC000101-ABC000102"."""
    if "." not in following and label[:-2] == following[:-2] and rng.random() < 0.5:
        return f"{label}-{following[-2:]}"
    return f"{label}-{following}"


def cite_spaced(rng: random.Random, label: str) -> str | None:
    """The label with its prefix joined, spaced or hyphenated ("ABC000101", "ABC 000101",
    "ABC-000101"); None for a label of another shape."""
    core = re.match(r"([A-Z]+)[ -]?(\d+)$", label)
    if core is None:
        return None
    return core.group(1) + rng.choice(("", " ", "-")) + core.group(2)


def title_case(title: str) -> str:
    """ "NOTICE OF DELAY" -> "Notice of Delay"."""
    small = {"of", "and", "the", "to", "for", "on", "in"}
    return " ".join(
        word.lower() if word.lower() in small and n else word.capitalize()
        for n, word in enumerate(title.split())
    )


def plan(rng: random.Random, world: World) -> dict[str, list[Sentence]]:
    """Two drafts per case: one on the record (declaration, letter or chronology), one arguing
    (a motion or memo; a California brief in a California court). Every error kind is planted
    in the case at least once, a few twice."""
    writer = Writer(rng, world)
    facts = [f for f in world.facts if f.page is not None]
    errors = list(RECORD_ERRORS) + rng.sample(RECORD_ERRORS, 3)
    rng.shuffle(errors)
    record: list[Sentence] = []
    argument: list[Sentence] = []
    for fact in facts:
        (record if rng.random() < 0.6 else argument).append(writer.supported(fact))
        if rng.random() < 0.5:
            (record if rng.random() < 0.5 else argument).append(
                writer.quoted(fact, writer.quote_text(fact), "none")
            )
    for kind in errors:
        fact = rng.choice(facts)
        (record if rng.random() < 0.55 else argument).append(writer.error(kind, fact, facts))
    rng.shuffle(record)
    rng.shuffle(argument)
    citation_errors = list(CITATION_ERRORS) + [rng.choice(CITATION_ERRORS)]
    argument += writer.opinion_sentences(citation_errors)
    record_style = rng.choice(("declaration", "letter", "chronology"))
    argue_style = "california_brief" if world.california else rng.choice(("motion", "memo"))
    return {
        f"{record_style}-{world.domain.name}.md": layout(rng, world, record_style, record),
        f"{argue_style}-{world.domain.name}.md": layout(rng, world, argue_style, argument),
    }


def layout(
    rng: random.Random, world: World, style: str, sentences: list[Sentence]
) -> list[Sentence]:
    """The draft as a list of pieces with the style's headings, paragraphs and closings."""
    d = world.domain
    out: list[Sentence] = []
    first, last, title = world.people[0]
    if style == "declaration":
        out.append(
            [
                f"# DECLARATION OF {first.upper()} {last.upper()}\n\n"
                f"I, {first} {last}, declare:\n\n1. I am the {title} of {world.ours}. "
                "I have personal knowledge of the facts below.\n\n"
            ]
        )
        for n, s in enumerate(sentences, 2):
            out.append([f"{n}. "] + s + ["\n\n"])
        out.append(["I declare under penalty of perjury that the foregoing is true and correct.\n"])
    elif style == "letter":
        out.append(
            [
                f"{world.ours}\n\nRe: {d.agreement} - {d.issue}\n\n"
                f"Dear {rng.choice(('Ms.', 'Mr.'))} {world.people[1][1]}:\n\n"
                "We write about the record on the points that remain open.\n\n"
            ]
        )
        for i in range(0, len(sentences), 3):
            out.append([p for s in sentences[i : i + 3] for p in s + [" "]][:-1] + ["\n\n"])
        out.append(["Sincerely,\n\nCounsel for " + world.ours + "\n"])
    elif style == "chronology":
        out.append([f"# Chronology: {world.ours.split()[0]} v. {world.theirs.split()[0]}\n\n"])
        for s in sentences:
            out.append(["- "] + s + ["\n"])
    else:
        if style == "memo":
            out.append(
                [
                    f"MEMORANDUM\n\nTO: Litigation team\nFROM: {first} {last}\n"
                    f"RE: {d.issue.capitalize()}\n\n## Discussion\n\n"
                ]
            )
        else:
            head = (
                "MEMORANDUM OF POINTS AND AUTHORITIES"
                if style == "california_brief"
                else "ARGUMENT"
            )
            out.append([f"## {head}\n\n### I. The record establishes {d.issue}.\n\n"])
        record = [
            s
            for s in sentences
            if not any(isinstance(p, tuple) and p[0] == "case_citation" for p in s)
        ]
        law = [s for s in sentences if s not in record]
        for i in range(0, len(record), 3):
            out.append([p for s in record[i : i + 3] for p in s + [" "]][:-1] + ["\n\n"])
        out.append([f"### II. The law favors {world.ours.split()[0]}.\n\n"])
        for i in range(0, len(law), 2):
            out.append([p for s in law[i : i + 2] for p in s + [" "]][:-1] + ["\n\n"])
    return out
