"""System calls on a TCP socket libzmq owns, by its file descriptor, without duplicating it:
the kernel's byte counters (``tcp_info``), the peer's address, a shutdown.

Apart from ``runtime.transport_conns`` so that a client (``saltpan run``) importing the transport
does not load ctypes and socket: only the ReqServer's connection table builds one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import socket
import struct
from typing import Any

# struct tcp_info (linux/tcp.h): tcpi_bytes_acked and tcpi_bytes_received (u64) since Linux 4.1
_TCP_INFO_SIZE = 232
_BYTES_ACKED_AT = 120
_BYTES_RECEIVED_AT = 128
_SOL_TCP = 6
_TCP_INFO = 11


class Descriptors:
    """getsockopt/getpeername/shutdown on a descriptor libzmq owns, without duplicating it."""

    def __init__(self) -> None:
        path = ctypes.util.find_library("c")
        try:
            self.libc: Any = ctypes.CDLL(path, use_errno=True) if path else None
        except OSError:
            self.libc = None
        self._info = ctypes.create_string_buffer(_TCP_INFO_SIZE)
        self._len = ctypes.c_uint32(0)
        self._addr = ctypes.create_string_buffer(128)

    def counters(self, fd: int) -> tuple[int, int] | None:
        """(bytes the peer acknowledged, bytes received) of TCP socket ``fd``."""
        if self.libc is None:
            return None
        self._len.value = _TCP_INFO_SIZE
        if self.libc.getsockopt(fd, _SOL_TCP, _TCP_INFO, self._info, ctypes.byref(self._len)) != 0:
            return None
        if self._len.value < _BYTES_RECEIVED_AT + 8:
            return None
        acked, received = struct.unpack_from("=QQ", self._info.raw, _BYTES_ACKED_AT)
        return acked, received

    def peer(self, fd: int) -> tuple[str, int] | None:
        """(address, port) of the peer of IPv4 socket ``fd``."""
        if self.libc is None:
            return None
        self._len.value = 128
        if self.libc.getpeername(fd, self._addr, ctypes.byref(self._len)) != 0:
            return None
        raw = self._addr.raw[:self._len.value]
        if len(raw) < 8 or struct.unpack_from("=H", raw, 0)[0] != socket.AF_INET:
            return None
        return socket.inet_ntoa(raw[4:8]), struct.unpack_from("!H", raw, 2)[0]

    def shutdown(self, fd: int) -> bool:
        return self.libc is not None and self.libc.shutdown(fd, socket.SHUT_RDWR) == 0
