"""Every refusal is a documented error token (issue 16, item 8).

Reads every place in runtime/ that refuses with a literal reason (``Refused``, ``ProtocolError``,
``FileServerError``, the crypto errors, ``codec.error_load``, the auth service's refusals) and
requires the token to be in ``runtime/protocol/errors.py`` (the master's tokens, documented in
docs/protocol.md §2) or among the few a minion decides on its own.  The fuzzers
(test_fuzz.py) check the same of every reply they get, and the request proxy's own refusals are
checked here too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from runtime import codec, transport_proxy
from runtime.protocol.errors import ERRORS, MINION_SIDE

ROOT = Path(__file__).resolve().parents[2]
FIRST_ARG = {"Refused", "ProtocolError", "FileServerError", "DecodeError", "error_load", "_KeyError"}
SECOND_ARG = {"BadMessage", "ReplayRefused", "UnknownSession", "HelloError", "CryptoError", "KeyFileError",
              "PublicationRefused", "AuthReplyError", "_refuse"}


def refusals_in_code() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "runtime").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            args = []
            if name in FIRST_ARG and node.args:
                args.append(node.args[0])
            if name in SECOND_ARG and len(node.args) > 1:
                args.append(node.args[1])
            args += [kw.value for kw in node.keywords if kw.arg == "reason"]
            for arg in args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.setdefault(arg.value, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_refusal_in_the_code_is_a_documented_token() -> None:
    found = refusals_in_code()
    assert len(found) > 30, "the scan no longer finds the refusals (renamed exception classes?)"
    undocumented = {token: where for token, where in found.items() if token not in ERRORS and token not in MINION_SIDE}
    assert not undocumented, f"refusal tokens missing from runtime/protocol/errors.py: {undocumented}"


def test_decoder_and_proxy_tokens_are_documented() -> None:
    assert set(codec.DECODE_REASONS) <= set(ERRORS)
    assert set(transport_proxy.PROXY_REFUSALS) <= set(ERRORS)


def test_minion_side_tokens_are_not_master_tokens() -> None:
    assert not set(MINION_SIDE) & set(ERRORS)
