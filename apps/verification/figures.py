"""The figures of a draft's sentence that are facts though no date or amount: a quantity with
a decimal point, a time of day (also "0240 hours") or a reading of two numbers, and a number
after its label. The
checks weigh each as a value (checks/weighing.py): the pages that print it, read once per
packet index (`PacketIndex.derived`).

Bare whole numbers under four digits are no facts ("14 hours", "3 anchors": too common to tell
pages apart); written these ways, they are."""

import re
from collections.abc import Iterator

from apps.verification.index import PacketIndex

# A quantity with a decimal point ("41.5 hours", "1.8 inches", "a 12.5% share"), outside the
# claims (an amount is one): a fact as a date is, where a bare small number ("3", "14") says
# too little to count. A page carries it when it prints the same value ("49" or "49.00" for
# "49.0").
_QUANTITY = re.compile(r"(?<![\w.,/:-])\d{1,7}\.\d{1,4}(?![\w.,/:-]*\d)")
# A time of day ("23:58", "0:40", "14:41:03") or a reading of two numbers ("94/56", a blood
# pressure): a fact as a decimal quantity is, though each of its numbers alone is too small to
# count. A page carries it when it prints the same numbers with the same separator ("01:45"
# for "1:45"; a time with its seconds, the same seconds; one without, any).
_READING = re.compile(r"(?<![\w.,/:-])(\d{1,3})([:/])(\d{2,3})(?::(\d{2}))?(?![\w.,/:-]*\d)")
# A time of day on the 24-hour clock written in four digits before its word ("0240 hours",
# "2215 hrs"), as clinical and police records' narratives write it: the time "02:40".
_CLOCK = re.compile(r"(?<![\w.,/:-])([01]\d|2[0-3])([0-5]\d)[ \t]*(?:hours|hrs\b\.?|hr\b|h\b)")
# A number that identifies, after its label ("Application No. 20", "Report #7", "Number 3"):
# a fact as a name is, though as a bare number it is too small to count. A page carries it
# when it prints the label and the number ("No.: 20", "NO. 020").
_LABELLED = re.compile(
    r"(?<![\w.])(?:No\.?|NO\.?|Nos\.|Number|number|#)[ \t]*:?[ \t]*(?P<n>\d{1,4})(?![\d,./:-]*\d)"
)
Reading = tuple[int, str, int, int]  # the seconds of a time, -1 where none is written


def figure_pages(
    index: PacketIndex, text: str, span: tuple[int, int], masked: str
) -> Iterator[tuple[str, str, frozenset[int]]]:
    """The figures of `text[span]` outside its claims (`masked`: that span with the claims
    blanked), each as (key, as written, the pages printing it); figures no page prints are
    left out."""
    for quantity in _QUANTITY.findall(masked):
        held = frozenset(_quantity_pages(index, float(quantity)))
        if held:
            yield f"number:{float(quantity)}", quantity, held
    clocks = [
        (match, (int(match.group(1)), ":", int(match.group(2)), -1))
        for match in _CLOCK.finditer(text, span[0], span[1])
    ]
    readings = [(match, _reading(match)) for match in _READING.finditer(text, span[0], span[1])]
    for match, reading in [*readings, *clocks]:
        if reading is None or masked[match.start() - span[0]] != match.group()[0]:
            continue  # no reading; inside a claim (a page:line pin, a date)
        held = frozenset(_reading_pages(index, reading))
        if held:
            seconds = f":{reading[3]:02d}" if reading[3] >= 0 else ""
            yield f"reading:{reading[0]}{reading[1]}{reading[2]}{seconds}", match.group(), held
    for match in _LABELLED.finditer(text, span[0], span[1]):
        if masked[match.start() - span[0]] != match.group()[0]:
            continue  # inside a claim
        number = int(match.group("n"))
        held = frozenset(_labelled_pages(index, number))
        if held:
            yield f"no:{number}", match.group(), held


def _reading(match: re.Match[str]) -> Reading | None:
    first, separator, second, seconds = match.groups()
    if separator == ":" and (len(first) > 2 or len(second) != 2):
        return None  # not a time of day
    if separator == "/" and (len(first) < 2 or seconds is not None):
        return None  # "3/12": a date or a fraction, not a reading
    return int(first), separator, int(second), int(seconds) if seconds is not None else -1


def _reading_pages(index: PacketIndex, reading: Reading) -> list[int]:
    return index.derived(("reading", reading), lambda: _read_reading_pages(index, reading))


def _read_reading_pages(index: PacketIndex, reading: Reading) -> list[int]:
    second = str(reading[2]).zfill(2)
    return [
        page
        for page in index.pages_with_term(second)
        if any(_carries(_reading(m), reading) for m in _READING.finditer(index.pages[page].text))
    ]


def _carries(printed: Reading | None, reading: Reading) -> bool:
    """A printed reading is the draft's: the same numbers, and the same seconds where the
    draft gives them ("14:41" is carried by "14:41:03"; "14:41:03" by "14:41:03" only)."""
    return printed is not None and printed[:3] == reading[:3] and reading[3] in (-1, printed[3])


def _labelled_pages(index: PacketIndex, number: int) -> list[int]:
    return index.derived(("labelled", number), lambda: _read_labelled(index, number))


def _read_labelled(index: PacketIndex, number: int) -> list[int]:
    written = {str(number).zfill(width) for width in range(1, 5)}
    pages = sorted({p for form in written for p in index.pages_with_term(form)})
    return [
        page
        for page in pages
        if any(int(m.group("n")) == number for m in _LABELLED.finditer(index.pages[page].text))
    ]


def _quantity_pages(index: PacketIndex, value: float) -> list[int]:
    return index.derived(("quantity", value), lambda: _read_quantity_pages(index, value))


def _read_quantity_pages(index: PacketIndex, value: float) -> list[int]:
    whole = str(int(value))
    printed = re.compile(rf"(?<![\w.,/:-]){whole}(?:\.\d{{1,4}})?(?![\w/:-]*\d)")
    return [
        page
        for page in index.pages_with_term(whole)
        if any(float(m.group()) == value for m in printed.finditer(index.pages[page].text))
    ]
