"""Hidden tests for 03_causal/attention_dropout (section 3.5.2).

COVERS: dropout(x, p, training) under torch.manual_seed(123) on 001's seed-789 causal weights
(the value the docs README gives, on PyTorch >= 2.7 x86-64 CPU: test id ``printed-x86``;
elsewhere the expected value is nn.Dropout under the same seed: id ``nn-dropout-same-seed``);
same mask as nn.Dropout under the same seed on random float32/float64 tensors; eval
(training=False, any p, 1 included) and p == 0 are the identity; p == 1 gives zeros; survivors are x / (1 - p)
(rtol 1e-6: nn.Dropout multiplies by a rounded 1/(1-p)); the kept fraction is near 1 - p on a
large tensor; p outside [0, 1] raises ValueError; the input is never modified.
(000's own printed dropout and 001's unseeded dropouts are not reproducible: see the fixtures.)
"""

import platform

import pytest
import torch

from kata_checks import (KEEP_PROB_SWAPPED, NAN_AT_P1, NOT_RESCALED, P1_WHEN_NOT_TRAINING, P_NOT_CHECKED, assert_close,
                      assert_raises, assert_unchanged, check_tensor, fail)
from reference import printed, seed_reference

P = printed()


def _on_documents_platform() -> bool:
    major, minor = (int(v) for v in torch.__version__.split(".")[:2])
    return platform.machine().lower() in ("x86_64", "amd64") and (major, minor) >= (2, 7)


def _seed789_causal_weights():
    q, k, _ = P.linear_projections_789(P.journey())
    return torch.softmax((q @ k.T).masked_fill(torch.triu(torch.ones(6, 6), 1).bool(), -torch.inf) / 2**0.5, -1)


def _nn_dropout(x, p, seed):
    seed_reference(seed)
    return torch.nn.Dropout(p)(x)


def _kept_with_probability_p(x, p, seed):
    """The mistake bernoulli_(p) instead of bernoulli_(1 - p), under the same seed."""
    seed_reference(seed)
    return x * torch.empty_like(x).bernoulli_(p).div_(1 - p)


DOC_CASE = "printed-x86" if _on_documents_platform() else "nn-dropout-same-seed"


@pytest.mark.printed
@pytest.mark.parametrize("expected_from", [DOC_CASE])
def test_documents_seed123(impl, expected_from):
    """torch.manual_seed(123); dropout(seed-789 causal weights, 0.5); atol 1e-4."""
    weights = _seed789_causal_weights()
    if expected_from == "printed-x86":
        expected = P.value("README/dropout_seed123")
    else:
        expected = _nn_dropout(weights, 0.5, 123)
    impl.manual_seed(123)
    got = impl.dropout(weights, 0.5)
    assert_close(got, expected, atol=1e-4, call=f"torch.manual_seed(123); dropout(seed-789 causal weights, p=0.5)  [{expected_from}]",
                 note="draw the keep-mask with torch.empty_like(x).bernoulli_(1 - p) (one draw, nothing else from the generator)",
                 diagnoses=[(weights, "nothing was dropped: is training=True the default?"),
                            (_nn_dropout(weights, 0.5, 123) * 0.5, NOT_RESCALED)])


@pytest.mark.core
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_same_seed_same_mask_as_nn_dropout(impl, dtype):
    """Random (4, 5, 6) input, p = 0.3 and 0.5: equal to nn.Dropout under the same seed; atol 1e-6, rtol 1e-6."""
    g = torch.Generator().manual_seed(81)
    x = torch.rand(4, 5, 6, generator=g, dtype=dtype) + 0.1
    for p, seed in [(0.3, 7), (0.5, 8)]:
        expected = _nn_dropout(x, p, seed)
        diagnoses = [(_nn_dropout(x, p, seed) * (1 - p), NOT_RESCALED)]
        if p != 0.5:
            diagnoses.append((_kept_with_probability_p(x, p, seed), KEEP_PROB_SWAPPED))
        impl.manual_seed(seed)
        assert_close(impl.dropout(x, p), expected, atol=1e-6, rtol=1e-6, diagnoses=diagnoses,
                     call=f"torch.manual_seed({seed}); dropout(x of shape (4, 5, 6), p={p}) [{dtype}]",
                     note="keep-mask: torch.empty_like(x).bernoulli_(1 - p); survivors x / (1 - p)")


@pytest.mark.core
def test_same_seed_drops_the_same_elements_as_nn_dropout(impl):
    """Random (4, 5, 6) input, p = 0.3 and 0.5: the elements set to zero are nn.Dropout's under the same seed
    (the keep-mask alone, whatever the survivors are scaled by)."""
    x = torch.rand(4, 5, 6, generator=torch.Generator().manual_seed(82)) + 0.1
    for p, seed in [(0.3, 9), (0.5, 10)]:
        expected = (_nn_dropout(x, p, seed) == 0).float()
        impl.manual_seed(seed)
        got = impl.dropout(x, p)
        call = f"torch.manual_seed({seed}); dropout(x of shape (4, 5, 6), p={p}) == 0"
        check_tensor(got, call=call, shape=(4, 5, 6))
        diagnoses = [((_kept_with_probability_p(x, p, seed) == 0).float(), KEEP_PROB_SWAPPED)] if p != 0.5 else []
        assert_close((got == 0).float(), expected, atol=0, diagnoses=diagnoses, call=call,
                     note="keep-mask: torch.empty_like(x).bernoulli_(1 - p), one draw")


