"""The simulated GPU (exercises/kata_gpu.py, which the grader's worker imports too) against CUDA's behaviour, op by op.

Each row is one operation written for a device ``dev``, and what CUDA does with it, as PyTorch's
documentation ("CUDA semantics": operations need their tensors on one device, factories create on the
CPU unless told ``device=``; ``Module.to`` moves parameters and buffers) and its own tests say
(test/test_indexing.py ``test_cpu_indices``: CPU indices into a CUDA tensor; TensorIterator takes 0-dim
CPU tensors as scalars; test_torch.py's cross-device copies):

* ``DEVICE`` / ``CPU``: it runs, its tensor results are on the device / on the CPU, and every value equals
  the same row's result on the CPU (``dev`` = cpu); a tuple names the place of each result;
* ``RANDOM``: it runs on the device (dropout draws from the device's own generator: values not compared);
* ``MIXES``: it raises RuntimeError, naming "the same device".

The table runs on the simulated GPU always and, where this machine has CUDA, on the real one too: both
must agree with it.
"""

from __future__ import annotations

import contextlib

import pytest
import torch

from support import students_tool

kata_gpu = students_tool("kata_gpu")
DEVICE, plain, simulated_gpu = kata_gpu.DEVICE, kata_gpu.plain, kata_gpu.simulated_gpu

DEVICE_, CPU, RANDOM, MIXES = "cuda", "cpu", "random", "mixes"
SCORES = torch.rand(5, 5, generator=torch.Generator().manual_seed(3))
MASK = torch.triu(torch.ones(5, 5), diagonal=1).bool()


def scores(dev):
    return SCORES.to(dev)


