"""file.replace, file.blockreplace, file.line, file.append (and their pure text cores)."""

from __future__ import annotations

import os

import pytest
from statehelpers import manifest, mode_of, read, write

from runtime.states import _textedit as T
from runtime.states import file as file_state

INI = "[main]\nport = 8080\nflag=off\nflag=off\n"


def test_replace_writes_diff_and_bak(ctx, sandbox):
    ini = write(os.path.join(sandbox, "app.ini"), INI, mode=0o640)
    ret = file_state.replace(ctx, ini, pattern=r"^port\s*=\s*\d+", repl="port = 9090")
    assert ret["result"] is True
    assert ret["changes"] == {"diff": "--- \n+++ \n@@ -1,4 +1,4 @@\n [main]\n-port = 8080\n+port = 9090\n"
                                      " flag=off\n flag=off\n"}
    assert read(ini) == INI.replace("8080", "9090")
    assert read(ini + ".bak") == INI
    assert mode_of(ini) == 0o640 and mode_of(ini + ".bak") == 0o640
    again = file_state.replace(ctx, ini, pattern=r"^port\s*=\s*\d+", repl="port = 9090")
    assert again["changes"] == {} and again["result"] is True


def test_replace_count_flags_and_backrefs(ctx, sandbox):
    ini = write(os.path.join(sandbox, "app.ini"), INI)
    file_state.replace(ctx, ini, pattern="flag=off", repl="flag=on", count=1)
    assert read(ini).count("flag=on") == 1 and read(ini).count("flag=off") == 1
    f = write(os.path.join(sandbox, "f.txt"), "Alpha\nbeta\n")
    file_state.replace(ctx, f, pattern="^alpha$", repl="ALPHA", flags=["IGNORECASE", "MULTILINE"])
    file_state.replace(ctx, f, pattern=r"^(b)eta$", repl=r"\1ETA", backup=False)
    assert read(f) == "ALPHA\nbETA\n"


def test_replace_append_and_prepend_if_not_found(ctx, sandbox):
    f = write(os.path.join(sandbox, "f"), "a\nb")
    ret = file_state.replace(ctx, f, pattern="^new=.*$", repl="new=1", append_if_not_found=True)
    assert ret["result"] is True and read(f) == "a\nb\nnew=1\n"
    assert file_state.replace(ctx, f, pattern="^new=.*$", repl="new=1", append_if_not_found=True)["changes"] == {}
    file_state.replace(ctx, f, pattern="^top$", repl="top", prepend_if_not_found=True)
    assert read(f).startswith("top\n")


def test_replace_missing_file_and_test_mode(ctx, tctx, sandbox):
    missing = os.path.join(sandbox, "nofile")
    assert file_state.replace(ctx, missing, pattern="a", repl="b")["result"] is False
    assert file_state.replace(ctx, missing, pattern="a", repl="b", ignore_if_missing=True)["result"] is True
    ini = write(os.path.join(sandbox, "app.ini"), INI)
    before = manifest(sandbox)
    ret = file_state.replace(tctx, ini, pattern="8080", repl="9090")
    assert ret["result"] is None and "diff" in ret["changes"]
    assert manifest(sandbox) == before
    bad = file_state.replace(ctx, ini, pattern="(", repl="x")
    assert bad["result"] is False and "regular expression" in bad["comment"]


def test_blockreplace_append_and_replace(ctx, tctx, sandbox):
    ini = write(os.path.join(sandbox, "app.ini"), INI)
    before = manifest(sandbox)
    args = {"marker_start": "# BEGIN managed", "marker_end": "# END managed",
            "content": "managed_a = 1\nmanaged_b = 2\n", "append_if_not_found": True}
    predicted = file_state.blockreplace(tctx, ini, **args)
    assert predicted["result"] is None and list(predicted["changes"]) == ["diff"]
    assert manifest(sandbox) == before
    ret = file_state.blockreplace(ctx, ini, **args)
    assert ret["result"] is True
    assert read(ini) == INI + "# BEGIN managed\nmanaged_a = 1\nmanaged_b = 2\n# END managed\n"
    assert read(ini + ".bak") == INI
    assert file_state.blockreplace(ctx, ini, **args)["changes"] == {}
    changed = file_state.blockreplace(ctx, ini, **{**args, "content": "only"})
    assert changed["result"] is True
    assert read(ini).endswith("# BEGIN managed\nonly\n# END managed\n")