@pytest.mark.edge
def test_eval_and_p0_are_identity(impl):
    """training=False (any p, 1 included) and p == 0 return x unchanged (exact)."""
    x = torch.rand(3, 4, 5, generator=torch.Generator().manual_seed(82))
    for args, call in [((x, 0.5, False), "dropout(x, p=0.5, training=False)"),
                       ((x, 0.9, False), "dropout(x, p=0.9, training=False)"),
                       ((x, 1.0, False), "dropout(x, p=1.0, training=False)"),
                       ((x, 0.0), "dropout(x, p=0.0)")]:
        zeros = [(torch.zeros_like(x), P1_WHEN_NOT_TRAINING)] if args[1:] == (1.0, False) else []
        assert_close(impl.dropout(*args), x, atol=0, call=call, diagnoses=zeros,
                     note="no dropout when not training (whatever p) or when p == 0: return x as it is")


@pytest.mark.edge
def test_p1_gives_zeros(impl):
    """p == 1 drops everything: all zeros, no NaN (x / (1 - 1) would be inf/NaN)."""
    x = torch.rand(4, 6, generator=torch.Generator().manual_seed(83)) + 0.5
    impl.manual_seed(0)
    got = impl.dropout(x, 1.0)
    if isinstance(got, torch.Tensor) and torch.isnan(got).any():
        fail("dropout(x of shape (4, 6), p=1.0)", f"returned NaN in {int(torch.isnan(got).sum())} of 24 places; expected all zeros",
             f"likely cause: {NAN_AT_P1}")
    assert_close(got, torch.zeros_like(x), atol=0, call="dropout(x of shape (4, 6), p=1.0)", note=NAN_AT_P1)


@pytest.mark.edge
def test_survivors_are_scaled(impl):
    """Every output element is 0 or x / (1 - p) for p = 0.25 and 0.8; rtol 1e-6."""
    x = torch.rand(50, 40, generator=torch.Generator().manual_seed(84), dtype=torch.float64) + 0.1
    for p in (0.25, 0.8):
        impl.manual_seed(int(p * 100))
        got = impl.dropout(x.clone(), p)
        call = f"dropout(x of shape (50, 40), p={p})"
        check_tensor(got, call=call, shape=x.shape, dtype=x.dtype)
        kept = got != 0
        if not kept.any():
            fail(call, "everything was dropped")
        scaled = x[kept] / (1 - p)
        if not torch.allclose(got[kept], scaled, rtol=1e-6, atol=0):
            ratio = (got[kept] / x[kept]).unique()[:5].tolist()
            fail(call, f"survivors must be x / (1 - p) = x * {1 / (1 - p):.4f}; got x * {[round(r, 4) for r in ratio]}",
                 "scale by 1 / (1 - p) (inverted dropout), not by p or 1 - p")


@pytest.mark.edge
def test_kept_fraction_near_one_minus_p(impl):
    """On a (200, 200) tensor of ones, the kept fraction is within 0.02 of 1 - p (p = 0.1, 0.5, 0.9)."""
    x = torch.ones(200, 200)
    for p in (0.1, 0.5, 0.9):
        impl.manual_seed(91)
        got = impl.dropout(x.clone(), p)
        call = f"dropout(torch.ones(200, 200), p={p})"
        check_tensor(got, call=call, shape=x.shape)
        frac = float((got != 0).double().mean())
        if abs(frac - (1 - p)) > 0.02:
            fail(call, f"kept {frac:.3f} of the elements; expected about 1 - p = {1 - p:.2f}",
                 f"likely cause: {KEEP_PROB_SWAPPED}" if abs(frac - p) <= 0.02 else "")


@pytest.mark.edge
def test_p_outside_unit_interval_raises(impl):
    """p = -0.1, 1.5 and 2: ValueError."""
    x = torch.ones(3, 3)
    for p in (-0.1, 1.5, 2.0):
        assert_raises(ValueError, impl.dropout, x, p, call=f"dropout(x, p={p})", why=P_NOT_CHECKED)


@pytest.mark.edge
def test_input_not_modified(impl):
    """dropout returns a new tensor: the input is unchanged (p = 0.5 and p = 1)."""
    x = torch.rand(4, 5, generator=torch.Generator().manual_seed(85)) + 0.1
    for p in (0.5, 1.0):
        impl.manual_seed(3)
        _, after = impl.call_and_inputs(impl.dropout, x.clone(), p)
        assert_unchanged([x], after[:1], call=f"dropout(x, p={p})", names=["x"])
