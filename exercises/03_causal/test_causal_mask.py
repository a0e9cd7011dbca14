"""Public tests for causal_mask (03_causal, section 3.5.1).

Run ``pytest exercises/03_causal/test_causal_mask.py`` or ``pytest exercises -k causal_mask``.
Expected values are the tensors printed in exercises/documents/notebook_causal_self_attention.txt and
exercises/documents/chapter_notes_3.1-3.6.txt (document paths in the kata are relative to the
repository root). The seed-789 scores come from three ``nn.Linear(3, 2, bias=False)`` created after
``torch.manual_seed(789)``, exactly as SelfAttention_v2 creates them, so these tests do not need
your 02_trainable_weights code.
"""

import torch
import torch.nn as nn

from kata_checks import (MASK_COMPLEMENT, NOT_RENORMALIZED, call_checked, assert_close, assert_unchanged, call_in_float64, call_on_any_device, check_tensor, journey_inputs,
                         load)
from kata_mistakes import DIVIDED_BY_D_K, FLOAT_MASK, KEYS_TIMES_QUERIES, error_of, MASK_AFTER_SOFTMAX, attention_grid, differing, scale_diagnoses

# notebook_causal_self_attention.txt: the seed-789 weights, masked and renormalized (also the -inf route's result)
CAUSAL_WEIGHTS = torch.tensor(
    [
        [1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
        [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
        [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
        [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
    ]
)


def seed_789_scores() -> torch.Tensor:
    """Unscaled scores Q Kᵀ of the seed-789 SelfAttention_v2 (notebook_causal_self_attention.txt)."""
    inputs = journey_inputs()
    torch.manual_seed(789)
    W_query, W_key = nn.Linear(3, 2, bias=False), nn.Linear(3, 2, bias=False)
    with torch.no_grad():
        return W_query(inputs) @ W_key(inputs).T


def _float_mask(scores: torch.Tensor) -> list[tuple[str | None, str]]:
    """The error masked_fill raises on these scores for a 0/1 float mask: named only where the student's is that one."""
    return [(error_of(lambda: scores.masked_fill(torch.ones_like(scores).triu(1), -torch.inf)), FLOAT_MASK)]


def test_causal_mask_is_lower_triangular_ones():
    m = load("causal_mask")
    # notebook_causal_self_attention.txt: torch.tril(torch.ones(context_length, context_length))
    expected = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    assert_close(m.causal_mask(4), expected, atol=0, call="causal_mask(4)", diagnoses=[(1 - expected, MASK_COMPLEMENT)])


def test_causal_mask_mask_and_renormalize_matches_the_document():
    m = load("causal_mask")
    weights = torch.softmax(seed_789_scores() / 2**0.5, dim=-1)
    untouched = weights.clone()
    call = "mask_and_renormalize(seed-789 attention weights)  [notebook_causal_self_attention.txt]"
    got = m.mask_and_renormalize(weights)
    assert_unchanged([untouched], [weights], call=call, names=["attn_weights"])
    masked = weights * torch.tril(torch.ones(6, 6))
    assert_close(got, CAUSAL_WEIGHTS, atol=1e-4, call=call,
                 diagnoses=[(masked, NOT_RENORMALIZED)])


def test_causal_mask_mask_future_scores_puts_minus_infinity_above_the_diagonal():
    m = load("causal_mask")
    scores = seed_789_scores()
    untouched = scores.clone()
    # chapter_notes_3.1-3.6.txt, section 3.5.1: the first two rows of masked
    expected = torch.tensor(
        [[0.2899, -torch.inf, -torch.inf, -torch.inf, -torch.inf, -torch.inf],
         [0.4656, 0.1723, -torch.inf, -torch.inf, -torch.inf, -torch.inf]]
    )
    call = "mask_future_scores(seed-789 scores)"
    got = call_checked(m.mask_future_scores, scores, call=call, errors=_float_mask(scores))
    assert_unchanged([untouched], [scores], call=call, names=["attn_scores"])
    assert_close(got[:2] if isinstance(got, torch.Tensor) and got.shape == (6, 6) else got, expected, atol=1e-4,
                 call=call + "[:2]  [chapter_notes_3.1-3.6.txt, 3.5.1]")


def test_causal_mask_weights_from_masked_scaled_scores_match_the_document():
    m = load("causal_mask")
    scores = seed_789_scores()
    future = torch.ones(6, 6).triu(1).bool()
    masked = scores.masked_fill(future, -torch.inf)
    weights = torch.softmax(scores / 2**0.5, -1)  # the mask after the softmax: -inf, or zeros not renormalized
    # The grid's keys and values are the identity, so its alternatives are weights (K Qᵀ is no slip of given scores);
    # the scale's slips but the missing one, which the first diagnosis names.
    slips = [(alt, cause) for alt, cause in attention_grid(scores, torch.eye(6), torch.eye(6), 2**-0.5, future)
             if cause != KEYS_TIMES_QUERIES] + [(torch.softmax(masked / 2, -1), DIVIDED_BY_D_K)]
    slips += scale_diagnoses(lambda s: torch.softmax(masked * s, -1), 2)[2:]  # multiplied by √d_k
    # notebook_causal_self_attention.txt: softmax of the -inf-masked scores divided by sqrt(2)
    call = "causal_attention_weights(seed-789 scores, d_k=2)  [notebook_causal_self_attention.txt]"
    assert_close(call_checked(m.causal_attention_weights, scores, 2, call=call, errors=_float_mask(scores)), CAUSAL_WEIGHTS,
                 atol=1e-4, call=call,
                 diagnoses=[(torch.softmax(masked, -1), "no scaling: divide the scores by √d_k before the softmax"),
                            (weights.masked_fill(future, -torch.inf), MASK_AFTER_SOFTMAX),
                            (weights.masked_fill(future, 0.0), MASK_AFTER_SOFTMAX)]
                 + differing(slips, torch.softmax(masked / 2**0.5, -1)))


def test_causal_mask_functions_work_on_a_batch_on_any_device():
    """A batch of (5, 5) scores: a mask made on the CPU (no ``device=``) and mixed with them fails
    here just as it would with the scores on a GPU (kata_checks.call_on_any_device)."""
    m = load("causal_mask")
    scores = torch.rand(2, 5, 5, generator=torch.Generator().manual_seed(5))
    for name, args in [("mask_future_scores", (scores,)), ("mask_and_renormalize", (scores.softmax(-1),)),
                       ("causal_attention_weights", (scores, 4))]:
        call = f"{name}(a batch of shape (2, 5, 5){', 4' if len(args) == 2 else ''})"
        got = call_on_any_device(getattr(m, name), *args, call=call)
        check_tensor(got, call=call, shape=(2, 5, 5))


def test_causal_mask_functions_keep_float64_and_leave_their_inputs_unchanged():
    """The README's rules: the input's dtype kept, any leading batch dimensions, no argument modified in place."""
    m = load("causal_mask")
    scores = torch.randn(2, 3, 5, 5, generator=torch.Generator().manual_seed(19), dtype=torch.float64)
    for name, args, arg_name in [("mask_future_scores", (scores,), "attn_scores"),
                                 ("mask_and_renormalize", (scores.softmax(-1),), "attn_weights"),
                                 ("causal_attention_weights", (scores, 3), "attn_scores")]:
        call = f"{name}({arg_name} of shape (2, 3, 5, 5){', 3' if len(args) == 2 else ''}) [float64]"
        call_in_float64(getattr(m, name), *args, call=call, shapes=[(2, 3, 5, 5)], unchanged=[arg_name])
