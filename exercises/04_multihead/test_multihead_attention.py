"""Public tests for multihead_attention (04_multihead, section 3.6.2).

Run ``pytest exercises/04_multihead/test_multihead_attention.py`` or ``pytest exercises -k multihead_attention``.
The documents' example (exercises/documents/chapter_notes_3.1-3.6.txt, section 3.6.2; document paths
in the kata are relative to the repository root) has head_dim 1, where a wrong 1/√head_dim scale
still matches: the test with head_dim 2 computes its expected value from the module's own weights,
one head at a time, with torch.nn.functional.scaled_dot_product_attention.
"""

import torch
import torch.nn.functional as F

from kata_checks import (DROPOUT_NOT_APPLIED, MASK_BUFFER_COMPLEMENT, GPT2_WITH_QKV_BIAS, OUT_PROJ_WITHOUT_BIAS, assert_does_its_own_work, creation_order, differing, GPT2_WITH_DROPOUT,
                         MASK_CHANGED_BY_FORWARD, mask_errors, MERGE_BARE_RESHAPE, NO_OUT_PROJ, not_divisible, describe,
                         SPLIT_BARE_VIEW, too_many_tokens, UNMASKED, assert_close,
                         assert_gradients_reach_every_parameter, assert_mask_buffer, assert_qkv_biases, assert_raises, call_checked,
                         call_in_float64, call_on_any_device, check_tensor, fail, journey_batch, load, scaled_by_d_out)
from kata_mistakes import (DROPOUT_BEFORE_SOFTMAX, DROPOUT_ON_THE_OUTPUT, HEAD_DIM_IS_D_OUT, HEADS_INTERLEAVED, MASK_HIDES_THE_PAST,
                           KEYS_TIMES_QUERIES, MASK_AFTER_SOFTMAX, MASKED_WITH_ZEROS, MERGED_IN_WRONG_ORDER,
                           SCALED_AFTER_SOFTMAX, SCALED_BY_D_IN_HEADS, WRONG_DIM, LAYERS_NAMED_OTHERWISE, layer_errors,
                           scale_diagnoses)

# On the CPU (call_on_any_device's GPU run says its own causes): the mask's errors, read from the student's mask, and
# a layer's, read from the student's layers.
MASK_ERRORS = [mask_errors, layer_errors]
LAYERS = ("W_query", "W_key", "W_value", "out_proj")


def _attention(mha, x, num_heads, causal=True, out_proj=True):
    """Multi-head attention from the module's own layers: head h uses features h*hd:(h+1)*hd of Q, K, V."""
    q, k, v = mha.W_query(x), mha.W_key(x), mha.W_value(x)
    hd = q.shape[-1] // num_heads
    heads = [torch.stack(y.split(hd, dim=-1), dim=1) for y in (q, k, v)]  # (b, T, d_out) -> (b, num_heads, T, hd)
    ctx = torch.cat(F.scaled_dot_product_attention(*heads, is_causal=causal).unbind(1), dim=-1)
    return mha.out_proj(ctx) if out_proj else ctx


def _expected(mha, x, call, compute=None):
    """The expected value, computed from the module's own layers (``_attention``, or ``compute(mha, x)``): a module
    without them, or whose layers cannot be applied so, fails here with what it lacks, never in this file's code."""
    absent = [name for name in LAYERS if not hasattr(mha, name)]
    if absent:
        fail(call, f"has no {', '.join(absent)}: the expected value is computed from the module's own layers",
             f"likely cause: {LAYERS_NAMED_OTHERWISE.format(names=', '.join(absent))}")
    try:
        with torch.no_grad():
            return compute(mha, x) if compute else _attention(mha, x, 2)
    except Exception as err:  # noqa: BLE001 - the student's layers: reported, with a cause where they show one
        text = f"{type(err).__name__}: {err}"
        fail(call, f"the expected value, computed from the module's own {', '.join(LAYERS)}, raised {text[:300]}",
             *[f"likely cause: {c}" for p, c in layer_errors(mha) if p in text])


def _diagnoses(mha, x, num_heads):
    """Known mistakes, recomputed from the module's own weights (none if its layers cannot be applied so)."""
    try:
        return _mistakes(mha, x, num_heads)
    except Exception:  # noqa: BLE001 - renamed or broken layers: their own checks report them
        return []


