"""archive.extracted in a sandbox: tar and zip, salt://, a local path and an http:// source served
on 127.0.0.1, ownership, idempotence, hash checks and archives that try to escape the target
(Salt parity of the common cases: parity_scenarios.yaml "archive")."""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import tarfile
import threading

import pytest
from statehelpers import manifest

from runtime.states import archive


def _tar(path: str, files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o640
            tf.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tf.addfile(info)
    with open(path, "rb") as handle:
        return handle.read()


def test_extracted_local_archive_for_real(ctx, tctx, sandbox, tmp_path):
    src = str(tmp_path / "app.tar.gz")
    data = _tar(src, {"app-1.0/bin/run": b"#!/bin/sh\n", "app-1.0/README": b"hi\n"})
    dest = os.path.join(sandbox, "opt")
    before = manifest(sandbox)
    ret = archive.extracted(tctx, dest, source=src)
    assert ret["result"] is None and manifest(sandbox) == before
    assert ret["comment"] == f"Archive {src} would be extracted to {dest}/, due to absence of one or more files/dirs"
    ret = archive.extracted(ctx, dest, source=src, user="nobody",
                            source_hash=f"sha256={hashlib.sha256(data).hexdigest()}")
    assert ret["result"] is True
    assert ret["changes"] == {"updated ownership": True, "directories_created": [f"{dest}/"],
                              "extracted_files": ["app-1.0/bin/run", "app-1.0/README"]}
    st = os.stat(os.path.join(dest, "app-1.0/README"))
    assert st.st_uid == 65534 and oct(st.st_mode & 0o777) == "0o640"
    again = archive.extracted(ctx, dest, source=src, user="nobody")
    assert (again["changes"], again["comment"]) == ({}, "All files in archive are already present")
    os.chown(os.path.join(dest, "app-1.0/README"), 0, 0)
    assert archive.extracted(ctx, dest, source=src, user="nobody")["changes"] == {"updated ownership": True}
    os.unlink(os.path.join(dest, "app-1.0/README"))
    assert archive.extracted(ctx, dest, source=src)["changes"]["extracted_files"][-1] == "app-1.0/README"


def test_extracted_refusals(ctx, sandbox, tmp_path):
    bomb = str(tmp_path / "bomb.tar.gz")
    _tar(bomb, {"a.txt": b"a", "b.txt": b"b"})
    ret = archive.extracted(ctx, os.path.join(sandbox, "d"), source=bomb)
    assert ret["result"] is False and ret["comment"].startswith("Archive does not have a single top-level directory.")
    escape = str(tmp_path / "escape.tar.gz")
    _tar(escape, {"top/../../evil": b"x"})
    ret = archive.extracted(ctx, os.path.join(sandbox, "e"), source=escape, enforce_toplevel=False)
    assert ret["result"] is False and "points outside the destination" in ret["comment"]
    linky = str(tmp_path / "link.tar.gz")
    _tar(linky, {"top/f": b"x"}, {"top/l": "/etc/passwd"})
    ret = archive.extracted(ctx, os.path.join(sandbox, "f"), source=linky)
    assert ret["result"] is False and "links to an absolute path" in ret["comment"]
    assert not os.path.exists(os.path.join(sandbox, "f"))  # checked before anything was written
    ret = archive.extracted(ctx, os.path.join(sandbox, "g"), source=bomb, source_hash="sha256=" + "0" * 64,
                            enforce_toplevel=False)
    assert ret["comment"] == f"{bomb} does not match the desired source_hash {'0' * 64}"
    assert archive.extracted(ctx, os.path.join(sandbox, "h"), source=str(tmp_path / "nope.tar.gz"))["comment"] == (
        f"Source file '{tmp_path}/nope.tar.gz' does not exist")
    assert archive.extracted(ctx, "relative", source=bomb)["comment"] == "relative is not an absolute path"


@pytest.fixture
def http_server(tmp_path):
    served = tmp_path / "served"
    served.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_extracted_from_http_needs_a_hash(ctx, tctx, sandbox, http_server):
    served, base = http_server
    data = _tar(str(served / "app.tar.gz"), {"app/x": b"x\n"})
    url = f"{base}/app.tar.gz"
    dest = os.path.join(sandbox, "web")
    ret = archive.extracted(tctx, dest, source=url)
    assert (ret["result"], ret["comment"]) == (
        None, f"Archive {url} would be cached (if necessary) and checked to discover if extraction is needed")
    ret = archive.extracted(ctx, dest, source=url)
    assert ret["comment"] == (f"Unable to verify upstream hash of source file {url}, please set source_hash or set "
                              "skip_verify or use_etag to True")
    ret = archive.extracted(ctx, dest, source=url, source_hash=hashlib.sha256(data).hexdigest())
    assert ret["result"] is True and ret["changes"]["extracted_files"] == ["app/x"]
    assert archive.extracted(ctx, dest, source=url, skip_verify=True)["changes"] == {}
