"""A config with its keys in another order, for the tests that the order changes nothing (issue 21)."""

from __future__ import annotations


def reversed_keys(value):
    """The same config with every mapping's keys in reverse order (lists keep theirs)."""
    if isinstance(value, dict):
        return {key: reversed_keys(value[key]) for key in reversed(list(value))}
    return [reversed_keys(item) for item in value] if isinstance(value, list) else value
