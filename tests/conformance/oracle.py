"""The project's own runner for the Salt conformance corpus (tests/conformance/cases).

It follows the corpus README (``/work/shared/conformance/README.md``):

* **materialise** each (case, check) in a fresh temp dir: a mode-normalised copy
  of the case (without ``expected/`` and ``sandbox/``), a concrete minion config
  with absolute roots, ``@CASEDIR@``/``@SANDBOX@`` substituted, the ``sandbox``
  grain and the masterless runtime keys, and a sandbox seeded from the case;
* **run** saltpan as a subprocess (``python -m runtime ...``) with cwd = the temp
  dir, umask 022 and ``LC_ALL=LANG=C.UTF-8``;
* **normalise** its output the way the corpus' expected/ files were normalised
  (error strings -> kinds, canonical highstate, filtered lowstate, keyed apply
  results with a dense ``__run_num__`` rank, sandbox manifest);
* **compare** with ``expected/`` and explain any difference readably.
"""

from __future__ import annotations

import difflib
import getpass
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import yaml

CASES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")

CHECKS = ("pillar", "top", "highstate", "lowstate", "apply_test", "apply")

# saltpan arguments per check; the same as the corpus' compare.py default templates.
COMMANDS: dict[str, list[str]] = {
    "pillar": ["compile", "--config", "{config}", "--minion", "{id}", "--show", "pillar", "--out", "json"],
    "top": ["compile", "--config", "{config}", "--minion", "{id}", "--show", "top", "--out", "json"],
    "highstate": ["compile", "--config", "{config}", "--minion", "{id}", "--show", "highstate", "--out", "json"],
    "lowstate": ["compile", "--config", "{config}", "--minion", "{id}", "--show", "lowstate", "--out", "json"],
    "apply_test": ["call", "--config", "{config}", "--local", "state.apply", "test=True", "--out", "json"],
    "apply": ["call", "--config", "{config}", "--local", "state.apply", "--out", "json"],
}

SANDBOX_TOKEN = "@SANDBOX@"
CASEDIR_TOKEN = "@CASEDIR@"
RUNDIR_TOKEN = "@RUNDIR@"

RUN_UMASK = 0o022
RUN_TIMEOUT = 120

# Set to keep the temp dirs of failing runs (their path is in the failure report).
KEEP_ENV = "SALTPAN_CONFORMANCE_KEEP"


# -- cases ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    name: str
    path: str
    checks: tuple[str, ...]
    errors: dict[str, str]
    config: dict[str, Any]

    def expected(self, filename: str) -> Any:
        """Contents of expected/<filename>, or None when the case has no such file."""
        full = os.path.join(self.path, "expected", filename)
        if not os.path.exists(full):
            return None
        with open(full, encoding="utf-8") as fh:
            return json.load(fh)


def _read_yaml(path: str) -> Any:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def case_names(cases_dir: str = CASES_DIR) -> list[str]:
    return sorted(name for name in os.listdir(cases_dir)
                  if os.path.isfile(os.path.join(cases_dir, name, "case.yaml")))


def load_case(name: str, cases_dir: str = CASES_DIR) -> Case:
    path = os.path.join(cases_dir, name)
    meta = _read_yaml(os.path.join(path, "case.yaml")) or {}
    config = _read_yaml(os.path.join(path, "config.yaml")) or {}
    return Case(name, path, tuple(meta.get("checks") or ()), dict(meta.get("errors") or {}), config)


# -- materialisation ------------------------------------------------------------------------

def copy_normalised(src: str, dst: str, skip: tuple[str, ...] = ()) -> None:
    """Copy a tree with dirs 0755 and files 0644 (0755 when owner-executable); symlinks stay
    symlinks; top-level names in ``skip`` are left out. A missing src copies nothing."""
    if not os.path.isdir(src):
        return
    os.makedirs(dst, exist_ok=True)
    os.chmod(dst, 0o755)
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        if entry.name in skip:
            continue
        target = os.path.join(dst, entry.name)
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), target)
        elif entry.is_dir():
            copy_normalised(entry.path, target)
        else:
            shutil.copyfile(entry.path, target)
            executable = os.stat(entry.path).st_mode & stat.S_IXUSR
            os.chmod(target, 0o755 if executable else 0o644)


def substitute(value: Any, tokens: dict[str, str]) -> Any:
    """Replace each token in every string of a nested structure (keys included)."""
    if isinstance(value, str):
        for token, real in tokens.items():
            value = value.replace(token, real)
        return value
    if isinstance(value, list):
        return [substitute(v, tokens) for v in value]
    if isinstance(value, dict):
        return {substitute(k, tokens): substitute(v, tokens) for k, v in value.items()}
    return value


