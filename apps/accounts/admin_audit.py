"""Every change made in the Django admin is written to the audit log, with its values.

`AuditedAdmin` is mixed into a ModelAdmin (before `admin.ModelAdmin`). It hooks the admin's own
steps, so a class that overrides `save_model` (to call a service) is audited all the same:

1. `save_form` runs before anything is written: the row as stored, and the rows of its inlines
   (a host's GPUs, a deployment's role routes), are read from the database as "before".
2. `log_addition` / `log_change` run after the save, the inlines and the services: the same rows
   are read again as "after", and one `admin.add` / `admin.change` / `admin.delete` event is
   recorded per row that differs (a change names the changed fields, with their values before
   and after; an add its values; a delete the values it had).
3. `log_deletions` runs before a delete (one object or the bulk "delete selected"): one
   `admin.delete` per object with its values, and the count of rows the delete cascades to.
4. Every other action (e.g. "accept the proposed boards", "revoke tokens") runs in one
   transaction between a "before" and an "after" of the selected rows and their inlines: one
   `admin.action` event names the action and what it selected, then the per-row events as above.

Values are recorded as text, numbers, booleans or null. Secrets never are: a field named like a
key, password, secret, token or digest is recorded only as "(set)" or "(empty)" (a changed
secret is listed among the changed fields), and a URL loses its user name, password and query.
"""

import json
import re
from collections.abc import Callable, Iterable
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from weakref import WeakKeyDictionary

from django.contrib import admin
from django.db import models, router, transaction
from django.db.models.deletion import Collector
from django.forms.models import _get_foreign_key
from django.http import HttpRequest, HttpResponseBase

from apps.accounts import services
from apps.accounts.models import AuditEvent, User

Scalar = str | int | bool | None
Key = tuple[str, str]  # (model label, primary key)
# The row as read, with raw values (secrets included: they are masked only when recorded).
Snapshot = dict[Key, tuple[models.Model, dict[str, object]]]
ActionFunc = Callable[[Any, HttpRequest, models.QuerySet[Any]], HttpResponseBase | None]

SECRET_FIELD = re.compile(r"(key|password|secret|token|digest)", re.IGNORECASE)
MAX_VALUE_CHARS = 500
# The "before" read in save_form, per object, kept until log_change of the same request.
_BEFORE: "WeakKeyDictionary[HttpRequest, dict[Key, Snapshot]]" = WeakKeyDictionary()


def is_secret(field_name: str) -> bool:
    return SECRET_FIELD.search(field_name) is not None


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def shown_value(field_name: str, value: object) -> Scalar:
    """What the audit log may say about a field's value."""
    if is_secret(field_name):
        return "(set)" if value not in (None, "") else "(empty)"
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal | float):
        return str(value)
    if isinstance(value, dict | list):
        text = json.dumps(value, sort_keys=True, default=str)
    else:
        text = str(value)
        if "://" in text:
            text = _without_credentials(text)
    return text[:MAX_VALUE_CHARS]


def _row(obj: models.Model) -> dict[str, object]:
    """The row's columns, and for each many-to-many field (a group's permissions) the sorted
    names of what it links to, so a change of links is a change of the row."""
    row: dict[str, object] = {
        field.name: getattr(obj, field.attname) for field in obj._meta.concrete_fields
    }
    for field in obj._meta.many_to_many:
        linked = getattr(obj, field.name).all().select_related()
        row[field.name] = sorted(str(item) for item in linked)
    return row


def _key(obj: models.Model) -> Key:
    return (obj._meta.label_lower, str(obj.pk))


def _record(
    *,
    actor: User | None,
    action: str,
    obj: models.Model,
    before: dict[str, object] | None,
    after: dict[str, object] | None,
    extra: dict[str, Scalar],
) -> None:
    detail: dict[str, Scalar] = {"model": obj._meta.label_lower, **extra}
    if before is not None and after is not None:
        names = [name for name in after if before.get(name) != after[name]]
        detail["fields"] = ",".join(names)
        for name in names:
            detail[f"before.{name}"] = shown_value(name, before.get(name))
            detail[f"after.{name}"] = shown_value(name, after[name])
    else:
        values = after if after is not None else before
        side = "after" if after is not None else "before"
        for name, value in (values or {}).items():
            detail[f"{side}.{name}"] = shown_value(name, value)
    services.audit_record(actor=actor, action=action, case=_case_of(obj), target=obj, detail=detail)


def _case_of(obj: models.Model) -> models.Model | None:
    """A row of a case is audited on that case, so only its members see the event. A case is
    what the audit log's `case` field points at (the cases app sits above accounts)."""
    case_model = AuditEvent._meta.get_field("case").related_model
    if isinstance(obj, case_model):  # type: ignore[arg-type]
        return obj
    case = getattr(obj, "case", None)
    return case if isinstance(case, case_model) else None  # type: ignore[arg-type]


