"""cp.* through saltpan call: the file server (here a masterless minion's file_roots) and copies
from it.  Captured from Salt 3008.3 (salt-call --local) with the same tree:

    cp.get_file salt://sub/a.txt DEST        -> DEST;  a missing file -> "";  DEST's dir missing -> False
    cp.get_file ... template=jinja           -> renders the path names only (the content stays as is)
    cp.get_dir salt://sub DEST               -> [DEST/sub/a.txt, DEST/sub/deeper/b.txt];  missing -> []
    cp.get_template salt://tpl.txt DEST      -> DEST (content rendered);  missing -> ""
    cp.cache_file salt://nope -> False;  cp.hash_file salt://sub/a.txt -> {hash_type: sha256, hsum: ...}
    cp.list_master -> [sub/a.txt, sub/deeper/b.txt, tpl.txt];  cp.list_master_dirs -> [sub, sub/deeper]
"""

from __future__ import annotations

import hashlib

from tests.modules.conftest import Minion


def _tree(minion: Minion) -> None:
    minion.write("states", "tpl.txt", "hello {{ grains['id'] }} on port {{ pillar['app']['port'] }}{{ extra }}\n")
    minion.write("states", "sub/a.txt", "plain\n")
    minion.write("states", "sub/deeper/b.txt", "deep\n")
    minion.write("states", "web/init.sls", "x:\n  test.nop: []\n")
    minion.write("states", "db.sls", "y:\n  test.nop: []\n")


def test_listing_the_file_server(minion: Minion) -> None:
    _tree(minion)
    assert minion.call("cp.list_master") == ["db.sls", "sub/a.txt", "sub/deeper/b.txt", "tpl.txt", "web/init.sls"]
    assert minion.call("cp.list_master", "prefix=sub") == ["sub/a.txt", "sub/deeper/b.txt"]
    assert minion.call("cp.list_master_dirs") == ["sub", "sub/deeper", "web"]
    assert minion.call("cp.list_master_symlinks") == {}
    assert minion.call("cp.list_states") == ["db", "web"]
    assert minion.call("cp.envs") == ["base"]
    assert minion.call("cp.get_file_str", "salt://sub/a.txt") == "plain\n"
    assert minion.call("cp.get_file_str", "salt://nope") is False
    assert minion.call("cp.hash_file", "salt://sub/a.txt") == {
        "hash_type": "sha256", "hsum": hashlib.sha256(b"plain\n").hexdigest()}
    assert minion.call("cp.hash_file", "salt://nope") == ""


def test_get_file_and_get_dir(minion: Minion) -> None:
    _tree(minion)
    box = minion.sandbox
    assert minion.call("cp.get_file", "salt://sub/a.txt", box / "a.txt") == f"{box}/a.txt"
    assert (box / "a.txt").read_text() == "plain\n"
    assert minion.call("cp.get_file", "salt://sub/a.txt", f"{box}/") == f"{box}/a.txt"
    assert minion.call("cp.get_file", "salt://nope.txt", box / "n.txt") == ""
    assert minion.call("cp.get_file", "salt://sub/a.txt", box / "x" / "y" / "a.txt") is False
    assert minion.call("cp.get_file", "salt://sub/a.txt", box / "x" / "y" / "a.txt", "makedirs=True") == \
        f"{box}/x/y/a.txt"
    # template renders the names, not the content (Salt's behaviour)
    assert minion.call("cp.get_file", "salt://tpl.txt", f"{box}/{{{{ grains['id'] }}}}.txt", "template=jinja") == \
        f"{box}/tester.txt"
    assert (box / "tester.txt").read_text().startswith("hello {{ grains['id'] }}")
    assert minion.call("cp.get_dir", "salt://sub", box / "dir") == [f"{box}/dir/sub/a.txt",
                                                                   f"{box}/dir/sub/deeper/b.txt"]
    assert (box / "dir" / "sub" / "deeper" / "b.txt").read_text() == "deep\n"
    assert minion.call("cp.get_dir", "salt://nope", box / "dir2") == []


def test_get_template_renders_the_content(minion: Minion) -> None:
    _tree(minion)
    box = minion.sandbox
    assert minion.call("cp.get_template", "salt://tpl.txt", box / "t2", "extra=!") == f"{box}/t2"
    assert (box / "t2").read_text() == "hello tester on port 8080!\n"
    assert minion.call("cp.get_template", "salt://nope", box / "t3") == ""


def test_the_minion_cache(minion: Minion) -> None:
    _tree(minion)
    cached = minion.cachedir / "files" / "base" / "sub" / "a.txt"
    assert minion.call("cp.is_cached", "salt://sub/a.txt") == ""
    assert minion.call("cp.cache_file", "salt://sub/a.txt") == str(cached)
    assert cached.read_text() == "plain\n"
    assert minion.call("cp.is_cached", "salt://sub/a.txt") == str(cached)
    assert minion.call("cp.cache_file", "salt://nope") is False
    assert minion.call("cp.cache_dir", "salt://sub") == [str(cached), str(cached.parent / "deeper" / "b.txt")]
