"""Public tests for self_attention (02_trainable_weights, section 3.4.2).

Run ``pytest exercises/02_trainable_weights/test_self_attention.py`` or ``pytest exercises -k self_attention``.
Expected values are the tensors printed in exercises/documents/chapter_notes_3.1-3.6.txt (document
paths in the kata are relative to the repository root), or computed here from the module's own
weights with torch.nn.functional.scaled_dot_product_attention. The seeded values depend on creating
W_query, W_key, W_value in that order, right after the seed.
"""

import torch
import torch.nn.functional as F

from kata_checks import (assert_does_its_own_work, creation_order, transpose_errors, assert_close, assert_gradients_reach_every_parameter, assert_qkv_biases, call_checked, call_in_float64,
                         fail, journey_inputs, load, scale_diagnoses)
from kata_mistakes import QKV_BIAS_NOT_USED, SCALED_BY_D_IN, attention_grid, differing, named_parameter_causes


def test_self_attention_v1_seed_123_matches_the_document():
    m = load("self_attention")
    # chapter_notes_3.1-3.6.txt, section 3.4.2: sa_v1(inputs) after torch.manual_seed(123)
    expected = torch.tensor(
        [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]]
    )
    torch.manual_seed(123)
    sa_v1 = m.SelfAttention_v1(3, 2)
    assert_close(sa_v1(journey_inputs()), expected, atol=1e-4, shown=creation_order(sa_v1),
                 call="torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)")


def test_self_attention_v2_seed_789_matches_the_document():
    m = load("self_attention")
    # chapter_notes_3.1-3.6.txt, section 3.4.2: sa_v2(inputs) after torch.manual_seed(789)
    expected = torch.tensor(
        [[-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702], [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693]]
    )
    torch.manual_seed(789)
    sa_v2 = m.SelfAttention_v2(3, 2)
    assert_close(sa_v2(journey_inputs()), expected, atol=1e-4, shown=creation_order(sa_v2),
                 call="torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)")


def test_self_attention_parameters_have_the_documented_shapes():
    m = load("self_attention")
    sa_v1 = m.SelfAttention_v1(3, 4)
    got_v1 = {name: tuple(p.shape) for name, p in sa_v1.named_parameters()}
    want_v1 = {"W_query": (3, 4), "W_key": (3, 4), "W_value": (3, 4)}
    if got_v1 != want_v1:
        fail("SelfAttention_v1(3, 4).named_parameters()", f"returned {got_v1}", f"expected {want_v1}",
             *[f"likely cause: {c}" for c in named_parameter_causes(sa_v1)])
    got_v2 = {name: tuple(p.shape) for name, p in m.SelfAttention_v2(3, 4).named_parameters()}
    want_v2 = {"W_query.weight": (4, 3), "W_key.weight": (4, 3), "W_value.weight": (4, 3)}
    if got_v2 != want_v2:  # the right weights and a bias besides: qkv_bias=False was not passed on
        biased = all(got_v2.get(w) == s for w, s in want_v2.items()) and any(n.endswith(".bias") for n in got_v2)
        fail("SelfAttention_v2(3, 4).named_parameters()", f"returned {got_v2}",
             f"expected {want_v2} (nn.Linear(d_in, d_out, bias=False) stores its weight as (d_out, d_in))",
             f"likely cause: {QKV_BIAS_NOT_USED}" if biased else "")
    assert_qkv_biases(m.SelfAttention_v2(3, 4, qkv_bias=True), True, call="SelfAttention_v2(3, 4, qkv_bias=True).named_parameters()")


def _expected(x, W_query, W_key, W_value, scale):
    """Self-attention computed with torch's own function from the given (d_in, d_out) weight matrices."""
    return F.scaled_dot_product_attention(x @ W_query, x @ W_key, x @ W_value, scale=scale)


def _layers(module, x):
    """Queries, keys and values made with a SelfAttention_v2's own nn.Linear layers, biases included."""
    return module.W_query(x), module.W_key(x), module.W_value(x)


def test_self_attention_v1_and_v2_keep_a_batch_dimension():
    m = load("self_attention")
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(13))  # batch 2, 5 tokens, d_in 3; d_out 4
    for cls in ("SelfAttention_v1", "SelfAttention_v2"):
        module = getattr(m, cls)(3, 4)
        if cls == "SelfAttention_v1":
            weights = (module.W_query, module.W_key, module.W_value)
        else:
            weights = (module.W_query.weight.T, module.W_key.weight.T, module.W_value.weight.T)
        call = f"{cls}(3, 4)(x) with x of shape (2, 5, 3)"
        projected = x.new_zeros(2, 5, 4)  # the queries' and keys' shape: what a transpose is tried on
        got = call_checked(module, x, call=call, errors=transpose_errors(projected, projected))
        with torch.no_grad():
            expected = _expected(x, *weights, scale=None)
            diagnoses = scale_diagnoses(lambda s: _expected(x, *weights, scale=s), 4, "d_out") + [
                (_expected(x, *weights, scale=3**-0.5), SCALED_BY_D_IN)] + attention_grid(*(x @ w for w in weights), 0.5)
            if any(getattr(getattr(module, n, None), "bias", None) is not None for n in ("W_query", "W_key", "W_value")):
                diagnoses.append((F.scaled_dot_product_attention(*_layers(module, x)), QKV_BIAS_NOT_USED))
        assert_close(got, expected, atol=1e-5, call=call, diagnoses=differing(diagnoses, expected))


def test_self_attention_moved_to_float64_computes_in_float64():
    """The README's rules: a module moved with .to(torch.float64) computes in float64."""
    m = load("self_attention")
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(18), dtype=torch.float64)
    for cls in ("SelfAttention_v1", "SelfAttention_v2"):
        module = getattr(m, cls)(3, 4).to(torch.float64)
        call_in_float64(module, x, call=f"{cls}(3, 4).to(torch.float64)(x of shape (2, 5, 3))", shapes=[(2, 5, 4)])


def test_self_attention_gradients_reach_every_parameter():
    m = load("self_attention")
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(27))
    for cls, args in [("SelfAttention_v1", (3, 4)), ("SelfAttention_v2", (3, 4, True))]:
        assert_gradients_reach_every_parameter(getattr(m, cls)(*args), x, call=f"{cls}{args}(x).sum().backward()")


def test_self_attention_does_its_own_work():
    """SelfAttention_v1, SelfAttention_v2: what the exercise asks to write by hand, no library operation may do while they run (the grader's trace)."""
    assert_does_its_own_work("self_attention")
