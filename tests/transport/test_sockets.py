"""Socket factory bounds, addresses, ipc modes, oversized frames."""

from __future__ import annotations

import os
import stat

import pytest
import zmq

from runtime.transport import (
    AddressError,
    SocketLimits,
    bind,
    bound_port,
    describe,
    ipc_address,
    ipc_path,
    make_socket,
    recv_frames,
    tcp_address,
)


def test_socket_bounds(ctx):
    sock = make_socket(ctx, zmq.ROUTER, SocketLimits(max_message_size=1234, sndhwm=7, rcvhwm=9))
    assert describe(sock) == {"MAXMSGSIZE": 1234, "SNDHWM": 7, "RCVHWM": 9, "LINGER": 0, "SNDTIMEO": 2000,
                              "IPV6": 0, "TCP_KEEPALIVE": 1}
    sock.close()


def test_a_bound_socket_listens_with_its_backlog(ctx):
    """The kernel's listen queue of a bound TCP socket is ``backlog`` (zmq_backlog on the master's
    ports): ``ss`` shows it as the listening socket's Send-Q (where iproute2 is installed)."""
    import shutil
    import subprocess

    with open("/proc/sys/net/core/somaxconn") as fh:
        cap = int(fh.read())
    sock = make_socket(ctx, zmq.ROUTER, SocketLimits(backlog=700))
    try:
        port = bound_port(bind(sock, tcp_address("127.0.0.1", 0)))
        assert sock.getsockopt(zmq.BACKLOG) == 700
        if shutil.which("ss") is None:
            return
        lines = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True,
                               check=True).stdout.split("\n")
        listening = [line.split() for line in lines if line.strip()]
        assert listening and int(listening[0][2]) == min(700, cap), listening
    finally:
        sock.close()


def test_tcp_address_validation():
    assert tcp_address("127.0.0.1", 4506) == "tcp://127.0.0.1:4506"
    assert tcp_address("salt.example.com", 1) == "tcp://salt.example.com:1"
    for host in ("", "::1", "[::1]", "a/b", "a b", None):
        with pytest.raises(AddressError):
            tcp_address(host, 4506)  # type: ignore[arg-type]
    for port in (-1, 65536, "4506", True):
        with pytest.raises(AddressError):
            tcp_address("127.0.0.1", port)  # type: ignore[arg-type]


def test_bind_port_zero_reports_the_real_port(ctx):
    sock = make_socket(ctx, zmq.ROUTER)
    endpoint = bind(sock, tcp_address("127.0.0.1", 0))
    assert endpoint.startswith("tcp://127.0.0.1:") and bound_port(endpoint) > 0
    sock.close()


def test_ipc_dir_and_socket_modes(ctx, tmp_path):
    sock_dir = tmp_path / "sock"
    address = ipc_address(str(sock_dir), "workers.ipc")
    assert stat.S_IMODE(os.stat(sock_dir).st_mode) == 0o700
    sock = make_socket(ctx, zmq.PULL)
    bind(sock, address)
    st = os.stat(sock_dir / "workers.ipc")
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    sock.close()


def test_ipc_names_and_lengths(tmp_path):
    for name in ("", "a/b", "..", "x\0y"):
        with pytest.raises(AddressError):
            ipc_path(str(tmp_path), name)
    with pytest.raises(AddressError, match="shorter sock_dir"):
        ipc_path(str(tmp_path / ("d" * 120)), "workers.ipc")


def test_bind_error_is_clear(ctx):
    a, b = make_socket(ctx, zmq.ROUTER), make_socket(ctx, zmq.ROUTER)
    endpoint = bind(a, tcp_address("127.0.0.1", 0))
    with pytest.raises(Exception, match="cannot bind"):
        bind(b, endpoint)
    a.close()
    b.close()


def test_oversized_frame_drops_the_peer_not_the_server(ctx):
    server = make_socket(ctx, zmq.ROUTER, SocketLimits(max_message_size=1024))
    endpoint = bind(server, tcp_address("127.0.0.1", 0))
    big = make_socket(ctx, zmq.DEALER)
    big.connect(endpoint)
    big.send_multipart([b"", b"x" * 4096])
    assert not server.poll(300)
    good = make_socket(ctx, zmq.DEALER)
    good.connect(endpoint)
    good.send_multipart([b"", b"ok"])
    assert server.poll(2000)
    assert server.recv_multipart()[1:] == [b"", b"ok"]
    for sock in (server, big, good):
        sock.close()


def test_recv_frames_bounds_frame_count(ctx):
    pull, push = make_socket(ctx, zmq.PULL), make_socket(ctx, zmq.PUSH)
    endpoint = bind(pull, tcp_address("127.0.0.1", 0))
    push.connect(endpoint)
    push.send_multipart([b"f"] * 50)
    push.send_multipart([b"a", b"b"])
    assert pull.poll(2000)
    assert recv_frames(pull, max_frames=8) is None          # drained, not kept
    assert pull.poll(2000)
    assert [f.bytes for f in recv_frames(pull, max_frames=8)] == [b"a", b"b"]
    pull.close()
    push.close()
