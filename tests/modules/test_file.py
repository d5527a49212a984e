"""file.* through saltpan call, on files under the test's sandbox.

Return values as Salt 3008.3 gives them (captured with salt-call --local on Debian 12):

    file.write P hello world      -> 'Wrote 2 lines to "P"'     file.prepend P line0 -> 'Prepended 1 lines to "P"'
    file.touch / mkdir / copy / rename / symlink / access -> True     file.makedirs -> None
    file.move A B                 -> {result: True, comment: "'A' moved to 'B'"}
    file.remove (missing)         -> False      file.chown / chgrp / truncate -> None
    file.chown (missing)          -> "File not found"      file.set_mode P 0600 -> "0600"
    file.replace P pattern=^a=1 repl=a=9 -> "--- \\n+++ \\n@@ -1,2 +1,2 @@\\n-a=1\\n+a=9\\n b=2\\n", then ""
    file.line P content=c=3 mode=ensure after=^b= -> the diff, then False
    file.blockreplace ... append_if_not_found=True append_newline=True -> the diff, then ""
    file.comment_line P ^c= (no such line) -> False     file.get_sum (missing) -> "File not found"
    file.makedirs P/ (exists)     -> "Directory 'P' already exists"    file.rmdir (not empty) -> False
"""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import stat
from pathlib import Path

from tests.modules.conftest import Minion


def test_path_helpers(minion: Minion) -> None:
    assert minion.call("file.join", "/a", "b", "c.conf") == "/a/b/c.conf"
    assert minion.call("file.dirname", "/a/b/c.conf") == "/a/b"
    assert minion.call("file.basename", "/a/b/c.conf") == "c.conf"
    assert minion.call("file.normpath", "/a//b/../c") == "/a/c"


def test_questions_about_files(minion: Minion) -> None:
    box = minion.sandbox
    conf = box / "app.conf"
    conf.write_text("# comment\nport = 8080\nname=web\n")
    conf.chmod(0o640)
    (box / "link").symlink_to(conf)
    fifo = box / "pipe"
    os.mkfifo(fifo)
    assert minion.call("file.file_exists", conf) is True
    assert minion.call("file.file_exists", box) is False
    assert minion.call("file.directory_exists", box) is True
    assert minion.call("file.path_exists_glob", f"{box}/*.conf") is True
    assert minion.call("file.path_exists_glob", f"{box}/*.nope") is False
    assert sorted(minion.call("file.readdir", box)) == sorted([".", "..", "app.conf", "link", "pipe"])
    assert "A valid directory was not specified" in minion.error("file.readdir", box / "nope")
    assert minion.call("file.contains", conf, "port = 8080") is True
    assert minion.call("file.contains", conf, "nope") is False
    assert minion.call("file.contains_regex", conf, r"^port\s*=\s*\d+") is True
    assert minion.call("file.contains_glob", conf, "*port =*") is True
    assert minion.call("file.search", conf, r"^name=web$", "multiline=True") is True
    assert minion.call("file.search", conf, "absent-text") is False
    assert minion.call("file.search", box / "none", "x", "ignore_if_missing=True") is False
    me = pwd.getpwuid(os.getuid()).pw_name
    assert minion.call("file.get_user", conf) == me
    assert minion.call("file.get_group", conf) == grp.getgrgid(os.getgid()).gr_name
    assert minion.call("file.get_uid", conf) == os.getuid()
    assert minion.call("file.get_gid", conf) == os.getgid()
    assert minion.call("file.get_mode", conf) == "0640"
    stats = minion.call("file.stats", conf)
    assert stats["type"] == "file" and stats["size"] == conf.stat().st_size and stats["mode"] == "0640"
    assert "Path not found" in minion.error("file.stats", box / "none")
    assert minion.call("file.read", conf) == conf.read_text()
    digest = hashlib.sha256(conf.read_bytes()).hexdigest()
    assert minion.call("file.get_hash", conf) == digest
    assert minion.call("file.get_sum", conf) == digest
    assert minion.call("file.get_sum", conf, "md5") == hashlib.md5(conf.read_bytes()).hexdigest()
    assert minion.call("file.get_sum", box / "none") == "File not found"
    assert minion.call("file.is_link", box / "link") is True
    assert minion.call("file.readlink", box / "link") == str(conf)
    assert minion.call("file.is_fifo", fifo) is True
    assert minion.call("file.is_chrdev", "/dev/null") is True
    assert minion.call("file.is_blkdev", "/dev/null") is False
    assert minion.call("file.lstat", box / "link")["st_mode"] & stat.S_IFLNK == stat.S_IFLNK
    assert minion.call("file.access", conf, "f") is True
    assert minion.call("file.access", conf, "x") is False
    assert minion.call("file.access", box / "none", "r") is False
    assert minion.call("file.diskusage", box) == conf.stat().st_size
    (box / "other.conf").write_text("# comment\nport = 9090\nname=web\n")
    diff = minion.call("file.get_diff", conf, box / "other.conf")
    assert diff.startswith(f"--- {conf}\n+++ {box / 'other.conf'}\n") and "-port = 8080\n+port = 9090\n" in diff
    assert minion.call("file.get_diff", conf, conf) == ""
    assert f"Failed to read {box / 'none'}" in minion.error("file.get_diff", box / "none", conf)


