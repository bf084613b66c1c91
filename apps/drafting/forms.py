"""Browser forms of the draft pages. They check shapes only; apps.drafting.services.drafts reads the
text (pasted or uploaded) and decides what a draft may be (and says why not), and
apps.verification.services decides who may override and approve."""

from collections.abc import Sequence
from typing import Any

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from apps.drafting.models import Draft, DraftVersion, Run
from apps.drafting.services.drafts import MAX_TITLE
from apps.drafting.services.runs import MAX_IDEMPOTENCY_KEY, MAX_OVERRIDE_REASON
from apps.verification.services import MAX_REASON

_PASTED_TYPES = [
    (DraftVersion.MediaType.MARKDOWN, "Markdown"),
    (DraftVersion.MediaType.PLAIN, "Plain text"),
]


class VersionForm(forms.Form):
    """A version's text: pasted, or one uploaded file (.md, .txt or .docx); not both."""

    text = forms.CharField(
        label="Paste the text",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
    )
    media_type = forms.ChoiceField(
        label="The pasted text is",
        choices=_PASTED_TYPES,
        initial=DraftVersion.MediaType.MARKDOWN,
        required=False,  # an upload's type comes from its name
    )
    file = forms.FileField(
        label="Or upload a file",
        required=False,
        widget=forms.ClearableFileInput(attrs={"accept": ".md,.markdown,.txt,.docx"}),
        help_text="Markdown (.md), plain text (.txt) or a Word document (.docx, its text is read).",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        text, upload = data.get("text") or "", data.get("file")
        if upload and text.strip():
            raise forms.ValidationError(
                "Paste the text or upload a file, not both: clear the text box or the file."
            )
        if not upload and not text.strip():
            raise forms.ValidationError(
                "The draft is empty: paste its text or upload a file.", code="empty"
            )
        if upload is not None:
            limit = settings.LEXWEB_MAX_DRAFT_BYTES
            if upload.size is not None and upload.size > limit:
                self.add_error(
                    "file",
                    forms.ValidationError(
                        f"The file is {upload.size:,} bytes; the limit is {limit:,} bytes. "
                        "Split the draft into several.",
                        code="too_large",
                    ),
                )
        return data

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A form's fields are held to the request body limit (a larger post is refused whole,
        # before any view runs), a file to LEXWEB_MAX_DRAFT_BYTES: say so before it happens.
        pasted = min(settings.DATA_UPLOAD_MAX_MEMORY_SIZE, settings.LEXWEB_MAX_DRAFT_BYTES)
        self.fields["text"].help_text = (
            f"Markdown or plain text, as it will be filed; up to {pasted // 1024:,} KiB pasted. "
            "Upload a longer draft as a file."
        )
        self.fields["file"].help_text = (
            "Markdown (.md), plain text (.txt) or a Word document (.docx, its text is read); up "
            f"to {settings.LEXWEB_MAX_DRAFT_BYTES // 1024:,} KiB."
        )

    @property
    def too_large(self) -> bool:
        return self.has_error("file", code="too_large")

    def upload(self) -> UploadedFile | None:
        upload = self.cleaned_data.get("file")
        return upload if isinstance(upload, UploadedFile) else None


class DraftForm(VersionForm):
    """A new draft: title, kind, the frozen packet it is checked against, and version 1."""

    title = forms.CharField(
        max_length=MAX_TITLE,
        error_messages={"required": "Give the draft a title."},
        help_text="E.g. “Motion for summary judgment”.",
    )
    kind = forms.ChoiceField(choices=Draft.Kind.choices, initial=Draft.Kind.BRIEF)
    # The service decides whether the packet is a frozen one of this case (and says why not),
    # so any id is accepted here and the menu lists the frozen packets.
    packet = forms.TypedChoiceField(
        label="Checked against the frozen packet",
        coerce=int,
        empty_value=None,
        error_messages={"required": "Choose the frozen packet the draft is checked against."},
        help_text="Claims are checked against this packet's frozen pages only.",
    )

    field_order = ["title", "kind", "packet", "text", "media_type", "file"]

    def __init__(self, *args: Any, packets: Sequence[tuple[int, str]] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        field = self.fields["packet"]
        assert isinstance(field, forms.TypedChoiceField)  # noqa: S101  (declared above)
        field.choices = [("", "Choose a frozen packet…"), *packets]
        # Any id goes to the service, which names the problem (not frozen, not this case's).
        field.valid_value = lambda value: str(value).isdigit()  # type: ignore[method-assign]


class OverrideForm(forms.Form):
    reason = forms.CharField(
        label="Why this finding may stand",
        max_length=MAX_REASON,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Write why this finding may stand."},
        help_text="Kept with the finding for good and audited.",
    )


class RunForm(forms.Form):
    """A new drafting run: its kind, the frozen packet the models read, the instructions and
    whether it is high-stakes. apps.drafting.services.runs decides the rest (a frozen packet of this
    case, a deployment for every role) and says why not."""

    kind = forms.ChoiceField(
        choices=Run.Kind.choices,
        initial=Run.Kind.MOTION,
        help_text="Affidavits and motions pass the gate, are drafted, checked, attacked and "
        "revised; a summary is one model; a financial extraction is a cited table.",
    )
    packet = forms.TypedChoiceField(
        label="Frozen packet the models read",
        coerce=int,
        empty_value=None,
        error_messages={"required": "Choose the frozen packet the models read."},
    )
    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        error_messages={"required": "The instructions are empty: say what the draft must do."},
    )
    high_stakes = forms.BooleanField(
        label="High-stakes",
        required=False,
        help_text="An affidavit marked high-stakes also goes through the heavy reasoner.",
    )
    # A new key each time the form is shown: a double submit starts one run, not two.
    key = forms.CharField(widget=forms.HiddenInput, required=False, max_length=MAX_IDEMPOTENCY_KEY)

    def __init__(self, *args: Any, packets: Sequence[tuple[int, str]] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        field = self.fields["packet"]
        assert isinstance(field, forms.TypedChoiceField)  # noqa: S101  (declared above)
        field.choices = [("", "Choose a frozen packet…"), *packets]
        # Any id goes to the service, which names the problem (not frozen, not this case's).
        field.valid_value = lambda value: str(value).isdigit()  # type: ignore[method-assign]
        limit = settings.LEXWEB_RUN_INSTRUCTIONS_MAX_CHARS
        self.fields["instructions"].help_text = (
            f"What the draft must do, up to {limit:,} characters; the material itself goes in "
            "the packet. The models are told to cite a Bates number for every fact."
        )


class RunRejectForm(forms.Form):
    reason = forms.CharField(
        label="Why the run's draft will not do",
        max_length=MAX_OVERRIDE_REASON,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Write why the run is rejected."},
        help_text="At least 10 characters; kept on the run and its versions for good, audited.",
    )


class GateOverrideForm(forms.Form):
    reason = forms.CharField(
        label="Why the run may go on against the gate",
        max_length=MAX_OVERRIDE_REASON,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Write why the run may go on against the gate."},
        help_text="At least 10 characters; kept on the run for good and audited.",
    )


class DiffForm(forms.Form):
    """The version a diff compares with (`?against=`); none: the one before."""

    against = forms.IntegerField(
        label="Compare with version", required=False, min_value=1, max_value=2**31 - 1
    )


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=[("docx", "Word (DOCX)"), ("pdf", "PDF")])


class RunFilterForm(forms.Form):
    """The Runs tab's filters (a GET form): one status and/or one kind, as the API's
    `runs?status=&kind=`."""

    status = forms.ChoiceField(
        choices=[("", "Any status"), *Run.Status.choices], required=False, label="Status"
    )
    kind = forms.ChoiceField(
        choices=[("", "Any kind"), *Run.Kind.choices], required=False, label="Kind"
    )

    def filters(self) -> dict[str, str]:
        """The chosen filters (none when the form is not valid: its errors say why)."""
        if not self.is_valid():
            return {}
        return {name: value for name, value in self.cleaned_data.items() if value}
