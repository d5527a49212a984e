"""``pillar_schema``: JSON Schema validation of compiled pillar.

``pillar_schema`` is either one schema file for the whole pillar, or a mapping
of top-level pillar key to the schema file for that key's value (a key that is
absent from a minion's pillar is not checked: require it in a whole-pillar
schema).  Schema files are JSON or YAML; the ``$schema`` keyword picks the
draft (Draft 2020-12 when absent) and ``format`` is checked.  Relative paths
resolve against the directory of the config file that set them.

Each violation names the key path and, from a tracked compile, the sls
file:line (or ext_pillar driver) whose value the final pillar holds there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.cli.masking import PLACEHOLDER, Masker, mask_strings


class SchemaError(Exception):
    """An unreadable or invalid schema file, or a malformed pillar_schema option."""


@dataclass
class Violation:
    path: tuple  # key path in the pillar (empty: the pillar as a whole)
    message: str
    schema: str  # the schema file
    file: str | None = None  # where the value at path came from (tracked)
    line: int | None = None
    source: str | None = None  # "sls base:roles.web", "ext_pillar vault", ...
    exact: bool = True

    def key(self) -> str:
        return ":".join(str(p) for p in self.path) or "(the whole pillar)"

    def where(self) -> str:
        if self.file:
            return f"{self.file}:{self.line}" if self.line else self.file
        return self.source or ""

    def __str__(self) -> str:
        where = self.where()
        origin = f" (from {where})" if where else ""
        return f"{self.key()}: {self.message}{origin} [schema {self.schema}]"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key(), "message": self.message, "schema": self.schema, "file": self.file,
                "line": self.line, "source": self.source, "line_kind": "source" if self.exact else "rendered"}


def _load_schema(path: str) -> Any:
    from runtime.config import load_data_file

    return load_data_file(path, "pillar_schema", SchemaError, "JSON/YAML")


def _validator(path: str) -> Any:
    import jsonschema

    schema = _load_schema(path)
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"{path}: a JSON Schema is a mapping (or true/false), got {type(schema).__name__}")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)  # type: ignore[arg-type]  # true and false are schemas too; the stub says dict
    except jsonschema.SchemaError as exc:
        at = "/".join(str(p) for p in exc.absolute_path)
        raise SchemaError(f"{path}: not a valid JSON Schema{' at ' + at if at else ''}: {exc.message}") from None
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


class SchemaSet:
    """The schemas of ``pillar_schema``, loaded once (reuse it for a whole fleet)."""

    def __init__(self, spec: Any, base_dir: str | None = None):
        def resolve(path: Any, what: str) -> str:
            if not isinstance(path, str) or not path:
                raise SchemaError(f"pillar_schema: {what} must be a schema file path, got {path!r}")
            path = os.path.expanduser(path)
            return path if os.path.isabs(path) or not base_dir else os.path.join(base_dir, path)

        self.whole: tuple[str, Any] | None = None
        self.per_key: dict[str, tuple[str, Any]] = {}
        if isinstance(spec, str):
            path = resolve(spec, "the value")
            self.whole = (path, _validator(path))
        elif isinstance(spec, Mapping):
            for key, path in spec.items():
                path = resolve(path, f"the schema of key {key!r}")
                self.per_key[str(key)] = (path, _validator(path))
        else:
            raise SchemaError(f"pillar_schema must be a schema file path or a mapping of top-level pillar key to "
                              f"schema file, got {type(spec).__name__}")

    @classmethod
    def from_opts(cls, opts: Mapping[str, Any]) -> SchemaSet | None:
        """None when no pillar_schema is configured."""
        spec = opts.get("pillar_schema")
        if not spec:
            return None
        conf = opts.get("conf_file")
        return cls(spec, os.path.dirname(conf) if conf else None)

    def check(self, pillar: Mapping[str, Any], masker: Masker) -> list[Violation]:
        """Violations (without origins) of one pillar, sorted by key path; secret values masked."""
        data = {k: v for k, v in pillar.items() if k != "_errors"}
        found: list[Violation] = []
        if self.whole is not None:
            path, validator = self.whole
            found += [_violation((), err, path, masker, data) for err in validator.iter_errors(data)]
        for key, (path, validator) in self.per_key.items():
            if key not in data:
                continue
            found += [_violation((key,), err, path, masker, data) for err in validator.iter_errors(data[key])]
        found.sort(key=lambda v: (tuple(str(p) for p in v.path), v.message))
        return found


def _violation(prefix: tuple, err: Any, schema_path: str, masker: Masker, pillar: Mapping[str, Any]) -> Violation:
    path = prefix + tuple(err.absolute_path)
    if masker.secret_path(path):
        message = f"{PLACEHOLDER} fails the schema's {err.validator!r} rule ({err.validator}: {err.validator_value!r})"
    else:
        message = mask_strings(err.message, masker.secrets(pillar))
    return Violation(path, message, schema_path)


def locate(violations: list[Violation], tracked: Any, minion: str) -> None:
    """Fill in where each violating value came from, from a tracked PillarResult."""
    from runtime.cli import explain

    for violation in violations:
        if not violation.path:
            continue
        probe = violation.path
        expl = explain.explain(tracked, minion, probe)
        while not expl.steps and len(probe) > 1:
            probe = probe[:-1]
            expl = explain.explain(tracked, minion, probe)
        if not expl.steps:
            continue
        last = expl.steps[-1]
        contribution = last.contribution
        violation.file, violation.line = last.place
        violation.exact = contribution.exact
        violation.source = (f"sls {contribution.label}" if contribution.source == "sls"
                            else f"{contribution.source} {contribution.label}")
