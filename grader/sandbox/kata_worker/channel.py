"""Framing on the worker's socket: an 8-byte big-endian length, then a ``codec`` payload."""

import socket

from kata_worker import codec


class Channel:
    """One end of a domain's socket, as the worker sees it."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def recv(self):
        """The next request, or None when the grader closed the channel."""
        head = self._recv_exact(codec.HEADER.size)
        if head is None:
            return None
        (size,) = codec.HEADER.unpack(head)
        if size > codec.MAX_FRAME:
            raise SystemExit(3)
        data = self._recv_exact(size)
        return None if data is None else codec.decode(data, allow_grad=True)

    def _recv_exact(self, n: int):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                return None
            got += k
        return bytes(buf)

    def send(self, obj) -> None:
        data = codec.encode(obj)
        if len(data) > codec.MAX_FRAME:
            err = {"type": "ValueError", "base": "ValueError", "where": "",
                   "message": f"the result is too large to send to the grader ({len(data)} bytes)"}
            data = codec.encode({"error": err})
        self.sock.sendall(codec.HEADER.pack(len(data)) + data)
