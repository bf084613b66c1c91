"""The demo writer: a fake model's reply computed from the request's own prompt
(FakeSettings.demo_writer; the demo turns it on, tests of the wire protocol leave it off).

It plays each stage of the drafting pipeline, and the verifier's second opinion, from what
the request carries, so that a demo run shows real work on real evidence:

- The evidence is read from the excerpts of the prompt (`evidence.prompt.render_packet_pages`:
  `<<<EXCERPT nonce | label | trust>>>` … `<<<END nonce>>>`), each cited by its label's first
  Bates number (or its document-and-page label when it has none).
- The stage is told by the JSON schema asked for (llama-server `response_format`, or the
  schema named on the first line of the grammar lexweb's client sends; Ollama `format`):
  "answer" is the gate, "findings" the adversarial reviewer, "transactions" the extractor,
  "verdict" the second opinion; any other schema gets its smallest valid value.
  Without a schema, by the prompt's sections: the verifier's findings mean the revision, a
  draft without them the reasoner, "Summarise" the summarizer, anything else the drafter.
- The drafter writes one paragraph per fact, each a sentence of an excerpt citing it, and
  plants three deterministic mistakes a newcomer can watch the verifier block: a date moved
  by a week, a quotation with one word changed, and a Bates number that is not in the packet.
- The revision reads the draft and the verifier's findings from its prompt and puts every
  flagged paragraph back in the excerpt's own words with the excerpt's own label (a paragraph
  no excerpt carries is left out), so the verification of the revision has none of them.
- A prompt with no excerpt gets a short reply saying there is no evidence to work from (for a
  JSON stage, the schema's answer that says so).

Everything is a pure function of the request: the same prompt gives the same reply.
"""

import datetime
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

NO_EVIDENCE = (
    "There is no evidence in this request: no excerpt of the packet was given, so nothing can "
    "be written from it."
)
MAX_FACTS = 8  # fact paragraphs of a draft
MAX_SUMMARY = 8
MAX_ARGUMENT = 4  # paragraphs the reasoner adds
DATE_SHIFT = datetime.timedelta(days=7)
# apps.cluster.backends.grammar.SCHEMA_COMMENT (the fake imports nothing of the product's).
GRAMMAR_SCHEMA_COMMENT = "# lexweb json schema: "
INVENTED_OFFSET = 37  # the invented Bates number: the packet's highest plus this

_EXCERPT = re.compile(
    r"<<<EXCERPT (?P<nonce>[0-9a-f]+) \| (?P<label>[^|\n]*?) \| (?P<trust>[^\n]*?)>>>\n"
    r"(?P<text>.*?)\n<<<END (?P=nonce)>>>",
    re.DOTALL,
)
_SENTENCE_PAIR = re.compile(
    r"<<<SENTENCE (?P<nonce>[0-9a-f]+)>>>\n(?P<text>.*?)\n<<<END SENTENCE (?P=nonce)>>>", re.DOTALL
)
_BATES = re.compile(r"^(?P<prefix>[A-Z][A-Z_.\-]*?)(?P<num>\d{3,12})$")
_ABBREVIATIONS = ("Corp.", "Ltd.", "Inc.", "No.", "Mr.", "Ms.", "Mrs.", "Dr.", "St.", "Co.")
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z“\"(])")
_MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
]  # fmt: skip
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}}) ({'|'.join(_MONTHS)}) (\d{{4}})\b")
_MONTH_DAY = re.compile(rf"\b({'|'.join(_MONTHS)}) (\d{{1,2}}), (\d{{4}})\b")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_AMOUNT = re.compile(r"(?:US)?\$\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d{2})?")
_ORG = r"(?:[A-Z][A-Za-z&'-]+ ){1,3}(?:Corp\.|Ltd\.|Inc\.|LLC|LLP|plc|Bank|GmbH|Co\.)"
_ORGANISATION = re.compile(rf"\b({_ORG})")
_CLAUSE_NUMBER = re.compile(r"^(?:\(?\d{1,3}[.)]|\([a-z]\))\s+")
FULL_LINE_WORDS = 10  # a line of fewer words was ended on purpose (see `paragraphs_of`)
_PAYMENT = re.compile(
    r"\b(?:paid|pay|pays|payment|payable|invoiced|due|charged|received|transferred)\b", re.I
)
_COUNTERPARTY = re.compile(rf"\b(?:to|from)\s+(?:the\s+)?({_ORG})")
_CITE = re.compile(r" \[([^\[\]\n]+)\]\.?$")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
_QUOTE_SWAPS = {"shall": "may", "will": "may", "must": "may", "may": "shall", "not": "also"}


