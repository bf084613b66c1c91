"""The review list's query string, validated: filters, sort, page size and keyset cursors.

Anything out of place (an unknown origin, a date in the year 30000, a cursor that does not
decode, a 10 MB parameter) is a form error shown on the page with a 400, never a 500; the
selector (`selectors.document_review_page`) gets only a `DocumentListQuery`.
"""

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import urlencode

from django import forms

from apps.documents.models import Document, Tag

# Sort names in the query string -> what the selector orders by (always then by id).
SORTS = {
    "added": "created_at",
    "name": "filename",
    "pages": "page_count",
    "size": "blob__size",
    "custodian": "custodian",
}
SORT_CHOICES = [
    ("-added", "Newest first"),
    ("added", "Oldest first"),
    ("name", "Name, A to Z"),
    ("-name", "Name, Z to A"),
    ("-pages", "Most pages"),
    ("pages", "Fewest pages"),
    ("-size", "Largest"),
    ("size", "Smallest"),
    ("custodian", "Custodian, A to Z"),
    ("-custodian", "Custodian, Z to A"),
]
PER_PAGE_CHOICES = [("50", "50"), ("100", "100"), ("200", "200")]
YES_NO = [("", "Either"), ("yes", "Yes"), ("no", "No")]
MAX_CURSOR_CHARS = 600


@dataclass(frozen=True)
class DocumentListQuery:
    origin: str = ""
    custodian: str = ""
    kind: str = ""
    status: str = ""
    needs_review: bool | None = None
    produced: bool | None = None
    in_packet: bool | None = None
    added_from: date | None = None
    added_to: date | None = None
    tag: int | None = None
    withdrawn: bool = False
    sort: str = "-added"
    per_page: int = 100
    after: tuple[Any, int] | None = None
    before: tuple[Any, int] | None = None

    @property
    def is_default_view(self) -> bool:
        """The plain newest-first first page, where new uploads appear live."""
        return self == DocumentListQuery(per_page=self.per_page)

    @property
    def filter_count(self) -> int:
        """How many filters narrow the list: the sort and the page size are not filters."""
        return len(set(self.filter_params()) - {"sort", "per_page"})

    def filter_params(self) -> dict[str, str]:
        """The filters and sort as query parameters (for page links and bulk "all matching")."""
        params = {
            "origin": self.origin,
            "custodian": self.custodian,
            "kind": self.kind,
            "status": self.status,
            "needs_review": _yes_no(self.needs_review),
            "produced": _yes_no(self.produced),
            "in_packet": _yes_no(self.in_packet),
            "added_from": self.added_from.isoformat() if self.added_from else "",
            "added_to": self.added_to.isoformat() if self.added_to else "",
            "tag": str(self.tag) if self.tag else "",
            "withdrawn": "yes" if self.withdrawn else "",
            "sort": "" if self.sort == "-added" else self.sort,
            "per_page": "" if self.per_page == 100 else str(self.per_page),
        }
        return {k: v for k, v in params.items() if v}


