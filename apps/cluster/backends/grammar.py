"""JSON schemas as compact llama.cpp grammars (GBNF), and the worst-case size of a reply.

Why not llama-server's own `response_format: json_schema`: its converter
(common/json-schema-to-grammar) puts a `space` rule after every brace, bracket, key, colon,
comma and value, and `space` admits " " or one or two newlines followed by up to 20 spaces or
tabs. A random-weight model (and a confused real one) fills those slots: measured on the real
server, a gate schema of 23 slots could spend 506 of its 512 tokens on whitespace, and a reply
cut at `max_tokens` is not JSON. The grammar written here has no whitespace at all (separators
are exactly "," and ":"), so what a reply can cost is its structure plus its strings.

The schemas the product sends use a small subset, and anything else is refused with
`SchemaError` (so an unbounded schema never reaches a backend):
- object: `properties`, all of them `required`, in their order (the reply is closed: no other key)
- string: `enum`, or `maxLength` (and optional `minLength`); never unbounded
- array: `items` and `maxItems` (and optional `minItems`); never unbounded
- boolean; integer (at most 16 digits, as llama.cpp's own rule)

Inside a string a character is any Unicode character but `"`, `\\` and the controls, or the
escapes \\" \\\\ \\/ \\n \\r \\t (no \\u escapes: they are how a NUL or a lone surrogate gets
into JSON, and a stored reply must not hold them).

`worst_case_tokens(schema)` bounds a reply's length in tokens: every token the server samples
under a grammar is at least one byte (llama.cpp refuses empty pieces), so structure (braces,
keys, quotes, enum values: ASCII, as written here) costs at most a token a byte; a string's
content costs at most CONTENT_TOKENS_PER_CHAR a character; one more for the end-of-generation
token. The content rate is the one assumption: byte-level BPE vocabularies (Qwen, Llama 3,
Gemma) hold every printable ASCII character, digits one by one, and the Latin-1 letters and
typographic punctuation of legal text as one token each or better. A character outside them
(CJK, emoji) can take up to 4 byte tokens; such a reply can hit the limit, and then the stage
says "cut at the limit (N tokens)" (never a silent success).
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass

CONTENT_TOKENS_PER_CHAR = 1
END_TOKENS = 1  # the end-of-generation token the grammar leaves as the only choice
INTEGER_DIGITS = 16
CHAR_RULE = r'char ::= [^"\\\x7F\x00-\x1F] | "\\" ["\\/nrt]'
_OBJECT_KEYS = {"type", "properties", "required", "additionalProperties"}
_STRING_KEYS = {"type", "enum", "maxLength", "minLength"}
_ARRAY_KEYS = {"type", "items", "maxItems", "minItems"}
# The grammar's first line names the schema it was written from (a GBNF comment): for a person
# reading the server's log, and for the fake backend, which plays each stage by its schema.
SCHEMA_COMMENT = "# lexweb json schema: "


class SchemaError(ValueError):
    """The schema uses something this converter does not bound (an unbounded string or array,
    an optional property, a keyword it does not know)."""


@dataclass(frozen=True)
class Size:
    """The longest reply a schema admits: ASCII structure in bytes, string content in
    characters."""

    structure: int
    content: int

    def __add__(self, other: "Size") -> "Size":
        return Size(self.structure + other.structure, self.content + other.content)

    def times(self, n: int) -> "Size":
        return Size(self.structure * n, self.content * n)


def schema_to_gbnf(schema: Mapping[str, object]) -> str:
    """The compact grammar for `schema` (root rule `root`). Raises SchemaError."""
    rules: dict[str, str] = {}
    rules["root"] = _rule(schema, "root", rules)
    lines = [SCHEMA_COMMENT + json.dumps(schema, separators=(",", ":"), ensure_ascii=True)]
    lines += [f"{name} ::= {body}" for name, body in rules.items()]
    lines.append(CHAR_RULE)
    return "\n".join(lines) + "\n"


def worst_case(schema: Mapping[str, object]) -> Size:
    """The size of the longest reply `schema_to_gbnf(schema)` admits. Raises SchemaError."""
    kind = schema.get("type")
    if kind == "object":
        keys = _object_keys(schema)
        properties = _properties(schema)
        size = Size(2 + max(len(keys) - 1, 0), 0)  # braces and commas
        for key in keys:
            size += Size(len(_literal(key)) + 1, 0) + worst_case(properties[key])
        return size
    if kind == "array":
        _low, high = _bounds(schema, "minItems", "maxItems", _ARRAY_KEYS)
        item = worst_case(_mapping(schema.get("items"), "items"))
        return Size(2 + max(high - 1, 0), 0) + item.times(high)
    if kind == "string":
        enum = _enum(schema)
        if enum is not None:
            return Size(max(len(_literal(value)) for value in enum), 0)
        _low, high = _bounds(schema, "minLength", "maxLength", _STRING_KEYS)
        return Size(2, high)
    if kind == "boolean":
        _only(schema, {"type"})
        return Size(len("false"), 0)
    if kind == "integer":
        _only(schema, {"type"})
        return Size(1 + INTEGER_DIGITS, 0)
    raise SchemaError(f"type {kind!r} is not supported")


def worst_case_tokens(schema: Mapping[str, object]) -> int:
    """An upper bound on a reply's tokens under the schema's grammar (see the module
    docstring)."""
    size = worst_case(schema)
    return size.structure + size.content * CONTENT_TOKENS_PER_CHAR + END_TOKENS


# --- Writing rules ---------------------------------------------------------------------------


def _rule(schema: Mapping[str, object], name: str, rules: dict[str, str]) -> str:
    kind = schema.get("type")
    if kind == "object":
        properties = _properties(schema)
        parts = []
        for index, key in enumerate(_object_keys(schema)):
            child = f"{name}-{index}"
            rules[child] = _rule(properties[key], child, rules)
            parts.append(f"{_gbnf(_literal(key) + ':')} {child}")
        return '"{" ' + ' "," '.join(parts) + ' "}"' if parts else '"{" "}"'
    if kind == "array":
        low, high = _bounds(schema, "minItems", "maxItems", _ARRAY_KEYS)
        item = f"{name}-item"
        rules[item] = _rule(_mapping(schema.get("items"), "items"), item, rules)
        if high == 0:
            return '"[" "]"'
        more = f'("," {item}){{{max(low - 1, 0)},{high - 1}}}'
        body = f"{item} {more}"
        return f'"[" {body} "]"' if low > 0 else f'"[" ({body})? "]"'
    if kind == "string":
        enum = _enum(schema)
        if enum is not None:
            return "(" + " | ".join(_gbnf(_literal(value)) for value in enum) + ")"
        low, high = _bounds(schema, "minLength", "maxLength", _STRING_KEYS)
        return f'"\\"" char{{{low},{high}}} "\\""'
    if kind == "boolean":
        return '("true" | "false")'
    if kind == "integer":
        return f'"-"? ("0" | [1-9] [0-9]{{0,{INTEGER_DIGITS - 1}}})'
    raise SchemaError(f"type {kind!r} is not supported")


def _object_keys(schema: Mapping[str, object]) -> list[str]:
    _only(schema, _OBJECT_KEYS)
    keys = list(_properties(schema))
    required = schema.get("required", [])
    if not isinstance(required, list) or set(required) != set(keys):
        raise SchemaError(f"every property must be required (properties {keys})")
    if schema.get("additionalProperties", False) is not False:
        raise SchemaError("additionalProperties must be false (the reply is closed)")
    return keys


def _properties(schema: Mapping[str, object]) -> dict[str, Mapping[str, object]]:
    properties = _mapping(schema.get("properties", {}), "properties")
    return {str(key): _mapping(value, str(key)) for key, value in properties.items()}


def _enum(schema: Mapping[str, object]) -> list[str] | None:
    enum = schema.get("enum")
    if enum is None:
        return None
    _only(schema, {"type", "enum"})
    if not isinstance(enum, list) or not enum or not all(isinstance(v, str) for v in enum):
        raise SchemaError("enum must be a non-empty list of strings")
    return [str(value) for value in enum]


def _bounds(
    schema: Mapping[str, object], low_key: str, high_key: str, allowed: set[str]
) -> tuple[int, int]:
    _only(schema, allowed)
    high = schema.get(high_key)
    low = schema.get(low_key, 0)
    if not isinstance(high, int) or isinstance(high, bool) or high < 0:
        raise SchemaError(f"{schema.get('type')} without a {high_key}: unbounded")
    if not isinstance(low, int) or isinstance(low, bool) or not 0 <= low <= high:
        raise SchemaError(f"{low_key} must be between 0 and {high_key}")
    return low, high


def _only(schema: Mapping[str, object], allowed: set[str]) -> None:
    unknown = set(schema) - allowed
    if unknown:
        raise SchemaError(f"keywords not supported here: {sorted(unknown)}")


def _mapping(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise SchemaError(f"{where} must be an object")
    return value


def _literal(value: str) -> str:
    """`value` as a JSON string, ASCII only (so a byte is a character)."""
    return json.dumps(value, ensure_ascii=True)


def _gbnf(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
