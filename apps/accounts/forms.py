from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm

from apps.accounts import services
from apps.accounts.models import User


class SignInForm(AuthenticationForm):
    username = forms.EmailField(
        label="E-mail address",
        max_length=254,
        widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"}),
    )
    password = forms.CharField(
        label="Password",
        strip=False,
        max_length=4096,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text="Who or what will use it, e.g. “Claude Code on ws-12”."
    )
    expires_in_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=3650,
        label="Expires after (days)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Every token expires; the page says when one does if nothing is typed here.
        field = self.fields["expires_in_days"]
        default = services.token_default_days()
        field.help_text = (
            f"Every token expires. Leave empty for the default, {default} days; "
            f"at most {settings.LEXWEB_TOKEN_MAX_DAYS}."
        )
        field.widget.attrs["placeholder"] = str(default)


class ReauthForm(forms.Form):
    password = forms.CharField(
        label="Your password",
        strip=False,
        max_length=4096,
        widget=forms.PasswordInput(attrs={"autofocus": True, "autocomplete": "current-password"}),
    )


# --- People (the admin's users page) ----------------------------------------------------------


class PasswordPairForm(forms.Form):
    """A new password typed twice. The password rules are the service's (validate_password)."""

    password = forms.CharField(
        label="New password",
        strip=False,
        max_length=4096,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    again = forms.CharField(
        label="The same again",
        strip=False,
        max_length=4096,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("password", "") != cleaned.get("again", ""):
            self.add_error("again", "The two passwords differ.")
        return cleaned


class PersonCreateForm(PasswordPairForm):
    """Create an account. Without a password the person cannot sign in until one is set."""

    field_order = ["full_name", "email", "role", "password", "again"]

    full_name = forms.CharField(label="Full name", max_length=200)
    email = forms.EmailField(label="E-mail address", max_length=254)
    role = forms.ChoiceField(
        choices=User.Role.choices,
        initial=User.Role.STAFF,
        help_text="Lawyers open cases and manage a case's members; admins manage people and "
        "the system; staff work on the cases they are added to.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("password", "again"):
            self.fields[name].required = False
        self.fields["password"].label = "Password"
        self.fields["password"].help_text = (
            "Leave both empty to create the account without one: the person cannot sign in "
            "until you set a password for them."
        )


class PersonChangeForm(forms.Form):
    full_name = forms.CharField(label="Full name", max_length=200)
    email = forms.EmailField(label="E-mail address", max_length=254)
    role = forms.ChoiceField(choices=User.Role.choices)


class PersonPasswordForm(PasswordPairForm):
    pass
