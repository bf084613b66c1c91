from collections.abc import Mapping

from django import template

register = template.Library()


@register.filter
def item(mapping: Mapping[object, object] | None, key: object) -> object:
    """`mapping[key]`, or None (templates cannot index a dict by a variable)."""
    if mapping is None:
        return None
    return mapping.get(key)
