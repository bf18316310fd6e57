"""Whether a JSON value fits the schema of a request's structured-output format, as far as the SDKs'
parse helpers refuse it (docs/design/conformance.md, "Rules that depend on the request").

A client that parses a structured answer with a model class (openai-python ``response_format=Model``
/ ``text_format=Model``, anthropic-python ``output_format=Model``) sends the JSON schema the SDK
derived from the class (``to_strict_json_schema``, ``transform_schema``) and validates the answer
with pydantic, which refuses what the class refuses. The proxy sees only the schema, so ``misfit``
judges the part of it a class of that schema always refuses, in pydantic's lax mode:

- ``type`` (one or a list): ``object`` a JSON object, ``array`` a JSON array, ``string`` a string,
  ``null`` null; ``integer`` an integer, an integral float or a string of one, ``number`` a number
  or a numeric string, ``boolean`` a boolean, 0 / 1 or one of pydantic's boolean strings (the
  conversions pydantic makes);
- ``enum`` and ``const`` (the value one of them);
- ``properties`` (each property present is judged), ``required`` (a required property is missing;
  not judged for a property whose schema has a ``default`` or admits null: the SDKs' strict
  conversion drops ``default: null``, so such a field may have had a default), ``items``;
- ``anyOf`` / ``oneOf`` (some branch fits), ``allOf`` (every one), ``$ref`` to ``#`` or
  ``#/$defs/...`` / ``#/definitions/...``.

Not judged: ``additionalProperties: false`` (a pydantic model ignores extra keys unless it forbids
them), string formats and patterns, numeric bounds, array lengths, any keyword not listed. A
nesting deeper than ``MAX_DEPTH`` is not judged. Sans-IO, no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 64  # schema levels followed (a recursive $ref ends here)

# the strings pydantic reads as booleans (lax mode)
_BOOL_STRINGS = frozenset({"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"})


def misfit(value: Any, schema: Mapping[str, Any]) -> str | None:
    """Where ``value`` (parsed JSON) does not fit ``schema`` (the request's JSON schema), as the
    module docstring says: ``None`` when it fits (or nothing judged refuses it), else the place
    (``$.a[0].b``) and what is wrong there."""
    return _fit(value, schema, schema, "$", 0)


def _fit(value: Any, schema: object, root: Mapping[str, Any], at: str, depth: int) -> str | None:
    if depth > MAX_DEPTH or not isinstance(schema, Mapping):
        return None
    ref = schema.get("$ref")
    if type(ref) is str:
        target = _resolve(ref, root)
        if target is not None:
            bad = _fit(value, target, root, at, depth + 1)
            if bad is not None:
                return bad
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if type(branches) is list and branches:
            results = [_fit(value, b, root, at, depth + 1) for b in branches]
            if all(r is not None for r in results):
                return next(r for r in results if r is not None)
    branches = schema.get("allOf")
    if type(branches) is list:
        for b in branches:
            bad = _fit(value, b, root, at, depth + 1)
            if bad is not None:
                return bad
    if "const" in schema and not _same(value, schema["const"]):
        return f"{at}: {_show(value)} is not {_show(schema['const'])}"
    enum = schema.get("enum")
    if type(enum) is list and not any(_same(value, e) for e in enum):
        return f"{at}: {_show(value)} is not one of {_show(enum)}"
    types = schema.get("type")
    if type(types) is str:
        types = [types]
    if type(types) is list and types and not any(_is(value, t) for t in types if type(t) is str):
        return f"{at}: {_show(value)} is not {' or '.join(str(t) for t in types)}"
    if type(value) is dict:
        return _object(value, schema, root, at, depth)
    if type(value) is list:
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                bad = _fit(item, items, root, f"{at}[{i}]", depth + 1)
                if bad is not None:
                    return bad
    return None


def _object(
    value: dict[str, Any], schema: Mapping[str, Any], root: Mapping[str, Any], at: str, depth: int
) -> str | None:
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required")
    for name in required if type(required) is list else ():
        if type(name) is str and name not in value and not _may_default(props.get(name), root):
            return f"{at}: the required property {name!r} is missing"
    for name, sub in props.items():
        if name in value:
            bad = _fit(value[name], sub, root, f"{at}.{name}", depth + 1)
            if bad is not None:
                return bad
    return None


def _may_default(schema: object, root: Mapping[str, Any], depth: int = 0) -> bool:
    """The property's schema has a default or admits null (its field may have a default)."""
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return True  # nothing known about it: not judged
    if "default" in schema:
        return True
    types = schema.get("type")
    if types == "null" or (type(types) is list and "null" in types):
        return True
    if any(_same(None, e) for e in schema.get("enum") or () if type(schema.get("enum")) is list):
        return True
    ref = schema.get("$ref")
    if type(ref) is str:
        target = _resolve(ref, root)
        if target is None or _may_default(target, root, depth + 1):
            return True
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if type(branches) is list and any(_may_default(b, root, depth + 1) for b in branches):
            return True
    return False


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A local ``$ref`` (``#``, ``#/$defs/Name``, ``#/definitions/Name``, any ``#/a/b`` path)."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: object = root
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def _is(value: Any, t: str) -> bool:
    """``value`` is of JSON-schema type ``t`` as pydantic's lax mode reads it."""
    kind = type(value)
    if t == "object":
        return kind is dict
    if t == "array":
        return kind is list
    if t == "string":
        return kind is str
    if t == "null":
        return value is None
    if t == "boolean":
        return (
            kind is bool
            or (kind is int and value in (0, 1))
            or (kind is str and value.strip().lower() in _BOOL_STRINGS)
        )
    if t == "integer":
        if kind in (int, bool) or (kind is float and value.is_integer()):
            return True
        return kind is str and _numeric(value, integral=True)
    if t == "number":
        return kind in (int, bool, float) or (kind is str and _numeric(value, integral=False))
    return True  # a type this module does not know: not judged


def _numeric(s: str, *, integral: bool) -> bool:
    try:
        f = float(s.strip().replace("_", ""))
    except ValueError:
        return False
    return not integral or f.is_integer()


def _same(a: Any, b: Any) -> bool:
    """``a`` (the answer's value) may be read as ``b`` (an ``enum`` / ``const`` value): equal as JSON
    (``true`` is not ``1``), or a string of the number ``b`` (pydantic's lax mode reads it)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and bool(a == b)
    if type(a) is str and type(b) in (int, float):
        try:
            return bool(float(a.strip()) == b)
        except ValueError:
            return False
    return bool(a == b)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
