"""The one codec of the grader <-> worker channel: plain data to bytes and back, with no pickle.

Both ends use this file: the grader imports it (``grader/sandbox/wire.py``), the worker as
``kata_worker.codec`` (it imports nothing but the standard library and torch, so the worker stays
free of the grader package). A decoder that can only build the types below cannot be made to run
code or to construct a student's class, whatever bytes arrive: there is nothing to unpickle.

    None, bool, int, float, complex, str, bytes, list, tuple, dict (str or int keys),
    torch.dtype, torch.device, torch.Size, and CPU ``torch.Tensor`` of the dtypes in ``DTYPES``.

Tensors travel as raw little-endian bytes after their dtype and shape (about 5 µs each way for
the tensors of these exercises, where ``torch.save``/``torch.load(weights_only=True)`` took 0.3 ms
per message); ``requires_grad`` travels only where the decoder allows it (grader to worker).

Layout: one tag byte per value, then its payload; counts and lengths are unsigned 32-bit, ints
and shape entries signed 64-bit (an int outside that range travels as decimal text).

Decoding is bounded in CPU as a frame is in bytes: one message may hold at most ``MAX_VALUES``
items, counted the same way by both ends (``_Budget``): 1 per value, more for what costs more to
build (a container 2, a torch.device 3, a torch.Size 3 + its length, a tensor 12 + its dimensions
whatever its size, since its data is one buffer, a big int by its digits squared). That is well
under 0.1 s of decoding at worst on a slow core; the hidden tests' largest message is about 300 items.
The encoder refuses a message over the limit (the worker then answers with that error instead), the
decoder stops at the first item past it: a hostile worker's million small ints cost the grader a
few milliseconds, not a second.
"""

from __future__ import annotations

import struct

import torch

HEADER = struct.Struct(">Q")  # framing: 8-byte big-endian length, then the payload
MAX_FRAME = 64 * 2**20
MAX_DEPTH = 64
MAX_VALUES = 30_000  # items in one message (see the module docstring): 100 times the hidden tests' largest
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64, torch.complex128,
          torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool)
_DTYPE_CODE = {dtype: code for code, dtype in enumerate(DTYPES)}

_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_C128 = struct.Struct("<dd")
_TENSOR_HEAD = struct.Struct("<BBB")  # dtype code, requires_grad, ndim

NONE, TRUE, FALSE, INT, BIGINT, FLOAT, COMPLEX, STR, BYTES = b"N", b"T", b"F", b"i", b"I", b"f", b"c", b"s", b"b"
LIST, TUPLE, DICT, DTYPE, DEVICE, SIZE, TENSOR = b"l", b"t", b"d", b"y", b"v", b"z", b"x"


class CodecError(ValueError):
    """Not plain data (encoding), or bytes that are not a well-formed encoding (decoding)."""


_CONTAINER_COST, _DEVICE_COST, _SIZE_COST, _TENSOR_COST = 2, 3, 3, 12
_BIGINT_DIGITS_SQUARED = 200_000  # int("9" * 4000) costs about 80 ints


def _over_limit() -> CodecError:
    return CodecError(f"more than {MAX_VALUES} values in one message (the limit on the items of one message; "
                      f"a tensor counts as a dozen, whatever its size)")