def _variant(mha, x, h, scale=None, split="slices", merge="cat", kq=False, fill=-torch.inf, dim=-1, late="", past=False):
    """Multi-head attention from the module's own layers, written out with one mistake: ``split``/``merge`` the heads
    another way, K Qᵀ (``kq``), the mask's ``fill``, the softmax's ``dim``, a ``late`` mask or scale (after the softmax),
    the mask on the ``past`` (transposed)."""
    b, t, _ = x.shape
    q, k, v = mha.W_query(x), mha.W_key(x), mha.W_value(x)
    hd = q.shape[-1] // h
    layouts = {"bare-view": lambda y: y.reshape(b, h, t, hd),
               "interleaved": lambda y: y.reshape(b, t, hd, h).permute(0, 3, 1, 2)}
    q, k, v = map(layouts.get(split, lambda y: y.reshape(b, t, h, hd).transpose(1, 2)), (q, k, v))
    scores = k @ q.transpose(2, 3) if kq else q @ k.transpose(2, 3)
    f = hd**-0.5 if scale is None else scale
    hidden = torch.ones(t, t, dtype=torch.bool).triu(1).mT if past else torch.ones(t, t, dtype=torch.bool).triu(1)
    if late == "mask":  # the softmax of every score, the future zeroed after it (not renormalized)
        w = torch.softmax(scores * f, dim=dim).masked_fill(hidden, 0.0)
    elif late == "scale":  # the softmax of the unscaled scores, the weights scaled after it
        w = torch.softmax(scores.masked_fill(hidden, fill), dim=dim) * f
    else:
        w = torch.softmax((scores * f).masked_fill(hidden, fill), dim=dim)
    ctx = w @ v  # (b, h, T, hd)
    ctx = {"interleaved": ctx.permute(0, 2, 3, 1), "bare-reshape": ctx}.get(merge, ctx.transpose(1, 2))
    return mha.out_proj(ctx.reshape(b, t, h * hd))


def _mistakes(mha, x, num_heads):
    """The grid of known mistakes on the module's own weights, each kept only where it differs from the right result
    there; mistakes that agree with each other there cannot be told apart, and assert_close says them together."""
    d_in, d_out = x.shape[-1], mha.out_proj.weight.shape[0]
    hd = d_out // num_heads
    with torch.no_grad():
        out = [*scale_diagnoses(lambda f: _variant(mha, x, num_heads, scale=f), hd, "head_dim"),
               *[(_variant(mha, x, num_heads, scale=d**-0.5), m) for d, m in
                 ((d_out, scaled_by_d_out(d_out, hd)), (d_in, SCALED_BY_D_IN_HEADS)) if d != hd],
               (_attention(mha, x, num_heads, causal=False), UNMASKED),
               (_attention(mha, x, num_heads, out_proj=False), NO_OUT_PROJ),
               (_variant(mha, x, num_heads, split="bare-view"), SPLIT_BARE_VIEW),
               (_variant(mha, x, num_heads, split="interleaved"), HEADS_INTERLEAVED),
               (_variant(mha, x, num_heads, merge="bare-reshape"), MERGE_BARE_RESHAPE),
               (_variant(mha, x, num_heads, merge="interleaved"), MERGED_IN_WRONG_ORDER),
               (_variant(mha, x, num_heads, kq=True), KEYS_TIMES_QUERIES),
               (_variant(mha, x, num_heads, fill=0.0), MASKED_WITH_ZEROS),
               (_variant(mha, x, num_heads, dim=-2), WRONG_DIM),
               (_variant(mha, x, num_heads, late="mask"), MASK_AFTER_SOFTMAX),
               (_variant(mha, x, num_heads, late="scale"), SCALED_AFTER_SOFTMAX),
               (_variant(mha, x, num_heads, past=True), MASK_HIDES_THE_PAST)]
        return differing(out, _attention(mha, x, num_heads))  # with head_dim 1, no scale is the right one


