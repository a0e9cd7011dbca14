"""The wire codec: plain data round-trips; anything else, and oversize frames, are protocol errors."""

from __future__ import annotations

import io
import os
import pickle
import socket
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grader import wire

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), st.text(max_size=20),
    st.binary(min_size=1, max_size=20), st.complex_numbers(allow_nan=False),
    st.sampled_from([torch.float32, torch.float64, torch.int64, torch.bool]),
    st.sampled_from([torch.device("cpu"), torch.device("meta")]),
)
tensors = st.builds(
    lambda shape, dtype, seed: torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype),
    st.lists(st.integers(0, 4), max_size=3), st.sampled_from([torch.float32, torch.float64, torch.int32]),
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


class Custom:
    pass


@pytest.mark.parametrize("payload", [
    pickle.dumps(Evil()), pickle.dumps(Custom()), pickle.dumps({"x": Evil()}, protocol=2), b"not a pickle", b"",
])
def test_rejects_code_and_custom_classes(payload):
    with pytest.raises(wire.ProtocolError):
        wire.decode(payload)
    assert not os.path.exists("/tmp/kata_wire_pwned")


@pytest.mark.parametrize("value", [
    torch.nn.Parameter(torch.ones(2)),  # a subclass: must arrive as a plain tensor, not as this
    torch.ones(2, requires_grad=True),
    torch.ones(3).to_sparse(),
    {(1, 2): 3},  # tuple keys
    {1.5: 2},
    {"s": {1, 2}},  # sets are not in the list
])
def test_rejects_what_torch_load_accepts_but_we_do_not(value):
    buf = io.BytesIO()
    try:
        torch.save(value, buf, _use_new_zipfile_serialization=False)
    except Exception:
        pytest.skip("torch cannot even save this")
    with pytest.raises(wire.ProtocolError):
        wire.decode(buf.getvalue())


def test_deep_nesting_is_rejected():
    value: list = []
    for _ in range(wire.MAX_DEPTH + 5):
        value = [value]
    with pytest.raises(wire.ProtocolError):
        wire.validate(value)


def test_frames_round_trip_and_oversize_is_refused():
    a, b = socket.socketpair()
    with a, b:
        wire.send_frame(a, b"hello")
        assert wire.recv_frame(b) == b"hello"
        a.sendall(struct.pack(">Q", wire.MAX_FRAME + 1))
        with pytest.raises(wire.ProtocolError, match="limit"):
            wire.recv_frame(b)
        with pytest.raises(wire.ProtocolError):
            wire.send_frame(a, b"x" * (wire.MAX_FRAME + 1))
        a.sendall(struct.pack(">Q", 10) + b"abc")
        a.close()
        with pytest.raises(EOFError):
            wire.recv_frame(b)


def test_worker_framing_matches():
    """worker.py carries its own copy of the framing constants (it cannot import grader)."""
    from grader.worker_client import WORKER_PY

    text = WORKER_PY.read_text()
    assert 'HEADER = struct.Struct(">Q")' in text and "MAX_FRAME = 64 * 2**20" in text
    assert wire.HEADER.format == ">Q" and wire.MAX_FRAME == 64 * 2**20
