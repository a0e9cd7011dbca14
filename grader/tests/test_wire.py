"""The wire codec: plain data round-trips; anything else, malformed bytes and oversize frames are refused."""

from __future__ import annotations

import ast
import os
import pickle
import socket
import struct
import time
import types

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.sandbox import wire
from grader.sandbox.client import WorkerClient, WorkerFailure
from grader.sandbox.kata_worker import codec as wire_codec
from grader.sandbox.modes import WORKER_PACKAGE

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
    st.binary(min_size=1, max_size=20), st.complex_numbers(allow_nan=False),
    st.sampled_from(list(wire_codec.DTYPES)),
    st.sampled_from([torch.device("cpu"), torch.device("meta")]),
)
tensors = st.builds(
    lambda shape, dtype, seed: torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype),
    st.lists(st.integers(0, 4), max_size=3), st.sampled_from([torch.float32, torch.float64, torch.int32, torch.bfloat16, torch.bool]),
    st.integers(0, 1000),
)
plain = st.recursive(
    st.one_of(scalars, tensors, st.lists(st.integers(0, 5), max_size=3).map(torch.Size)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(st.one_of(st.text(max_size=5), st.integers()), inner, max_size=4)),
    max_leaves=12,
)


def same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.timeout(120)  # 150 examples: about 5 s on an idle machine, past the default 10 s on a busy one
@settings(max_examples=150, deadline=None)
@given(plain)
def test_round_trip(value):
    assert same(wire.decode(wire.encode(value)), value)


def test_refs_and_errors_are_plain_dicts():
    msg = {"ok": [{"__ref__": 3, "label": "CausalAttention object", "calls": "CausalAttention.forward"}],
           "error": {"type": "ValueError", "base": "ValueError", "message": "m", "where": ""}}
    assert wire.decode(wire.encode(msg)) == msg


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/kata_wire_pwned",))


@pytest.mark.parametrize("payload", [
    pickle.dumps(Evil()), pickle.dumps({"x": Evil()}, protocol=2), b"not a payload", b"",
    wire_codec.encode([1, 2])[:-3],  # truncated
    wire_codec.encode("x") + b"N",  # something left over
    b"l" + struct.pack("<I", 2**31),  # a count that promises more than there is
    b"x" + struct.pack("<BBB", 0, 0, 1) + struct.pack("<q", 4) + struct.pack("<I", 12) + b"\0" * 12,  # 4 floats, 12 bytes
    b"x" + struct.pack("<BBB", 0, 0, 1) + struct.pack("<q", -1) + struct.pack("<I", 0),  # negative dimension
    b"x" + struct.pack("<BBB", 99, 0, 0) + struct.pack("<I", 0),  # unknown dtype
    b"d" + struct.pack("<I", 1) + wire_codec.encode(1.5) + b"N",  # float key
    b"s" + struct.pack("<I", 2) + b"\xff\xfe",  # not UTF-8
    b"v" + struct.pack("<I", 3) + b"bad",  # not a device
    b"x" + struct.pack("<BBB", 0, 0, 3) + struct.pack("<qqq", 0, 2**62, 2**62) + struct.pack("<I", 0),  # torch refuses
])
def test_rejects_malformed_payloads_and_pickles(payload):
    with pytest.raises(wire.ProtocolError):
        wire.decode(payload)
    assert not os.path.exists("/tmp/kata_wire_pwned")


def test_a_tensor_that_requires_grad_is_refused_from_the_worker_but_sent_to_it():
    payload = wire.encode({"x": torch.ones(2, requires_grad=True)})
    with pytest.raises(wire.ProtocolError, match="requires grad"):
        wire.decode(payload)
    assert wire_codec.decode(payload, allow_grad=True)["x"].requires_grad


@pytest.mark.parametrize("value", [
    torch.nn.Parameter(torch.ones(2)),  # a subclass: the worker turns it into a plain tensor first
    torch.ones(3).to_sparse(),
    torch.ones(2, device="meta"),
    torch.ones(2).to(torch.float8_e4m3fn),
    {(1, 2): 3},  # tuple keys
    {1.5: 2},
    {"s": {1, 2}},  # sets are not in the list
    object(),
])
def test_encoding_refuses_what_is_not_plain_data(value):
    with pytest.raises(TypeError):
        wire.encode(value)


def test_deep_nesting_is_refused_both_ways():
    value: list = []
    for _ in range(wire.MAX_DEPTH + 5):
        value = [value]
    with pytest.raises(TypeError):
        wire.encode(value)
    with pytest.raises(wire.ProtocolError, match="deeply"):
        wire.decode(b"l\x01\x00\x00\x00" * (wire.MAX_DEPTH + 5) + b"N")


def test_a_flood_of_tiny_values_is_refused_fast():
    """64 MB of one-byte values from a hostile worker: refused after MAX_VALUES, not built."""
    payload = b"l" + struct.pack("<I", 2**26) + b"N" * 2**26
    started = time.perf_counter()
    with pytest.raises(wire.ProtocolError, match="values"):
        wire.decode(payload)
    assert time.perf_counter() - started < 3.0
    with pytest.raises(TypeError, match="values"):
        wire.encode([None] * (wire_codec.MAX_VALUES + 1))


