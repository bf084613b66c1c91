"""A frozen packet's index, built once and kept (issue 11's performance target).

A frozen packet never changes (its content hash says so), so the `PacketIndex` of its pages is
built once and stored in `evidence.PacketIndexCache`, keyed by the packet, its
content hash and `INDEX_FORMAT` (a version of this format and a digest of the code that decides
what an index holds):

1. Freezing a packet defers "verification.index_prepare" (the cpu queue, by name);
   `packet_index_prepare` builds the index of the frozen pages and stores it, unless a sound
   one is stored already.
2. A verification run asks `packet_index_for`: the stored index of its draft's packet, if there
   is one for that packet of that case, with the packet's content hash and this format, whose
   bytes are intact and decode to an index of exactly these pages. Anything else (no row, an
   older format, other code, a corrupt or foreign blob) is rebuilt from the pages and stored
   again, with a warning for a row that was there and unusable: a bad cache is never an
   error and never trusted.
3. A loaded index decodes each page's terms and values only when a check looks at the page.

The stored form (`encode` / `decode`, no pickle: nothing in it is ever executed) is a magic
string, a JSON header (format, packet id, content hash, page count, the distinct terms
and values, the arrays' lengths) and flat arrays of 32-bit integers: each term's pages (the
postings), each page's terms, each page's dates and amounts (start, end, value).
"""

import gc
import hashlib
import json
import logging
import operator
import sys
import time
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import chain, islice, repeat
from pathlib import Path
from typing import TYPE_CHECKING, overload

from django.conf import settings
from django.db import transaction

from apps.evidence.models import FrozenPage, Packet, PacketIndexCache
from apps.evidence.services import packets as packet_services
from apps.verification import amounts, dates, index, normalise, numwords, spans
from apps.verification.index import PacketIndex, PageRecord, Value
from apps.verification.pages import page_record

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    Ints = array[int]
else:
    Ints = array  # array is not subscriptable at run time on Python 3.11

MAGIC = b"lexweb-packet-index\n"
FORMAT = 2  # 2: not compressed
# What an index holds is decided by these modules: any change to them makes every stored index
# stale (rebuilt on first use), so an index is never read by code that would build another.
_DECIDING = (index, normalise, dates, amounts, numwords, spans)
# Not compressed: zlib made the form 28% smaller and took longer to inflate than the rest of
# loading (the column is stored uncompressed too: evidence migration 0005).


class IndexCacheError(Exception):
    """A stored index that cannot be used (corrupt, foreign, stale); the message says why."""


def _code_digest() -> str:
    digest = hashlib.sha256()
    for module in _DECIDING:
        digest.update(Path(module.__file__ or "").read_bytes())
    # The order numeric dates are read in (LEXWEB_DATE_ORDER) decides their values too.
    digest.update(getattr(settings, "LEXWEB_DATE_ORDER", "mdy").encode())
    return digest.hexdigest()[:16]


INDEX_FORMAT = f"{FORMAT}:{_code_digest()}"


# --- 1. The stored form ----------------------------------------------------------------------

# The arrays, in the order they are stored. Each kind's rows: offsets (rows + 1) into the
# flat arrays after them. post: term -> pages; page: page -> terms; date / amount: page ->
# (start, end, value); date_pages / amount_pages: value -> pages.
_ARRAYS = (
    "post_offsets", "post_pages", "page_offsets", "page_terms",
    "date_offsets", "date_starts", "date_ends", "date_values",
    "amount_offsets", "amount_starts", "amount_ends", "amount_values",
    "date_pages_offsets", "date_pages_pages", "amount_pages_offsets", "amount_pages_pages",
)  # fmt: skip


