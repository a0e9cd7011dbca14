"""Public tests for attention_dropout (03_causal, section 3.5.2).

Run ``pytest exercises/03_causal/test_attention_dropout.py`` or ``pytest exercises -k attention_dropout``.
The documents (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.5.2; paths in the kata are
relative to the repository root) print a dropout mask that differs between platforms, so the
expected value is torch.nn.Dropout's on this machine under the same seed.
"""

import pytest
import torch
import torch.nn as nn

from kata_checks import (assert_does_its_own_work, KEEP_PROB_SWAPPED, NAN_AT_P1, NOT_RESCALED, P1_WHEN_NOT_TRAINING, P_NOT_CHECKED,
                         assert_close, assert_raises, call_checked, call_in_float64, check_tensor, fail, load)
from kata_mistakes import DIVIDED_BY_1_MINUS_P_LATE, P1_RETURNS_X, bound_refused


def test_attention_dropout_drops_what_nn_dropout_drops_under_the_same_seed():
    m = load("attention_dropout")
    x = torch.ones(6, 6)
    torch.manual_seed(123)
    expected = nn.Dropout(0.5)(x)
    torch.manual_seed(123)
    assert_close(m.dropout(x, 0.5), expected, atol=1e-6, call="torch.manual_seed(123); dropout(torch.ones(6, 6), 0.5)",
                 diagnoses=[(expected / 2, NOT_RESCALED), (expected / 2 - 0.5, DIVIDED_BY_1_MINUS_P_LATE)])


def test_attention_dropout_scales_survivors_and_is_identity_when_not_training():
    m = load("attention_dropout")
    x = torch.rand(50, 50, generator=torch.Generator().manual_seed(0)) + 0.5
    got = m.dropout(x.clone(), 0.25)
    kept = got != 0
    assert_close(got[kept], x[kept] / 0.75, atol=1e-6, call="dropout(x, 0.25) at the kept positions",
                 diagnoses=[(x[kept], NOT_RESCALED)])
    assert_close(m.dropout(x.clone(), 0.25, training=False), x, atol=0.0, call="dropout(x, 0.25, training=False)")
    assert_close(call_checked(m.dropout, x.clone(), 0.0, call="dropout(x, 0.0)", errors=[bound_refused]), x, atol=0.0, call="dropout(x, 0.0)")


def test_attention_dropout_keeps_a_fraction_1_minus_p_scaled_by_1_over_1_minus_p():
    """At p = 0.2 and 0.8, where p and 1 - p differ (at p = 0.5 a swapped p goes unseen)."""
    m = load("attention_dropout")
    x = torch.ones(200, 200)
    for p in (0.2, 0.8):
        torch.manual_seed(7)
        got = m.dropout(x.clone(), p)
        call = f"torch.manual_seed(7); dropout(torch.ones(200, 200), {p})"
        check_tensor(got, call=call, shape=(200, 200))
        kept = got != 0
        fraction = float(kept.double().mean())
        if abs(fraction - (1 - p)) > 0.02:
            fail(call, f"kept {fraction:.3f} of the elements; expected about 1 - p = {1 - p:.1f}",
                 f"likely cause: {KEEP_PROB_SWAPPED}" if abs(fraction - p) <= 0.02 else "")
        assert_close(got[kept], x[kept] / (1 - p), atol=1e-6, call=call + " at the kept positions",
                     diagnoses=[(x[kept], NOT_RESCALED)])


def test_attention_dropout_drops_everything_at_p_one():
    m = load("attention_dropout")
    x = torch.rand(4, 5, generator=torch.Generator().manual_seed(1)) + 0.5
    got = call_checked(m.dropout, x, 1.0, call="dropout(x, 1.0) with x of shape (4, 5)", errors=[bound_refused])
    if isinstance(got, torch.Tensor) and torch.isnan(got).any():
        fail("dropout(x, 1.0) with x of shape (4, 5)", f"returned NaN in {int(torch.isnan(got).sum())} of 20 places",
             "expected all zeros", f"likely cause: {NAN_AT_P1}")
    assert_close(got, torch.zeros(4, 5), atol=0.0, call="dropout(x, 1.0) with x of shape (4, 5)", diagnoses=[(x, P1_RETURNS_X)])


def test_attention_dropout_returns_x_unchanged_when_not_training_whatever_p():
    """The docstring's rule: training=False returns x unchanged, at p = 1 too (zeros only when training)."""
    m = load("attention_dropout")
    x = torch.rand(4, 5, generator=torch.Generator().manual_seed(2)) + 0.5
    for p in (0.5, 1.0):
        got = call_checked(m.dropout, x.clone(), p, training=False, call=f"dropout(x, {p}, training=False)", errors=[bound_refused])
        assert_close(got, x, atol=0.0, call=f"dropout(x, {p}, training=False)",
                     diagnoses=[(torch.zeros_like(x), P1_WHEN_NOT_TRAINING)] if p == 1.0 else [])


@pytest.mark.parametrize("p", [1.5, -0.1])
def test_attention_dropout_rejects_a_probability_outside_0_and_1(p):
    m = load("attention_dropout")
    assert_raises(ValueError, m.dropout, torch.ones(3), p, call=f"dropout(torch.ones(3), {p})", why=P_NOT_CHECKED)


def test_attention_dropout_keeps_float64_and_leaves_x_unchanged():
    """The README's rules: the input's dtype kept, no argument modified in place (at p = 0.5 and at p = 1)."""
    m = load("attention_dropout")
    x = torch.rand(4, 5, generator=torch.Generator().manual_seed(20), dtype=torch.float64) + 0.1
    for p in (0.5, 1.0):
        call_in_float64(m.dropout, x, p, call=f"dropout(x of shape (4, 5), {p}) [float64]", shapes=[(4, 5)], unchanged=["x"])


def test_attention_dropout_does_its_own_work():
    """dropout: what the exercise asks to write by hand, no library operation may do while they run (the grader's trace)."""
    assert_does_its_own_work("attention_dropout")
