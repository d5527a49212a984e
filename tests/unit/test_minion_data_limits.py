"""Bounds on what a minion makes the master store and redo (issue 16 item 4): the data cache's
size limit and decoded copies, targeting that reads only what it needs, minion event trimming,
and YAML alias expansion."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping

import pytest

from compiler import yamlload
from compiler.errors import CompileError
from runtime import codec
from runtime.master import datacache, targeting
from runtime.master.datacache import DataTooLarge
from runtime.master.event_size import TRIMMED, bound_event
from runtime.master.store.sqlite_data import SQLiteDataCache


class Untouchable(Mapping):
    """A mapping that fails the test when read."""

    def __getitem__(self, key: str) -> object:
        raise AssertionError("data read for a target that needs none")

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("data read for a target that needs none")

    def __len__(self) -> int:
        raise AssertionError("data read for a target that needs none")


# ---------------------------------------------------------------- the data cache

def test_entries_over_the_limit_are_refused_and_the_stale_copy_dropped(tmp_path):
    cache = SQLiteDataCache(str(tmp_path), max_size=1000)
    cache.store("web1", "grains", {"os": "Debian"})
    with pytest.raises(DataTooLarge, match=r"grains of web1 would take \d+ bytes, more than max_minion_data_size "
                                           r"\(1000\)"):
        cache.store("web1", "grains", {"blob": "x" * 2000})
    assert cache.fetch("web1", "grains") is None
    cache.store("web1", "grains", {"blob": "é" * 150})    # JSON escapes: 900 bytes, accepted
    assert cache.fetch("web1", "grains") == {"blob": "é" * 150}


def test_all_decodes_each_entry_once_per_change(tmp_path, monkeypatch):
    cache = SQLiteDataCache(str(tmp_path))
    for i in range(5):
        cache.store(f"m{i}", "grains", {"n": i})
    calls = []
    real = json.loads
    monkeypatch.setattr(datacache.json, "loads", lambda text: calls.append(1) or real(text))
    assert cache.all("grains") == {f"m{i}": {"n": i} for i in range(5)}
    assert len(calls) == 5
    assert cache.all("grains")["m3"] == {"n": 3} and len(calls) == 5        # no decode at all
    time.sleep(0.01)
    cache.store("m3", "grains", {"n": 33})
    other = SQLiteDataCache(str(tmp_path))                                    # another worker's write
    other.flush("m4")
    assert cache.all("grains") == {"m0": {"n": 0}, "m1": {"n": 1}, "m2": {"n": 2}, "m3": {"n": 33}}
    assert len(calls) == 6


def test_decoded_copies_stay_within_the_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(datacache, "DECODED_BUDGET", 100)
    cache = SQLiteDataCache(str(tmp_path))
    for i in range(10):
        cache.store(f"m{i}", "grains", {"v": "x" * 30})
    assert len(cache.all("grains")) == 10
    assert cache._decoded_chars <= 100 and len(cache._decoded) <= 3


def test_view_reads_nothing_until_looked_into(tmp_path, monkeypatch):
    cache = SQLiteDataCache(str(tmp_path))
    cache.store("web1", "grains", {"os": "Debian"})
    reads = []
    real = cache.all
    monkeypatch.setattr(cache, "all", lambda bank: reads.append(bank) or real(bank))
    view = cache.view("grains")
    assert reads == []
    assert view.get("web1") == {"os": "Debian"} and view.get("db1") is None
    assert reads == ["grains"]


@pytest.mark.parametrize("tgt, tgt_type", [("web*", "glob"), ("web[0-9]", "pcre"), (["web1"], "list")])
def test_id_targets_never_read_data(tgt, tgt_type):
    assert targeting.expected_minions(tgt, tgt_type, ["web1", "db1"], Untouchable(), Untouchable()) == ["web1"]


def test_grain_targets_never_read_pillars():
    grains = {"web1": {"os": "Debian"}, "db1": {"os": "RedHat"}}
    assert targeting.expected_minions("os:Debian", "grain", ["web1", "db1"], grains, Untouchable()) == ["web1"]


# ---------------------------------------------------------------- minion events

def test_events_within_the_limit_are_untouched():
    data = {"a": 1, "b": "x" * 100}
    assert bound_event(data, 1000) is data


def test_large_values_are_trimmed_as_salt_does():
    data = {"big": "x" * 5000, "small": "kept", "nested": {"inner": "y" * 3000, "n": 1}, "list": [1, 2]}
    out = bound_event(data, 2000)
    assert out == {"big": TRIMMED, "small": "kept", "nested": {"inner": TRIMMED, "n": 1}, "list": [1, 2]}
    assert data["big"] == "x" * 5000                        # the caller's data is not changed
    assert len(codec.pack(out)) <= 2000


def test_events_that_cannot_fit_are_dropped():
    assert bound_event({f"k{i}": i for i in range(200_000)}, 1000) is None    # too many entries to trim
    assert bound_event({f"key-{i:04d}": 1 for i in range(500)}, 1000) is None  # keys alone exceed it


# ---------------------------------------------------------------- YAML aliases

def bomb(levels: int, width: int) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_naming_the_line():
    text = bomb(9, 9)
    started = time.monotonic()
    with pytest.raises(CompileError, match="YAML aliases expand this value to more than 1,000,000") as refused:
        yamlload.load(text, "pillar/bomb.sls")
    assert time.monotonic() - started < 0.5
    assert refused.value.file == "pillar/bomb.sls" and refused.value.line in range(6, 9)


def test_the_bound_grows_with_the_document():
    """A large document may expand more (100 times its length): aliases of real data pass."""
    anchors = "\n".join(f"d{i}: &d{i} {{{', '.join(f'k{j}: value-{j}' for j in range(20))}}}" for i in range(50))
    uses = "\n".join(f"u{i}: [{', '.join(f'*d{j}' for j in range(50))}]" for i in range(40))
    data, _ = yamlload.load(anchors + "\n" + uses + "\n", "big.sls")
    assert data["u39"][49] == data["d49"]


@pytest.mark.parametrize("text, line", [("x: &a [1, *a]\n", 1), ("a: 1\nb: &b {c: *b}\n", 2),
                                        ("- &s\n  - *s\n", 1)])
def test_recursive_aliases_are_refused(text, line):
    with pytest.raises(CompileError, match="refers to the anchor it is inside of") as refused:
        yamlload.load(text, "r.sls")
    assert refused.value.line == line


def test_merge_keys_chains_count_as_expansion():
    first = "a: &a {" + ", ".join(f"k{i}: v" for i in range(60)) + "}\n"
    chain = "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 60)}]\n" for p, n in zip("abc", "bcd", strict=True))
    with pytest.raises(CompileError, match="YAML aliases expand"):
        yamlload.load(first + chain, "m.sls")


@pytest.mark.parametrize("text", ["cmd: cd /x && rm -f *.tmp\n", "base: &b {a: 1}\nother:\n  <<: *b\n  c: 2\n",
                                  "glob: '*'\nand: '&&'\n"])
def test_ordinary_documents_load(text):
    assert yamlload.load(text)[0]


@pytest.mark.parametrize("text", ["a: !!str &x foo\nb: *x\n", "- !!map &m {a: 1}\n- *m\n", "{a: &x 1, b:*x}\n",
                                  "? &k a\n: *k\n", "a:\n  &x 1\nb:\n  *x\n", "[&x 1,\n*x]\n"])
def test_every_way_of_writing_an_alias_is_seen(text):
    """The quick pre-check (is there an anchor and an alias where a node starts?) must not miss
    any YAML syntax for them, or a bomb would skip the bound."""
    assert yamlload._MAY_ALIAS.search(text) and yamlload._ALIAS.search(text)