def encode(packet_index: PacketIndex, *, packet_id: int, content_hash: str) -> bytes:
    """The stored form of an index just built (`PacketIndex.build`)."""
    postings = packet_index.postings
    terms = list(postings)
    term_id = {term: k for k, term in enumerate(terms)}
    arrays: dict[str, Ints] = {}
    arrays["post_offsets"], arrays["post_pages"] = _flat(list(postings[term]) for term in terms)
    arrays["page_offsets"], arrays["page_terms"] = _flat(
        list(map(term_id.__getitem__, stems)) for stems in packet_index.stems
    )
    values: dict[str, int] = {}
    for kind, per_page in (("date", packet_index.dates), ("amount", packet_index.amounts)):
        offsets, starts, ends, ids = array("I", [0]), array("I"), array("I"), array("I")
        for found in per_page:
            for value in found:
                starts.append(value.start)
                ends.append(value.end)
                ids.append(values.setdefault(value.value, len(values)))
            offsets.append(len(ids))
        arrays |= {f"{kind}_offsets": offsets, f"{kind}_starts": starts}
        arrays |= {f"{kind}_ends": ends, f"{kind}_values": ids}
    for kind, table in (("date", packet_index.date_pages), ("amount", packet_index.amount_pages)):
        arrays[f"{kind}_pages_offsets"], arrays[f"{kind}_pages_pages"] = _flat(
            table.get(value, []) for value in values
        )
    stored = {name: _narrow(arrays[name]) for name in _ARRAYS}
    header = {
        "format": INDEX_FORMAT,
        "packet": packet_id,
        "content_hash": content_hash,
        "pages": len(packet_index.pages),
        "terms": terms,
        "values": list(values),
        "byteorder": sys.byteorder,
        "arrays": {name: [a.typecode, len(a)] for name, a in stored.items()},
    }
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    parts = [MAGIC, len(head).to_bytes(4, "big"), head, *(a.tobytes() for a in stored.values())]
    return b"".join(parts)


def _flat(rows: Iterable[list[int]]) -> tuple["Ints", "Ints"]:
    offsets, flat = array("I", [0]), array("I")
    for row in rows:
        flat.fromlist(row)
        offsets.append(len(flat))
    return offsets, flat


def _narrow(numbers: "Ints") -> "Ints":
    """The same numbers in two bytes each when they all fit (half the bytes to inflate)."""
    return array("H", numbers) if not numbers or max(numbers) <= 0xFFFF else numbers


def decode(
    data: bytes, *, pages: Sequence[PageRecord], packet_id: int, content_hash: str
) -> PacketIndex:
    """The index stored in `data`, over `pages` (the packet's frozen pages in position order).
    IndexCacheError unless it is of this format and code, of this packet and content hash, of
    as many pages, and every offset, term, value and span in it is in range."""
    # As in PacketIndex.build: many small objects and no cycles; the cyclic collector would
    # walk the whole heap (the caller's pages too) for nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _decode(data, pages=pages, packet_id=packet_id, content_hash=content_hash)
    finally:
        if enabled:
            gc.enable()


def _decode(
    data: bytes, *, pages: Sequence[PageRecord], packet_id: int, content_hash: str
) -> PacketIndex:
    header, arrays = _parts(memoryview(data))
    expected = {"format": INDEX_FORMAT, "packet": packet_id, "content_hash": content_hash}
    for key, value in expected.items():
        if header.get(key) != value:
            raise IndexCacheError(f"{key} is {header.get(key)!r:.80}, not {value!r}")
    if header.get("pages") != len(pages):
        raise IndexCacheError(f"it has {header.get('pages')!r:.20} pages, the packet {len(pages)}")
    terms, values = header.get("terms"), header.get("values")
    if not (_strings(terms) and _strings(values)):
        raise IndexCacheError("its terms or values are not lists of strings")
    assert isinstance(terms, list) and isinstance(values, list)  # noqa: S101  (for mypy)
    n = len(pages)
    _rows(arrays, "post", len(terms), "post_pages", bound=n)
    _rows(arrays, "page", n, "page_terms", bound=len(terms))
    for kind in ("date", "amount"):
        _rows(arrays, kind, n, f"{kind}_values", bound=len(values))
        _rows(arrays, f"{kind}_pages", len(values), f"{kind}_pages_pages", bound=n)
        _spans_fit(arrays, kind, pages)
    records = list(pages)
    # Each term's and value's number, made once for the views that look them up.
    term_ids = _numbered(terms)
    value_ids = _numbered(values)
    return PacketIndex(
        pages=records,
        stems=page_terms(arrays["page_offsets"], arrays["page_terms"], terms, term_ids),
        postings=Postings(arrays["post_offsets"], arrays["post_pages"], terms, term_ids),
        dates=PageValues(arrays, "date", values),
        amounts=PageValues(arrays, "amount", values),
        date_pages=Postings(
            arrays["date_pages_offsets"], arrays["date_pages_pages"], values, value_ids
        ),
        amount_pages=Postings(
            arrays["amount_pages_offsets"], arrays["amount_pages_pages"], values, value_ids
        ),
        bates=index.bates_table(records),
    )


