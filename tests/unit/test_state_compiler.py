"""The state compiler: requisites and their _in forms, extend/exclude, names, ordering, and
every compile error with its file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compiler.highstate import StateCompiler
from compiler.lowstate import compile_lowstate
from compiler.roots import LocalRoots
from runtime.states.registry import has_mod_watch
from tests.unit.helpers import write_tree


def compile_states(tmp_path: Path, files: dict[str, str], **opts: Any) -> tuple[list[dict] | None, list]:
    """(ordered chunks, errors) for minion web01 from a tree whose top includes every sls given."""
    sls = sorted(name[:-4].replace("/", ".") for name in files if name.endswith(".sls") and name != "top.sls")
    files = {"top.sls": "base:\n  '*':\n" + "".join(f"    - {s}\n" for s in sls), **files}
    write_tree(tmp_path / "states", files)
    roots = {"base": [str(tmp_path / "states")]}
    compiler = StateCompiler({"file_roots": roots, **opts}, LocalRoots(roots))
    high = compiler.highstate("web01", {"id": "web01"}, {})
    if high.errors:
        return None, high.errors
    low = compile_lowstate(high.high, high.origins, has_mod_watch)
    if low.errors:
        return None, low.errors
    return low.lowstate.ordered_chunks(), []


def ids(chunks: list[dict]) -> list[str]:
    """IDs in run order; a prereq target listed twice (its test-mode check, then its run) counts last."""
    out: list[str] = []
    for chunk in chunks:
        if chunk["__id__"] in out:
            out.remove(chunk["__id__"])
        out.append(chunk["__id__"])
    return out


def chunk(chunks: list[dict], sid: str) -> dict:
    return next(c for c in chunks if c["__id__"] == sid)


# -- requisites and ordering --------------------------------------------------------

@pytest.mark.parametrize("req", ["require", "watch", "onchanges", "onfail", "prereq"])
def test_requisite_orders_target_first(tmp_path: Path, req: str) -> None:
    chunks, errors = compile_states(tmp_path, {"a.sls": f"""
        first:
          test.nop:
            - {req}:
              - test: second
        second:
          test.nop: []
        """})
    assert not errors
    order = ids(chunks)
    if req == "prereq":
        assert order == ["first", "second"]  # the prereq'd state runs after the one that declared it
    else:
        assert order == ["second", "first"]
    assert chunk(chunks, "first")[req] == [{"test": "second"}]


@pytest.mark.parametrize("req", ["require", "watch", "onchanges", "onfail", "prereq"])
def test_in_form_is_materialised_on_the_target(tmp_path: Path, req: str) -> None:
    chunks, errors = compile_states(tmp_path, {"a.sls": f"""
        source:
          test.nop:
            - {req}_in:
              - test: target
        target:
          test.nop: []
        """})
    assert not errors
    assert chunk(chunks, "target")[req] == [{"test": "source"}]
    assert chunk(chunks, "source")[f"{req}_in"] == [{"test": "target"}]


def test_any_forms_and_listen_do_not_fail(tmp_path: Path) -> None:
    chunks, errors = compile_states(tmp_path, {"a.sls": """
        a:
          test.nop:
            - require_any:
              - test: b
              - test: c
            - onchanges_any:
              - test: b
            - listen:
              - test: c
        b:
          test.nop: []
        c:
          test.nop: []
        """})
    assert not errors
    assert ids(chunks).index("a") > ids(chunks).index("b")


LISTEN_TREE = """
    listener:
      test.nop:
        - {req}:
          - test: speaker
    speaker:
      test.succeed_with_changes: []
    announcer:
      test.nop:
        - {req}_in:
          - test: hearer
    hearer:
      test.nop: []
    """


def _low(sid: str, fun: str, order: int, **extra: Any) -> dict:
    """A test-state chunk of a.sls as show_lowstate prints it (keys in Salt's order)."""
    return {"state": "test", "name": sid, "__sls__": "a", "__env__": "base", "__id__": sid, **extra,
            "order": order, "fun": fun}


def test_listen_keeps_the_declared_order_and_stays_on_the_declaring_chunk(tmp_path: Path) -> None:
    # salt-call --local state.show_lowstate (Salt 3008.3) prints exactly these chunks for LISTEN_TREE:
    # listen orders nothing, and listen_in is not moved onto its target (Salt resolves both after the run)
    chunks, errors = compile_states(tmp_path, {"a.sls": LISTEN_TREE.format(req="listen")})
    assert not errors
    expected = [
        _low("listener", "nop", 10000, listen=[{"test": "speaker"}]),
        _low("speaker", "succeed_with_changes", 10001),
        _low("announcer", "nop", 10002, listen_in=[{"test": "hearer"}]),
        _low("hearer", "nop", 10003),
    ]
    assert chunks == expected
    assert [list(c) for c in chunks] == [list(c) for c in expected]


def test_watch_reorders_where_listen_does_not(tmp_path: Path) -> None:
    # the same tree with watch: the watched state runs first and watch_in lands on its target
    chunks, errors = compile_states(tmp_path, {"a.sls": LISTEN_TREE.format(req="watch")})
    assert not errors
    assert ids(chunks) == ["speaker", "listener", "announcer", "hearer"]
    assert chunk(chunks, "listener")["watch"] == [{"test": "speaker"}]
    assert chunk(chunks, "hearer")["watch"] == [{"test": "announcer"}]


@pytest.mark.parametrize("req", ["listen", "listen_in"])
def test_listen_to_a_missing_state_compiles(tmp_path: Path, req: str) -> None:
    # Not a compile error, as in Salt 3008.3: show_lowstate prints the chunk with its listen entry and only
    # the run reports the missing target, as a failed result "Referenced state test: nowhere does not exist"
    # (tag Listen_Error_|-listen_nowhere_|-listen_test_|-Listen_Error); the other states still run.
    # saltpan's executor (runtime/executor.py call_listen) reports it the same way at run time.
    chunks, errors = compile_states(tmp_path, {"a.sls": f"""
        fine:
          test.nop: []
        listener:
          test.nop:
            - {req}:
              - test: nowhere
        """})
    assert errors == []
    assert chunks == [_low("fine", "nop", 10000), _low("listener", "nop", 10001, **{req: [{"test": "nowhere"}]})]


def test_requisite_targets_by_name_id_sls_and_glob(tmp_path: Path) -> None:
    chunks, errors = compile_states(tmp_path, {
        "a.sls": """
            include:
              - b
            by_name:
              test.nop:
                - require:
                  - test: the_name
            by_sls:
              test.nop:
                - require:
                  - sls: b
            by_glob:
              test.nop:
                - require:
                  - test: from_b_*
            """,
        "b.sls": """
            named:
              test.nop:
                - name: the_name
            from_b_one:
              test.nop: []
            """})
    assert not errors
    order = ids(chunks)
    assert order.index("named") < order.index("by_name")
    assert order.index("from_b_one") < order.index("by_sls")
    assert order.index("from_b_one") < order.index("by_glob")


def test_watch_becomes_require_without_mod_watch(tmp_path: Path) -> None:
    chunks, errors = compile_states(tmp_path, {"a.sls": """
        conf:
          file.managed:
            - name: /tmp/x
            - watch:
              - test: other
        other:
          test.nop: []
        """})
    assert not errors
    assert chunk(chunks, "conf")["require"] == [{"test": "other"}]
    assert "watch" not in chunk(chunks, "conf")


def test_use_copies_arguments(tmp_path: Path) -> None:
    chunks, errors = compile_states(tmp_path, {"a.sls": """
        base_file:
          file.managed:
            - name: /tmp/a
            - mode: '0600'
            - user: root
        copy_file:
          file.managed:
            - name: /tmp/b
            - use:
              - file: base_file
        """})
    assert not errors
    assert chunk(chunks, "copy_file")["mode"] == "0600"
    assert chunk(chunks, "copy_file")["name"] == "/tmp/b"


def test_use_in_copies_the_declaring_states_arguments_to_the_target(tmp_path: Path) -> None:
    # Salt 3008.3's show_lowstate for this tree: target_file gains mode (appended after its own arguments),
    # keeps its own user and name, and gets neither the require nor the use_in of base_file
    chunks, errors = compile_states(tmp_path, {"a.sls": """
        base_file:
          file.managed:
            - name: /tmp/a
            - mode: '0600'
            - user: root
            - require:
              - test: dep
            - use_in:
              - file: target_file
        target_file:
          file.managed:
            - name: /tmp/b
            - user: nobody
        dep:
          test.nop: []
        """})
    assert not errors
    expected = [
        {"state": "test", "name": "dep", "__sls__": "a", "__env__": "base", "__id__": "dep", "order": 10002,
         "fun": "nop"},
        {"state": "file", "name": "/tmp/a", "__sls__": "a", "__env__": "base", "__id__": "base_file",
         "mode": "0600", "user": "root", "require": [{"test": "dep"}], "use_in": [{"file": "target_file"}],
         "order": 10000, "fun": "managed"},
        {"state": "file", "name": "/tmp/b", "__sls__": "a", "__env__": "base", "__id__": "target_file",
         "user": "nobody", "order": 10001, "mode": "0600", "fun": "managed"},
    ]
    assert chunks == expected
    assert [list(c) for c in chunks] == [list(c) for c in expected]


def test_order_first_last_and_numbers(tmp_path: Path) -> None:
    chunks, errors = compile_states(tmp_path, {"a.sls": """
        middle:
          test.nop: []
        late:
          test.nop:
            - order: last
        early:
          test.nop:
            - order: first
        two:
          test.nop:
            - order: 2
        """})
    assert not errors
    assert ids(chunks) == ["early", "two", "middle", "late"]


def test_state_auto_order_false_sorts_by_state_name_fun(tmp_path: Path) -> None:
    chunks, errors = compile_states(tmp_path, {"a.sls": """
        zz:
          test.nop: []
        aa:
          test.nop: []
        cmd_one:
          cmd.run:
            - name: 'true'
        """}, state_auto_order=False)
    assert not errors
    assert ids(chunks) == ["cmd_one", "aa", "zz"]


def test_names_plain_and_dict(tmp_path: Path) -> None:
    chunks, errors = compile_states(tmp_path, {"a.sls": """
        pkgs:
          test.nop:
            - names:
              - one
              - two:
                - extra: 2
        """})
    assert not errors
    assert [c["name"] for c in chunks] == ["one", "two"]
    assert chunks[1]["extra"] == 2 and "extra" not in chunks[0]


def test_fun_shorthand_forms(tmp_path: Path) -> None:
    chunks, errors = compile_states(tmp_path, {"a.sls": """
        dotted:
          test.nop: []
        listed:
          test:
            - nop
        short: test.nop
        """})
    assert not errors
    assert {(c["__id__"], c["state"], c["fun"]) for c in chunks} == {
        ("dotted", "test", "nop"), ("listed", "test", "nop"), ("short", "test", "nop")}


def test_extend_replaces_arguments_and_appends_requisites(tmp_path: Path) -> None:
    chunks, errors = compile_states(tmp_path, {
        "a.sls": """
            include:
              - b
            extend:
              svc:
                test.nop:
                  - name: renamed
                  - require:
                    - test: extra
            extra:
              test.nop: []
            """,
        "b.sls": """
            dep:
              test.nop: []
            svc:
              test.nop:
                - name: original
                - require:
                  - test: dep
            """})
    assert not errors
    svc = chunk(chunks, "svc")
    assert svc["name"] == "renamed"
    assert svc["require"] == [{"test": "dep"}, {"test": "extra"}]


def test_exclude_by_id_and_sls(tmp_path: Path) -> None:
    chunks, errors = compile_states(tmp_path, {
        "a.sls": """
            include:
              - b
              - c
            exclude:
              - id: drop_me
              - sls: c
            keep:
              test.nop: []
            drop_me:
              test.nop: []
            """,
        "b.sls": "from_b:\n  test.nop: []\n",
        "c.sls": "from_c:\n  test.nop: []\n"})
    assert not errors
    assert sorted(ids(chunks)) == ["from_b", "keep"]


# -- errors with file and line ------------------------------------------------------

def test_missing_requisite_target_names_file_and_line(tmp_path: Path) -> None:
    _, errors = compile_states(tmp_path, {"a.sls": """
        fine:
          test.nop: []
        broken:
          test.nop:
            - require:
              - test: nowhere
        """})
    assert [e.kind for e in errors] == ["requisite_not_found"]
    assert errors[0].file.endswith("a.sls") and errors[0].line == 3
    assert "Referenced state does not exist" in errors[0].message and "nowhere" in errors[0].message


def test_requisite_cycle_lists_its_members(tmp_path: Path) -> None:
    _, errors = compile_states(tmp_path, {"a.sls": """
        one:
          test.nop:
            - require:
              - test: two
        two:
          test.nop:
            - require:
              - test: three
        three:
          test.nop:
            - require:
              - test: one
        """})
    a_sls = str(tmp_path / "states" / "a.sls")
    (err,) = errors
    assert err.kind == "requisite_cycle"
    # Salt 3008.3's show_lowstate gives the same text up to " (declared at"; saltpan adds each member's place
    assert err.message == (
        "Recursive requisites were found: "
        "({'SLS': 'a', 'ID': 'three'}, 'require', {'SLS': 'a', 'ID': 'one'}), "
        "({'SLS': 'a', 'ID': 'two'}, 'require', {'SLS': 'a', 'ID': 'three'}), "
        "({'SLS': 'a', 'ID': 'one'}, 'require', {'SLS': 'a', 'ID': 'two'})"
        f" (declared at {a_sls}:1, {a_sls}:5, {a_sls}:9)")
    assert (err.file, err.line) == (a_sls, 9)  # 'three', the first member listed


def test_requisite_cycle_across_two_files_names_each_member(tmp_path: Path) -> None:
    _, errors = compile_states(tmp_path, {
        "a.sls": """
            include:
              - b
            one:
              test.nop:
                - require:
                  - test: two
            """,
        "b.sls": """
            filler:
              test.nop: []
            two:
              test.nop:
                - require:
                  - test: one
            """})
    a_sls, b_sls = str(tmp_path / "states" / "a.sls"), str(tmp_path / "states" / "b.sls")
    (err,) = errors
    assert err.kind == "requisite_cycle"
    assert err.message == (
        "Recursive requisites were found: "
        "({'SLS': 'b', 'ID': 'two'}, 'require', {'SLS': 'a', 'ID': 'one'}), "
        "({'SLS': 'a', 'ID': 'one'}, 'require', {'SLS': 'b', 'ID': 'two'})"
        f" (declared at {a_sls}:3, {b_sls}:3)")
    assert (err.file, err.line) == (b_sls, 3)  # 'two', the first member listed


def test_duplicate_id_across_files_names_both(tmp_path: Path) -> None:
    _, errors = compile_states(tmp_path, {"a.sls": "same:\n  test.nop: []\n",
                                          "b.sls": "other:\n  test.nop: []\nsame:\n  test.succeed_with_changes: []\n"})
    assert [e.kind for e in errors] == ["conflicting_id"]
    assert "a.sls:1" in errors[0].message and "b.sls:3" in errors[0].message
    assert errors[0].file.endswith("b.sls") and errors[0].line == 3


def test_duplicate_id_in_one_file_is_a_yaml_error_with_line(tmp_path: Path) -> None:
    _, errors = compile_states(tmp_path, {"a.sls": "x:\n  test.nop: []\nx:\n  test.nop: []\n"})
    assert errors[0].line == 3 and "conflicting ID 'x'" in errors[0].message


def test_list_where_a_dict_belongs(tmp_path: Path) -> None:
    _, errors = compile_states(tmp_path, {"a.sls": """
        ok:
          test.nop: []
        bad:
          - test.nop
        """})
    assert [e.kind for e in errors] == ["bad_state_data"]
    assert errors[0].file.endswith("a.sls") and errors[0].line == 3
    assert "ID bad in SLS a is not a dictionary" in errors[0].message


def test_arguments_not_a_list(tmp_path: Path) -> None:
    _, errors = compile_states(tmp_path, {"a.sls": "ok:\n  test.nop: []\nbad:\n  test.nop:\n    name: x\n"})
    (err,) = errors
    assert (err.kind, err.file, err.line) == ("bad_state_data", str(tmp_path / "states" / "a.sls"), 3)
    assert "State 'bad' in SLS 'a' is not formed as a list" in err.message


def test_missing_sls_in_top_names_the_top_file(tmp_path: Path) -> None:
    write_tree(tmp_path / "states", {"top.sls": "base:\n  '*':\n    - nothere\n"})
    roots = {"base": [str(tmp_path / "states")]}
    high = StateCompiler({"file_roots": roots}, LocalRoots(roots)).highstate("web01", {"id": "web01"}, {})
    assert [e.kind for e in high.errors] == ["missing_sls"]
    assert high.errors[0].file.endswith("top.sls") and high.errors[0].line == 2


def test_every_error_is_reported_not_only_the_first(tmp_path: Path) -> None:
    _, errors = compile_states(tmp_path, {"a.sls": """
        one:
          test.nop:
            - require:
              - test: nowhere
        two:
          test.nop:
            - require:
              - test: nowhere_else
        """})
    assert len(errors) == 2
