"""compiler.beneath.open_beneath: what a path resolves to, checked and opened in one go (issue 16 item 5)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from compiler.beneath import open_beneath
from compiler.errors import CompileError
from compiler.roots import LocalRoots


def read(fd: int) -> bytes:
    try:
        return os.pread(fd, 1000, 0)
    finally:
        os.close(fd)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "sub" / "deep" / "b.txt").write_text("b")
    (tmp_path / "secret.txt").write_text("SECRET")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "x.txt").write_text("SECRET-X")
    os.symlink("a.txt", root / "rel-in")                          # relative, inside
    os.symlink("../../a.txt", root / "sub" / "deep" / "up-in")     # climbs, stays inside
    os.symlink(str(root / "sub"), root / "abs-in")                 # absolute, inside
    os.symlink("sub", root / "dir-in")
    os.symlink("../secret.txt", root / "rel-out")
    os.symlink(str(tmp_path / "secret.txt"), root / "abs-out")
    os.symlink("../outdir", root / "dir-out")
    os.symlink("sub/../../secret.txt", root / "mixed-out")
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    os.symlink("nowhere", root / "dangling")
    os.mkfifo(root / "fifo")
    return tmp_path, root


@pytest.mark.parametrize("rel, content", [("a.txt", b"a"), ("sub/deep/b.txt", b"b"), ("rel-in", b"a"),
                                          ("sub/deep/up-in", b"a"), ("abs-in/deep/b.txt", b"b"),
                                          ("dir-in/deep/up-in", b"a")])
def test_paths_inside_are_opened(tree, rel, content):
    _, root = tree
    assert read(open_beneath(str(root), rel)) == content


@pytest.mark.parametrize("rel", ["rel-out", "abs-out", "dir-out/x.txt", "mixed-out", "dir-in/../rel-out"])
def test_paths_leading_out_are_refused(tree, rel):
    _, root = tree
    with pytest.raises(CompileError, match="resolves outside the roots"):
        open_beneath(str(root), rel)


@pytest.mark.parametrize("rel", ["missing", "sub", "sub/missing/x", "a.txt/x", "dangling", "fifo"])
def test_no_regular_file_is_not_found(tree, rel):
    _, root = tree
    with pytest.raises(FileNotFoundError):
        open_beneath(str(root), rel)


def test_symlink_loops_are_refused(tree):
    _, root = tree
    with pytest.raises(CompileError, match="too many symlinks"):
        open_beneath(str(root), "loop1")


def test_a_root_reached_through_a_symlink(tree):
    base, root = tree
    os.symlink(root, base / "root-link")
    assert read(open_beneath(str(base / "root-link"), "abs-in/deep/b.txt")) == b"b"


def _swapper(link, targets, stop):
    i = 0
    tmp = str(link) + ".new"
    while not stop.is_set():
        os.symlink(targets[i % 2], tmp)
        os.replace(tmp, link)           # atomic swap, as an attacker writing in the roots would
        i += 1


@pytest.mark.parametrize("shape", ["file", "directory"])
def test_a_symlink_swapped_in_a_loop_never_leads_out(tree, shape):
    """A thread swaps a link between a file inside and one outside (or a directory inside and one
    outside) as fast as it can while the roots are read: every read is the inside content or a
    refusal, never the outside file."""
    base, root = tree
    if shape == "file":
        link, rel, inside = root / "swap", "swap", b"a"
        targets = ["a.txt", str(base / "secret.txt")]
    else:
        (root / "sub" / "x.txt").write_text("inside-x")
        link, rel, inside = root / "swapdir", "swapdir/x.txt", b"inside-x"
        targets = ["sub", str(base / "outdir")]
    os.symlink(targets[0], link)
    stop = threading.Event()
    thread = threading.Thread(target=_swapper, args=(link, targets, stop))
    thread.start()
    seen = {"inside": 0, "refused": 0}
    roots = LocalRoots({"base": [str(root)]})
    try:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline or not (seen["inside"] and seen["refused"]):
            try:
                data = read(open_beneath(str(root), rel))
            except (CompileError, FileNotFoundError):
                seen["refused"] += 1
                continue
            assert data == inside, data
            seen["inside"] += 1
            try:
                fetched = roots.fetch("base", rel)
            except CompileError:
                continue
            assert fetched is None or fetched.data == inside, fetched.data
    finally:
        stop.set()
        thread.join()
    assert seen["inside"] and seen["refused"], seen


def test_local_roots_cache_sees_a_swapped_file(tree):
    """LocalRoots.get caches by path and the identity of the file it read safely: a swap to a
    file outside is noticed and refused, not served from the cache nor read by name."""
    base, root = tree
    os.symlink("a.txt", root / "cached")
    roots = LocalRoots({"base": [str(root)]})
    assert roots.get("base", "cached").text == "a"
    os.replace(root / "cached", root / "keep")           # (rename the link away)
    os.symlink(str(base / "secret.txt"), root / "cached")
    with pytest.raises(CompileError, match="resolves outside the roots"):
        roots.get("base", "cached")