def test_multihead_attention_seed_123_matches_the_reference_values():
    m = load("multihead_attention")
    # chapter_notes_3.1-3.6.txt, section 3.6.2 runs this, but its listing has a bug (head_dim = d_out)
    # and prints nothing; exercises/documents/README.md gives the first two rows of the correct class,
    # the other rows are computed with the same class.
    row = torch.tensor(
        [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593], [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]
    )
    batch = journey_batch()
    torch.manual_seed(123)
    mha = m.MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
    call = "torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)"
    got = call_checked(mha, batch, call=call, errors=MASK_ERRORS)
    assert_close(got, torch.stack((row, row)), atol=1e-4, call=call, diagnoses=_diagnoses(mha, batch, 2),
                 shown=creation_order(mha))


def test_multihead_attention_with_head_dim_2_matches_attention_from_its_own_weights():
    m = load("multihead_attention")
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(31))  # batch 2, 5 tokens < context_length 6
    for bias in (False, True):
        mha = m.MultiHeadAttention(3, 4, 6, 0.0, num_heads=2, qkv_bias=bias)  # head_dim 2, d_in != d_out
        call = f"MultiHeadAttention(3, 4, context_length=6, dropout=0.0, num_heads=2, qkv_bias={bias})(x of shape (2, 5, 3))"
        got = call_checked(mha, x, call=call, errors=MASK_ERRORS)
        assert_close(got, _expected(mha, x, call), atol=1e-5, call=call, diagnoses=_diagnoses(mha, x, 2))
        one = call_checked(mha, x[:, :1], call=call + "[:, :1] (a single token)", errors=MASK_ERRORS)
        assert_close(one, _expected(mha, x[:, :1], call), atol=1e-5, call=f"MultiHeadAttention(...)(x[:, :1]) (a single token), qkv_bias={bias}")


def test_multihead_attention_qkv_bias_gives_the_projections_biases():
    m = load("multihead_attention")
    for bias in (True, False):
        assert_qkv_biases(m.MultiHeadAttention(3, 4, 6, 0.0, num_heads=2, qkv_bias=bias), bias,
                          call=f"MultiHeadAttention(3, 4, 6, 0.0, num_heads=2, qkv_bias={bias}).named_parameters()")


def test_multihead_attention_splits_d_out_over_the_heads_and_keeps_a_mask_buffer():
    m = load("multihead_attention")
    mha = m.MultiHeadAttention(3, 6, 5, 0.0, num_heads=2)
    got = getattr(mha, "head_dim", None)
    if got != 3:
        fail("MultiHeadAttention(3, 6, 5, 0.0, num_heads=2).head_dim", f"returned {got!r}", "expected 3 (d_out // num_heads)",
             f"likely cause: {HEAD_DIM_IS_D_OUT}" if got == 6 else "")
    assert_mask_buffer(mha, torch.ones(5, 5).triu(1), call="MultiHeadAttention(3, 6, context_length=5, dropout=0.0, num_heads=2)",
                       diagnoses=[(torch.ones(5, 5).tril(), MASK_BUFFER_COMPLEMENT)])


def test_multihead_attention_runs_on_any_device():
    """A mask made in forward without ``device=`` and mixed with the scores fails here as it would on
    a GPU (kata_checks.call_on_any_device)."""
    m = load("multihead_attention")
    mha = m.MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    call = "MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)(x of shape (2, 5, 3))"
    got = call_on_any_device(mha, torch.rand(2, 5, 3), call=call, errors=MASK_ERRORS)
    check_tensor(got, call=call, shape=(2, 5, 4))


