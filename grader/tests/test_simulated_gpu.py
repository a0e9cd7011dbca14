"""The simulated GPU (exercises/kata_gpu.py, which the grader's worker imports too) against CUDA's behaviour, op by op.

Each row is one operation written for a device ``dev``, and what CUDA does with it, as PyTorch's
documentation ("CUDA semantics": operations need their tensors on one device, factories create on the
CPU unless told ``device=``; ``Module.to`` moves parameters and buffers) and its own tests say
(test/test_indexing.py ``test_cpu_indices``: CPU indices into a CUDA tensor; TensorIterator takes 0-dim
CPU tensors as scalars; test_torch.py's cross-device copies):

* ``DEVICE`` / ``CPU``: it runs, its tensor results are on the device / on the CPU, and every value equals
  the same row's result on the CPU (``dev`` = cpu); a tuple names the place of each result;
* ``RANDOM``: it runs on the device (dropout draws from the device's own generator: values not compared);
* ``MIXES``: it raises RuntimeError, naming "the same device";
* ``(RAISES, type, words)``: it raises ``type`` with ``words`` in its message;
* ``(KNOWN, values)``: it returns these Python values (what CUDA answers on a one-GPU machine).

The idioms students write around devices, and what CUDA gives for them, from "CUDA semantics"
(https://pytorch.org/docs/stable/notes/cuda.html: ``device = "cuda" if torch.cuda.is_available() else "cpu"``
is its device-agnostic idiom; copies between devices with ``copy_``/``to``), torch/_tensor.py's ``numpy``
("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() ..."), aten's TensorAdvancedIndexing.cpp
(``_index_put_impl_`` moves only a 0-dim value to ``self``'s device; the TensorIterator refuses any other),
and CUDA's "invalid device ordinal" for a device the machine does not have (test_cuda.py's one-GPU
assumptions; run the table on one GPU: CUDA_VISIBLE_DEVICES=0).

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

DEVICE_, CPU, RANDOM, MIXES, RAISES, KNOWN = "cuda", "cpu", "random", "mixes", "raises", "known"
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
    "torch.cuda answers as one GPU": (lambda dev: _cuda_answers(dev), (KNOWN, (True, 1, 0, True, "cuda"))),
    "a CUDA build says so": (lambda dev: _build_answers(dev), (KNOWN, (True, False, True, True, True, True))),
    "torch.cuda.set_device(1) fails on one GPU": (lambda dev: torch.cuda.set_device(1), (RAISES, RuntimeError, "invalid device ordinal")),
    "is_cuda, get_device(), device": (lambda dev: (scores(dev).is_cuda, scores(dev).get_device(), str(scores(dev).device)),
                                      (KNOWN, (True, 0, "cuda:0"))),
    "the tensor's class, as honest code reads it": (
        lambda dev: (type(scores(dev)) is torch.Tensor, type(moved(dev)[0]) is torch.nn.Parameter,
                     callable(scores(dev).values), moved(dev)[0].requires_grad, scores(dev).requires_grad),
        (KNOWN, (True, True, True, True, False))),
    "print, repr, format": (lambda dev: (repr(scores(dev)[0, :2]).endswith(", device='cuda:0')"), str(scores(dev)) == repr(
        scores(dev)), f"{scores(dev)[0, 0]:.3f}" == f"{SCORES[0, 0].item():.3f}"), (KNOWN, (True, True, True))),
    "data_ptr(): a view starts inside its base": (lambda dev: _data_ptr(dev), (KNOWN, (True, True))),
    "tolist(), item()": (lambda dev: (scores(dev)[:2].tolist(), scores(dev)[1, 2].item()), (None, None)),
    "numpy() fails": (lambda dev: scores(dev).numpy(), (RAISES, TypeError, f"can't convert {DEVICE} device type tensor to numpy")),
    ".to('cuda:1') fails on one GPU": (lambda dev: SCORES.to("cuda:1"), (RAISES, RuntimeError, "invalid device ordinal")),
    "a factory on cuda:1 fails on one GPU": (lambda dev: torch.ones(2, device="cuda:1"), (RAISES, RuntimeError, "invalid device ordinal")),
    ".cpu(), .to('cpu')": (lambda dev: (scores(dev).cpu(), scores(dev).to("cpu")), (CPU, CPU)),
    "copy_ from the device into a CPU tensor": (lambda dev: torch.zeros(5, 5).copy_(scores(dev)), CPU),
    "a CPU buffer filled from the device by slices, moved back": (lambda dev: _cpu_buffer(dev), (CPU, DEVICE_)),
    "index_put_ with CPU values": (lambda dev: scores(dev).index_put_((torch.tensor([0, 2]),), torch.ones(2, 5)), MIXES),
    "index_put_ with a 0-dim CPU value": (lambda dev: scores(dev).index_put_((torch.tensor([0, 2]),), torch.tensor(1.0)), DEVICE_),
    "x[index] = CPU values": (lambda dev: _set(dev, torch.tensor([0, 2]), torch.ones(2, 5)), MIXES),
    "x[:, 1] = CPU values (a copy_)": (lambda dev: _set(dev, (slice(None), 1), torch.ones(5)), DEVICE_),
    "device = 'cuda' if torch.cuda.is_available() else 'cpu'": (lambda dev: _agnostic(dev), DEVICE_),
    "a CPU mask moved only 'if x.is_cuda and not torch.cuda.is_available()'": (lambda dev: _not_available_trick(dev), MIXES),
}


def _cuda_answers(dev):
    torch.ones(1, device=dev)  # CUDA is initialized once a tensor is on it
    torch.cuda.synchronize()
    return (torch.cuda.is_available(), torch.cuda.device_count(), torch.cuda.current_device(),
            torch.cuda.is_initialized(), torch.device("cuda").type)


def _build_answers(dev):
    """What a CUDA build says of itself: public attributes that code could branch on."""
    props = torch.cuda.get_device_properties(0)
    return (torch.version.cuda is not None, "+cpu" in torch.__version__, torch.backends.cuda.is_built(),
            isinstance(torch.cuda.get_device_name(0), str) and props.name == torch.cuda.get_device_name(0),
            props.total_memory > 0, len(torch.cuda.get_device_capability()) == 2)


def _data_ptr(dev):
    x = scores(dev)
    return x.data_ptr() != 0, x[1:].data_ptr() - x.data_ptr() == 5 * x.element_size()


def _cpu_buffer(dev):
    context = torch.zeros(5, 10)
    for head in range(2):
        context[..., 5 * head:5 * (head + 1)] = scores(dev) * (head + 1)
    return context, context.to(scores(dev).device)


def _set(dev, key, value):
    x = scores(dev)
    x[key] = value
    return x


def _agnostic(dev):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.ones(3, device=device) + scores(dev)[0, :3]


def _not_available_trick(dev):
    x, mask = scores(dev), MASK.clone()
    if x.is_cuda and not torch.cuda.is_available():
        mask = mask.to(x.device)
    return x.masked_fill(mask, 0.0)


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
    if expected == MIXES or expected[0] == RAISES:
        error, words = (RuntimeError, "same device") if expected == MIXES else expected[1:]
        with pytest.raises(error, match=words):
            run(fn, device)
        return
    got = run(fn, device)
    if expected[0] == KNOWN:
        assert tuple(value for _, value in got) == expected[1], got
        return
    places = expected if isinstance(expected, tuple) else (expected,)
    assert [where for where, _ in got] == [DEVICE_ if p == RANDOM else p for p in places], got
    if expected == RANDOM:
        return
    for (where, value), (_, on_cpu) in zip(got, run(fn, "cpu")):
        if isinstance(value, torch.Tensor):
            assert value.dtype == on_cpu.dtype and torch.equal(value, on_cpu), (row, value, on_cpu)
        else:
            assert value == on_cpu, (row, value, on_cpu)


def test_a_device_tensor_outside_the_simulation_raises() -> None:
    """It holds no CUDA memory: torch refuses it (its class is torch.Tensor's, as on CUDA, and only the
    simulation's mode runs it), never computes with it."""
    with simulated_gpu():
        x = torch.ones(2, device=DEVICE)
    with pytest.raises(RuntimeError):
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


def test_torch_cuda_answers_as_before_once_the_simulation_ends() -> None:
    def answers():
        return (torch.cuda.is_available(), torch.cuda.device_count(), torch._C._get_dispatch_mode, torch.__version__,
                torch.version.cuda, torch.backends.cuda.is_built())

    before = answers()
    with simulated_gpu():
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    assert answers() == before


def test_what_honest_code_never_asks_is_recorded_with_its_line() -> None:
    """Asking torch's dispatch internals, reading the simulator's own names or a tensor's storage, from code
    outside torch and the kata's tools (this file stands for a student's) is recorded; the table's idioms are not."""
    with torch.no_grad(), simulated_gpu() as gpu:
        for fn, _ in ROWS.values():
            with contextlib.suppress(RuntimeError, TypeError):
                fn(DEVICE)
        assert gpu.detections == []
        torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)
        assert kata_gpu.OnDevice is not None
        assert torch.ones(2, device=DEVICE).untyped_storage().nbytes() == 8
    assert len(gpu.detections) == 3, gpu.detections
    assert gpu.detections[0].startswith("torch's dispatch internals (torch._C._get_dispatch_mode) at "
                                        "test_simulated_gpu.py, line ")
    assert gpu.detections[1].startswith("the simulator's own module (kata_gpu.OnDevice) at test_simulated_gpu.py")
    assert gpu.detections[2].startswith("the tensor's storage (x.untyped_storage()) at test_simulated_gpu.py")
