from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm

from apps.accounts import services


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
