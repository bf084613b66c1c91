"""Forms of the production pages: the new production (documents in order and the stamp), its
stamp preview, and an export.

They parse and bound what the browser sends (ids that are ids, lengths, numbers that are finite
and in range); the production service's own checks stay the final word, and its messages are
shown on the form.
"""

from typing import Any

from django import forms
from django.http import QueryDict

from apps.documents import bates
from apps.documents.models import Production, ProductionExport
from apps.documents.production_preview import MAX_PICKED, Stamp

MAX_ID = 2**63 - 1
MAX_QUERY_CHARS = 500
# How the picked documents can be sorted on the page (ops "sort:<key>").
SORT_KEYS = {"name": "File name", "date": "Date added", "custodian": "Custodian"}


def ids_from(data: QueryDict, name: str) -> list[int]:
    """The ids in parameter `name` (repeated, or comma-separated: the page posts its order as
    one field, since Django takes at most DATA_UPLOAD_MAX_NUMBER_FIELDS fields), in order;
    ValidationError for anything not an id."""
    raw = [v for value in data.getlist(name) for v in value.split(",") if v.strip()]
    if len(raw) > MAX_PICKED:
        raise forms.ValidationError(f"A production takes at most {MAX_PICKED:,} documents.")
    ids = []
    for value in (v.strip() for v in raw):
        if not (value.isascii() and value.isdigit() and 0 < len(value) < 20):
            raise forms.ValidationError("Those are not document ids.")
        number = int(value)
        if not 0 < number <= MAX_ID:
            raise forms.ValidationError("Those are not document ids.")
        ids.append(number)
    return ids


def clean_prefix(typed: str) -> str:
    """The prefix as typed, in capitals, without leading spaces (a label never starts with
    one); ValidationError with the production's own message when it cannot be one. Checked
    for other alphabets before the capitals: "ﬀ".upper() is "FF"."""
    prefix = typed.lstrip()
    problem = bates.prefix_problem(prefix if not prefix.isascii() else prefix.upper())
    if problem is not None:
        raise forms.ValidationError(problem)
    return prefix.upper()


class StampForm(forms.Form):
    """The Bates stamp: prefix, numbers, where the stamps go, the legend, size and margin."""

    # strip=False: a prefix may end with a space ("ACME " stamps "ACME 000123").
    bates_prefix = forms.CharField(
        max_length=bates.MAX_PREFIX,
        strip=False,
        label="Bates prefix",
        help_text=(
            "e.g. ACME. End it with a hyphen or a space to stamp ACME-000123 or ACME 000123."
        ),
    )
    start_number = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=10**12 - 1,
        label="Start number",
        help_text="Empty: after the highest number used with this prefix.",
    )
    digits = forms.IntegerField(min_value=3, max_value=12, initial=6, label="Digits")
    page_suffix_digits = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=bates.MAX_PAGE_SUFFIX_DIGITS,
        initial=0,
        label="Page suffix digits",
        help_text=(
            "0 or empty: every page takes the next number. 1-6: every document takes one "
            "number and its pages a suffix (3: ABC000123.001, ABC000123.002, ...)."
        ),
    )
    position = forms.ChoiceField(
        choices=Production.Position.choices,
        initial=Production.Position.BOTTOM_RIGHT,
        label="Number position",
    )
    legend = forms.CharField(
        required=False,
        max_length=120,
        label="Legend",
        help_text="One line, e.g. CONFIDENTIAL. Optional.",
    )
    legend_position = forms.ChoiceField(
        choices=Production.Position.choices,
        initial=Production.Position.BOTTOM_LEFT,
        label="Legend position",
    )
    font_size = forms.FloatField(min_value=5, max_value=24, initial=9, label="Font size (pt)")
    margin = forms.FloatField(min_value=4, max_value=72, initial=18, label="Margin (pt)")

    def clean_bates_prefix(self) -> str:
        return clean_prefix(str(self.cleaned_data["bates_prefix"]))

    def clean_legend(self) -> str:
        legend = str(self.cleaned_data.get("legend") or "")
        if any(ord(ch) < 32 for ch in legend):
            raise forms.ValidationError("The legend is one line, without control characters.")
        return legend.strip()

    def stamp(self) -> Stamp:
        """The validated stamp; call after is_valid()."""
        data = self.cleaned_data
        return Stamp(
            prefix=data["bates_prefix"],
            digits=data["digits"],
            position=data["position"],
            legend=data["legend"],
            legend_position=data["legend_position"],
            font_size=data["font_size"],
            margin=data["margin"],
            start_number=data.get("start_number"),
            page_suffix_digits=data.get("page_suffix_digits") or 0,
        )


class PreviewForm(StampForm):
    """The preview image's query string: the stamp. A setting left out takes its default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            if name != "bates_prefix":
                field.required = False

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name, field in self.fields.items():
            if data.get(name) in (None, "") and field.initial is not None:
                data[name] = field.initial
        return data


class ProductionForm(StampForm):
    """The new production: the volume, the documents (`documents`, ids in order) and the
    stamp. `op` says what the press was: preview, commit, add (the search or packet of the
    PickForm fields), sort:<key>, up:<id>, down:<id>, remove:<id>."""

    volume = forms.CharField(
        max_length=40,
        label="Volume",
        help_text="e.g. ACME001",
        error_messages={"required": "Name the volume (e.g. ACME001)."},
    )
    op = forms.CharField(max_length=40, required=False)
    field_order = ["volume", "bates_prefix", "start_number", "digits", "page_suffix_digits"]

    def __init__(self, *args: Any, commit: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the commit needs the volume's name; a preview or a reorder does not.
        self.fields["volume"].required = commit

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        assert isinstance(self.data, QueryDict)  # noqa: S101  (bound to request.POST)
        try:
            data["documents"] = ids_from(self.data, "documents")
        except forms.ValidationError as exc:
            self.add_error(None, exc)
            data["documents"] = []
        data["op"] = str(data.get("op") or "preview")
        return data


class ExportForm(forms.Form):
    encoding = forms.ChoiceField(
        choices=ProductionExport.Encoding.choices,
        initial=ProductionExport.Encoding.UTF8,
        label="Load file encoding",
    )
    image_dpi = forms.IntegerField(
        min_value=100, max_value=600, initial=300, label="Page image dpi"
    )


class PickForm(forms.Form):
    """Where more documents come from: every document a list filter matches (`filters`, the
    list's query string), a search's documents, a packet's documents. On the page's address
    (from the list's bulk "Produce", with its `ids`, volume and prefix), or posted with the
    form's "Add" buttons."""

    q = forms.CharField(required=False, max_length=MAX_QUERY_CHARS, label="Search")
    packet = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, label="Packet's documents"
    )
    filters = forms.CharField(required=False, max_length=2000, widget=forms.HiddenInput)
    volume = forms.CharField(required=False, max_length=40)
    bates_prefix = forms.CharField(required=False, max_length=bates.MAX_PREFIX, strip=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        assert isinstance(self.data, QueryDict)  # noqa: S101  (bound to the request's data)
        try:
            data["ids"] = ids_from(self.data, "ids")
        except forms.ValidationError as exc:
            self.add_error(None, exc)
            data["ids"] = []
        return data