@dataclass(frozen=True)
class Excerpt:
    label: str  # as the prompt shows it
    cite: str  # what a draft cites: the first Bates number, or the whole label
    text: str  # the page's text as the prompt gives it, its lines kept

    @property
    def paragraphs(self) -> list[str]:
        return paragraphs_of(self.text)

    @property
    def sentences(self) -> list[str]:
        return [s for paragraph in self.paragraphs for s in sentences_of(paragraph)]

    @property
    def flat(self) -> str:
        return " ".join(self.text.split())


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str
    schema: Mapping[str, object] | None

    @property
    def text(self) -> str:
        return f"{self.system}\n{self.user}"


def prompt_of(body: Mapping[str, object], *, kind: str) -> Prompt:
    """The system and user text and the JSON schema of a chat (or Ollama generate) request."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        messages = [{"role": "user", "content": body.get("prompt")}]
    system: list[str] = []
    user: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        # An assistant message is the reply being continued, not the request's text.
        if isinstance(content, str) and message.get("role") != "assistant":
            (system if message.get("role") == "system" else user).append(content)
    if isinstance(body.get("system"), str):
        system.insert(0, str(body["system"]))
    schema: object = None
    if kind == "ollama":
        schema = body.get("format")
    else:
        response_format = body.get("response_format")
        if isinstance(response_format, dict):
            inner = response_format.get("json_schema")
            schema = inner.get("schema") if isinstance(inner, dict) else None
            schema = schema or response_format.get("schema")
        schema = schema or body.get("json_schema")
        grammar = body.get("grammar")
        if schema is None and isinstance(grammar, str):
            # lexweb's llama.cpp client sends a grammar that names its schema on its first line.
            schema = _schema_of_grammar(grammar)
    return Prompt(
        system="\n".join(system),
        user="\n".join(user),
        schema=schema if isinstance(schema, dict) else None,
    )


def _schema_of_grammar(grammar: str) -> object:
    first = grammar.split("\n", 1)[0]
    if not first.startswith(GRAMMAR_SCHEMA_COMMENT):
        return None
    try:
        return json.loads(first.removeprefix(GRAMMAR_SCHEMA_COMMENT))
    except ValueError:
        return None


def demo_reply(body: Mapping[str, object], *, kind: str) -> str:
    """The reply a demo model gives to this request (see the module docstring)."""
    prompt = prompt_of(body, kind=kind)
    excerpts = excerpts_of(prompt.user)
    properties = _properties(prompt.schema)
    if "answer" in properties:
        return gate(excerpts)
    if "findings" in properties:
        return adversary(_section(prompt.user, "The draft:"), excerpts)
    if "transactions" in properties:
        return extractor(excerpts, limit=_max_items(prompt.schema, "transactions"))
    if "verdict" in properties:
        return second_opinion(prompt.user, excerpts)
    if prompt.schema is not None:
        return json.dumps(smallest(prompt.schema))
    if not excerpts:
        return NO_EVIDENCE
    if "The verifier's findings:" in prompt.user:
        return revision(
            _section(prompt.user, "The draft:"),
            _section(prompt.user, "The verifier's findings:"),
            excerpts,
        )
    if "The draft:" in prompt.user:
        return reasoner(_section(prompt.user, "The draft:"), excerpts)
    if prompt.system.lstrip().lower().startswith("summari"):
        return summary(excerpts)
    return draft(excerpts, heading=_kind_of(prompt.system))


# --- Reading the prompt ----------------------------------------------------------------------


def excerpts_of(text: str) -> list[Excerpt]:
    found = []
    for match in _EXCERPT.finditer(text):
        label = match.group("label").strip()
        first = label.split(" (also ", 1)[0].strip()
        found.append(Excerpt(label=label, cite=first, text=match.group("text").strip()))
    return found


def paragraphs_of(text: str) -> list[str]:
    """A page's lines joined into paragraphs: a line ending a sentence, or a short line (a
    heading, an address, a salutation), ends its paragraph; a full line runs on into the next.
    A clause number opening a paragraph ("3.", "(b)") is left out."""
    paragraphs: list[list[str]] = [[]]
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line:
            paragraphs.append([])
            continue
        paragraphs[-1].append(line)
        if line.endswith((".", "!", "?", ":", ";")) or len(line.split()) < FULL_LINE_WORDS:
            paragraphs.append([])
    joined = (" ".join(lines) for lines in paragraphs if lines)
    return [_CLAUSE_NUMBER.sub("", paragraph) for paragraph in joined]


def sentences_of(text: str) -> list[str]:
    """The sentences of a paragraph, not split after "Corp.", "No." …"""
    parts: list[str] = []
    for piece in _SPLIT.split(text):
        if parts and parts[-1].endswith(_ABBREVIATIONS):
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    return [part.strip() for part in parts if part.strip()]


_SECTIONS = (
    "Instructions from the lawyer:",
    "The draft:",
    "The verifier's findings:",
    "The reviewer's findings:",
    "The evidence below is quoted",
    "(No evidence fits",
)


def _section(user: str, heading: str) -> str:
    """The text after `heading` up to the next known section of a drafting prompt."""
    at = user.find(heading + "\n")
    if at < 0:
        return ""
    rest = user[at + len(heading) + 1 :]
    ends = [rest.find("\n\n" + other) for other in _SECTIONS if other != heading]
    ends = [end for end in ends if end >= 0]
    return rest[: min(ends)] if ends else rest


def _properties(schema: Mapping[str, object] | None) -> Mapping[str, object]:
    properties = schema.get("properties") if schema else None
    return properties if isinstance(properties, dict) else {}


def _max_items(schema: Mapping[str, object] | None, name: str) -> int:
    field = _properties(schema).get(name)
    limit = field.get("maxItems") if isinstance(field, dict) else None
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0 else 50


def _kind_of(system: str) -> str:
    match = re.search(r"drafting an? ([a-z ]{3,30}?) for", system)
    return match.group(1).capitalize() if match else "Draft"


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text) if len(word) > 3}


# --- Facts and the planted mistakes ----------------------------------------------------------


def _has_date(text: str) -> bool:
    return bool(_DAY_MONTH.search(text) or _MONTH_DAY.search(text) or _ISO.search(text))


def _is_fact(sentence: str) -> bool:
    """A whole sentence of six words or more (not a heading, a label or a line of a form)."""
    return len(_WORD.findall(sentence)) >= 6 and sentence.endswith((".", "!", "?"))


def _facts(
    excerpts: Sequence[Excerpt], limit: int, *, first_pass: int = 2
) -> list[tuple[str, Excerpt]]:
    """Up to `limit` sentences worth a paragraph: from each excerpt in turn, those with a date
    or an amount or an obligation first, at most `first_pass` per excerpt on the first pass."""
    chosen: list[tuple[str, Excerpt]] = []
    for per_excerpt in (first_pass, None):
        for excerpt in excerpts:
            facts = [s for s in excerpt.sentences if _is_fact(s)]
            facts.sort(key=lambda s: not (_has_date(s) or _AMOUNT.search(s) or _modal(s)))
            taken = [s for s, e in chosen if e is excerpt]
            for sentence in facts[:per_excerpt]:
                if len(chosen) >= limit:
                    return chosen
                if sentence not in taken:
                    chosen.append((sentence, excerpt))
                    taken.append(sentence)
    return chosen


def cited(sentence: str, cite: str) -> str:
    """A sentence of the evidence as a paragraph of a draft, its cite before the full stop."""
    body = sentence.rstrip()
    end = "."
    if body.endswith((".", "!", "?")) and not body.endswith(_ABBREVIATIONS):
        body, end = body[:-1], body[-1]
    return f"{body} [{cite}]{end}"


def shift_date(sentence: str) -> str | None:
    """The sentence with its first date a week later, in the same form; None without one."""
    match = _DAY_MONTH.search(sentence)
    if match:
        day = datetime.date(int(match[3]), _MONTHS.index(match[2]) + 1, int(match[1]))
        moved = day + DATE_SHIFT
        text = f"{moved.day} {_MONTHS[moved.month - 1]} {moved.year}"
        return sentence[: match.start()] + text + sentence[match.end() :]
    match = _MONTH_DAY.search(sentence)
    if match:
        day = datetime.date(int(match[3]), _MONTHS.index(match[1]) + 1, int(match[2]))
        moved = day + DATE_SHIFT
        text = f"{_MONTHS[moved.month - 1]} {moved.day}, {moved.year}"
        return sentence[: match.start()] + text + sentence[match.end() :]
    match = _ISO.search(sentence)
    if match:
        try:
            day = datetime.date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            return None
        return sentence[: match.start()] + (day + DATE_SHIFT).isoformat() + sentence[match.end() :]
    return None


def alter_quote(quote: str) -> str:
    """The quotation with one word changed ("shall" → "may", else its longest word)."""
    words = quote.split(" ")
    for index, word in enumerate(words):
        if word.lower() in _QUOTE_SWAPS:
            words[index] = _QUOTE_SWAPS[word.lower()]
            return " ".join(words)
    longest = max(range(len(words)), key=lambda i: (len(words[i].strip(".,;:")), -i))
    words[longest] = "promptly"
    return " ".join(words)


def invented_cite(excerpts: Sequence[Excerpt]) -> str:
    """A Bates number the packet does not have: its highest, plus INVENTED_OFFSET."""
    best: tuple[int, str, int] | None = None
    for excerpt in excerpts:
        match = _BATES.match(excerpt.cite)
        if match and (best is None or int(match["num"]) > best[0]):
            best = (int(match["num"]), match["prefix"], len(match["num"]))
    if best is None:
        return "DEMO000999"
    number, prefix, digits = best
    known = {excerpt.cite for excerpt in excerpts}
    candidate = number + INVENTED_OFFSET
    while f"{prefix}{candidate:0{digits}d}" in known:
        candidate += 1
    return f"{prefix}{candidate:0{digits}d}"


def _quotable(facts: Sequence[tuple[str, Excerpt]]) -> int | None:
    """The fact best quoted: one that says what a party shall, will or must do, else the
    longest; never one whose date is the one to be moved."""
    modal = [i for i, (s, _) in enumerate(facts) if _modal(s)]
    if modal:
        return modal[0]
    if not facts:
        return None
    return max(range(len(facts)), key=lambda i: len(facts[i][0]))


def _modal(sentence: str) -> bool:
    return bool(_QUOTE_SWAPS.keys() - {"not"} & _words_lower(sentence))


def _words_lower(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text)}


def draft(excerpts: Sequence[Excerpt], *, heading: str = "Draft") -> str:
    """The drafter's draft: a paragraph per fact citing its excerpt, with the three planted
    mistakes (a date moved a week, one word of a quotation changed, an invented Bates number)."""
    facts = _facts(excerpts, MAX_FACTS)
    if not facts:
        return NO_EVIDENCE
    paragraphs = [cited(sentence, excerpt.cite) for sentence, excerpt in facts]
    quoted = _quotable(facts)
    dated = next(
        (i for i, (s, _) in enumerate(facts) if i != quoted and shift_date(s) is not None), None
    )
    if dated is not None:
        sentence, excerpt = facts[dated]
        paragraphs[dated] = cited(shift_date(sentence) or sentence, excerpt.cite)
    if quoted is not None:
        sentence, excerpt = facts[quoted]
        words = sentence.rstrip(".").strip()
        paragraphs[quoted] = f"In its own words: “{alter_quote(words)}” [{excerpt.cite}]."
    spare = [i for i in range(len(facts)) if i not in (dated, quoted)]
    if spare:
        sentence, _excerpt = facts[spare[-1]]
        paragraphs[spare[-1]] = cited(sentence, invented_cite(excerpts))
    lines = [f"# {heading}", "", "## Statement of facts", ""]
    for paragraph in paragraphs:
        lines += [paragraph, ""]
    return "\n".join(lines).rstrip() + "\n"


# --- The other text stages -------------------------------------------------------------------


def reasoner(draft_text: str, excerpts: Sequence[Excerpt]) -> str:
    """The draft as it came, and an argument from excerpt sentences it does not use yet."""
    written = [_words(line) for line in draft_text.splitlines() if _CITE.search(line)]

    def new(sentence: str) -> bool:
        words = _words(sentence)
        return not any(len(words & seen) >= 0.6 * max(len(words), 1) for seen in written)

    argument = [
        cited(sentence, excerpt.cite)
        for sentence, excerpt in _facts(excerpts, MAX_FACTS * 3)
        if new(sentence)
    ][:MAX_ARGUMENT]
    lines = [draft_text.rstrip(), ""]
    if argument:
        lines += [
            "## Argument",
            "",
            "The record supports the relief sought on each point below.",
            "",
        ]
        for paragraph in argument:
            lines += [paragraph, ""]
    return "\n".join(lines).rstrip() + "\n"


def _flagged(findings: str) -> list[str]:
    """The words of the draft that each finding of the verifier names."""
    return re.findall(r"^- “(.+?)”: ", findings, re.MULTILINE)


def _source_of(paragraph: str, excerpts: Sequence[Excerpt]) -> tuple[str, Excerpt] | None:
    """The excerpt sentence a paragraph was written from: the one sharing most of its words."""
    wanted = _words(_CITE.sub("", paragraph))
    if not wanted:
        return None
    best: tuple[float, str, Excerpt] | None = None
    for excerpt in excerpts:
        for sentence in excerpt.sentences:
            share = len(wanted & _words(sentence)) / len(wanted)
            if best is None or share > best[0]:
                best = (share, sentence, excerpt)
    if best is None or best[0] < 0.6:
        return None
    return best[1], best[2]


def revision(draft_text: str, findings: str, excerpts: Sequence[Excerpt]) -> str:
    """The draft with every paragraph a verifier's finding names put back in its excerpt's own
    words and label; a flagged paragraph that no excerpt carries is left out."""
    flagged = [text for text in _flagged(findings) if text.strip()]
    out: list[str] = []
    for paragraph in draft_text.split("\n"):
        if not any(text in paragraph for text in flagged):
            out.append(paragraph)
            continue
        source = _source_of(paragraph.replace("In its own words: ", ""), excerpts)
        if source is not None:
            out.append(cited(source[0], source[1].cite))
    return "\n".join(out).rstrip() + "\n"


def summary(excerpts: Sequence[Excerpt]) -> str:
    facts = _facts(excerpts, MAX_SUMMARY, first_pass=1)
    if not facts:
        return NO_EVIDENCE
    lines = ["# Summary of the evidence", ""]
    for sentence, excerpt in facts:
        lines += [f"- {cited(sentence, excerpt.cite)}"]
    return "\n".join(lines) + "\n"


# --- The JSON stages -------------------------------------------------------------------------


def gate(excerpts: Sequence[Excerpt]) -> str:
    if not excerpts:
        return json.dumps(
            {
                "answer": "insufficient",
                "reasons": [NO_EVIDENCE],
                "missing_evidence": ["the documents the request relies on"],
            }
        )
    reasons = [
        f"{excerpt.cite} records: {sentence}" for sentence, excerpt in _facts(excerpts, 3)
    ] or [f"{excerpts[0].cite} is in the packet."]
    return json.dumps({"answer": "yes", "reasons": reasons, "missing_evidence": []})


def adversary(draft_text: str, excerpts: Sequence[Excerpt]) -> str:
    """Findings anchored to paragraphs of the draft (their exact words): the first argued
    point, met with a counter-argument, and the first amount, as a weak point."""
    findings = []
    paragraphs = [p for p in draft_text.split("\n") if _CITE.search(p)]
    if excerpts and paragraphs:
        argued = paragraphs[-1]
        findings.append(
            {
                "kind": "counter_argument",
                "quote": _CITE.sub("", argued).strip(),
                "comment": "The other side will read this page differently; say why this "
                "reading is the right one.",
            }
        )
        amount = next((p for p in paragraphs if _AMOUNT.search(p)), None)
        if amount is not None and amount != argued:
            findings.append(
                {
                    "kind": "weak_point",
                    "quote": _CITE.sub("", amount).strip(),
                    "comment": "The amount rests on one page; tie it to the invoice and the "
                    "record of payment.",
                }
            )
    return json.dumps({"findings": findings})


def _iso_date(text: str) -> str | None:
    found: list[tuple[int, str]] = []
    for match in _DAY_MONTH.finditer(text):
        found.append(
            (match.start(), f"{match[3]}-{_MONTHS.index(match[2]) + 1:02d}-{int(match[1]):02d}")
        )
    for match in _MONTH_DAY.finditer(text):
        found.append(
            (match.start(), f"{match[3]}-{_MONTHS.index(match[1]) + 1:02d}-{int(match[2]):02d}")
        )
    for match in _ISO.finditer(text):
        found.append((match.start(), match.group()))
    return min(found)[1] if found else None


def extractor(excerpts: Sequence[Excerpt], *, limit: int) -> str:
    """Each sentence that records a payment, an invoice or a sum due with its date, as a
    transaction: the date, the largest amount as a decimal, the organisation paid (else the
    first named, else the page's), the sentence, and the excerpt's label."""
    rows: list[dict[str, str]] = []
    for excerpt in excerpts:
        page_party = _ORGANISATION.search(excerpt.flat)
        for sentence in excerpt.sentences:
            amounts = [
                (float(m[1].replace(",", "") + (m[2] or "")), m) for m in _AMOUNT.finditer(sentence)
            ]
            date = _iso_date(sentence)
            if not amounts or date is None or not _PAYMENT.search(sentence):
                continue
            if len(rows) >= limit:
                break
            amount = max(amounts, key=lambda pair: pair[0])[1]
            party = _COUNTERPARTY.search(sentence) or _ORGANISATION.search(sentence) or page_party
            rows.append(
                {
                    "date": date,
                    "amount": amount[1].replace(",", "") + (amount[2] or ".00"),
                    "counterparty": party[1] if party else "not stated",
                    "description": sentence[:200],
                    "bates": excerpt.cite,
                }
            )
    return json.dumps({"transactions": rows})


def second_opinion(user: str, excerpts: Sequence[Excerpt]) -> str:
    """ "supports" when the cited pages carry most of the sentence's words, else "unclear"."""
    match = _SENTENCE_PAIR.search(user)
    if not excerpts or match is None:
        return json.dumps({"verdict": "unclear", "reason": "No cited page was given."})
    wanted = _words(match["text"])
    found = _words(" ".join(excerpt.flat for excerpt in excerpts))
    share = len(wanted & found) / len(wanted) if wanted else 1.0
    if share >= 0.6:
        return json.dumps(
            {"verdict": "supports", "reason": "The cited page states this in the same words."}
        )
    return json.dumps(
        {"verdict": "unclear", "reason": "Much of the sentence is not on the cited page."}
    )


def smallest(schema: Mapping[str, object]) -> object:
    """The smallest value valid under a (simple) JSON schema: required properties only."""
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties = _properties(schema)
        required = schema.get("required")
        names = required if isinstance(required, list) else []
        values: dict[str, object] = {}
        for name in names:
            field = properties.get(name) if isinstance(name, str) else None
            if isinstance(name, str):
                values[name] = smallest(field) if isinstance(field, dict) else ""
        return values
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        minimum = schema.get("minimum")
        return minimum if isinstance(minimum, int | float) else 0
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return ""