def _absolute(base: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(base, path))


def concrete_config(config: dict[str, Any], case_dir: str, sandbox: str, rundir: str) -> dict[str, Any]:
    """The case's config.yaml made concrete for one run (see the corpus README)."""
    cfg = substitute(config, {CASEDIR_TOKEN: case_dir, SANDBOX_TOKEN: sandbox})
    for key in ("pillar_roots", "file_roots"):
        roots = cfg.get(key)
        if isinstance(roots, dict):
            cfg[key] = {env: [_absolute(case_dir, d) for d in dirs or []] for env, dirs in roots.items()}
    for entry in cfg.get("ext_pillar") or []:
        tree = entry.get("file_tree") if isinstance(entry, dict) else None
        if isinstance(tree, dict) and isinstance(tree.get("root_dir"), str):
            tree["root_dir"] = _absolute(case_dir, tree["root_dir"])
    cfg["grains"] = {**(cfg.get("grains") or {}), "sandbox": sandbox}
    runtime_keys = {
        "file_client": "local",
        "root_dir": os.path.join(rundir, "root"),
        "pki_dir": os.path.join(rundir, "pki"),
        "cachedir": os.path.join(rundir, "cache"),
        "sock_dir": os.path.join(rundir, "sock"),
        "log_file": os.path.join(rundir, "minion.log"),
        "user": getpass.getuser(),
    }
    for key, value in runtime_keys.items():
        cfg.setdefault(key, value)
    return cfg


@dataclass(frozen=True)
class Workspace:
    """One materialised (case, check) run: <tmp>/{case,conf/minion,run,sandbox}."""

    tmp: str
    source_case_dir: str
    config: dict[str, Any]

    @property
    def case_dir(self) -> str:
        return os.path.join(self.tmp, "case")

    @property
    def confdir(self) -> str:
        return os.path.join(self.tmp, "conf")

    @property
    def config_path(self) -> str:
        return os.path.join(self.confdir, "minion")

    @property
    def rundir(self) -> str:
        return os.path.join(self.tmp, "run")

    @property
    def sandbox(self) -> str:
        return os.path.join(self.tmp, "sandbox")

    @property
    def minion_id(self) -> str:
        return str(self.config.get("id", ""))

    def path_placeholders(self) -> list[tuple[str, str]]:
        """(real path, placeholder) pairs, longest path first so nested paths win."""
        pairs = [
            (self.sandbox, SANDBOX_TOKEN),
            (self.case_dir, CASEDIR_TOKEN),
            (self.source_case_dir, CASEDIR_TOKEN),
            (self.confdir, RUNDIR_TOKEN + "/conf"),
            (self.rundir, RUNDIR_TOKEN + "/run"),
            (self.tmp, RUNDIR_TOKEN),
        ]
        return sorted(pairs, key=lambda pair: len(pair[0]), reverse=True)


@contextmanager
def materialise(case: Case, keep: Callable[[], bool] = lambda: False) -> Iterator[Workspace]:
    """A fresh temp tree for one run of a case; removed afterwards unless keep() says otherwise."""
    tmp = os.path.realpath(tempfile.mkdtemp(prefix="saltpan-conformance-"))
    try:
        for sub in ("conf", "run", "sandbox"):
            os.makedirs(os.path.join(tmp, sub))
        os.chmod(os.path.join(tmp, "sandbox"), 0o755)
        source = os.path.realpath(case.path)
        copy_normalised(source, os.path.join(tmp, "case"), skip=("expected", "sandbox"))
        copy_normalised(os.path.join(source, "sandbox"), os.path.join(tmp, "sandbox"))
        config = concrete_config(case.config, os.path.join(tmp, "case"), os.path.join(tmp, "sandbox"),
                                 os.path.join(tmp, "run"))
        ws = Workspace(tmp, source, config)
        with open(ws.config_path, "w", encoding="utf-8") as fh:
            yaml.safe_dump(config, fh, default_flow_style=False, sort_keys=False)
        yield ws
    finally:
        if not keep():
            shutil.rmtree(tmp, ignore_errors=True)


# -- running saltpan -----------------------------------------------------------------------

@dataclass(frozen=True)
class RunResult:
    returncode: int
    stdout: str
    stderr: str


