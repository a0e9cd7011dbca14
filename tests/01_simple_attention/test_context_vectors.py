"""Hidden tests for 01_simple_attention/context_vectors (sections 3.3.1-3.3.2).

COVERS: context_vector against the printed z(2) of 000, z(3) of 003 and the "Hello shiny sun"
context of 002; context_vectors against 000's z(2) (row 2) and 003's three complete printed rows;
both against the reference on random inputs (float32/float64, leading batch dims for
context_vectors), inputs never modified.
Tolerances: printed atol 1e-4, except 002 at atol 1e-3 (the article computed from rounded
intermediates: exact [0.3990, 0.3854, 0.8610]); random vs reference atol 1e-5 / 1e-10; rtol 0.
context_vector of float64 inputs may return float32 (the documents' loop adds into torch.zeros(query.shape)):
such a result is compared at atol 1e-5; context_vectors keeps the dtype (matrix products).
"""

import pytest
import torch

from against_reference import float32_loop_tolerance
from kata_checks import NO_SOFTMAX, SIMPLE_NOT_SCALED, WRONG_DIM, assert_close, assert_unchanged
from reference import printed, ref

P = printed()
REF = ref("context_vectors")


PRINTED_ONE = {
    "000-journey-z2": (P.JOURNEY, 1, "000/3.3.1/context_z2"),
    "003-random-words-z3": (P.RANDOM_WORDS, 2, "003/In7/context_z3"),
    "002-hello-shiny-sun": (P.HELLO_SHINY_SUN, 1, "002/hello_shiny_sun/context_shiny"),
}


@pytest.mark.printed
@pytest.mark.parametrize("case", PRINTED_ONE)
def test_context_vector_printed(impl, case):
    """context_vector(inputs, softmax(inputs @ inputs[q])) equals the printed context vector."""
    rows, q, key = PRINTED_ONE[case]
    inputs = torch.tensor(rows)
    weights = torch.softmax(inputs @ inputs[q], dim=0)
    got = impl.context_vector(inputs, weights)
    assert_close(got, P.value(key), atol=P.atol(key),
                 call=f"context_vector(inputs, softmax(inputs @ inputs[{q}]))  [{P.PRINTED[key]['doc']}]",
                 diagnoses=[(inputs.sum(0), "summed the inputs without weighting them"),
                             (inputs.mean(0), "averaged the inputs instead of weighting them")])


PRINTED_ALL = {
    "000-journey-row2": (P.JOURNEY, slice(1, 2), "000/3.3.1/context_z2"),
    "003-random-words-rows1to3": (P.RANDOM_WORDS, slice(0, 3), "003/In9/context_vectors_rows1to3"),
}


@pytest.mark.printed
@pytest.mark.parametrize("case", PRINTED_ALL)
def test_context_vectors_printed(impl, case):
    """Rows of context_vectors(inputs) equal the printed context vectors; atol 1e-4."""
    rows, sl, key = PRINTED_ALL[case]
    inputs = torch.tensor(rows)
    got = impl.context_vectors(inputs)
    call = f"context_vectors(inputs)[{sl.start}:{sl.stop}]  [{P.PRINTED[key]['doc']}]"
    assert_close(got[sl] if isinstance(got, torch.Tensor) and got.shape == inputs.shape else got,
                 P.value(key).reshape(sl.stop - sl.start, 3), call=call, atol=P.atol(key),
                 diagnoses=[((inputs @ inputs.T @ inputs)[sl], NO_SOFTMAX)])


@pytest.mark.core
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_context_vector_random_against_reference(impl, dtype):
    """Random (T, d) inputs and random weights that sum to 1; inputs untouched.

    float64 inputs may give a float32 result, compared at float32 tolerance (atol 1e-5): the documents' loop
    adds into ``torch.zeros(query.shape)``, which is float32 whatever the input, and nothing the student is
    given asks for float64 here. A float64 result is compared at atol 1e-10."""
    g = torch.Generator().manual_seed(31)
    for t, d in [(1, 4), (5, 3), (8, 2)]:
        inputs = torch.randn(t, d, generator=g, dtype=dtype)
        weights = torch.softmax(torch.randn(t, generator=g, dtype=dtype), 0)
        call = f"context_vector(inputs of shape ({t}, {d}), attn_weights of shape ({t},)) [{dtype}]"
        got, after = impl.call_and_inputs(impl.context_vector, inputs.clone(), weights.clone())
        assert_unchanged([inputs, weights], after, call=call, names=["inputs", "attn_weights"])
        assert_close(got, REF.context_vector(inputs, weights), call=call, **float32_loop_tolerance(got, dtype))


@pytest.mark.core
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_context_vectors_batched_against_reference(impl, dtype):
    """(T, d), (3, T, d) and (2, 2, T, d) inputs with distinct rows; inputs untouched."""
    g = torch.Generator().manual_seed(32)
    atol = 1e-5 if dtype == torch.float32 else 1e-10
    for shape in [(1, 3), (6, 4), (3, 5, 2), (2, 2, 4, 3)]:
        inputs = torch.randn(*shape, generator=g, dtype=dtype)
        call = f"context_vectors(inputs of shape {shape}) [{dtype}]"
        got, after = impl.call_and_inputs(impl.context_vectors, inputs.clone())
        assert_unchanged([inputs], after, call=call, names=["inputs"])
        scores = inputs @ inputs.transpose(-2, -1)
        assert_close(got, REF.context_vectors(inputs), call=call, atol=atol,
                     diagnoses=[(torch.softmax(scores, dim=-2) @ inputs, WRONG_DIM),
                                (torch.softmax(scores / inputs.shape[-1] ** 0.5, -1) @ inputs,
                                 SIMPLE_NOT_SCALED)])
