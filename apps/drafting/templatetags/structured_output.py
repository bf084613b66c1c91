"""A stage's structured output (the gate's JSON, the reviewer's findings) as a person reads it:
objects as term lists, lists as lists, values as text; never the escaped JSON."""

import json
from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# Deeper than any schema lexweb asks for; anything below is shown as its JSON text.
MAX_DEPTH = 6


def parse_structured(text: object) -> Any:
    """The JSON object or list `text` holds, or None when it is not one (free text, cut JSON)."""
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def _words(key: str) -> str:
    text = str(key).replace("_", " ").strip()
    return text[:1].upper() + text[1:] if text else "—"


def _html(value: Any, depth: int) -> SafeString:
    if depth > MAX_DEPTH:
        return format_html("<code>{}</code>", json.dumps(value, ensure_ascii=False))
    if isinstance(value, dict):
        if not value:
            return mark_safe('<span class="muted">none</span>')
        items = format_html_join(
            "",
            "<div><dt>{}</dt><dd>{}</dd></div>",
            ((_words(k), _html(v, depth + 1)) for k, v in value.items()),
        )
        return format_html('<dl class="structured">{}</dl>', items)
    if isinstance(value, list):
        if not value:
            return mark_safe('<span class="muted">none</span>')
        items = format_html_join("", "<li>{}</li>", ((_html(v, depth + 1),) for v in value))
        return format_html('<ul class="structured">{}</ul>', items)
    if isinstance(value, bool):
        return format_html("{}", "yes" if value else "no")
    if value is None:
        return mark_safe('<span class="muted">—</span>')
    return format_html("{}", value)


@register.filter
def structured(text: object) -> SafeString | str:
    """`text` rendered readably when it is a JSON object or list; "" when it is not."""
    value = parse_structured(text)
    return "" if value is None else _html(value, 0)
