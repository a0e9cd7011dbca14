"""Framing and codec for the grader <-> worker channel: only plain data crosses.

A frame is an 8-byte big-endian length followed by that many bytes; frames larger than
``MAX_FRAME`` are a protocol error (checked before anything is allocated). The payload is
``torch.save`` of a plain structure; the grader decodes it with ``torch.load(weights_only=True)``
(never ``pickle.loads``) and then :func:`validate` walks the result and rejects anything that is not

    None, bool, int, float, complex, str, bytes, a plain ``torch.Tensor`` (strided, no grad),
    ``torch.dtype``, ``torch.device``, ``torch.Size``, list, tuple, dict with str/int keys.

Opaque objects living in the worker travel as ``{"__ref__": n, "label": str}``; errors as
``{"type", "base", "message", "where"}`` inside a response. ``worker.py`` carries its own copy of the
framing (it must not import the grader package); the two are kept in step by ``test_wire.py``.
"""

from __future__ import annotations

import io
import socket
import struct

import torch

MAX_FRAME = 64 * 2**20
HEADER = struct.Struct(">Q")
MAX_DEPTH = 64

_SCALARS = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device)


class ProtocolError(Exception):
    """The peer sent something that is not a well-formed frame of plain data."""


def encode(obj: object) -> bytes:
    """``torch.save`` bytes of a plain structure (the legacy format: smaller and faster here)."""
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=False)
    return buf.getvalue()


def decode(data: bytes) -> object:
    """Load with ``weights_only=True`` and validate; any failure is a :class:`ProtocolError`."""
    try:
        obj = torch.load(io.BytesIO(data), weights_only=True, map_location=None)
    except Exception as exc:  # UnpicklingError, RuntimeError, EOFError, ...
        raise ProtocolError(f"undecodable payload: {type(exc).__name__}: {str(exc)[:300]}") from None
    validate(obj)
    return obj


def validate(obj: object, depth: int = 0) -> None:
    """Raise :class:`ProtocolError` unless ``obj`` is built only from the allowed plain types."""
    if depth > MAX_DEPTH:
        raise ProtocolError("structure nested too deeply")
    tp = type(obj)
    if tp in _SCALARS:
        return
    if tp is torch.Size:
        if not all(type(n) is int for n in obj):
            raise ProtocolError("torch.Size with non-int entries")
        return
    if tp is torch.Tensor:
        if obj.layout != torch.strided or obj.requires_grad or obj.grad_fn is not None:
            raise ProtocolError("tensor that is not a plain strided tensor without grad")
        return
    if tp is list or tp is tuple:
        for item in obj:
            validate(item, depth + 1)
        return
    if tp is dict:
        for key, value in obj.items():
            if type(key) not in (str, int):
                raise ProtocolError(f"dict key of type {type(key).__name__}")
            validate(value, depth + 1)
        return
    raise ProtocolError(f"object of type {tp.__module__}.{tp.__qualname__} is not plain data")


def send_frame(sock: socket.socket, payload: bytes) -> None:
    if len(payload) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(payload)} bytes exceeds the limit of {MAX_FRAME}")
    sock.sendall(HEADER.pack(len(payload)) + payload)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes; ``EOFError`` when the peer closed the channel first."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise EOFError("channel closed")
        got += k
    return bytes(buf)


def recv_frame(sock: socket.socket, max_size: int = MAX_FRAME) -> bytes:
    (size,) = HEADER.unpack(recv_exact(sock, HEADER.size))
    if size > max_size:
        raise ProtocolError(f"frame of {size} bytes announced, the limit is {max_size}")
    return recv_exact(sock, size)
