"""Class 4: files outside the roots through the file server (CVE-2020-11652, CVE-2024-22232).

Salt's ``_serve_file``/``_file_hash``/``_file_list`` joined the requested path to the root and
was walked out of it with ``..``, absolute paths, or (on Windows) backslashes.  The lab plants a
canary file next to file_roots, and symlinks inside the root pointing at it.  Every trick gets
a refusal or "not found" and nothing of the canary, nor any master path, comes back.
"""

from __future__ import annotations

import json

import pytest

from tests.security.clients import reason
from tests.security.guard import lab_attack
from tests.security.lab import BIG_FILE, Lab

REFUSED = {"access_denied", "bad_path", "bad_saltenv", "unknown_saltenv", None}


def escapes(lab: Lab) -> list[str]:
    secret = lab.roots / "secret.txt"
    return [
        "salt://../secret.txt", "../secret.txt", "../../secret.txt", "sub/../../secret.txt",
        "salt://sub/../../secret.txt", "./../secret.txt", "salt://%2e%2e/secret.txt", "..%2fsecret.txt",
        str(secret), f"salt://{secret}", f"salt:///{secret}", f"file://{secret}", "/etc/passwd",
        "..\\secret.txt", "sub\\..\\..\\secret.txt", "salt://..\\secret.txt", "C:\\secret.txt",
        "link-out.txt", "salt://link-out.txt", "sub/rel-out.txt", "dir-out/secret.txt", "dir-out/states/hello.txt",
        "hello.txt\x00../secret.txt", "\x00", "", "salt://", ".", "..", "sub/..", "sub/../..",
        "~root/.bashrc", "salt://hello.txt?saltenv=../..", "a" * 5000, ["../secret.txt"], None, 5,
    ]


BAD_SALTENVS = ["..", "../..", "base/../..", "../roots", "/", "base/", "base\\..", "base\x00", "", 5, ["base"],
                {"base": 1}, "a" * 300, "__env__", "*"]


def check_reply(lab: Lab, reply: object, sent: object = None) -> None:
    """No master path in the reply (other than one the attacker sent), only files from inside the root."""
    text = json.dumps(reply, default=lambda b: b.decode("latin-1") if isinstance(b, bytes) else str(b))
    if isinstance(sent, str) and sent:
        text = text.replace(json.dumps(sent)[1:-1], "<sent>").replace(repr(sent), "<sent>")
    assert str(lab.base) not in text, f"a master path in the reply: {text[:300]}"
    if isinstance(reply, dict) and "data" in reply:  # only files inside the root (links resolving inside it)
        assert reply["data"] in (b"hello\n", b"nested\n"), reply


@pytest.mark.parametrize("cmd", ["_serve_file", "_file_find", "_file_hash"])
def test_paths_out_of_the_root(lab: Lab, cmd: str) -> None:
    with lab_attack(lab, logs=[("master", rf"refused {cmd} from minion rogue01 \(bad_saltenv\): invalid saltenv '\.\.'")]) as atk:
        for path in escapes(lab):
            reply = atk.record(f"{cmd} {path!r}", lab.rogue.request({"cmd": cmd, "path": path, "saltenv": "base"}))
            assert reply == {} or reason(reply) in REFUSED, (path, reply)
            check_reply(lab, reply, path)
        for saltenv in BAD_SALTENVS:
            reply = atk.record(f"{cmd} env {saltenv!r}", lab.rogue.request({"cmd": cmd, "path": "hello.txt",
                                                                             "saltenv": saltenv}))
            # a refusal, or (for "" and non-strings, read as the default saltenv) the file in base
            assert reason(reply) in REFUSED - {None} or (not isinstance(saltenv, str) or saltenv == ""), \
                (saltenv, reply)
            check_reply(lab, reply)
        # the file server still serves what is inside the root
        assert lab.rogue.request({"cmd": "_file_find", "path": "salt://sub/nested.txt", "saltenv": "base"})["path"] \
            == "sub/nested.txt"


def test_listings_and_chunk_offsets(lab: Lab) -> None:
    with lab_attack(lab, logs=[("master", r"refused _file_list from minion rogue01 \(bad_saltenv\): invalid saltenv"),
                               ("master", r"refused _serve_file from minion rogue01 \(bad_path\): loc must")]) as atk:
        for cmd in ("_file_list", "_dir_list"):
            for prefix in ("", "../", "/", "..", "dir-out", "sub/../..", None, 5):
                reply = atk.record(f"{cmd} {prefix!r}", lab.rogue.request({"cmd": cmd, "saltenv": "base",
                                                                           "prefix": prefix}))
                listed = reply.get("files", reply.get("dirs", [])) if isinstance(reply, dict) else []
                assert not [p for p in listed if "out" in p or ".." in p or p.startswith("/")], (cmd, prefix, listed)
            for saltenv in BAD_SALTENVS:
                reply = atk.record(f"{cmd} env {saltenv!r}", lab.rogue.request({"cmd": cmd, "saltenv": saltenv}))
                assert reason(reply) in REFUSED - {None} or not isinstance(saltenv, str) or saltenv == "", \
                    (cmd, saltenv, reply)
        files = lab.rogue.request({"cmd": "_file_list", "saltenv": "base"})["files"]
        assert sorted(files) == [BIG_FILE, "hello.txt", "sub/nested.txt", "top.sls"], files
        for loc in (-1, 2**63, "0", 1.5, True, [0]):
            reply = atk.record(f"loc {loc!r}", lab.rogue.request({"cmd": "_serve_file", "path": "hello.txt",
                                                                  "saltenv": "base", "loc": loc}))
            assert reason(reply) == "bad_path" or reply.get("data") == b"", (loc, reply)
