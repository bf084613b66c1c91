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
    # Named "email" for the API's and older clients' sake: a full address, or part of a name
    # or address to search for (the member picker).
    email = forms.CharField(
        max_length=254,
        label="Colleague",
        help_text="Type part of their name or e-mail address, then choose them from the list.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    user_id = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
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