def _yes_no(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")


def cursor_encode(value: Any, pk: int) -> str:
    raw = json.dumps([value, pk], separators=(",", ":"), default=str).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def cursor_decode(text: str, sort: str) -> tuple[Any, int]:
    """(sort value, id) from a cursor; ValueError when it is not one of ours for this sort."""
    if len(text) > MAX_CURSOR_CHARS:
        raise ValueError("too long")
    try:
        value, pk = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise ValueError("not a cursor") from None
    if not isinstance(pk, int) or isinstance(pk, bool) or not 0 < pk < 2**63:
        raise ValueError("bad id")
    field = SORTS[sort.lstrip("-")]
    if field in ("page_count", "blob__size"):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**63:
            raise ValueError("bad number")
    elif not isinstance(value, str) or len(value) > 300 or "\x00" in value:
        raise ValueError("bad text")
    if field == "created_at":
        from django.utils.dateparse import parse_datetime

        parsed = parse_datetime(value)
        if parsed is None:
            raise ValueError("bad time")
        return parsed, pk
    return value, pk


class DocumentListForm(forms.Form):
    origin = forms.ChoiceField(required=False, label="Origin")
    custodian = forms.CharField(required=False, max_length=200, label="Custodian")
    kind = forms.ChoiceField(required=False, label="Kind")
    status = forms.ChoiceField(required=False, label="Status")
    needs_review = forms.ChoiceField(required=False, choices=YES_NO, label="Needs review")
    produced = forms.ChoiceField(required=False, choices=YES_NO, label="Produced")
    in_packet = forms.ChoiceField(required=False, choices=YES_NO, label="In a packet")
    added_from = forms.DateField(
        required=False, label="Added from", widget=forms.DateInput(attrs={"type": "date"})
    )
    added_to = forms.DateField(
        required=False, label="Added to", widget=forms.DateInput(attrs={"type": "date"})
    )
    tag = forms.TypedChoiceField(required=False, coerce=int, empty_value=None, label="Tag")
    withdrawn = forms.ChoiceField(
        required=False,
        choices=[("", "In the case"), ("yes", "Withdrawn")],
        label="Show",
    )
    sort = forms.ChoiceField(required=False, choices=SORT_CHOICES, label="Sort", initial="-added")
    per_page = forms.ChoiceField(
        required=False, choices=PER_PAGE_CHOICES, label="Per page", initial="100"
    )
    after = forms.CharField(required=False, max_length=MAX_CURSOR_CHARS, widget=forms.HiddenInput)
    before = forms.CharField(required=False, max_length=MAX_CURSOR_CHARS, widget=forms.HiddenInput)

    def __init__(self, *args: Any, tags: list[Tag] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices: dict[str, list[tuple[Any, str]]] = {
            "origin": [("", "Any origin"), *Document.Origin.choices],
            "kind": [("", "Any kind"), *Document.Kind.choices],
            "status": [("", "Any status"), *Document.Status.choices],
            "tag": [("", "Any tag"), *((t.pk, t.name) for t in tags or [])],
        }
        for name, options in choices.items():
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)  # noqa: S101  (declared above)
            field.choices = options

    def clean_custodian(self) -> str:
        value: str = self.cleaned_data.get("custodian") or ""
        if "\x00" in value:
            raise forms.ValidationError("A custodian has no NUL characters.")
        return value.strip()

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("added_from"), data.get("added_to")
        if start and end and start > end:
            self.add_error("added_to", "The end date is before the start date.")
        sort = data.get("sort") or "-added"
        for name in ("after", "before"):
            if name in self.errors:
                # A page link's cursor is a hidden field, whose own error no one would see.
                self.errors.pop(name)
                self.add_error(None, "That page link is out of date; start again from page one.")
            text = data.get(name) or ""
            if not text:
                data[name] = None
                continue
            try:
                data[name] = cursor_decode(text, sort)
            except ValueError:
                self.add_error(None, "That page link is out of date; start again from page one.")
        if data.get("after") and data.get("before"):
            self.add_error(None, "A page link goes one way only.")
        return data

    def query(self) -> DocumentListQuery:
        """The validated query; call after is_valid()."""
        data = self.cleaned_data

        def yes_no(name: str) -> bool | None:
            return {"yes": True, "no": False}.get(data.get(name) or "")

        return DocumentListQuery(
            origin=data.get("origin") or "",
            custodian=data.get("custodian") or "",
            kind=data.get("kind") or "",
            status=data.get("status") or "",
            needs_review=yes_no("needs_review"),
            produced=yes_no("produced"),
            in_packet=yes_no("in_packet"),
            added_from=data.get("added_from"),
            added_to=data.get("added_to"),
            tag=data.get("tag"),
            withdrawn=data.get("withdrawn") == "yes",
            sort=data.get("sort") or "-added",
            per_page=int(data.get("per_page") or 100),
            after=data.get("after"),
            before=data.get("before"),
        )


# One bulk action touches at most this many documents ("all matching" included).
MAX_BULK_DOCUMENTS = 10_000
MAX_FILTERS_CHARS = 2000


class BulkForm(forms.Form):
    """A bulk action of the review list: on the ticked `ids`, or (scope "all") on every
    document the list's `filters` (its query string) match. Its ids are `id_bulk_<field>`: the
    filters on the same page have a tag field too."""

    action = forms.ChoiceField(
        choices=[
            ("tag", "Tag"),
            ("untag", "Remove a tag"),
            ("packet", "Add to a packet"),
            ("produce", "Produce"),
            ("withdraw", "Withdraw"),
        ],
        label="Action",
    )
    scope = forms.ChoiceField(
        required=False,
        choices=[("selected", "The selected documents"), ("all", "All matching documents")],
        label="Apply to",
    )
    filters = forms.CharField(
        required=False, max_length=MAX_FILTERS_CHARS, widget=forms.HiddenInput
    )
    tag_name = forms.CharField(required=False, max_length=200, label="Tag")
    tag = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="Tag to remove"
    )
    packet = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="Packet (editable ones)"
    )
    packet_reason = forms.CharField(
        required=False, max_length=4000, label="Why they belong in the packet"
    )
    volume = forms.CharField(required=False, max_length=40, label="Production volume")
    # strip=False: carried to the production page as typed ("ACME " ends with a space).
    bates_prefix = forms.CharField(required=False, max_length=20, strip=False, label="Bates prefix")
    reason = forms.CharField(
        required=False,
        max_length=4000,
        label="Reason for withdrawing",
        widget=forms.TextInput(attrs={"placeholder": "e.g. uploaded to the wrong case"}),
    )

    def __init__(
        self,
        *args: Any,
        tags: list[Tag] | None = None,
        packets: list[tuple[int, str]] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("auto_id", "id_bulk_%s")
        super().__init__(*args, **kwargs)
        self._tags = tags or []
        field = self.fields["tag"]
        assert isinstance(field, forms.ChoiceField)  # noqa: S101  (declared above)
        field.choices = [("", "Choose a tag"), *((t.pk, t.name) for t in self._tags)]
        packet = self.fields["packet"]
        assert isinstance(packet, forms.ChoiceField)  # noqa: S101  (declared above)
        packet.choices = [("", "Choose a packet"), *(packets or [])]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        raw = self.data.getlist("ids") if hasattr(self.data, "getlist") else []
        if len(raw) > MAX_BULK_DOCUMENTS:
            raise forms.ValidationError(
                f"One action takes at most {MAX_BULK_DOCUMENTS:,} documents."
            )
        if any(
            not (isinstance(v, str) and v.isascii() and v.isdigit() and len(v) < 19) for v in raw
        ):
            raise forms.ValidationError("Those are not document ids.")
        data["ids"] = [int(v) for v in raw if int(v) > 0]
        data["scope"] = data.get("scope") or "selected"
        from django.http import QueryDict

        listing = DocumentListForm(QueryDict(data.get("filters") or ""), tags=self._tags)
        if not listing.is_valid():
            raise forms.ValidationError("The list's filters are not valid; reload the list.")
        data["query"] = listing.query()
        data["filters"] = urlencode(data["query"].filter_params())
        if data["scope"] == "selected" and not data["ids"]:
            raise forms.ValidationError("Select at least one document.")
        if data.get("action") == "untag" and data.get("tag") is None:
            self.add_error("tag", "Choose the tag to remove.")
        if data.get("action") == "packet" and data.get("packet") is None:
            self.add_error("packet", "Choose an editable packet.")
        return data
