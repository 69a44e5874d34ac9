"""Hydra override strings (`[+|++|~]key[=value]`) taken apart in one place: the launcher merges and checks the
user's, the start-up checks read the keys a plain verl command line set."""

from __future__ import annotations

from typing import Iterable

__all__ = ["override_keys", "override_value", "split_override"]


def split_override(override: str) -> tuple[str, str, str]:
    """(prefix, key, value): "+", "++", "~" or ""; the dotted key; the raw value ("" when there is none)."""
    body = override.lstrip("+~")
    key, _, value = body.partition("=")
    return override[: len(override) - len(body)], key, value


def override_keys(overrides: Iterable[str]) -> frozenset[str]:
    """The keys these overrides set (or delete)."""
    return frozenset(split_override(o)[1] for o in overrides)


def override_value(overrides: Iterable[str], key: str) -> str | None:
    """The raw value the last of `overrides` gives `key` (None: not set there)."""
    values = [v for _, k, v in map(split_override, overrides) if k == key]
    return values[-1] if values else None