class Masked(torch.nn.Module):
    """A module with a parameter, a persistent buffer, a non-persistent buffer and a plain attribute."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(5, 5)
        self.register_buffer("mask", MASK.clone())
        self.register_buffer("scratch", torch.zeros(5), persistent=False)
        self.plain = MASK.clone()


def moved(dev):
    torch.manual_seed(0)
    m = Masked().to(dev)
    return m.linear.weight, m.mask, m.scratch, m.plain, isinstance(m.linear.weight, torch.nn.Parameter)


ROWS = {
    "matmul": (lambda dev: scores(dev) @ scores(dev), DEVICE_),
    "matmul with a CPU matrix": (lambda dev: scores(dev) @ SCORES, MIXES),
    "masked_fill with a mask on the device": (lambda dev: scores(dev).masked_fill(MASK.to(dev), -torch.inf), DEVICE_),
    "masked_fill with a CPU mask": (lambda dev: scores(dev).masked_fill(MASK, -torch.inf), MIXES),
    "masked_fill with a 0-dim CPU value": (lambda dev: scores(dev).masked_fill(MASK.to(dev), torch.tensor(-1.0)), DEVICE_),
    "a 0-dim CPU tensor in an elementwise op": (lambda dev: scores(dev) / torch.sqrt(torch.tensor(4.0)), DEVICE_),
    "a 1-dim CPU tensor in an elementwise op": (lambda dev: scores(dev) + torch.ones(5), MIXES),
    "a Python float": (lambda dev: scores(dev) * 2.0 - 1, DEVICE_),
    "softmax": (lambda dev: torch.softmax(scores(dev), dim=-1), DEVICE_),
    "dropout in training": (lambda dev: torch.nn.functional.dropout(scores(dev), 0.5, training=True), RANDOM),
    "cat on the device": (lambda dev: torch.cat([scores(dev), scores(dev)], dim=-1), DEVICE_),
    "cat with a CPU tensor": (lambda dev: torch.cat([scores(dev), SCORES], dim=-1), MIXES),
    "where with a CPU condition": (lambda dev: torch.where(MASK, scores(dev), scores(dev)), MIXES),
    "view, transpose, reshape, slicing": (
        lambda dev: (scores(dev).view(25), scores(dev).transpose(0, 1), scores(dev).reshape(1, 25), scores(dev)[1:3, :2]),
        (DEVICE_,) * 4),
    "a factory without device=": (lambda dev: torch.ones(3), CPU),
    "factories with device=": (lambda dev: (torch.ones(3, device=dev), torch.arange(4, device=dev),
                                            torch.tensor([1.0, 2.0], device=dev), torch.triu(torch.ones(3, 3, device=dev))),
                               (DEVICE_,) * 4),
    "a factory given another tensor's device": (lambda dev: torch.zeros(2, device=scores(dev).device), DEVICE_),
    "_like factories": (lambda dev: (torch.ones_like(scores(dev)), torch.empty_like(scores(dev)).fill_(2.0)), (DEVICE_,) * 2),
    ".to(device), .to('cuda'), .cpu()": (lambda dev: (SCORES.to(dev), SCORES.to(dev.type), SCORES.to(dev).cpu()),
                                         (DEVICE_, DEVICE_, CPU)),
    "Module.to: parameters, buffers (persistent or not) move, a plain attribute stays": (
        moved, (DEVICE_, DEVICE_, DEVICE_, CPU, None)),
    ".item(), a branch on a value": (lambda dev: (scores(dev).sum().item(), bool((scores(dev) > 2).any())), (None, None)),
    "nonzero": (lambda dev: MASK.to(dev).nonzero(), DEVICE_),
    "CPU indices into a device tensor": (lambda dev: scores(dev)[torch.tensor([0, 2])], DEVICE_),
    "copy_ from the CPU into a device tensor": (lambda dev: torch.zeros(5, 5, device=dev).copy_(SCORES), DEVICE_),
    "in place on a view": (lambda dev: _in_place(dev), DEVICE_),
}


def _in_place(dev):
    x = torch.zeros(3, 4, device=dev)
    x[:, 1] = 1.0
    x.add_(torch.ones(3, 4, device=dev)).masked_fill_(torch.eye(3, 4, device=dev).bool(), 5.0)
    return x


def _devices():
    found = ["simulated"]
    if torch.cuda.is_available():  # pragma: no cover - on a CUDA machine only
        found.append("cuda")
    return found


def run(fn, device: str):
    """``fn``'s results on ``device``: ``[(where, value)]``, ``where`` the device type of a tensor (None for
    Python values), values as CPU tensors."""
    context = simulated_gpu() if device == "simulated" else contextlib.nullcontext()
    dev = DEVICE if device == "simulated" else torch.device(device, 0) if device == "cuda" else torch.device(device)
    with torch.no_grad(), context:
        out = fn(dev)
        results = out if isinstance(out, tuple) else (out,)
        return [(r.device.type, plain(r).cpu()) if isinstance(r, torch.Tensor) else (None, r) for r in results]


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("row", list(ROWS))
def test_the_device_behaves_as_cuda_does(row: str, device: str) -> None:
    fn, expected = ROWS[row]
    if expected == MIXES:
        with pytest.raises(RuntimeError, match="same device"):
            run(fn, device)
        return
    got = run(fn, device)
    places = expected if isinstance(expected, tuple) else (expected,)
    assert [where for where, _ in got] == [DEVICE_ if p == RANDOM else p for p in places], got
    if expected == RANDOM:
        return
    for (where, value), (_, on_cpu) in zip(got, run(fn, "cpu")):
        if isinstance(value, torch.Tensor):
            assert value.dtype == on_cpu.dtype and torch.equal(value, on_cpu), (row, value, on_cpu)
        else:
            assert value == on_cpu, (row, value, on_cpu)


def test_a_device_tensor_outside_the_simulation_says_so() -> None:
    with simulated_gpu():
        x = torch.ones(2, device=DEVICE)
    with pytest.raises(RuntimeError, match="used outside simulated_gpu"):
        x + 1


def test_the_error_names_where_the_cpu_tensor_came_from() -> None:
    module = Masked()
    with torch.no_grad(), simulated_gpu() as gpu:
        gpu.name(module.plain, "self.plain, a plain attribute")
        module.to(DEVICE)
        with pytest.raises(RuntimeError) as error:
            scores(DEVICE).masked_fill(module.plain[:3, :3].logical_not()[:, :], 0.0)
        made = torch.ones(5, 5)  # this line's number is the one named below
        with pytest.raises(RuntimeError) as error2:
            scores(DEVICE) * made.triu(1)
    assert "from self.plain, a plain attribute" in str(error.value), error.value
    assert "made at test_simulated_gpu.py, line" in str(error.value)
    assert "from the tensor made at test_simulated_gpu.py" in str(error2.value) and "made = torch.ones(5, 5)" in str(error2.value)