def _parts(raw: memoryview) -> tuple[dict[str, object], dict[str, "Ints"]]:
    if raw[: len(MAGIC)] != MAGIC or len(raw) < len(MAGIC) + 4:
        raise IndexCacheError("it does not start as a stored index")
    at = len(MAGIC) + 4
    size = int.from_bytes(raw[len(MAGIC) : at], "big")
    try:
        header = json.loads(bytes(raw[at : at + size]))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexCacheError(f"its header is not JSON ({exc})") from None
    if not isinstance(header, dict) or not isinstance(header.get("arrays"), dict):
        raise IndexCacheError("its header is not an index's")
    at += size
    arrays: dict[str, Ints] = {}
    for name in _ARRAYS:
        shape = header["arrays"].get(name)
        if not (
            isinstance(shape, list)
            and len(shape) == 2
            and shape[0] in ("H", "I")
            and isinstance(shape[1], int)
            and shape[1] >= 0
        ):
            raise IndexCacheError(f"the shape of {name} is {shape!r:.40}")
        numbers = array(shape[0])
        end = at + numbers.itemsize * shape[1]
        if end > len(raw):
            raise IndexCacheError(f"{name} is cut short")
        numbers.frombytes(raw[at:end])
        arrays[name] = numbers
        at = end
    if at != len(raw):
        raise IndexCacheError(f"{len(raw) - at} bytes follow the last array")
    if header.get("byteorder") != sys.byteorder:
        for numbers in arrays.values():
            numbers.byteswap()
    return header, arrays


def _strings(items: object) -> bool:
    return isinstance(items, list) and all(isinstance(item, str) for item in items)


def _rows(arrays: Mapping[str, "Ints"], kind: str, rows: int, flat: str, *, bound: int) -> None:
    """The offsets of `rows` rows into `flat` run from 0 to its end, never back, and every
    entry of `flat` is below `bound`."""
    offsets, entries = arrays[f"{kind}_offsets"], arrays[flat]
    if len(offsets) != rows + 1 or offsets[0] != 0 or offsets[-1] != len(entries):
        raise IndexCacheError(f"the {kind} offsets do not fit {rows} rows")
    if not all(map(operator.le, offsets, islice(offsets, 1, None))):
        raise IndexCacheError(f"the {kind} offsets go back")
    if not _below(entries, bound):
        raise IndexCacheError(f"an entry of {kind} is out of range")


def _below(numbers: "Ints", bound: int) -> bool:
    """Every number is below `bound`. Two-byte numbers are judged by their high bytes first
    (searches in C), and one by one only where the high byte is the bound's: `max` over the
    millions of postings was the largest part of loading an index."""
    if not numbers:
        return True
    if numbers.typecode != "H":
        return max(numbers) < bound
    if bound > 0xFFFF:
        return True
    data = numbers.tobytes()
    high = data[1::2] if sys.byteorder == "little" else data[::2]
    top = bound >> 8
    above = high.translate(None, bytes(range(top)))  # the high bytes >= the bound's
    if above.strip(bytes([top])):
        return False
    at = high.find(top) if above else -1
    while at >= 0:
        if numbers[at] >= bound:
            return False
        at = high.find(top, at + 1)
    return True


def _spans_fit(arrays: Mapping[str, "Ints"], kind: str, pages: Sequence[PageRecord]) -> None:
    """Every value's span is a non-empty stretch of its page's text."""
    offsets, starts, ends = (arrays[f"{kind}_{part}"] for part in ("offsets", "starts", "ends"))
    if not len(starts) == len(ends) == offsets[-1]:
        raise IndexCacheError(f"the {kind} spans do not match their values")
    counts = map(operator.sub, islice(offsets, 1, None), offsets)  # values per page
    sizes = chain.from_iterable(map(repeat, map(len, map(_TEXT, pages)), counts))
    if not (all(map(operator.lt, starts, ends)) and all(map(operator.le, ends, sizes))):
        raise IndexCacheError(f"a {kind} span is outside its page's text")


# --- 2. Views of a loaded index, decoded page by page ----------------------------------------


_TEXT = operator.attrgetter("text")  # a page's text (in C: read for every page)


def _numbered(keys: list[str]) -> dict[str, int]:
    """Each key's position in `keys`."""
    return dict(zip(keys, range(len(keys)), strict=True))


def page_terms(
    offsets: "Ints", flat: "Ints", terms: list[str], ids: dict[str, int] | None = None
) -> "PageTerms":
    """Each page's stems (`PacketIndex.stems`) as a set over its stored row: a check asks a few
    terms of thousands of pages, so no set of a page's terms is built for it. `ids`: each
    term's position in `terms` (`_numbered`), when already made."""
    ids = _numbered(terms) if ids is None else ids
    table = _TermTable(ids, terms, flat, flat.tobytes(), flat.itemsize)  # native byte order
    return PageTerms(table, offsets)


