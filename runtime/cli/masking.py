"""Secret masking for human output (``pillar_mask_patterns``).

A pillar key whose name matches one of the patterns (shell globs, compared
case-insensitively, at any depth) holds a secret: its value is shown the way
Salt 3008's ``pillar.items`` shows masked pillar — every non-empty string,
number or true boolean leaf becomes ``**********``, while mappings and lists
keep their shape and empty or false values stay as they are (they reveal
nothing).

Compiled states can carry secrets too (``file.managed`` contents rendered from
``pillar.db.password``): ``mask_strings`` replaces every occurrence of a
secret pillar string inside other values.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any

PLACEHOLDER = "**********"
MIN_SECRET_LENGTH = 4  # shorter secret strings are not searched for inside other values


def redact(value: Any) -> Any:
    """Salt's masked look: truthy scalar leaves become the placeholder, containers keep their shape."""
    if isinstance(value, dict):
        return {key: redact(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(item) for item in value]
    if isinstance(value, (str, bytes, int, float, bool)) and value:
        return PLACEHOLDER
    return value


class Masker:
    """Masks values under secret keys; a Masker with no patterns masks nothing."""

    def __init__(self, patterns: Iterable[str] | None):
        self.patterns = [str(p) for p in (patterns or [])]
        joined = "|".join(fnmatch.translate(p.lower()) for p in self.patterns)
        self._regex = re.compile(joined) if joined else None

    @classmethod
    def from_opts(cls, opts: Mapping[str, Any], unmask: bool = False) -> Masker:
        if unmask:
            return cls([])
        patterns = opts.get("pillar_mask_patterns")
        if patterns is None:
            patterns = []
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise ValueError(f"pillar_mask_patterns must be a list of key globs, got {patterns!r}")
        return cls(patterns)

    @property
    def active(self) -> bool:
        return self._regex is not None

    def secret_key(self, key: Any) -> bool:
        return self._regex is not None and self._regex.match(str(key).lower()) is not None

    def secret_path(self, path: Iterable[Any]) -> bool:
        """True when any key along the path is a secret key (its value and everything below is secret)."""
        return self._regex is not None and any(self.secret_key(key) for key in path)

    def mask(self, data: Any) -> Any:
        """A copy of data with the values of secret keys redacted (data itself is untouched)."""
        if self._regex is None:
            return data
        return self._mask(data)

    def _mask(self, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: redact(value) if self.secret_key(key) else self._mask(value) for key, value in data.items()}
        if isinstance(data, list):
            return [self._mask(item) for item in data]
        return data

    def mask_value(self, path: Iterable[Any], value: Any) -> Any:
        """The value found at path, masked when the path or a key below it is secret."""
        if self._regex is None:
            return value
        return redact(value) if self.secret_path(path) else self._mask(value)

    def secrets(self, pillar: Any) -> list[str]:
        """The secret strings of a pillar (longest first), to find them inside other values."""
        found: set[str] = set()
        if self._regex is not None:
            self._collect(pillar, False, found)
        return sorted(found, key=lambda s: (-len(s), s))

    def _collect(self, data: Any, secret: bool, found: set[str]) -> None:
        if isinstance(data, dict):
            for key, value in data.items():
                self._collect(value, secret or self.secret_key(key), found)
        elif isinstance(data, list):
            for item in data:
                self._collect(item, secret, found)
        elif secret and isinstance(data, str) and len(data) >= MIN_SECRET_LENGTH:
            found.add(data)


def mask_strings(data: Any, secrets: list[str]) -> Any:
    """A copy of data where every occurrence of a secret string (in keys too) is replaced by the placeholder."""
    if not secrets:
        return data
    pattern = re.compile("|".join(re.escape(s) for s in secrets))
    return _replace(data, pattern)


def _replace(data: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(data, str):
        return pattern.sub(PLACEHOLDER, data)
    if isinstance(data, dict):
        return {_replace(key, pattern) if isinstance(key, str) else key: _replace(value, pattern)
                for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_replace(item, pattern) for item in data]
    return data
