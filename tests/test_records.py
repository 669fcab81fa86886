"""``records.record`` behaves as ``dataclasses.dataclass`` does, for every shape the product uses (issue 15)."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, strategies as st

from git_sluice.records import record


def _pair(**options: Any) -> tuple[type, type]:
    """The same class body, once through dataclass and once through record."""

    def body(ns: dict[str, Any]) -> None:
        ns["__annotations__"] = {"a": "int", "b": "str", "c": "tuple[int, ...]", "hidden": "int", "note": "str"}
        ns["c"] = ()
        ns["hidden"] = field(default=0, compare=False, repr=False)
        ns["note"] = field(default="", hash=False)

    made = []
    for decorate in (dataclass, record):
        ns: dict[str, Any] = {"__module__": __name__, "__qualname__": "Shape"}
        body(ns)
        cls = type("Shape", (), ns)
        made.append(decorate(**options)(cls))
    return made[0], made[1]


VALUES = st.tuples(st.integers(-3, 3), st.sampled_from(["", "x", "y"]), st.lists(st.integers(0, 2), max_size=2),
                   st.integers(0, 2), st.sampled_from(["", "n"]))


@pytest.mark.parametrize("options", [{}, {"frozen": True}, {"frozen": True, "kw_only": True}, {"eq": False},
                                     {"unsafe_hash": True}, {"frozen": True, "eq": False}])
@given(one=VALUES, two=VALUES)
def test_a_record_compares_hashes_and_shows_itself_as_a_dataclass_does(options: dict[str, Any],
                                                                       one: tuple, two: tuple) -> None:
    dc, rc = _pair(**options)

    def make(cls: type, values: tuple) -> Any:
        a, b, c, hidden, note = values
        return cls(a=a, b=b, c=tuple(c), hidden=hidden, note=note)

    d1, d2, r1, r2 = make(dc, one), make(dc, two), make(rc, one), make(rc, two)
    assert repr(r1) == repr(d1) and repr(r2) == repr(d2)
    assert (r1 == r2) == (d1 == d2) and (r1 != r2) == (d1 != d2)
    assert (r1 == d1) is False and r1.__eq__(5) is (d1.__eq__(5) if options.get("eq", True) else NotImplemented)
    assert (rc.__hash__ is None) == (dc.__hash__ is None)
    if rc.__hash__ is not None and options.get("eq", True):
        assert r1 != r2 or hash(r1) == hash(r2)  # equal records hash alike
    assert dataclasses.fields(rc) == dataclasses.fields(rc) and [f.name for f in dataclasses.fields(rc)] == \
        [f.name for f in dataclasses.fields(dc)]
    assert dataclasses.asdict(r1) == dataclasses.asdict(d1)
    assert dataclasses.replace(r1, a=9).a == 9
    if options.get("frozen"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            r1.a = 5  # type: ignore[misc]


def test_what_the_class_defines_itself_is_kept_and_a_recursive_record_shows_dots() -> None:
    @record(frozen=True)
    class Own:
        x: int

        def __repr__(self) -> str:
            return "mine"

        def __eq__(self, other: object) -> bool:
            return True

    assert repr(Own(1)) == "mine" and Own(1) == Own(2) and hash(Own(1)) == hash(Own(1))

    @record
    class Node:
        name: str
        children: list[Any] = field(default_factory=list)

    @dataclass
    class DNode:
        name: str
        children: list[Any] = field(default_factory=list)

    n, d = Node("n"), DNode("n")
    n.children.append(n)
    d.children.append(d)
    assert repr(n) == repr(d).replace("DNode", "Node") == "test_what_the_class_defines_itself_is_kept_and_a_" \
        "recursive_record_shows_dots.<locals>.Node(name='n', children=[...])"
    assert Node.__hash__ is None  # mutable, compared by value

    @record(frozen=True)
    class Hashed:
        x: int

        def __hash__(self) -> int:
            return 7

    assert hash(Hashed(1)) == 7
    with pytest.raises(TypeError):
        @record(unsafe_hash=True)
        class Clash:
            x: int

            def __hash__(self) -> int:
                return 1


def test_a_subclass_a_pickle_and_order_behave_as_with_dataclass() -> None:
    @record(frozen=True)
    class Base:
        x: int

    @record(frozen=True)
    class Child(Base):
        y: int = 0

    assert Child(1, 2) == Child(1, 2) and Child(1, 2) != Child(1, 3) and Base(1) != Child(1)
    assert {Child(1, 2): "v"}[Child(1, 2)] == "v"
    assert pickle.loads(pickle.dumps(Point(1, 2))) == Point(1, 2)

    @record(order=True)
    class Ordered:
        x: int

    assert Ordered(1) < Ordered(2) and sorted([Ordered(3), Ordered(1)]) == [Ordered(1), Ordered(3)]


@record(frozen=True)
class Point:
    x: int
    y: int