def test_views_travel_as_their_values():
    base = torch.arange(24.0).reshape(2, 3, 4)
    for view in (base.transpose(0, 2), base[:, 1], base[..., ::2], torch.tensor(3.0), torch.empty(0, 5),
                 torch.view_as_complex(torch.randn(3, 2)).conj()):
        got = wire.decode(wire.encode(view))
        assert got.shape == view.shape and torch.equal(got, view.resolve_conj())


def test_oversize_frames_are_refused_both_ways(tmp_path):
    a, b = socket.socketpair()
    with a, b:
        with pytest.raises(wire.ProtocolError):
            wire.send_frame(a, b"x" * (wire.MAX_FRAME + 1))
        a.sendall(struct.pack(">Q", wire.MAX_FRAME + 1))
        proc = types.SimpleNamespace(sock=b)
        with pytest.raises(WorkerFailure, match="limit"):
            WorkerClient(tmp_path)._receive(proc, time.monotonic() + 5, "a test")


def test_the_worker_uses_this_codec():
    """The worker package imports nothing of the grader (it runs alone in the sandbox) and unpickles nothing."""
    for path in WORKER_PACKAGE.glob("*.py"):
        text = path.read_text()
        assert "import grader" not in text and "from grader" not in text, path
        calls = {f"{n.value.id}.{n.attr}" for n in ast.walk(ast.parse(text))
                 if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
        assert not calls & {"torch.load", "pickle.loads", "pickle.load", "marshal.loads"}, path
        assert "import pickle" not in text, path
    assert "from kata_worker import channel, codec" in (WORKER_PACKAGE / "main.py").read_text()


def _frame(tag: bytes, count: int, item: bytes) -> bytes:
    return tag + struct.pack("<I", count) + item * count


FLOODS = {  # each about a second or more of the grader's CPU with the old bound of a million values
    "a million small ints": lambda: _frame(b"l", 999_990, wire_codec.encode(7)),
    "nested small lists": lambda: _frame(b"l", 400_000, wire_codec.encode([None])),
    "empty tuples in a dict": lambda: b"d" + struct.pack("<I", 300_000) + b"".join(
        b"i" + struct.pack("<q", i) + b"t" + struct.pack("<I", 0) for i in range(300_000)),
    "tiny tensors": lambda: _frame(b"l", 200_000, wire_codec.encode(torch.zeros(1))),
    "devices": lambda: _frame(b"l", 300_000, wire_codec.encode(torch.device("cpu"))),
    "one torch.Size of 8M entries": lambda: _frame(b"z", 8_000_000, struct.pack("<q", 1)),
    "big ints": lambda: _frame(b"l", 10_000, b"I" + struct.pack("<I", 4000) + b"9" * 4000),
}


@pytest.mark.parametrize("flood", FLOODS)
def test_decoding_is_bounded_in_items_as_in_bytes(flood, monkeypatch):
    """Counted, not timed: the decoder reads at most MAX_VALUES items (values, and the entries of a
    torch.Size) of a frame, then refuses it, whatever the frame holds."""
    payload = FLOODS[flood]()
    work = {"values": 0, "entries": 0}
    value = wire_codec._Reader.value

    def counted(self, depth):
        work["values"] += 1
        return value(self, depth)

    class CountedI64:
        size = wire_codec._I64.size

        def unpack(self, data):
            work["entries"] += 1
            return wire_codec._I64.unpack(data)

    monkeypatch.setattr(wire_codec._Reader, "value", counted)
    monkeypatch.setattr(wire_codec, "_I64", CountedI64())
    cpu = time.process_time()
    with pytest.raises(wire.ProtocolError, match=f"more than {wire_codec.MAX_VALUES} values"):
        wire.decode(payload)
    assert time.process_time() - cpu < 0.5  # counts decide it; this only catches a decoder gone quadratic
    assert work["values"] + work["entries"] <= wire_codec.MAX_VALUES + 1, work


def test_both_ends_count_items_alike_and_a_tensor_costs_the_same_whatever_its_size(monkeypatch):
    """What the encoder lets through, the decoder takes; one item more fails on both sides."""
    tensor_cost = wire_codec._TENSOR_COST + 1  # a 1-d tensor
    cases = [
        lambda n: [None] * (n - 2),  # a list costs 2
        lambda n: {"k": [torch.Size([1] * (n - 2 - 2 - 1 - 3))]},  # dict 2, key 1, list 2, Size 3 + entries
        lambda n: [torch.zeros(4)] * ((n - 2) // tensor_cost) + [None] * ((n - 2) % tensor_cost),
        lambda n: [torch.device("cpu")] * ((n - 2) // 3) + [1.5] * ((n - 2) % 3),
    ]
    limit = wire_codec.MAX_VALUES
    for make in cases:
        payload = wire.encode(make(limit))
        assert same(wire.decode(payload), make(limit))
        with pytest.raises(TypeError, match="values"):
            wire.encode(make(limit + 1))
        # the same message one item over, written by hand (a hostile worker does not ask the encoder)
        with monkeypatch.context() as unbounded:
            unbounded.setattr(wire_codec._Budget, "spend", lambda self, n: None)
            raw = wire_codec.encode(make(limit + 1))
        with pytest.raises(wire.ProtocolError, match="values"):
            wire.decode(raw)
    big = torch.arange(4 * wire_codec.MAX_VALUES, dtype=torch.float32).reshape(4, -1)  # one buffer, not items
    assert torch.equal(wire.decode(wire.encode({"ok": [big, big]}))["ok"][1], big)
