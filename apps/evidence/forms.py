"""Browser forms of the packet pages. They check shapes only; the packet services decide what
may go into a packet (and say why not)."""

from collections.abc import Sequence
from typing import Any

from django import forms

from apps.evidence.schemas import MAX_PAGE_NUMBER, MAX_REASON_CHARS, no_control_characters


def _text(value: str) -> None:
    """The API's rule for free text: tabs and line breaks, no other control characters."""
    try:
        no_control_characters(value)
    except ValueError:
        raise forms.ValidationError(
            "Remove the control characters (such as escape or bell) from this text."
        ) from None


class PacketForm(forms.Form):
    title = forms.CharField(
        max_length=200,
        validators=[_text],
        help_text="What the packet holds, e.g. “Exhibits for the summary judgment motion”.",
        error_messages={"required": "Give the packet a title."},
    )
    purpose = forms.CharField(
        max_length=5_000,
        validators=[_text],
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="What it is for and who will read it.",
    )


class ItemAddForm(forms.Form):
    """One document of the case, optionally a page range of it, and why it belongs."""

    document = forms.TypedChoiceField(
        coerce=int,
        empty_value=None,
        error_messages={
            "required": "Choose a document of this case.",
            "invalid_choice": "Choose a document of this case; that one is not in the list.",
        },
    )
    first_page = forms.IntegerField(
        label="From page",
        required=False,
        min_value=1,
        max_value=MAX_PAGE_NUMBER,
        help_text="Leave both pages empty for the whole document; give one for a single page.",
    )
    last_page = forms.IntegerField(
        label="To page", required=False, min_value=1, max_value=MAX_PAGE_NUMBER
    )
    reason = forms.CharField(
        label="Why it belongs",
        max_length=MAX_REASON_CHARS,
        validators=[_text],
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Say why this item belongs in the packet."},
    )

    def __init__(self, *args: Any, documents: Sequence[tuple[int, str]] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        field = self.fields["document"]
        assert isinstance(field, forms.TypedChoiceField)  # noqa: S101  (declared above)
        field.choices = [("", "Choose a document…"), *documents]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        first, last = data.get("first_page"), data.get("last_page")
        if first is None and last is not None:
            self.add_error("first_page", "Give the first page too (or neither page).")
        elif first is not None and last is None:
            data["last_page"] = first
        elif first is not None and last is not None and last < first:
            self.add_error(
                "last_page",
                f"The range {first}-{last} is reversed: the last page comes before the first.",
            )
        return data


class ItemRemoveForm(forms.Form):
    reason = forms.CharField(
        label="Why it comes out",
        max_length=MAX_REASON_CHARS,
        validators=[_text],
        error_messages={"required": "Say why this item comes out of the packet."},
    )
