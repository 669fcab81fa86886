"""``record``: a dataclass whose ``__eq__``, ``__hash__`` and ``__repr__`` are shared, not compiled per class.

Python 3.11's ``dataclass`` writes the source of every method it adds and
compiles it with ``exec``: about 0.4 ms per class, six methods for a frozen
one. A quiet round imports some 60 dataclasses, so defining them cost a
seventh of its CPU (issue 15). :func:`record` lets ``dataclass`` generate only
what needs the class's own code — ``__init__``, and for a frozen class its
``__setattr__``/``__delattr__`` — and gives it equality, hashing and a
``repr`` built once here, with ``operator.attrgetter`` (C code) reading the
fields, so comparing records costs what the generated methods did.

The behaviour is dataclass's own, which ``tests/test_records.py`` checks
side by side: equality only between instances of the same class, field by
field in order (``compare=False`` fields left out), ``NotImplemented``
otherwise; a hash from the compared fields for a frozen class (``hash=`` of
a field honoured), ``__hash__ = None`` for a mutable one (``unsafe_hash``
honoured); ``Name(field=value, ...)`` with ``repr=False`` fields left out and
a recursive record shown as ``...``; a method the class defines itself is
never replaced. Anything else (``order=True``, ``eq=False``) is passed to
``dataclass`` unchanged. ``dataclasses.fields``, ``replace`` and ``asdict``
work as on any dataclass: a record is one.
"""

from __future__ import annotations

import dataclasses
import operator
import reprlib

TYPE_CHECKING = False  # typing's own flag, without importing typing (the commands a dashboard polls do not)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform, overload

    T = TypeVar("T")


def _key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields' values as one tuple, read by C code (``attrgetter`` of one name gives no tuple)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return operator.attrgetter(*names)  # type: ignore[return-value]


def _shared_methods(cls: type, eq: bool, frozen: bool, unsafe_hash: bool) -> None:
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    own = cls.__dict__
    if "__repr__" not in own:
        shown = tuple(f.name for f in fields if f.repr)

        @reprlib.recursive_repr()
        def __repr__(self: Any) -> str:
            values = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
            return f"{self.__class__.__qualname__}({values})"

        __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
        cls.__repr__ = __repr__  # type: ignore[assignment]
    if not eq:
        return
    compared = _key(tuple(f.name for f in fields if f.compare))
    if "__eq__" not in own:

        def __eq__(self: Any, other: object) -> bool:
            if other.__class__ is self.__class__:
                return compared(self) == compared(other)  # type: ignore[no-any-return]
            return NotImplemented

        __eq__.__qualname__ = f"{cls.__qualname__}.__eq__"
        cls.__eq__ = __eq__  # type: ignore[method-assign,assignment]
    if "__hash__" in own and own["__hash__"] is not None:
        return  # the class hashes itself (dataclass keeps it too, unless unsafe_hash, which it refuses)
    if frozen or unsafe_hash:
        hashed = _key(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))

        def __hash__(self: Any) -> int:
            return hash(hashed(self))

        __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
        cls.__hash__ = __hash__  # type: ignore[method-assign,assignment]
    else:
        cls.__hash__ = None  # type: ignore[assignment]  # mutable and compared by value: unhashable


if TYPE_CHECKING:  # what mypy reads: record makes dataclasses, as @dataclass does

    @overload
    @dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
    def record(cls: type[T], /) -> type[T]: ...
    @overload
    def record(*, frozen: bool = ..., kw_only: bool = ..., eq: bool = ..., unsafe_hash: bool = ...,
               order: bool = ...) -> Callable[[type[T]], type[T]]: ...


def record(cls: type[T] | None = None, /, *, frozen: bool = False, kw_only: bool = False, eq: bool = True,
           unsafe_hash: bool = False, order: bool = False) -> type[T] | Callable[[type[T]], type[T]]:
    """``@dataclass`` with the same arguments and behaviour, defined in a third of the time (see the module)."""

    def wrap(cls: type[T]) -> type[T]:
        if order:  # ordering methods are generated: leave the whole class to dataclass
            return dataclasses.dataclass(cls, frozen=frozen, kw_only=kw_only, eq=eq, unsafe_hash=unsafe_hash,
                                         order=order)
        if unsafe_hash and "__hash__" in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute __hash__ in class {cls.__name__}")
        made = dataclasses.dataclass(cls, frozen=frozen, kw_only=kw_only, eq=False, repr=False)
        _shared_methods(made, eq, frozen, unsafe_hash)
        return made

    return wrap if cls is None else wrap(cls)
