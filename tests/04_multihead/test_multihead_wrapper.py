"""Hidden tests for 04_multihead/multihead_wrapper (section 3.6.1, exercise 3.2).

COVERS: MultiHeadAttentionWrapper seeded output (seed 123, d_out=2, 2 heads: 000 3.6.1);
two_dim_wrapper seeded output (seed 123, the docs README's reference value) and shape (b, T, 2);
structure (``heads`` is torch's ModuleList of num_heads modules whose type name ends in
``.CausalAttention``); the output is the heads' outputs concatenated on the last dim; against the
reference wrapper (parameters loaded from the reference) on random inputs in float32 and float64,
with the default qkv_bias=False; qkv_bias=True in a test of its own (biases exist, output matches).
Only parameters are loaded into the student's modules (buffers left alone), so a mask that is
not a registered buffer in the student's CausalAttention is graded by 03_causal/causal_attention.
In a re-grade over the stand-in CausalAttention (tests/standins/), the expected values, the
printed ones included, come from the reference wrapper built over the same stand-in (``reference``).
Tolerances: printed atol 1e-4; vs reference atol 1e-5 (float32) / atol 1e-7 + rtol 1e-7 (float64: float32
precision, the notebook's torch.sqrt(torch.tensor(d_k)) is √d_k rounded to float32; the dtype must be float64).
"""

import pytest
import torch

from against_reference import TOLERANCE, load_reference_parameters
from kata_checks import QKV_BIAS_IGNORED, assert_close, check_tensor, fail
from reference import printed, seed_reference

P = printed()


def _printed_or_over_standins(reference, key: str, build, x: torch.Tensor) -> torch.Tensor:
    """The documents' printed value for ``key`` (one batch row, stacked twice); in a re-grade over
    stand-ins, what the reference wrapper over them gives for the same seed-123 construction."""
    if not reference.kata_standins:
        expected = P.value(key)
        return torch.stack([expected, expected])
    seed_reference(123)
    with torch.no_grad():
        return build(reference)(x)


@pytest.mark.printed
def test_wrapper_printed_seed123(impl, reference):
    """torch.manual_seed(123); MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch): 000 3.6.1; atol 1e-4."""
    impl.manual_seed(123)
    m = impl.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    expected = _printed_or_over_standins(reference, "000/3.6.1/wrapper_seed123",
                                         lambda r: r.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2), P.journey_batch())
    assert_close(m(P.journey_batch()), expected, atol=1e-4,
                 call="torch.manual_seed(123); MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)  [000 3.6.1]",
                 note="if only the seeded tests fail: create the heads in order, each a "
                      "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias), and nothing random before them")


@pytest.mark.printed
def test_two_dim_wrapper_seed123(impl, reference):
    """two_dim_wrapper(5, 8) maps (3, 7, 5) to (3, 7, 2); torch.manual_seed(123); two_dim_wrapper(3, 6)(batch) is the
    docs README's (2, 6, 2) value; atol 1e-4."""
    x = torch.randn(3, 7, 5, generator=torch.Generator().manual_seed(135))
    check_tensor(impl.two_dim_wrapper(5, 8)(x), call="two_dim_wrapper(d_in=5, context_length=8)(x of shape (3, 7, 5))",
                 shape=(3, 7, 2))
    impl.manual_seed(123)
    m = impl.two_dim_wrapper(3, 6)
    expected = _printed_or_over_standins(reference, "README/two_dim_wrapper_seed123",
                                         lambda r: r.two_dim_wrapper(3, 6), P.journey_batch())
    assert_close(m(P.journey_batch()), expected, atol=1e-4,
                 call="torch.manual_seed(123); two_dim_wrapper(d_in=3, context_length=6)(batch)  [docs README]",
                 note="two heads of d_out=1 each: MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)")


