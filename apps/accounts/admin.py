from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin as DjangoGroupAdmin
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.accounts import services
from apps.accounts.admin_audit import AuditedAdmin
from apps.accounts.models import ApiToken, AuditEvent, User
from apps.cases.models import Membership
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
    readonly_fields = ["last_login", "date_joined", "is_staff", "is_superuser"]
    fields = [
        "email",
        "full_name",
        "role",
        "is_active",
        "is_staff",
        "is_superuser",
        "last_login",
        "date_joined",
    ]

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
    """Permission groups: every add, change (name or permissions) and delete is audited."""


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only. Like every admin list of case material, filtered by the admin's memberships."""

    list_display = ["at", "actor_label", "action", "case", "target_label", "client_ip", "via"]
    list_filter = ["action", "via"]
    search_fields = ["actor_label", "action", "target_label"]
    fields = readonly_fields = (
        "at",
        "actor",
        "actor_label",
        "action",
        "case",
        "target_type",
        "target_id",
        "target_label",
        "client_ip",
        "via",
        "detail",
    )
    actions = None

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        member_cases = Membership.objects.filter(user=_admin(request)).values("case_id")
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