class PageTerms(Sequence["TermRow"]):
    """The pages' stem sets, each made when a check first asks for its page."""

    def __init__(self, table: "_TermTable", offsets: "Ints") -> None:
        self._table, self._offsets = table, offsets
        self._rows: list[TermRow | None] = [None] * (len(offsets) - 1)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, index: int) -> "TermRow": ...
    @overload
    def __getitem__(self, index: slice) -> list["TermRow"]: ...
    def __getitem__(self, index: int | slice) -> "TermRow | list[TermRow]":
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        row = self._rows[index]  # IndexError past the end, as a list
        if row is None:
            if index < 0:
                index += len(self._rows)
            row = self._rows[index] = TermRow(
                self._table, self._offsets[index], self._offsets[index + 1]
            )
        return row


class _TermTable:
    __slots__ = ("bytes", "flat", "ids", "needles", "terms", "width")

    def __init__(
        self, ids: dict[str, int], terms: list[str], flat: "Ints", data: bytes, width: int
    ) -> None:
        self.ids, self.terms, self.flat, self.bytes, self.width = ids, terms, flat, data, width
        self.needles: dict[str, bytes] = {}  # a term's number as the bytes of a row, once made


class TermRow(AbstractSet[str]):
    """One page's stems: membership looks for the term's number in the bytes of the page's row
    (a search in C, nothing made per page)."""

    __slots__ = ("_end", "_start", "_table")

    def __init__(self, table: _TermTable, start: int, end: int) -> None:
        self._table, self._start, self._end = table, start, end

    def __contains__(self, term: object) -> bool:
        table = self._table
        if not isinstance(term, str):
            return False
        needle = table.needles.get(term)
        width = table.width
        if needle is None:
            k = table.ids.get(term)
            if k is None:
                return False
            needle = table.needles[term] = k.to_bytes(width, sys.byteorder)
        stop = self._end * width
        at = table.bytes.find(needle, self._start * width, stop)
        # A match must start on a number's first byte, not straddle two numbers.
        while at >= 0 and at % width:
            at = table.bytes.find(needle, at + 1, stop)
        return at >= 0

    def __iter__(self) -> Iterator[str]:
        table = self._table
        return map(table.terms.__getitem__, table.flat[self._start : self._end])

    def __len__(self) -> int:
        return self._end - self._start


class Postings(Mapping[str, list[int]]):
    """key -> the pages holding it (`PacketIndex.postings`, `.date_pages`, `.amount_pages`),
    each list made when first asked for; a key on no page is not in it."""

    def __init__(
        self, offsets: "Ints", flat: "Ints", keys: list[str], ids: dict[str, int] | None = None
    ) -> None:
        self._offsets, self._flat, self._keys = offsets, flat, keys
        self._ids = _numbered(keys) if ids is None else ids  # each key's position in `keys`
        self._made: dict[str, list[int]] = {}

    def __getitem__(self, key: str) -> list[int]:
        made = self._made.get(key)
        if made is None:
            k = self._ids[key]
            start, end = self._offsets[k], self._offsets[k + 1]
            if start == end:
                raise KeyError(key)
            made = self._made[key] = self._flat[start:end].tolist()
        return made

    def get(self, key: str, default: Sequence[int] | None = None) -> Sequence[int] | None:  # type: ignore[override]
        """`self[key]`, or `default` for a key on no page (as Mapping.get, without raising
        and catching KeyError for each)."""
        made = self._made.get(key)
        if made is not None:
            return made
        k = self._ids.get(key)
        if k is None:
            return default
        start, end = self._offsets[k], self._offsets[k + 1]
        if start == end:
            return default
        made = self._made[key] = self._flat[start:end].tolist()
        return made

    def __iter__(self) -> Iterator[str]:
        offsets = self._offsets
        return (key for k, key in enumerate(self._keys) if offsets[k] < offsets[k + 1])

    def count(self, key: str) -> int:
        """How many pages hold `key` (0 for a key on none), without listing them
        (`PacketIndex.document_frequency`)."""
        k = self._ids.get(key)
        return 0 if k is None else self._offsets[k + 1] - self._offsets[k]

    def __len__(self) -> int:
        return sum(1 for _ in self)


