from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin as DjangoGroupAdmin
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from apps.accounts import audit_words, selectors, services
from apps.accounts.admin_audit import AuditedAdmin
from apps.accounts.case_access import case_access
from apps.accounts.forms import PasswordPairForm, TokenForm
from apps.accounts.models import ApiToken, AuditEvent, User
from apps.accounts.reauth import reauthenticated_at
from lexweb.errors import DomainError


def _admin(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # noqa: S101  (the admin site only lets admins in)
    return user


class UserCreateForm(forms.ModelForm):
    password = forms.CharField(
        widget=forms.PasswordInput,
        required=False,
        help_text="Leave empty to create the account without a password (cannot sign in yet).",
    )

    class Meta:
        model = User
        fields = ["email", "full_name", "role"]

    def clean_password(self) -> str:
        password: str = self.cleaned_data.get("password") or ""
        if password:
            validate_password(password)
        return password


class UserChangeForm(forms.ModelForm):
    class Meta:
        model = User
        fields = ["email", "full_name", "role", "is_active"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        changes = {name: cleaned[name] for name in self.changed_data if name in cleaned}
        try:
            # self.instance already carries the new values; validate against the stored row.
            stored = User.objects.get(pk=self.instance.pk)
            services.user_update_validate(user=stored, changes=changes)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None
        return cleaned


@admin.register(User)
class UserAdmin(AuditedAdmin):
    list_display = ["email", "full_name", "role", "is_active", "last_login"]
    list_filter = ["role", "is_active"]
    search_fields = ["email", "full_name"]
    ordering = ["full_name"]
    readonly_fields = ["sign_in", "last_login", "date_joined", "is_staff", "is_superuser"]
    fields = [
        "email",
        "full_name",
        "role",
        "is_active",
        "sign_in",
        "is_staff",
        "is_superuser",
        "last_login",
        "date_joined",
    ]

    @admin.display(description="Sign-in and API tokens")
    def sign_in(self, obj: User) -> str:
        state = "has a password" if obj.has_usable_password() else "no password yet"
        return format_html(
            '{} · <a href="{}">Set a password</a> · <a href="{}">Issue an API token</a>',
            state,
            reverse("admin:accounts_user_password", args=[obj.pk]),
            reverse("admin:accounts_user_issue_token", args=[obj.pk]),
        )

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        return [
            path(
                "<int:user_id>/password/", view(self.password_view), name="accounts_user_password"
            ),
            path(
                "<int:user_id>/issue-token/",
                view(self.issue_token_view),
                name="accounts_user_issue_token",
            ),
            *super().get_urls(),
        ]

    def _person(self, user_id: int) -> User:
        person = selectors.user_get_for_admin(user_id=user_id)
        if person is None:
            raise Http404("No such user.")
        return person

    def _page(
        self, request: HttpRequest, person: User, title: str, extra: dict[str, Any], status: int
    ) -> TemplateResponse:
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "title": title,
            "opts": self.model._meta,
            "person": person,
            **extra,
        }
        return TemplateResponse(request, "admin/accounts/user_tool.html", context, status=status)

    def password_view(self, request: HttpRequest, user_id: int) -> HttpResponse:
        """Set a person's password: a first one (the demo lawyer, an account made without one)
        or a new one; the rules of AUTH_PASSWORD_VALIDATORS apply."""
        person = self._person(user_id)
        form = PasswordPairForm(request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            try:
                services.user_password_set(
                    actor=_admin(request), user_id=person.pk, password=form.cleaned_data["password"]
                )
            except DomainError as exc:
                form.add_error("password", exc.message)
            else:
                messages.success(request, f"{person.email} can now sign in with the new password.")
                return HttpResponseRedirect(reverse("admin:accounts_user_change", args=[person.pk]))
        status = 400 if form.errors else 200
        title = f"Set the password of {person.email}"
        return self._page(request, person, title, {"form": form, "tool": "password"}, status)

    def issue_token_view(self, request: HttpRequest, user_id: int) -> HttpResponse:
        """Issue an API token for a person (the account an agent works as); the secret is
        shown once. Needs the admin's own password within LEXWEB_REAUTH_SECONDS."""
        person = self._person(user_id)
        form = TokenForm(request.POST if request.method == "POST" else None)
        issued, status = None, 200
        confirmed_at = reauthenticated_at(request.session)
        if request.method == "POST" and form.is_valid():
            days = form.cleaned_data["expires_in_days"]
            try:
                issued = services.token_issue_for(
                    admin=_admin(request),
                    user_id=person.pk,
                    name=form.cleaned_data["name"],
                    expires_at=timezone.now() + timedelta(days=days) if days else None,
                    reauthenticated_at=confirmed_at,
                )
            except services.ReauthenticationRequired as exc:
                form.add_error(None, exc.message)
                status = 403
            except DomainError as exc:
                form.add_error(None, exc.message)
        if form.errors and status == 200:
            status = 400
        here = reverse("admin:accounts_user_issue_token", args=[person.pk])
        extra = {
            "form": TokenForm() if issued else form,
            "issued": issued,
            "tool": "token",
            "confirmed": services.reauthentication_fresh(reauthenticated_at=confirmed_at),
            "reauth_url": reverse("accounts:reauth") + "?next=" + here,
            "reauth_seconds": settings.LEXWEB_REAUTH_SECONDS,
        }
        return self._page(request, person, f"Issue an API token for {person.email}", extra, status)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = UserCreateForm
            kwargs["fields"] = ["email", "full_name", "role", "password"]
        else:
            kwargs["form"] = UserChangeForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["email", "full_name", "role", "password"]
        return super().get_fields(request, obj)

    def save_model(self, request: HttpRequest, obj: User, form: Any, change: bool) -> None:
        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data}
            updated = services.user_update(actor=_admin(request), user_id=obj.pk, changes=changes)
            obj.is_staff, obj.is_superuser = updated.is_staff, updated.is_superuser
            return
        try:
            created = services.user_create(
                email=form.cleaned_data["email"],
                full_name=form.cleaned_data["full_name"],
                role=form.cleaned_data["role"],
                password=form.cleaned_data.get("password") or None,
                actor=_admin(request),
            )
        except DomainError as exc:
            messages.error(request, exc.message)
            raise
        obj.pk = created.pk
        obj._state.adding = False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # People are deactivated, never deleted: the audit log points at them.
        return False

    actions = ["revoke_all_tokens"]

    @admin.action(description="Revoke all API tokens of selected users")
    def revoke_all_tokens(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        count = sum(services.token_revoke_all(user=u, actor=_admin(request)) for u in queryset)
        messages.success(request, f"Revoked {count} token{'s' if count != 1 else ''}.")


@admin.register(ApiToken)
class ApiTokenAdmin(AuditedAdmin):
    """Admins see token metadata (never secrets) and may revoke; tokens are made by their user."""

    list_filter = ["revoked_at"]
    search_fields = ["name", "user__email", "prefix"]
    list_display = fields = readonly_fields = (
        "name",
        "user",
        "prefix",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset.select_related("user"):
            services.token_revoke(user=token.user, token_id=token.pk, actor=_admin(request))
        messages.success(request, "Tokens revoked.")


# Django registers its own Group admin, which writes no audit row: ours is Django's, audited.
admin.site.unregister(Group)


@admin.register(Group)
class GroupAdmin(AuditedAdmin, DjangoGroupAdmin):
    """Permission groups: every add, change (name or permissions) and delete is audited.

    Permissions are a plain labelled multiple select, not Django's two-box filter: its script
    names its search icons with `aria-label` on a bare `<span>`, which axe-core reports as a
    serious violation (aria-prohibited-attr) on the group's add and change pages."""

    filter_horizontal = ()


# Where an audited action came from (apps.accounts.context.Origin.via), in words; "cli" is
# also what code outside a request (a worker's job, a management command) records.
VIA_LABELS = {
    "web": "the web app",
    "api": "the REST API",
    "websocket": "a live connection (WebSocket)",
    "mcp": "an agent (MCP)",
    "cli": "a command or background job",
}


def via_label(via: str) -> str:
    return VIA_LABELS.get(via, via) if via else "not recorded"


def detail_value(value: object) -> str:
    """One value of an audit event's detail as a person reads it (the stored JSON keeps its
    types: null, booleans, numbers, text)."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return ", ".join(
            f"{key}: {detail_value(item)}" if isinstance(value, dict) else detail_value(item)
            for key, item in (value.items() if isinstance(value, dict) else enumerate(value))
        )
    return str(value)


# Detail keys said otherwise than by their name with its first letter made capital.
DETAIL_KEY_LABELS = {
    "fields": "Fields changed",
    "sha256": "SHA-256",
}


def detail_key(key: str) -> str:
    """An audit event's detail key as a person reads it: "after.role" is "Role after",
    "issued_for_another" is "Issued for another"."""
    side, dot, name = key.partition(".")
    if dot and side in ("before", "after"):
        return f"{detail_key(name)} {side}"
    return DETAIL_KEY_LABELS.get(key) or key.replace("_", " ").capitalize()


class ActionCodeFilter(admin.AllValuesFieldListFilter):
    """The actions' codes, as the search also finds them; the list says them in words."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.title = "action code"


class ViaFilter(admin.SimpleListFilter):
    """Where events came from, by their labels (Django's filter of a field's values would list
    the stored codes)."""

    title = "via"
    parameter_name = "via"
    NOT_RECORDED = "none"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        present = AuditEvent.objects.order_by("via").values_list("via", flat=True).distinct()
        return [(via or self.NOT_RECORDED, via_label(via)) for via in present]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AuditEvent]) -> Any:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(via="" if value == self.NOT_RECORDED else value)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only. Like every admin list of case material, filtered by the admin's memberships.
    An action is said in words (`apps.accounts.audit_words`, which each app fills with the
    codes it writes) and still searched and filtered by its code; where an event came from and
    its detail are said in words too."""

    list_display = [
        "at",
        "actor_label",
        "action_words",
        "case",
        "target_label",
        "client_ip",
        "origin",
    ]
    list_filter = [("action", ActionCodeFilter), ViaFilter]
    search_fields = ["actor_label", "action", "target_label"]
    fields = readonly_fields = (
        "at",
        "actor",
        "actor_label",
        "action_words",
        "action_code",
        "case",
        "target_type",
        "target_id",
        "target_label",
        "client_ip",
        "origin",
        "details",
    )
    actions = None

    @admin.display(description="action", ordering="action")
    def action_words(self, event: AuditEvent) -> str:
        return audit_words.action_text(event)

    @admin.display(description="action code")
    def action_code(self, event: AuditEvent) -> str:
        return event.action

    @admin.display(description="via", ordering="via")
    def origin(self, event: AuditEvent) -> str:
        return via_label(event.via)

    @admin.display(description="detail")
    def details(self, event: AuditEvent) -> SafeString | str:
        """One line per entry ("Role after: lawyer"), not the stored JSON."""
        detail = event.detail if isinstance(event.detail, dict) else {}
        if not detail:
            return "none"
        return format_html_join(
            "",
            "<div>{}: {}</div>",
            ((detail_key(key), detail_value(v)) for key, v in detail.items()),
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        member_cases = case_access().member_case_ids(user_id=_admin(request).pk)
        events = super().get_queryset(request).select_related("actor", "case")
        # Events of no case (sign-ins, tokens, users) are the admin's business; case events only
        # for cases the admin belongs to.
        return events.filter(case__isnull=True) | events.filter(case_id__in=member_cases)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
