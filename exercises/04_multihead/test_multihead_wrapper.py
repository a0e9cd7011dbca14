"""Public tests for multihead_wrapper (04_multihead, section 3.6.1).

Run ``pytest exercises/04_multihead/test_multihead_wrapper.py`` or ``pytest exercises -k multihead_wrapper``.
Expected values are the tensors printed in exercises/documents/chapter_notes_3.1-3.6.txt or, where the
documents print nothing, the reference values listed in exercises/documents/README.md (document paths
in the kata are relative to the repository root). The wrapper builds on your
03_causal/causal_attention.py: finish that one first.
"""

import torch

from kata_checks import (assert_does_its_own_work, creation_order, QKV_BIAS_IGNORED, assert_close, call_in_float64,
                         call_checked, call_on_any_device, check_tensor, fail, journey_batch, load)
from kata_mistakes import HEADS_REVERSED, differing, layer_errors


def _diagnoses(mha, x):
    """Known mistakes recomputed from the wrapper's own heads (the heads concatenated in reverse order), each kept only
    where it differs from the heads concatenated in order (one head, or heads alike, show nothing)."""
    try:
        with torch.no_grad():
            outs = [head(x) for head in mha.heads]
            return differing([(torch.cat(outs[::-1], dim=-1), HEADS_REVERSED)], torch.cat(outs, dim=-1))
    except Exception:  # noqa: BLE001 - heads that cannot be run so: their own tests report them
        return []


def test_multihead_wrapper_seed_123_matches_the_document():
    m = load("multihead_wrapper")
    # chapter_notes_3.1-3.6.txt, section 3.6.1: context_vecs of MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    row = torch.tensor(
        [[-0.4519, 0.2216, 0.4772, 0.1063], [-0.5874, 0.0058, 0.5891, 0.3257], [-0.6300, -0.0632, 0.6202, 0.3860],
         [-0.5675, -0.0843, 0.5478, 0.3589], [-0.5526, -0.0981, 0.5321, 0.3428], [-0.5299, -0.1081, 0.5077, 0.3493]]
    )
    torch.manual_seed(123)
    mha = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    batch = journey_batch()
    assert_close(mha(batch), torch.stack((row, row)), atol=1e-4, shown=creation_order(mha), diagnoses=_diagnoses(mha, batch),
                 call="torch.manual_seed(123); MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)")


def test_multihead_wrapper_holds_its_heads_in_a_module_list():
    m = load("multihead_wrapper")
    mha = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3)
    heads = getattr(mha, "heads", None)
    if not (isinstance(heads, torch.nn.ModuleList) and len(heads) == 3):
        fail("MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3).heads", f"returned {heads!r:.200}",
             "expected an nn.ModuleList of 3 CausalAttention modules (a plain list hides them from .parameters() and .to())")
    for i, head in enumerate(heads):
        if type(head).__name__ != "CausalAttention":
            fail(f"MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3).heads[{i}]",
                 f"is a {type(head).__module__}.{type(head).__qualname__}; expected your CausalAttention")


def test_multihead_wrapper_runs_on_any_device():
    """Moved to a GPU (simulated: kata_checks.call_on_any_device), the wrapper and its heads compute what
    they compute on the CPU: a head whose mask stays on the CPU fails here, as it would on a GPU."""
    m = load("multihead_wrapper")
    mha = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    call = "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(x of shape (2, 5, 3))"
    got = call_on_any_device(mha, torch.rand(2, 5, 3), call=call)
    check_tensor(got, call=call, shape=(2, 5, 4))


def test_multihead_wrapper_passes_qkv_bias_to_every_head():
    """Each head's W_query, W_key and W_value have a bias exactly when qkv_bias says so. The cause is named only
    when your CausalAttention itself honours qkv_bias (its own test checks that) and the heads are there."""
    m = load("multihead_wrapper")
    for bias in (True, False):
        call = f"MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2, qkv_bias={bias})"
        heads = list(getattr(m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2, qkv_bias=bias), "heads", None) or [])
        if len(heads) != 2:
            fail(call + ".heads", f"holds {len(heads)} heads; expected 2 (see test_multihead_wrapper_holds_its_heads_in_a_module_list)")
        own = load("causal_attention").CausalAttention(3, 2, 6, 0.0, qkv_bias=bias)
        for i, head in enumerate(heads):
            wrong = [n for n in NAMES if _has_bias(head, n) != bias]
            if wrong:
                honoured = all(_has_bias(own, n) == bias for n in NAMES)
                fail(f"{call}.heads[{i}]", f"{', '.join(wrong)}: {'no bias' if bias else 'a bias'}; expected "
                     f"{'a bias' if bias else 'none'}", f"likely cause: {QKV_BIAS_IGNORED}" if honoured else
                     f"differs: your CausalAttention(3, 2, 6, 0.0, qkv_bias={bias}) itself gets it wrong (its own tests say why)")


NAMES = ("W_query", "W_key", "W_value")


def _has_bias(module, name: str) -> bool:
    return getattr(getattr(module, name, None), "bias", None) is not None


def test_multihead_wrapper_two_dim_wrapper_returns_two_dimensional_embeddings():
    m = load("multihead_wrapper")
    # Exercise 3.2 of chapter_notes_3.1-3.6.txt, section 3.6.1 ("d_out = 1"); values from exercises/documents/README.md
    row = torch.tensor(
        [[-0.5740, 0.2216], [-0.7320, 0.0155], [-0.7774, -0.0546], [-0.6979, -0.0817], [-0.6538, -0.0957], [-0.6424, -0.1065]]
    )
    torch.manual_seed(123)
    mha = m.two_dim_wrapper(3, 6)
    batch = journey_batch()
    assert_close(mha(batch), torch.stack((row, row)), atol=1e-4, call="torch.manual_seed(123); two_dim_wrapper(3, 6)(batch)",
                 diagnoses=_diagnoses(mha, batch))


def test_multihead_wrapper_moved_to_float64_computes_in_float64():
    """The README's rules: a module moved with .to(torch.float64) computes in float64."""
    m = load("multihead_wrapper")
    mha = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2).to(torch.float64)
    x = torch.rand(2, 5, 3, generator=torch.Generator().manual_seed(25), dtype=torch.float64)
    call = "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2).to(torch.float64)(x of shape (2, 5, 3))"
    call_in_float64(lambda x: call_checked(mha, x, call=call, errors=[layer_errors]), x, call=call, shapes=[(2, 5, 4)])


def test_multihead_wrapper_does_its_own_work():
    """MultiHeadAttentionWrapper: what the exercise asks to write by hand, no library operation may do while they run (the grader's trace)."""
    assert_does_its_own_work("multihead_wrapper")
