"""The grader's end of the worker channel: framing, and the codec with the grader's rules.

A frame is an 8-byte big-endian length followed by that many bytes; frames larger than
``MAX_FRAME`` are a protocol error (:func:`recv_frame` checks the announced length before it reads). The payload is
``grader/sandbox/kata_worker/codec.py``'s encoding of plain data (no pickle anywhere); what the worker sends is
decoded with tensors that require grad refused, and any malformed payload is a
:class:`ProtocolError`.

Opaque objects living in the worker travel as ``{"__ref__": n, "label": str, "calls": str}`` (what it
is, what calling it runs; ``grader/sandbox/kata_worker/worker.py``); errors as
``{"type", "base", "message", "where"}`` inside a response. The worker imports the same codec as
``kata_worker.codec`` (it must not import the grader package).
"""

from __future__ import annotations

import select
import socket
import time

from grader.sandbox.kata_worker import codec as wire_codec
from grader.sandbox.kata_worker.codec import HEADER, MAX_DEPTH, MAX_FRAME

__all__ = ["HEADER", "MAX_DEPTH", "MAX_FRAME", "ProtocolError", "decode", "encode", "recv_frame", "send_frame"]


class ProtocolError(Exception):
    """The peer sent something that is not a well-formed frame of plain data."""


def encode(obj: object) -> bytes:
    """The payload for ``obj``; ``TypeError`` if it is not plain data (a grader-side bug)."""
    try:
        return wire_codec.encode(obj)
    except wire_codec.CodecError as exc:
        raise TypeError(str(exc)) from None


def decode(data: bytes) -> object:
    """The plain value the worker sent; any malformed payload is a :class:`ProtocolError`."""
    try:
        return wire_codec.decode(data, allow_grad=False)
    except wire_codec.CodecError as exc:
        raise ProtocolError(f"undecodable payload: {exc}") from None


def send_frame(sock: socket.socket, payload: bytes) -> None:
    if len(payload) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(payload)} bytes exceeds the limit of {MAX_FRAME}")
    sock.sendall(HEADER.pack(len(payload)) + payload)


def recv_frame(sock: socket.socket, deadline: float) -> bytes:
    """The next frame's payload; TimeoutError past ``deadline`` (``time.monotonic``), EOFError when the
    peer closed the channel, ProtocolError for a frame announced larger than ``MAX_FRAME``."""
    (size,) = HEADER.unpack(_recv_exact(sock, HEADER.size, deadline))
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes announced, the limit is {MAX_FRAME}")
    return _recv_exact(sock, size, deadline)


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        try:  # usually the whole answer is there already: no select needed
            k = sock.recv_into(view[got:], n - got, socket.MSG_DONTWAIT)
        except BlockingIOError:
            if not select.select([sock], [], [], left)[0]:
                raise TimeoutError from None
            continue
        if k == 0:
            raise EOFError("channel closed")
        got += k
    return bytes(buf)
