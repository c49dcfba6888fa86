"""Checks a JSON document against a ``TypedDict`` of ``berth.types`` at run time: every key
it requires is there, no key it does not name, and every value of its type.

A ``TypedDict`` is only a promise to a type checker; this is how the tests hold the
promise to what the binary and the server really write.
"""

from __future__ import annotations

import types
import typing
from typing import Any, ForwardRef, Literal, Union, get_args, get_origin, is_typeddict

import berth.types


def mismatches(value: object, expected: Any, where: str = "$") -> list[str]:
    """What in ``value`` does not fit ``expected``, one line each naming where; empty when
    it fits."""
    if isinstance(expected, str):
        expected = ForwardRef(expected)
    if isinstance(expected, ForwardRef):
        expected = vars(berth.types)[expected.__forward_arg__]
    if expected is Any or expected is object:
        return []
    if expected is None or expected is type(None):
        return [] if value is None else [f"{where}: {value!r} is not null"]
    origin = get_origin(expected)
    if origin is Literal:
        allowed = get_args(expected)
        return [] if value in allowed else [f"{where}: {value!r} is not one of {allowed}"]
    if origin in (Union, types.UnionType):
        arms = [mismatches(value, arm, where) for arm in get_args(expected)]
        if any(not found for found in arms):
            return []
        return [f"{where}: {_short(value)} fits none of {expected}: " + "; ".join(arms[0])]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {_short(value)} is not a list"]
        (item,) = get_args(expected)
        return [m for i, v in enumerate(value) for m in mismatches(v, item, f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {_short(value)} is not an object"]
        _, item = get_args(expected)
        return [m for k, v in value.items() for m in mismatches(v, item, f"{where}.{k}")]
    if is_typeddict(expected):
        return _typeddict(value, expected, where)
    return _scalar(value, expected, where)


def _typeddict(value: object, expected: Any, where: str) -> list[str]:
    name = expected.__name__
    if not isinstance(value, dict):
        return [f"{where}: {_short(value)} is not an object ({name})"]
    hints = typing.get_type_hints(expected)
    found = [
        f"{where}: {name} requires `{k}`" for k in sorted(expected.__required_keys__ - set(value))
    ]
    found += [f"{where}: {name} has no key `{k}`" for k in sorted(set(value) - set(hints))]
    for key, item in value.items():
        if key in hints:
            found += mismatches(item, hints[key], f"{where}.{key}")
    return found


def _scalar(value: object, expected: Any, where: str) -> list[str]:
    # JSON's true and false are not numbers, though Python's bool is an int.
    if expected is float:
        fits = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif expected is int:
        fits = isinstance(value, int) and not isinstance(value, bool)
    elif expected in (str, bool):
        fits = isinstance(value, expected)
    else:
        raise TypeError(f"{where}: cannot check against {expected!r}")
    return [] if fits else [f"{where}: {_short(value)} is not {expected.__name__}"]


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