class PageValues(Sequence[list[Value]]):
    """Each page's dates or amounts (`PacketIndex.dates` / `.amounts`), made when first asked
    for."""

    def __init__(self, arrays: Mapping[str, Ints], kind: str, values: list[str]) -> None:
        self._offsets = arrays[f"{kind}_offsets"]
        self._starts, self._ends = arrays[f"{kind}_starts"], arrays[f"{kind}_ends"]
        self._ids, self._values = arrays[f"{kind}_values"], values
        self._made: dict[int, list[Value]] = {}

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, i: int) -> list[Value]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[list[Value]]: ...
    def __getitem__(self, i: int | slice) -> list[Value] | Sequence[list[Value]]:
        if isinstance(i, slice):
            return [self[k] for k in range(len(self))[i]]
        made = self._made.get(i)
        if made is None:
            at = _row(self._offsets, i)
            made = self._made[i] = [
                Value(self._starts[k], self._ends[k], self._values[self._ids[k]])
                for k in range(self._offsets[at], self._offsets[at + 1])
            ]
        return made


def _row(offsets: Ints, i: int) -> int:
    rows = len(offsets) - 1
    at = i + rows if i < 0 else i
    if not 0 <= at < rows:
        raise IndexError(i)
    return at


# --- 3. Keeping and finding the index of a frozen packet ------------------------------------


def packet_index_prepare(*, packet_id: int) -> None:
    """The job "verification.index_prepare": build and store the index of a frozen packet,
    unless a sound one is stored. Idempotent; a missing or editable packet is left alone."""
    packet = Packet.objects.filter(pk=packet_id, status=Packet.Status.FROZEN).first()
    if packet is None:
        return
    row = _stored(packet)
    if row is not None and _intact(row):
        return
    pages = _frozen_pages(packet)
    _build_and_store(packet, pages, [page_record(page) for page in pages])


def packet_index_for(
    *,
    case_id: int,
    packet_id: int,
    records: Sequence[PageRecord],
    pages: Sequence[FrozenPage] | None = None,
) -> PacketIndex:
    """The index of the frozen packet `packet_id` of case `case_id` over `records` (the page
    records of its frozen pages in position order): the stored one when it is sound, else
    built now (and stored, for the next run, when `pages`, the frozen pages themselves, read
    here if not given, hash to the packet's content hash). A packet that is not frozen, or
    not of this case, is indexed and nothing is stored."""
    packet = Packet.objects.filter(
        pk=packet_id, case_id=case_id, status=Packet.Status.FROZEN
    ).first()
    if packet is None:
        return PacketIndex.build(records)
    row = _stored(packet)
    if row is not None:
        data = bytes(row.data)
        try:
            if hashlib.sha256(data).hexdigest() != row.data_sha256:
                raise IndexCacheError("its bytes do not match their SHA-256")
            return decode(
                data,
                pages=records,
                packet_id=packet.pk,
                content_hash=packet.content_hash,
            )
        except IndexCacheError as exc:
            logger.warning(
                "Stored index %s of packet %s unusable (%s); building it again.",
                row.pk,
                packet.pk,
                exc,
            )
    return _build_and_store(packet, _frozen_pages(packet) if pages is None else pages, records)


def _stored(packet: Packet) -> PacketIndexCache | None:
    return PacketIndexCache.objects.filter(
        packet=packet,
        packet__case_id=packet.case_id,
        content_hash=packet.content_hash,
        format_version=INDEX_FORMAT,
    ).first()


def _intact(row: PacketIndexCache) -> bool:
    return hashlib.sha256(bytes(row.data)).hexdigest() == row.data_sha256


def _frozen_pages(packet: Packet) -> list[FrozenPage]:
    return list(
        FrozenPage.objects.filter(packet=packet).select_related("document").order_by("position")
    )


def _build_and_store(
    packet: Packet, pages: Sequence[FrozenPage], records: Sequence[PageRecord]
) -> PacketIndex:
    """Build the index; store it only if `pages` are the packet's snapshot (their content
    hash is the packet's), replacing the packet's other stored indexes."""
    started = time.perf_counter()
    built = PacketIndex.build(records)
    seconds = time.perf_counter() - started
    if packet_services.content_hash(pages) != packet.content_hash:
        logger.warning("Packet %s: its frozen pages do not hash to its content hash.", packet.pk)
        return built
    data = encode(built, packet_id=packet.pk, content_hash=packet.content_hash)
    with transaction.atomic():
        PacketIndexCache.objects.filter(packet=packet).delete()
        PacketIndexCache.objects.bulk_create(
            [
                PacketIndexCache(
                    packet=packet,
                    content_hash=packet.content_hash,
                    format_version=INDEX_FORMAT,
                    data=data,
                    data_sha256=hashlib.sha256(data).hexdigest(),
                    size=len(data),
                    build_seconds=round(seconds, 3),
                )
            ],
            ignore_conflicts=True,  # another job stored the same index meanwhile
        )
    return built