def record_differences(
    *, actor: User | None, before: Snapshot, after: Snapshot, extra: dict[str, Scalar]
) -> int:
    """One event per row that was added, changed or deleted between two snapshots."""
    recorded = 0
    for key in [*before, *(k for k in after if k not in before)]:
        old, new = before.get(key), after.get(key)
        if old is not None and new is not None and old[1] == new[1]:
            continue
        if new is None:
            assert old is not None  # noqa: S101  (the key came from one of the two)
            _record(
                actor=actor,
                action="admin.delete",
                obj=old[0],
                before=old[1],
                after=None,
                extra=extra,
            )
        elif old is None:
            _record(
                actor=actor, action="admin.add", obj=new[0], before=None, after=new[1], extra=extra
            )
        else:
            _record(
                actor=actor,
                action="admin.change",
                obj=new[0],
                before=old[1],
                after=new[1],
                extra=extra,
            )
        recorded += 1
    return recorded


def _actor(request: HttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


class AuditedAdmin(admin.ModelAdmin):
    """Audit adds, changes, deletes and actions of this admin (see the module docstring)."""

    def _snapshot(self, objects: Iterable[models.Model]) -> Snapshot:
        """The rows, freshly read, with the rows of their inlines."""
        snapshot: Snapshot = {}
        pks = [obj.pk for obj in objects if obj.pk is not None]
        rows = list(self.model._default_manager.filter(pk__in=pks)) if pks else []
        for row in rows:
            snapshot[_key(row)] = (row, _row(row))
        for inline in self.inlines:
            fk = _get_foreign_key(self.model, inline.model, fk_name=inline.fk_name)
            if fk is None:
                continue
            for child in inline.model._default_manager.filter(**{f"{fk.name}__in": pks}):
                snapshot[_key(child)] = (child, _row(child))
        return snapshot

    # 1-2. Add and change views (and list_editable).

    def save_form(self, request: HttpRequest, form: Any, change: bool) -> Any:
        obj = super().save_form(request, form, change)
        if change:
            # Nothing is written yet: the database still holds the row as it was.
            _BEFORE.setdefault(request, {})[_key(obj)] = self._snapshot([obj])
        return obj

    def _after_save(self, request: HttpRequest, obj: models.Model) -> None:
        before = _BEFORE.get(request, {}).pop(_key(obj), {})
        after = self._snapshot([obj])
        record_differences(actor=_actor(request), before=before, after=after, extra={})

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        self._after_save(request, obj)
        return super().log_addition(request, obj, message)

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        self._after_save(request, obj)
        return super().log_change(request, obj, message)

    # 3. Deletes, one by one or selected in bulk.

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        objects = list(queryset)
        extra: dict[str, Scalar] = {}
        if not isinstance(queryset, list):
            extra["admin_action"] = "delete_selected"
        for obj in objects:
            cascade = self._cascade_counts(obj)
            _record(
                actor=_actor(request),
                action="admin.delete",
                obj=obj,
                before=_row(obj),
                after=None,
                extra={**extra, **cascade},
            )
        return super().log_deletions(request, queryset)

    def _cascade_counts(self, obj: models.Model) -> dict[str, Scalar]:
        collector = Collector(using=router.db_for_write(type(obj)))
        collector.collect([obj])
        counts: dict[str, int] = {}
        for model, instances in collector.data.items():
            counts[model._meta.label_lower] = len(instances)
        for qs in collector.fast_deletes:
            label = qs.model._meta.label_lower
            counts[label] = counts.get(label, 0) + qs.count()
        counts[obj._meta.label_lower] = counts.get(obj._meta.label_lower, 1) - 1
        return {f"cascade.{label}": n for label, n in sorted(counts.items()) if n}

    # 4. Every other action.

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions: dict[str, tuple[Any, str, str]] = super().get_actions(request)  # type: ignore[assignment]  # stubs say values are optional
        return {
            name: (func if name == "delete_selected" else self._audited(func, name), name, desc)
            for name, (func, _, desc) in actions.items()
        }

    def _audited(self, func: ActionFunc, name: str) -> ActionFunc:
        def run(
            modeladmin: Any, request: HttpRequest, queryset: models.QuerySet[Any]
        ) -> HttpResponseBase | None:
            with transaction.atomic(using=router.db_for_write(self.model)):
                selected = list(queryset)
                before = self._snapshot(selected)
                response = func(modeladmin, request, queryset)
                after = self._snapshot(selected)
                extra: dict[str, Scalar] = {"admin_action": name}
                changed = record_differences(
                    actor=_actor(request), before=before, after=after, extra=extra
                )
                services.audit_record(
                    actor=_actor(request),
                    action="admin.action",
                    detail={
                        **extra,
                        "model": self.model._meta.label_lower,
                        "selected": ",".join(str(obj.pk) for obj in selected)[:MAX_VALUE_CHARS],
                        "rows_changed": changed,
                    },
                )
            return response

        run.__name__ = getattr(func, "__name__", name)
        return run