def test_writing_whole_files(minion: Minion) -> None:
    box = minion.sandbox
    w = box / "w"
    assert minion.call("file.write", w, "hello", "world") == f'Wrote 2 lines to "{w}"'
    assert minion.call("file.append", w, "line3") == f'Wrote 1 lines to "{w}"'
    assert minion.call("file.prepend", w, "line0") == f'Prepended 1 lines to "{w}"'
    assert w.read_text() == "line0\nhello\nworld\nline3\n"
    assert minion.call("file.append", w, "args=[x, y]") == f'Wrote 2 lines to "{w}"'
    assert w.read_text().endswith("line3\nx\ny\n")
    assert minion.call("file.truncate", w, 5) is None
    assert w.read_text() == "line0"
    assert minion.call("file.append", w, "z") == f'Wrote 1 lines to "{w}"'
    assert w.read_text() == "line0\nz\n"
    assert "Unable to write" in minion.error("file.write", box / "nodir" / "x", "a")

    t = box / "t"
    assert minion.call("file.touch", t) is True and t.exists()
    assert minion.call("file.touch", t, "atime=1000000000", "mtime=1000000000") is True
    assert int(t.stat().st_mtime) == 1000000000
    assert "No such file or directory" in minion.error("file.touch", box / "nodir" / "t")


def test_directories_copies_moves_links(minion: Minion) -> None:
    box = minion.sandbox
    assert minion.call("file.mkdir", box / "d" / "e", "mode=0700") is True
    assert stat.S_IMODE((box / "d" / "e").stat().st_mode) == 0o700
    assert minion.call("file.makedirs", f"{box}/m/n/") is None
    assert (box / "m" / "n").is_dir()
    assert minion.call("file.makedirs", f"{box}/m/n/") == f"Directory '{box}/m/n' already exists"
    assert minion.call("file.rmdir", box / "m") is False               # not empty
    assert minion.call("file.rmdir", box / "m", "recurse=True") is True
    assert not (box / "m").exists()
    src = box / "src.txt"
    src.write_text("data\n")
    src.chmod(0o600)
    assert minion.call("file.copy", src, box / "copy.txt") is True
    assert (box / "copy.txt").read_text() == "data\n" and stat.S_IMODE((box / "copy.txt").stat().st_mode) == 0o600
    (box / "d" / "e" / "inner").write_text("x")
    assert "without recurse flag" in minion.error("file.copy", box / "d", box / "d2")
    assert minion.call("file.copy", box / "d", box / "d2", "recurse=True") is True
    assert (box / "d2" / "e" / "inner").read_text() == "x"
    assert minion.call("file.rename", box / "copy.txt", box / "renamed.txt") is True
    assert f"Could not rename '{box}/nope'" in minion.error("file.rename", box / "nope", box / "x")
    assert minion.call("file.move", box / "renamed.txt", box / "moved.txt") == {
        "result": True, "comment": f"'{box}/renamed.txt' moved to '{box}/moved.txt'"}
    assert minion.call("file.symlink", src, box / "lnk") is True
    assert os.readlink(box / "lnk") == str(src)
    assert minion.call("file.symlink", src, box / "lnk") is True          # already right
    assert "Found existing symlink" in minion.error("file.symlink", box / "moved.txt", box / "lnk")
    assert minion.call("file.symlink", box / "moved.txt", box / "lnk", "force=True") is True
    assert os.readlink(box / "lnk") == str(box / "moved.txt")
    assert minion.call("file.remove", box / "moved.txt") is True
    assert minion.call("file.remove", box / "d2") is True and not (box / "d2").exists()
    assert minion.call("file.remove", box / "moved.txt") is False
    assert "File path must be absolute" in minion.error("file.remove", "relative/path")


