"""Reading a field of JSON whose shape nobody promised (GitHub's answers, hostile files).

A field that is missing or of the wrong kind reads as empty, so the caller
goes on with what is there instead of raising on what GitHub sends; and the
type checker sees a Mapping or a list, never ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
_EMPTY: Mapping[str, object] = {}


def field_map(doc: Mapping[str, object], key: str) -> Mapping[str, object]:
    """``doc[key]`` when it is a JSON object, else an empty one."""
    value = doc.get(key)
    return value if isinstance(value, Mapping) else _EMPTY


def field_list(doc: Mapping[str, object], key: str) -> list[object]:
    """``doc[key]`` when it is a JSON array, else an empty one."""
    value = doc.get(key)
    return value if isinstance(value, list) else []