def test_blockreplace_without_markers_fails(ctx, sandbox):
    f = write(os.path.join(sandbox, "hosts"), "127.0.0.1 localhost\n")
    ret = file_state.blockreplace(ctx, f, marker_start="# X", marker_end="# Y", content="z")
    assert ret["result"] is False and "Markers were not found" in ret["comment"]
    assert read(f) == "127.0.0.1 localhost\n"


def test_blockreplace_core_edge_cases():
    text = "head\n# START\nold\n# END\ntail\n"
    assert T.blockreplace_content(text, "# START", "# END", "n1\nn2") == "head\n# START\nn1\nn2\n# END\ntail\n"
    assert T.blockreplace_content(text, "# START", "# END", "x", append_newline=False) == \
        "head\n# START\nx# END\ntail\n"
    with pytest.raises(T.EditError):
        T.blockreplace_content("# START\nno end\n", "# START", "# END", "x")
    assert T.blockreplace_content("a\n", "<", ">", "x", prepend_if_not_found=True) == "<\nx\n>\na\n"


def test_line_modes(ctx, sandbox):
    f = write(os.path.join(sandbox, "lines.txt"), "alpha\nbeta\n  gamma\ndelta\n")
    r = file_state.line(ctx, f, content="after-beta", mode="ensure", after="^beta$")
    assert r["result"] is True and "diff" in r["changes"]
    assert file_state.line(ctx, f, content="after-beta", mode="ensure", after="^beta$")["changes"] == {}
    file_state.line(ctx, f, content="GAMMA", match="gamma", mode="replace")
    file_state.line(ctx, f, match="delta", mode="delete")
    file_state.line(ctx, f, content="first", mode="insert", location="start")
    file_state.line(ctx, f, content="last", mode="insert", location="end")
    assert read(f) == "first\nalpha\nbeta\nafter-beta\n  GAMMA\nlast\n"


def test_line_errors(ctx, sandbox):
    f = write(os.path.join(sandbox, "l"), "flag\nflag\n")
    assert "Mode was not defined" in file_state.line(ctx, f, content="x")["comment"]
    ambiguous = file_state.line(ctx, f, content="x", mode="ensure", after="flag")
    assert ambiguous["result"] is False and "more than" in ambiguous["comment"]
    missing = file_state.line(ctx, os.path.join(sandbox, "none"), content="x", mode="ensure", after="a")
    assert missing["result"] is False and "file not found" in missing["comment"]


def test_line_create_and_backup(ctx, tctx, sandbox):
    new = os.path.join(sandbox, "new.txt")
    predicted = file_state.line(tctx, new, content="x", mode="insert", location="end", create=True)
    assert predicted["result"] is None and not os.path.exists(new)
    ret = file_state.line(ctx, new, content="x", mode="insert", location="end", create=True)
    assert ret["result"] is True and read(new) == "x"
    file_state.line(ctx, new, content="y", mode="insert", location="end", backup=True)
    backups = [n for n in os.listdir(sandbox) if n.startswith("new.txt.")]
    assert len(backups) == 1 and read(os.path.join(sandbox, backups[0])) == "x"


def test_append(ctx, tctx, sandbox):
    hosts = write(os.path.join(sandbox, "hosts"), "127.0.0.1 localhost\n")
    before = manifest(sandbox)
    predicted = file_state.append(tctx, hosts, text=["10.0.0.1 app1", "10.0.0.2 app2"])
    assert predicted["result"] is None and list(predicted["changes"]) == ["diff"]
    assert manifest(sandbox) == before
    ret = file_state.append(ctx, hosts, text=["10.0.0.1 app1", "10.0.0.2 app2"])
    assert ret["result"] is True and list(ret["changes"]) == ["diff"]
    assert read(hosts) == "127.0.0.1 localhost\n10.0.0.1 app1\n10.0.0.2 app2\n"
    present = file_state.append(ctx, hosts, text="127.0.0.1    localhost")  # whitespace ignored
    assert present["changes"] == {} and present["result"] is True
    nonl = write(os.path.join(sandbox, "nonl"), "a")
    file_state.append(ctx, nonl, text="b")
    assert read(nonl) == "a\nb\n"
    created = os.path.join(sandbox, "d", "new")
    assert file_state.append(ctx, created, text="x", makedirs=True)["result"] is True
    assert read(created) == "x\n"


def test_line_core_indent_and_before():
    text = "one\n    two\nthree"
    out = T.line_content(text, "two-b", mode="insert", after="two")
    assert out == "one\n    two\n    two-b\nthree"
    assert T.line_content("a\nc\n", "b", mode="insert", before="^c") == "a\nb\nc\n"
