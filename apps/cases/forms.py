from django import forms

from apps.cases.models import Case, Membership


class CaseForm(forms.Form):
    title = forms.CharField(max_length=300, help_text="e.g. “Acme Corp. v. Widget Ltd.”")
    number = forms.CharField(max_length=100, label="Case number")
    court = forms.CharField(max_length=200, required=False)
    client = forms.CharField(max_length=200)


class CaseStatusForm(forms.Form):
    status = forms.ChoiceField(choices=Case.Status.choices)


class MemberAddForm(forms.Form):
    email = forms.EmailField(max_length=254, label="E-mail address of a colleague")
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.STAFF)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


class BreakGlassForm(forms.Form):
    case_id = forms.IntegerField(
        min_value=1,
        label="Case id",
        help_text="The number in the case's address, /cases/<id>/.",
        error_messages={"required": "Give the id of the case you need."},
    )
    # Not required here: an empty reason is refused by the service with its own message.
    reason = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Why you need this case",
        help_text="Recorded in the audit log and shown to the case's members.",
    )