def _attention_with_dropout(mha, x, num_heads, p, seed, where="weights", scale=None):
    """As _attention, with nn.Dropout(p)'s draws under ``seed`` on the attention weights (after the softmax), or, a
    known mistake, on the scores before the mask and softmax, the merged context, or the output; or another ``scale``."""
    b, t, _ = x.shape
    q, k, v = (torch.stack(y.split(y.shape[-1] // num_heads, dim=-1), dim=1) for y in (mha.W_query(x), mha.W_key(x), mha.W_value(x)))
    torch.manual_seed(seed)
    drop = {where: lambda y: F.dropout(y, p, training=True)}
    scores = drop.get("scores", lambda y: y)(q @ k.transpose(2, 3) * (q.shape[-1] ** -0.5 if scale is None else scale))
    weights = torch.softmax(scores.masked_fill(torch.ones(t, t).triu(1).bool(), -torch.inf), dim=-1)
    context = drop.get("context", lambda y: y)(torch.cat((drop.get("weights", lambda y: y)(weights) @ v).unbind(1), dim=-1))
    return drop.get("output", lambda y: y)(mha.out_proj(context))


def _dropout_mistakes(mha, x, expected):
    """Dropout's draws where students put them instead of on the weights, or a wrong scale, from the module's own
    layers; each kept only where it differs from the right result there."""
    try:
        with torch.no_grad():
            d_out = mha.out_proj.weight.shape[0]
            scale = [*scale_diagnoses(lambda f: _attention_with_dropout(mha, x, 2, 0.5, 5, scale=f), d_out // 2, "head_dim"),
                     (_attention_with_dropout(mha, x, 2, 0.5, 5, scale=d_out**-0.5), scaled_by_d_out(d_out, d_out // 2))]
            return differing([(_attention_with_dropout(mha, x, 2, 0.5, 5, where), cause) for where, cause in
                              (("scores", DROPOUT_BEFORE_SOFTMAX), ("context", DROPOUT_ON_THE_OUTPUT),
                               ("output", DROPOUT_ON_THE_OUTPUT))] + scale, expected)
    except Exception:  # noqa: BLE001 - broken layers: their own checks report them
        return []


def test_multihead_attention_applies_its_dropout_to_the_weights_in_training_mode_only():
    """dropout=0.5: in training mode, nn.Dropout's draws under seed 5 on the attention weights after the
    softmax; in eval mode none (the output with dropout 0)."""
    m = load("multihead_attention")
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(3))
    mha = m.MultiHeadAttention(3, 4, 6, 0.5, num_heads=2)
    call = "MultiHeadAttention(3, 4, 6, dropout=0.5, num_heads=2)"
    with torch.no_grad():
        in_eval = call_checked(mha.eval(), x, call=f"{call}.eval()(x)", errors=MASK_ERRORS)
        torch.manual_seed(5)
        in_training = call_checked(mha.train(), x, call=f"torch.manual_seed(5); {call}(x) in training mode", errors=MASK_ERRORS)
    expected = _expected(mha, x, call, lambda mha, x: _attention_with_dropout(mha, x, 2, 0.5, seed=5))
    if torch.allclose(in_training, in_eval):
        fail(f"torch.manual_seed(5); {call}(x) in training mode", "returned the same output as in eval mode",
             f"likely cause: {DROPOUT_NOT_APPLIED}")
    assert_close(in_training, expected, atol=1e-5, call=f"torch.manual_seed(5); {call}(x) in training mode",
                 diagnoses=_dropout_mistakes(mha, x, expected))
    assert_close(in_eval, _expected(mha, x, call), atol=1e-5, call=f"{call}.eval()(x)")


def test_multihead_attention_gpt2_size_has_the_documented_parameter_count():
    m = load("multihead_attention")
    # exercises/documents/README.md: MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)
    mha = m.gpt2_attention()
    got = sum(p.numel() for p in mha.parameters())
    if got != 2_360_064:
        fail("sum(p.numel() for p in gpt2_attention().parameters())", f"returned {got:,}", "expected 2,360,064",
             "4 nn.Linear(768, 768): W_query, W_key, W_value without bias, out_proj with bias",
             *[f"likely cause: {c}" for c in _bias_causes(m, mha)])


def _bias_causes(m, mha):
    """What the module's own parameters show of its biases: out_proj without one; W_query, W_key, W_value with
    them where a MultiHeadAttention of the default qkv_bias has none (so gpt2_attention() asked for them)."""
    names = {name for name, _ in mha.named_parameters()}
    qkv = any(f"{n}.bias" in names for n in ("W_query", "W_key", "W_value"))
    default = {name for name, _ in m.MultiHeadAttention(3, 4, 6, 0.0, num_heads=2).named_parameters()} if qkv else set()
    return ([OUT_PROJ_WITHOUT_BIAS] if "out_proj.weight" in names and "out_proj.bias" not in names else []) + (
        [GPT2_WITH_QKV_BIAS] if qkv and not any(f"{n}.bias" in default for n in ("W_query", "W_key", "W_value")) else [])


def test_multihead_attention_gpt2_size_has_no_dropout():
    """The docstring's dropout 0.0: in training mode (a new module's mode) gpt2_attention() gives its eval-mode output."""
    m = load("multihead_attention")
    mha = m.gpt2_attention()
    x = torch.rand(1, 8, 768, generator=torch.Generator().manual_seed(27))
    call = "gpt2_attention()(x of shape (1, 8, 768))"
    with torch.no_grad():
        in_training = call_checked(mha, x, call=call + " in training mode", errors=MASK_ERRORS)
        in_eval = call_checked(mha.eval(), x, call=call + " after .eval()", errors=MASK_ERRORS)
    check_tensor(in_training, call=call + " in training mode", shape=(1, 8, 768))
    if not torch.allclose(in_training, in_eval, atol=1e-6, rtol=0, equal_nan=True):  # NaN alike: no dropout shown
        fail(call + " in training mode", "differs from its output after .eval(): dropout acted",
             f"likely cause: {GPT2_WITH_DROPOUT}")


def test_multihead_attention_takes_a_longer_input_after_a_shorter_one():
    """The docstring's rule: the forward cuts a view of the mask for each call and never changes the buffer."""
    m = load("multihead_attention")
    mha = m.MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    x = torch.rand(2, 6, 3, generator=torch.Generator().manual_seed(32))
    built = mha.mask.detach().clone().float() if isinstance(getattr(mha, "mask", None), torch.Tensor) else None
    for t in (3, 6):
        call = f"mha(x[:, :{t}])" + (" after mha(x[:, :3])" if t == 6 else "") + " with mha = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)"
        got = call_checked(mha, x[:, :t], call=call, errors=MASK_ERRORS)
        mask = getattr(mha, "mask", None)
        if built is not None and not (isinstance(mask, torch.Tensor) and mask.shape == built.shape and torch.equal(mask.float(), built)):
            fail(call + "; then mha.mask", f"is {describe(mask)}; before the forward it was the {tuple(built.shape)} mask it was built with",
                 f"likely cause: {MASK_CHANGED_BY_FORWARD}")
        assert_close(got, _expected(mha, x[:, :t], call), atol=1e-5, call=call, diagnoses=_diagnoses(mha, x[:, :t], 2))


def test_multihead_attention_rejects_an_indivisible_d_out_and_too_many_tokens():
    m = load("multihead_attention")
    assert_raises(ValueError, m.MultiHeadAttention, 3, 6, 5, 0.0, num_heads=4,
                  call="MultiHeadAttention(3, 6, 5, 0.0, num_heads=4)", why=not_divisible)
    mha, x = m.MultiHeadAttention(3, 4, 5, 0.0, num_heads=2), torch.rand(2, 6, 3)
    assert_raises(ValueError, mha, x, call="MultiHeadAttention(3, 4, context_length=5, dropout=0.0, num_heads=2)"
                  "(x with 6 tokens)", why=lambda _: too_many_tokens(mha, x, 5))


def test_multihead_attention_moved_to_float64_computes_in_float64():
    """The README's rules: a module moved with .to(torch.float64) computes in float64."""
    m = load("multihead_attention")
    mha = m.MultiHeadAttention(3, 4, 6, 0.0, num_heads=2).to(torch.float64)
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(26), dtype=torch.float64)
    call_in_float64(lambda x: call_checked(mha, x, call="mha(x)", errors=MASK_ERRORS), x,
                    call="MultiHeadAttention(3, 4, 6, 0.0, num_heads=2).to(torch.float64)(x of shape (2, 5, 3))", shapes=[(2, 5, 4)])


def test_multihead_attention_gradients_reach_every_parameter():
    m = load("multihead_attention")
    mha = m.MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(29))
    assert_gradients_reach_every_parameter(mha, x, call="MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)(x).sum().backward()",
                                           errors=MASK_ERRORS)


def test_multihead_attention_does_its_own_work():
    """MultiHeadAttention: what the exercise asks to write by hand, no library operation may do while they run (the grader's trace)."""
    assert_does_its_own_work("multihead_attention")