def test_owner_and_mode(minion: Minion) -> None:
    f = minion.sandbox / "owned"
    f.write_text("x")
    assert minion.call("file.set_mode", f, "0600") == "0600"
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert f"{minion.sandbox}/none: File not found" in minion.error("file.set_mode", minion.sandbox / "none", "644")
    me, group = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
    assert minion.call("file.chown", f, me, group) is None
    assert minion.call("file.chgrp", f, group) is None
    assert minion.call("file.chown", minion.sandbox / "none", me, group) == "File not found"
    assert minion.call("file.chown", f, "no-such-user-here", group) == "User does not exist\n"
    if os.geteuid() == 0:
        assert minion.call("file.chown", f, "nobody", "nogroup") is None
        assert (f.stat().st_uid, f.stat().st_gid) == (pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid)


def test_text_edits(minion: Minion) -> None:
    r = minion.sandbox / "r"
    r.write_text("a=1\nb=2\n")
    assert minion.call("file.replace", r, "pattern=^a=1", "repl=a=9") == \
        "--- \n+++ \n@@ -1,2 +1,2 @@\n-a=1\n+a=9\n b=2\n"
    assert (minion.sandbox / "r.bak").read_text() == "a=1\nb=2\n"
    assert minion.call("file.replace", r, "pattern=^a=1", "repl=a=9") == ""
    assert minion.call("file.replace", r, "pattern=^z=1", "repl=z=9", "append_if_not_found=True") == \
        "--- \n+++ \n@@ -1,2 +1,3 @@\n a=9\n b=2\n+z=9\n"
    assert minion.call("file.replace", r, "pattern=^a=", "repl=A=", "dry_run=True") == \
        "--- \n+++ \n@@ -1,3 +1,3 @@\n-a=9\n+A=9\n b=2\n z=9\n"
    assert r.read_text() == "a=9\nb=2\nz=9\n"
    assert minion.call("file.replace", r, "pattern=^a=", "repl=A=", "show_changes=False") is True
    assert minion.call("file.replace", r, "pattern=^A=", "repl=x", "search_only=True") is True
    assert "File not found" in minion.error("file.replace", minion.sandbox / "none", "pattern=a", "repl=b")

    assert minion.call("file.line", r, "content=c=3", "mode=ensure", "after=^b=") == \
        "--- \n+++ \n@@ -1,3 +1,4 @@\n A=9\n b=2\n+c=3\n z=9\n"
    assert minion.call("file.line", r, "content=c=3", "mode=ensure", "after=^b=") is False
    assert minion.call("file.line", r, "content=c=3", "mode=delete") == \
        "--- \n+++ \n@@ -1,4 +1,3 @@\n A=9\n b=2\n-c=3\n z=9\n"
    assert 'Unknown mode: "bogus"' in minion.error("file.line", r, "mode=bogus", "content=x")

    assert minion.call("file.blockreplace", r, "marker_start=#S", "marker_end=#E", "content=hello",
                       "append_if_not_found=True", "append_newline=True") == \
        "--- \n+++ \n@@ -1,3 +1,6 @@\n A=9\n b=2\n z=9\n+#S\n+hello\n+#E\n"
    assert minion.call("file.blockreplace", r, "marker_start=#S", "marker_end=#E", "content=hello",
                       "append_if_not_found=True", "append_newline=True") == ""
    assert "Markers were not found" in minion.error("file.blockreplace", r, "marker_start=#Q", "marker_end=#E")

    commented = minion.call("file.comment", r, "^b=")
    assert commented.startswith("--- \n+++ \n@@ -1,5 +1,5 @@\n") and "\n-b=2\n+#b=2\n" in commented
    assert "\n-#b=2\n+b=2\n" in minion.call("file.uncomment", r, "^b=")
    assert "\n-z=9\n+;z=9\n" in minion.call("file.comment_line", r, "^z=", "char=;")
    assert "\n-;z=9\n+z=9\n" in minion.call("file.comment_line", r, "^z=", "char=;", "cmnt=False")
    assert minion.call("file.comment_line", r, "^nothing=") is False
    assert Path(r).read_text() == "A=9\nb=2\nz=9\n#S\nhello\n#E\n"
