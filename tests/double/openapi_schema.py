"""A small validator for the OpenAPI 3.0 schema subset GitHub's description uses.

Why not a dependency: the project's test dependencies carry no JSON-schema
library, and OpenAPI 3.0 is not JSON Schema (``nullable`` instead of a
``null`` type; GitHub's own file declares ``nullable`` enums without ``null``
in them, which a strict JSON-schema validator flags wrongly). The keywords
handled are those GitHub's file uses for response bodies: ``$ref`` (local),
``type``, ``nullable``, ``properties``, ``required``, ``additionalProperties``,
``items``, ``enum``, ``oneOf``, ``anyOf``, ``allOf`` and the ``date-time`` and
``uri`` formats. An unknown ``type`` is an error, not a pass.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

SUBSET = Path(__file__).resolve().parents[1] / "data" / "github" / "openapi-subset.json"

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:\S*$")


@cache
def openapi() -> dict[str, Any]:
    return json.loads(SUBSET.read_text(encoding="utf-8"))


def response_schema(path: str, method: str, status: int) -> dict[str, Any]:
    """The JSON schema of one operation's answer, as GitHub describes it."""
    response = openapi()["paths"][path][method.lower()]["responses"][str(status)]
    schema: dict[str, Any] = response["content"]["application/json"]["schema"]
    return schema


def problems(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Every way ``value`` breaks ``schema`` (empty: it validates), each with its JSON path."""
    return _check(value, schema, where, openapi())


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"only local $ref is supported, not {ref!r}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        schema = target
    return schema


_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def _check(value: Any, schema: dict[str, Any], where: str, root: dict[str, Any]) -> list[str]:
    schema = _resolve(schema, root)
    if value is None and schema.get("nullable"):
        return []  # OpenAPI 3.0: nullable admits null even beside an enum that lacks it
    out: list[str] = []
    for sub in schema.get("allOf", []):
        out += _check(value, sub, where, root)
    if "anyOf" in schema:
        if not any(not _check(value, sub, where, root) for sub in schema["anyOf"]):
            out.append(f"{where}: matches none of anyOf")
    if "oneOf" in schema:
        hits = sum(1 for sub in schema["oneOf"] if not _check(value, sub, where, root))
        if hits != 1:
            out.append(f"{where}: matches {hits} of oneOf, not exactly one")
    kind = schema.get("type")
    if kind is not None:
        if kind not in _TYPES:
            return out + [f"{where}: schema type {kind!r} is not understood"]
        if not _TYPES[kind](value):
            return out + [f"{where}: expected {kind}{' or null' if schema.get('nullable') else ''}, got {value!r:.60}"]
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} not in {schema['enum']}")
    if isinstance(value, str):
        fmt = schema.get("format")
        if fmt == "date-time" and not _DATE_TIME.match(value):
            out.append(f"{where}: {value!r} is not a date-time")
        if fmt == "uri" and not _URI.match(value):
            out.append(f"{where}: {value!r} is not a URI")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                out.append(f"{where}: required {name!r} missing")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                out += _check(item, props[name], f"{where}.{name}", root)
            elif extra is False:
                out.append(f"{where}: {name!r} is not allowed")
            elif isinstance(extra, dict):
                out += _check(item, extra, f"{where}.{name}", root)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += _check(item, schema["items"], f"{where}[{i}]", root)
    return out
