"""sd_notify over a real unix datagram socket."""

from __future__ import annotations

import socket

from runtime.sdnotify import notify


def test_notify_sends_to_the_socket(tmp_path, monkeypatch):
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(path)
        server.settimeout(2)
        monkeypatch.setenv("NOTIFY_SOCKET", path)
        assert notify("READY=1\nSTATUS=ready")
        assert server.recv(100) == b"READY=1\nSTATUS=ready"


def test_without_systemd_nothing_happens(monkeypatch, tmp_path):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert notify("READY=1") is False
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    assert notify("READY=1") is False
