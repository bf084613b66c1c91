from collections.abc import Iterable, Sequence
from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile

from apps.documents.models import Document


class MultipleFileInput(forms.FileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files under one field name, as a list.

    Empty files pass through on purpose: the upload service refuses each bad file with its own
    reason, so the other files of the same upload still go in.
    """

    widget = MultipleFileInput

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_empty_file=True, **kwargs)

    def clean(self, data: object, initial: object = None) -> list[UploadedFile]:
        items: Iterable[object] = data if isinstance(data, list | tuple) else [data]
        single = super().clean
        files = [single(item, initial) for item in items if item]
        if not files and self.required:
            raise forms.ValidationError(self.error_messages["required"], code="required")
        return files


# What a person may say a file came from: every origin but "system generated", which only
# lexweb sets (the upload service refuses it too, whoever asks).
PERSON_ORIGIN_CHOICES = [(origin.value, origin.label) for origin in Document.PERSON_ORIGINS]


class UploadForm(forms.Form):
    """The upload form. Its ids are `id_upload_<field>`: the list's filter form on the same page
    has origin and custodian fields too, and ids must be unique on a page."""

    origin = forms.ChoiceField(
        choices=PERSON_ORIGIN_CHOICES,
        help_text="Where these files came from. It applies to every file of this upload.",
    )
    # Cleaned (one printable line) and bounded by the upload service, as for the API.
    custodian = forms.CharField(
        label="Custodian",
        required=False,
        max_length=200,
        strip=True,
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
        help_text="Whose files these are (optional), e.g. “J. Smith (CFO)”. It applies to every "
        "file of this upload, and to what comes out of its e-mails and ZIP files.",
    )
    # Named like the API's field. The form metaclass moves declared fields off the class, so
    # this does not shadow BaseForm.files at runtime; mypy only sees the class attribute.
    files = MultipleFileField(  # type: ignore[assignment]
        label="Files",
        help_text=(
            "PDF, TIFF, PNG, JPEG, plain text, e-mail (.eml, .msg), Word (.docx), Excel (.xlsx) "
            "or ZIP. Several at once."
        ),
        error_messages={"required": "Choose at least one file."},
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "id_upload_%s")
        super().__init__(*args, **kwargs)


class SearchForm(forms.Form):
    # The selector has the last word on what a query may be (and says so); this only spares it
    # the obvious case.
    q = forms.CharField(
        label="Words to find", error_messages={"required": "Type something to search for."}
    )
    origin = forms.ChoiceField(label="Origin", required=False)
    # A menu of the case's documents, filled by set_documents() once the search has run (the
    # request's audit row is then the search, not the list of names).
    document = forms.IntegerField(
        label="Document", required=False, min_value=1, max_value=2**63 - 1, widget=forms.Select
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        origin = self.fields["origin"]
        assert isinstance(origin, forms.ChoiceField)  # noqa: S101  (declared above)
        origin.choices = [("", "Any origin"), *Document.Origin.choices]

    def set_documents(self, documents: Sequence[tuple[int, str]]) -> bool:
        """Fill the document menu. False (with the field's error) when the chosen document is
        not one of them."""
        widget = self.fields["document"].widget
        assert isinstance(widget, forms.Select)  # noqa: S101  (declared above)
        widget.choices = [("", "Any document"), *documents]
        chosen = self.cleaned_data.get("document") if self.is_bound and self.is_valid() else None
        if chosen is not None and chosen not in {pk for pk, _name in documents}:
            self.add_error(
                "document", "Select a valid choice. That document is not one of this case's."
            )
            return False
        return True


class LiveRowsForm(forms.Form):
    """Which rows of the review list a live page reads again: `ids` (comma-separated, as the
    page shows them) and `newer_than` (the newest id it shows, for the rows added since)."""

    ids = forms.CharField(required=False, max_length=4000)
    newer_than = forms.IntegerField(required=False, min_value=0, max_value=2**63 - 1)
    # The ids a page of another sort, filter or cursor shows, with `order=1`: the answer says
    # the page's order as a reload shows it and draws the rows it lacks.
    shown = forms.CharField(required=False, max_length=4000)
    order = forms.ChoiceField(choices=[("", "no"), ("1", "yes")], required=False)

    def clean_ids(self) -> list[int]:
        return self._id_list("ids")

    def clean_shown(self) -> list[int]:
        return self._id_list("shown")

    def _id_list(self, name: str) -> list[int]:
        text = self.cleaned_data[name].strip()
        if not text:
            return []
        parts = text.split(",")
        if len(parts) > 200:
            raise forms.ValidationError("Ask for at most 200 rows at once.")
        try:
            ids = [int(part) for part in parts]
        except ValueError:
            raise forms.ValidationError("ids must be document ids separated by commas.") from None
        if any(not 0 < pk < 2**63 for pk in ids):
            raise forms.ValidationError("ids must be document ids separated by commas.")
        return ids