@pytest.mark.edge
def test_structure(impl):
    """heads: torch's ModuleList with num_heads entries, each a CausalAttention."""
    for num_heads in (1, 3):
        m = impl.MultiHeadAttentionWrapper(4, 2, 5, 0.0, num_heads=num_heads)
        call = f"MultiHeadAttentionWrapper(4, 2, 5, 0.0, num_heads={num_heads}).heads"
        heads = m.heads
        kind = impl.type_name(heads)
        if kind != "torch.nn.modules.container.ModuleList":
            fail(call, f"is a {kind}; expected an nn.ModuleList (a plain list hides the heads' parameters from the module)")
        if len(heads) != num_heads:
            fail(call, f"has {len(heads)} heads; expected {num_heads}")
        for i, head in enumerate(heads):
            if not impl.type_name(head).endswith(".CausalAttention"):
                fail(call + f"[{i}]", f"is a {impl.type_name(head)}; expected your CausalAttention")


@pytest.mark.edge
def test_output_is_heads_concatenated(impl):
    """wrapper(x) == torch.cat([head(x) for head in wrapper.heads], dim=-1), shape (b, T, num_heads * d_out)."""
    impl.manual_seed(131)
    m = impl.MultiHeadAttentionWrapper(4, 3, 6, 0.0, num_heads=3)
    x = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(132))
    per_head = [head(x) for head in m.heads]
    expected = torch.cat(per_head, dim=-1)
    assert_close(m(x), expected, atol=1e-6, call="MultiHeadAttentionWrapper(4, 3, 6, 0.0, num_heads=3)(x of shape (2, 5, 4))",
                 diagnoses=[(torch.stack(per_head, dim=-1).flatten(-2), "interleaved the heads' features: concatenate on dim=-1"),
                            (sum(per_head), "summed the heads' outputs: concatenate them on dim=-1")])


def _against_reference(impl, reference, dtype, qkv_bias):
    """(3, 7, 5) inputs, d_out=2, 3 heads; the reference wrapper's parameters loaded into the student's."""
    kwargs = {"qkv_bias": True} if qkv_bias else {}  # otherwise the default
    build = f"MultiHeadAttentionWrapper(5, 2, 8, 0.0, num_heads=3{', qkv_bias=True' if qkv_bias else ''})"
    seed_reference(133)
    reference = reference.MultiHeadAttentionWrapper(5, 2, 8, 0.0, num_heads=3, **kwargs).to(dtype)
    student = impl.MultiHeadAttentionWrapper(5, 2, 8, 0.0, num_heads=3, **kwargs)
    if qkv_bias:
        names = sorted(dict(student.named_parameters()))
        if not any(name.endswith(".bias") for name in names):  # qkv_bias is named only where the heads' layers are there
            fail(build + ".named_parameters()", f"has no bias: {names}",
                 f"likely cause: {QKV_BIAS_IGNORED}" if any(n.endswith("W_query.weight") for n in names) else "")
    load_reference_parameters(student, reference, call=build)
    if dtype != torch.float32:
        student = student.to(dtype)
    x = torch.randn(3, 7, 5, generator=torch.Generator().manual_seed(134), dtype=dtype)
    with torch.no_grad():
        expected = reference(x)
    assert_close(student(x), expected, **TOLERANCE[dtype], call=f"{build}(x of shape (3, 7, 5)) [{dtype}]")


@pytest.mark.core
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_random_against_reference(impl, reference, dtype):
    """(3, 7, 5) inputs, d_out=2, 3 heads, no qkv_bias (the default); the reference wrapper's parameters loaded."""
    _against_reference(impl, reference, dtype, qkv_bias=False)


@pytest.mark.core
def test_qkv_bias_against_reference(impl, reference):
    """qkv_bias=True (a test of its own: a wrapper that ignores the keyword loses this test only): the heads
    have biases, and with the reference's parameters loaded the output is the reference's (float32)."""
    _against_reference(impl, reference, torch.float32, qkv_bias=True)