def saltpan_argv(check: str, ws: Workspace) -> list[str]:
    values = {"config": ws.config_path, "confdir": ws.confdir, "id": ws.minion_id, "sandbox": ws.sandbox,
              "casedir": ws.case_dir}
    argv = []
    for word in COMMANDS[check]:
        for name, value in values.items():
            word = word.replace("{" + name + "}", value)
        argv.append(word)
    return [sys.executable, "-m", "runtime", *argv]


def run_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SALT_CONFIG_DIR"}
    env.update(LC_ALL="C.UTF-8", LANG="C.UTF-8")
    # the saltpan sources this test suite belongs to come first
    project = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (project, env.get("PYTHONPATH")) if p)
    return env


def run_saltpan(check: str, ws: Workspace, timeout: float = RUN_TIMEOUT) -> RunResult:
    try:
        proc = subprocess.run(saltpan_argv(check, ws), cwd=ws.tmp, env=run_env(), umask=RUN_UMASK,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        return RunResult(124, _text(exc.stdout), _text(exc.stderr) + f"\n[timed out after {timeout}s]")
    return RunResult(proc.returncode, _text(proc.stdout), _text(proc.stderr))


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


# -- error kinds ------------------------------------------------------------------------------

# First match wins (case-insensitive re.search); unmatched messages are "other".
ERROR_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((kind, re.compile(rx, re.IGNORECASE)) for kind, rx in (
    ("pillar_failed", r"^pillar failed to render"),
    ("conflicting_id", r"conflicting ids?\b"),
    ("requisite_cycle", r"recursive requisite"),
    ("requisite_not_found", r"referenced state does not exist|requisites? (was |were )?not found"),
    ("missing_sls", r"specified sls .* (is not available|was not found)|no matching sls found|sls .* not found"),
    ("not_a_dict", r"does not render to a dictionary|not formed as a dict|must be formed as a dict"
                   r"|did not return a dict"),
    ("ext_pillar_error", r"ext_pillar"),
    ("render_error", r"render|jinja|yaml|template|syntax"),
))


def error_kind(message: Any) -> str:
    if isinstance(message, dict) and "kind" in message:
        return str(message["kind"])
    text = message if isinstance(message, str) else json.dumps(message, sort_keys=True)
    for kind, regex in ERROR_KINDS:
        if regex.search(text):
            return kind
    return "other"


def error_kinds(messages: Any, one_per_message: bool = False) -> list[str]:
    """Sorted kinds; each kind once, or one per message (pillar ``_errors``)."""
    if not isinstance(messages, list):
        messages = [messages]
    kinds = [error_kind(m) for m in messages]
    return sorted(kinds) if one_per_message else sorted(set(kinds))


def errors_doc(messages: Any) -> dict[str, list[str]]:
    return {"__errors__": error_kinds(messages)}


# -- normalisation ----------------------------------------------------------------------------

def parse_json_output(stdout: str) -> Any:
    """The JSON document on stdout; with extra text before it, the last document that starts at
    the beginning of a line. None when there is none."""
    text = stdout.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    starts = [m.start() for m in re.finditer(r"^[\[{]", text, re.MULTILINE)]
    for start in reversed(starts):
        try:
            return json.loads(text[start:])
        except ValueError:
            continue
    return None


def unwrap(doc: Any) -> Any:
    """salt-call wraps its return as {"local": ...}."""
    if isinstance(doc, dict) and list(doc) == ["local"]:
        return doc["local"]
    return doc


def replace_paths(value: Any, pairs: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for real, placeholder in pairs:
            value = value.replace(real, placeholder)
        return value
    if isinstance(value, list):
        return [replace_paths(v, pairs) for v in value]
    if isinstance(value, dict):
        return {replace_paths(k, pairs): replace_paths(v, pairs) for k, v in value.items()}
    return value


def norm_pillar(data: Any) -> Any:
    if not isinstance(data, dict):
        return errors_doc(data)
    out = dict(data)
    if "_errors" in out:
        out["_errors"] = error_kinds(out["_errors"], one_per_message=True)
    return out


def norm_top(data: Any) -> Any:
    if not isinstance(data, dict):
        return errors_doc(data)
    return [[env, sls] for env, sls in data.items()]


def _is_auto_order(key: Any, value: Any) -> bool:
    return key == "order" and type(value) is int and value >= 10000


def _sort_key(pair: list) -> tuple[str, str]:
    return str(pair[0]), json.dumps(pair[1], sort_keys=True)


def canonical_state_args(arglist: Any) -> Any:
    """['fun', {k: v}, ...] -> {"fun": 'fun', "args": [[k, v], ...] sorted}; auto order dropped."""
    if not isinstance(arglist, list):
        return {"__malformed__": arglist}
    funs: list[str] = []
    args: list[list] = []
    other: list = []
    for item in arglist:
        if isinstance(item, str):
            funs.append(item)
        elif isinstance(item, dict):
            args.extend([k, v] for k, v in item.items() if not _is_auto_order(k, v))
        else:
            other.append(item)
    out: dict[str, Any] = {"fun": funs[0] if len(funs) == 1 else (funs or None),
                           "args": sorted(args, key=_sort_key)}
    if other:
        out["other"] = other
    return out


def _norm_state_body(body: Any) -> Any:
    if not isinstance(body, dict):
        return {"__malformed__": body}
    return {key: (value if key.startswith("__") else canonical_state_args(value))
            for key, value in body.items() if key != "__sls_included_from__"}


def norm_highstate(data: Any) -> Any:
    if not isinstance(data, dict):
        return errors_doc(data)
    out: dict[str, Any] = {}
    for sid, body in data.items():
        if sid == "__extend__" and isinstance(body, list):
            out[sid] = [{eid: _norm_state_body(ebody) for eid, ebody in item.items()}
                        if isinstance(item, dict) else item for item in body]
        elif sid.startswith("__"):
            out[sid] = body
        else:
            out[sid] = _norm_state_body(body)
    return out


LOWSTATE_DROPPED = frozenset({"order", "name_order", "__sls_included_from__", "__prereq__", "__prerequiring__"})


def _chunk_tag(chunk: dict) -> str:
    return json.dumps([chunk.get("state"), chunk.get("__id__"), chunk.get("name"), chunk.get("fun")])


def norm_lowstate(data: Any) -> Any:
    if not isinstance(data, list) or not all(isinstance(chunk, dict) for chunk in data):
        return errors_doc(data)
    last_position = {_chunk_tag(chunk): i for i, chunk in enumerate(data)}
    return [{k: v for k, v in chunk.items() if k not in LOWSTATE_DROPPED}
            for i, chunk in enumerate(data) if last_position[_chunk_tag(chunk)] == i]


APPLY_KEPT = ("__id__", "__sls__", "name", "result", "__run_num__")


def norm_apply(data: Any) -> Any:
    if not isinstance(data, dict):
        return errors_doc(data)
    out: dict[str, Any] = {}
    for tag, ret in data.items():
        if not isinstance(ret, dict):
            out[tag] = {"__malformed__": ret}
            continue
        reduced = {k: ret[k] for k in APPLY_KEPT if k in ret}
        changes = ret.get("changes") or {}
        reduced["changed"] = bool(changes)
        reduced["changes_keys"] = sorted(changes) if isinstance(changes, dict) else ["<non-dict>"]
        out[tag] = reduced
    numbered = [t for t in out if isinstance(out[t].get("__run_num__"), (int, float))
                and not isinstance(out[t].get("__run_num__"), bool)]
    for rank, tag in enumerate(sorted(numbered, key=lambda t: (out[t]["__run_num__"], t))):
        out[tag]["__run_num__"] = rank
    return out


NORMALISERS: dict[str, Callable[[Any], Any]] = {
    "pillar": norm_pillar,
    "top": norm_top,
    "highstate": norm_highstate,
    "lowstate": norm_lowstate,
    "apply_test": norm_apply,
    "apply": norm_apply,
}

_ERROR_RUNNING = re.compile(r"^Error running '[^']*':\s*")


def stderr_messages(stderr: str) -> list[str]:
    """Errors printed on stderr only: the ``Error running '<fun>': <msg>`` line (prefix removed) and
    the ``- <msg>`` bullet lines after it."""
    messages: list[str] = []
    header_seen = False
    for line in stderr.splitlines():
        if _ERROR_RUNNING.match(line):
            messages.append(_ERROR_RUNNING.sub("", line))
            header_seen = True
        elif header_seen and line.startswith("- "):
            messages.append(line[2:])
    return messages


def normalise(check: str, stdout: str, stderr: str, pairs: list[tuple[str, str]]) -> Any:
    """One run's output as the comparable document expected/<check>.json holds."""
    doc = parse_json_output(stdout)
    if doc is None:
        messages = replace_paths(stderr_messages(stderr), pairs)
        return errors_doc(messages) if messages else {"__errors__": ["crash"]}
    return NORMALISERS[check](replace_paths(unwrap(doc), pairs))


# -- filesystem manifest ------------------------------------------------------------------

MANIFEST_CONTENT_LIMIT = 400


def fs_manifest(root: str, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Everything under root (symlinked dirs not followed), sorted by relative path."""
    entries: list[dict[str, Any]] = []
    for cur, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(cur, name)
            entry: dict[str, Any] = {"path": os.path.relpath(full, root).replace(os.sep, "/")}
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                entry.update(type="symlink", target=replace_paths(os.readlink(full), pairs))
            elif stat.S_ISDIR(st.st_mode):
                entry.update(type="dir", mode=f"{stat.S_IMODE(st.st_mode):04o}")
            elif stat.S_ISREG(st.st_mode):
                entry.update(type="file", mode=f"{stat.S_IMODE(st.st_mode):04o}")
                with open(full, "rb") as fh:
                    raw = fh.read()
                try:
                    text = replace_paths(raw.decode("utf-8"), pairs)
                except UnicodeDecodeError:
                    pass
                else:
                    raw = text.encode("utf-8")
                    if len(text) <= MANIFEST_CONTENT_LIMIT:
                        entry["content"] = text
                entry["sha256"] = hashlib.sha256(raw).hexdigest()
            else:
                entry["type"] = "other"
            entries.append(entry)
    return sorted(entries, key=lambda e: e["path"])


# -- comparison ---------------------------------------------------------------------------

def canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False)


def same(expected: Any, actual: Any) -> bool:
    return canonical(expected) == canonical(actual)


def differences(expected: Any, actual: Any, path: str = "", limit: int = 8) -> list[str]:
    """Short descriptions of where two documents differ (at most ``limit``)."""
    out: list[str] = []
    _differences(expected, actual, path, out, limit)
    return out


def _short(value: Any, width: int = 100) -> str:
    text = canonical(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _differences(expected: Any, actual: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    where = path or "<root>"
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in actual:
                out.append(f"missing {sub} (expected {_short(expected[key])})")
            elif key not in expected:
                out.append(f"unexpected {sub} = {_short(actual[key])}")
            else:
                _differences(expected[key], actual[key], sub, out, limit)
            if len(out) >= limit:
                return
    elif isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            out.append(f"{where}: {len(actual)} items, expected {len(expected)}")
        for i, (exp, act) in enumerate(zip(expected, actual, strict=False)):
            _differences(exp, act, f"{path}[{i}]", out, limit)
            if len(out) >= limit:
                return
    elif canonical(expected) != canonical(actual):
        out.append(f"{where}: got {_short(actual)}, expected {_short(expected)}")


def unified_diff(expected: Any, actual: Any, label: str) -> str:
    exp = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    act = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    return "\n".join(difflib.unified_diff(exp, act, f"expected/{label}", f"saltpan {label}", lineterm=""))


def report(label: str, expected: Any, actual: Any) -> str:
    """A readable failure report: the differing paths, then a unified diff."""
    lines = [f"{label} differs from Salt's:"]
    lines += [f"  - {d}" for d in differences(expected, actual)]
    lines.append(unified_diff(expected, actual, label))
    return "\n".join(lines)


@dataclass
class CheckOutcome:
    """The result of running one (case, check)."""

    ok: bool
    message: str
    actual: Any = None


def run_check(case: Case, check: str, timeout: float = RUN_TIMEOUT) -> CheckOutcome:
    expected = case.expected(f"{check}.json")
    if expected is None:
        return CheckOutcome(False, f"{case.name} has no expected/{check}.json")
    failed = False
    with materialise(case, keep=lambda: failed and bool(os.environ.get(KEEP_ENV))) as ws:
        result = run_saltpan(check, ws, timeout)
        pairs = ws.path_placeholders()
        actual = normalise(check, result.stdout, result.stderr, pairs)
        problems: list[str] = []
        if not same(expected, actual):
            problems.append(report(f"{check}.json", expected, actual))
        if check in ("apply", "apply_test"):
            expected_fs = case.expected(f"{check}_fs.json")
            if expected_fs is not None:
                actual_fs = fs_manifest(ws.sandbox, pairs)
                if not same(expected_fs, actual_fs):
                    problems.append(report(f"{check}_fs.json", expected_fs, actual_fs))
        if problems:
            failed = True
            tail = "\n".join(result.stderr.strip().splitlines()[-15:])
            problems.append(f"saltpan exit status {result.returncode}; stderr (last lines):\n{tail}")
            problems.append(f"run dir kept: {ws.tmp}" if os.environ.get(KEEP_ENV)
                            else f"(set {KEEP_ENV}=1 to keep the run dir)")
            return CheckOutcome(False, "\n\n".join(problems), actual)
        return CheckOutcome(True, "", actual)