class _Budget:
    """What is left of MAX_VALUES items while one message is encoded or decoded."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_VALUES

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise _over_limit()


def _bigint_cost(digits: int) -> int:
    return 1 + digits * digits // _BIGINT_DIGITS_SQUARED


def encode(obj: object) -> bytes:
    out: list[bytes] = []
    _encode(obj, out.append, 0, _Budget())
    return b"".join(out)


def _encode(obj: object, put, depth: int, budget: _Budget) -> None:
    if depth > MAX_DEPTH:
        raise CodecError("structure nested too deeply")
    budget.spend(1)
    tp = type(obj)
    if obj is None:
        put(NONE)
    elif tp is bool:
        put(TRUE if obj else FALSE)
    elif tp is int:
        if -(2**63) <= obj < 2**63:
            put(INT + _I64.pack(obj))
        else:
            text = str(obj)
            budget.spend(_bigint_cost(len(text)) - 1)
            _encode_text(BIGINT, text, put)
    elif tp is float:
        put(FLOAT + _F64.pack(obj))
    elif tp is str:
        _encode_text(STR, obj, put)
    elif tp is torch.Tensor:
        budget.spend(_TENSOR_COST + obj.dim() - 1)
        _encode_tensor(obj, put)
    elif tp is list or tp is tuple:
        budget.spend(_CONTAINER_COST - 1 + len(obj))  # each item costs at least 1: refused before it is walked
        budget.left += len(obj)
        put((LIST if tp is list else TUPLE) + _U32.pack(len(obj)))
        for item in obj:
            _encode(item, put, depth + 1, budget)
    elif tp is dict:
        budget.spend(_CONTAINER_COST - 1 + 2 * len(obj))
        budget.left += 2 * len(obj)
        put(DICT + _U32.pack(len(obj)))
        for key, value in obj.items():
            if type(key) is not str and type(key) is not int:
                raise CodecError(f"dict key of type {type(key).__name__}")
            _encode(key, put, depth + 1, budget)
            _encode(value, put, depth + 1, budget)
    elif tp is torch.Size:
        budget.spend(_SIZE_COST - 1 + len(obj))
        put(SIZE + _U32.pack(len(obj)) + b"".join(_I64.pack(n) for n in obj))
    elif tp is complex:
        put(COMPLEX + _C128.pack(obj.real, obj.imag))
    elif tp is bytes:
        put(BYTES + _U32.pack(len(obj)) + obj)
    elif tp is torch.dtype:
        if obj not in _DTYPE_CODE:
            raise CodecError(f"dtype {obj} cannot be sent")
        put(DTYPE + bytes((_DTYPE_CODE[obj],)))
    elif tp is torch.device:
        budget.spend(_DEVICE_COST - 1)
        _encode_text(DEVICE, str(obj), put)
    else:
        raise CodecError(f"object of type {tp.__module__}.{tp.__qualname__} is not plain data")


def _encode_text(tag: bytes, text: str, put) -> None:
    data = text.encode("utf-8", "surrogatepass")
    put(tag + _U32.pack(len(data)) + data)


def _encode_tensor(t: torch.Tensor, put) -> None:
    if t.layout != torch.strided or t.device.type != "cpu":
        raise CodecError(f"a {t.layout} tensor on {t.device} cannot be sent (only strided CPU tensors)")
    if t.dtype not in _DTYPE_CODE:
        raise CodecError(f"a tensor of dtype {t.dtype} cannot be sent")
    grad = t.requires_grad
    flat = t.detach().resolve_conj().resolve_neg().contiguous().reshape(-1)
    nbytes = flat.numel() * flat.element_size()
    data = bytearray(nbytes)
    if nbytes:
        torch.frombuffer(data, dtype=torch.uint8).copy_(flat.view(torch.uint8))
    put(TENSOR + _TENSOR_HEAD.pack(_DTYPE_CODE[t.dtype], grad, t.dim())
        + b"".join(_I64.pack(n) for n in t.shape) + _U32.pack(nbytes))
    put(bytes(data))


def decode(data: bytes, *, allow_grad: bool = False) -> object:
    """The value encoded in ``data``; :class:`CodecError` for anything malformed or left over.

    ``allow_grad``: accept tensors that require grad (the worker accepts the grader's; the grader
    never accepts one from the worker).
    """
    reader = _Reader(data, allow_grad)
    try:
        value = reader.value(0)
    except (struct.error, IndexError, UnicodeDecodeError, RuntimeError, OverflowError) as exc:
        # RuntimeError: torch refusing a tensor shape ("Stride calculation overflowed")
        raise CodecError(f"truncated or malformed payload ({type(exc).__name__})") from None
    if reader.pos != len(data):
        raise CodecError(f"{len(data) - reader.pos} bytes left over after the value")
    return value


class _Reader:
    def __init__(self, data: bytes, allow_grad: bool):
        self.view = memoryview(data)
        self.pos = 0
        self.allow_grad = allow_grad
        self.budget = _Budget()

    def take(self, n: int) -> memoryview:
        start = self.pos
        if n < 0 or start + n > len(self.view):
            raise CodecError("truncated payload")
        self.pos = start + n
        return self.view[start:start + n]

    def count(self) -> int:
        (n,) = _U32.unpack(self.take(4))
        return n

    def text(self) -> str:
        return str(self.take(self.count()), "utf-8", "surrogatepass")

    def value(self, depth: int) -> object:
        if depth > MAX_DEPTH:
            raise CodecError("structure nested too deeply")
        # the same items as the encoder counts: a hostile worker's 64 MB of one-byte values would
        # otherwise take the grader 10 s, a million ints 1.5 s, 64 MB of torch.Size entries 5 s
        self.budget.spend(1)
        tag = bytes(self.take(1))
        if tag == INT:
            return _I64.unpack(self.take(8))[0]
        if tag == FLOAT:
            return _F64.unpack(self.take(8))[0]
        if tag == STR:
            return self.text()
        if tag == TENSOR:
            return self.tensor()
        if tag == LIST or tag == TUPLE:
            n = self.count()
            self.container(n)
            items = [self.value(depth + 1) for _ in range(n)]
            return items if tag == LIST else tuple(items)
        if tag == DICT:
            return self.mapping(depth)
        if tag == NONE:
            return None
        if tag == TRUE or tag == FALSE:
            return tag == TRUE
        if tag == BIGINT:
            text = self.text()
            if not text.lstrip("-").isdigit() or len(text) > 4000:
                raise CodecError("malformed integer")
            self.budget.spend(_bigint_cost(len(text)) - 1)
            return int(text)
        if tag == COMPLEX:
            return complex(*_C128.unpack(self.take(16)))
        if tag == BYTES:
            return bytes(self.take(self.count()))
        if tag in (DTYPE, DEVICE, SIZE):
            return self.torch_value(tag)
        raise CodecError(f"unknown tag {tag!r}")

    def mapping(self, depth: int) -> dict:
        """A dict whose keys are str or int: any other key is refused, never hashed."""
        n = self.count()
        self.container(2 * n)
        result = {}
        for _ in range(n):
            key = self.value(depth + 1)
            if type(key) is not str and type(key) is not int:
                raise CodecError(f"dict key of type {type(key).__name__}")
            result[key] = self.value(depth + 1)
        return result

    def torch_value(self, tag: bytes) -> object:
        """A dtype, device or torch.Size: torch's own small types, each charged what it costs to build."""
        if tag == DTYPE:
            code = self.take(1)[0]
            if code >= len(DTYPES):
                raise CodecError(f"unknown dtype code {code}")
            return DTYPES[code]
        if tag == DEVICE:
            self.budget.spend(_DEVICE_COST - 1)
            try:
                return torch.device(self.text())
            except RuntimeError:
                raise CodecError("malformed device") from None
        n = self.count()
        self.budget.spend(_SIZE_COST - 1 + n)
        return torch.Size(_I64.unpack(self.take(8))[0] for _ in range(n))

    def container(self, items: int) -> None:
        """Charge a container (its items are charged as they are read, each at least 1: one that
        announces more than is left is refused before any is built)."""
        self.budget.spend(_CONTAINER_COST - 1 + items)
        self.budget.left += items

    def tensor(self) -> torch.Tensor:
        code, grad, ndim = _TENSOR_HEAD.unpack(self.take(3))
        self.budget.spend(_TENSOR_COST + ndim - 1)
        if code >= len(DTYPES) or grad > 1:
            raise CodecError("malformed tensor header")
        if grad and not self.allow_grad:
            raise CodecError("a tensor that requires grad (send plain tensors without grad)")
        dtype = DTYPES[code]
        shape = [_I64.unpack(self.take(8))[0] for _ in range(ndim)]
        numel = 1
        for n in shape:
            if n < 0:
                raise CodecError("negative tensor dimension")
            numel *= n
        nbytes = self.count()
        if nbytes != numel * dtype.itemsize:
            raise CodecError("tensor data does not match its shape")
        raw = self.take(nbytes)
        if nbytes == 0:
            t = torch.empty(shape, dtype=dtype)
        else:
            t = torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)
        if grad:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise CodecError("an integer tensor cannot require grad")
            t.requires_grad_(True)
        return t
