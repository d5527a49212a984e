"""Capture the arguments of Salt 3008's state functions into runtime/data/salt_state_args.json,
for the state modules saltpan has (runtime/states/registry.py): what ``saltpan compile`` checks an
sls's arguments against (an argument neither Salt's function nor saltpan's takes: a warning).

    /work/saltvenv/bin/python tools/capture_salt_state_args.py           # rewrite the file
    /work/saltvenv/bin/python tools/capture_salt_state_args.py --check   # compare, write nothing

Each entry of ``states``: ``"file.managed": {"args": [...], "kwargs": true}`` (``kwargs``: the
function takes ``**kwargs``, so Salt passes it any argument); ``internal``: the keywords every state
takes (requisites, onlyif, order, ...).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys

from capture_common import capture_main

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "runtime", "data", "salt_state_args.json")
_VIRTUALNAME = re.compile(r"""^__virtualname__\s*=\s*["']([A-Za-z0-9_]+)["']""", re.M)


def salt_module_files() -> dict[str, str]:
    """Salt's state module name -> its Python module (``debconf`` -> ``salt.states.debconfmod``)."""
    import salt.states

    folder = os.path.dirname(salt.states.__file__)
    found: dict[str, str] = {}
    for entry in sorted(os.listdir(folder)):
        if not entry.endswith(".py") or entry.startswith("_"):
            continue
        with open(os.path.join(folder, entry), encoding="utf-8") as fh:
            named = _VIRTUALNAME.search(fh.read())
        stem = entry[:-3]
        found.setdefault(named.group(1) if named else stem, f"salt.states.{stem}")
    return found


def functions_of(module_name: str) -> dict[str, dict]:
    module = importlib.import_module(module_name)
    aliases = getattr(module, "__func_alias__", {}) or {}
    out: dict[str, dict] = {}
    for attr, value in vars(module).items():
        if attr.startswith("_") or not inspect.isfunction(value) or value.__module__ != module.__name__:
            continue
        spec = inspect.getfullargspec(value)
        out[aliases.get(attr, attr)] = {"args": [*spec.args, *spec.kwonlyargs], "kwargs": spec.varkw is not None}
    return out


def capture() -> dict:
    import salt.state
    import salt.version

    sys.path.insert(0, ROOT)
    from runtime.states.registry import REGISTRY

    files = salt_module_files()
    states: dict[str, dict] = {}
    for name, entry in sorted(REGISTRY.items()):
        if entry.foreign or name not in files:
            continue
        for fun, spec in sorted(functions_of(files[name]).items()):
            states[f"{name}.{fun}"] = spec
    # the keywords every state takes (requisites, onlyif/unless, order, ...): Salt's own list
    internal = sorted(k for k in salt.state.STATE_INTERNAL_KEYWORDS if not k.startswith("__"))
    return {"salt": salt.version.__version__, "internal": internal, "states": states}


def main() -> int:
    return capture_main(__doc__, OUT, capture, lambda d: f"{len(d['states'])} state functions", "state functions")


if __name__ == "__main__":
    sys.exit(main())
