"""Public tests for normalization (01_simple_attention, section 3.3.1).

Run ``pytest exercises/01_simple_attention/test_normalization.py`` or ``pytest exercises -k normalization``.
Expected values are the tensors printed in exercises/documents/chapter_notes_3.1-3.6.txt (document
paths in the kata are relative to the repository root), or computed here with torch.softmax.
"""

import torch

from kata_checks import (assert_does_its_own_work, DIM_IGNORED, NO_KEEPDIM, NO_MAX_SHIFT, WHOLE_TENSOR, error_of, assert_close,
                         assert_softmax_has_no_nan, call_checked, call_in_float64, journey_inputs, load)

# chapter_notes_3.1-3.6.txt, section 3.3.1: the scores of query x(2) = "journey"
SCORES_2 = torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])


def _matrix(rows: int, cols: int, seed: int) -> torch.Tensor:
    return torch.rand(rows, cols, generator=torch.Generator().manual_seed(seed)) * 2 + 0.1


def test_normalization_normalize_by_sum_of_journey_scores():
    m = load("normalization")
    # chapter_notes_3.1-3.6.txt, section 3.3.1 (the tip lists both results; this is the sum-normalized one)
    expected = torch.tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])
    assert_close(m.normalize_by_sum(SCORES_2), expected, atol=1e-4, call="normalize_by_sum(scores of 'journey')")


def test_normalization_normalize_by_sum_of_a_matrix_along_each_dim():
    m = load("normalization")
    for shape, seed in [((3, 3), 1), ((2, 3), 2)]:
        scores = _matrix(*shape, seed)
        for dim in (-1, 0):
            call = f"normalize_by_sum(scores of shape {shape}, dim={dim})"
            got = call_checked(m.normalize_by_sum, scores, dim, call=call,
                               errors=[(error_of(lambda: scores / scores.sum(dim)), NO_KEEPDIM)])
            diagnoses = [(scores / scores.sum(-1 - dim, keepdim=True), DIM_IGNORED), (scores / scores.sum(), WHOLE_TENSOR)]
            if shape[0] == shape[1]:  # square: the sum without keepdim broadcasts silently
                diagnoses.append((scores / scores.sum(dim), NO_KEEPDIM))
            assert_close(got, scores / scores.sum(dim, keepdim=True), atol=1e-6, call=call, diagnoses=diagnoses)


def test_normalization_softmax_naive_of_journey_scores():
    m = load("normalization")
    # chapter_notes_3.1-3.6.txt, section 3.3.1: "tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])"
    expected = torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
    assert_close(m.softmax_naive(SCORES_2), expected, atol=1e-4, call="softmax_naive(scores of 'journey')")


def test_normalization_softmax_naive_along_each_dim():
    m = load("normalization")
    scores = _matrix(3, 4, 3)
    for dim in (0, 1, -1):
        call = f"softmax_naive(scores of shape (3, 4), dim={dim})"
        got = call_checked(m.softmax_naive, scores, dim, call=call, errors=[(error_of(lambda: scores / scores.sum(dim)), NO_KEEPDIM)])
        exp = torch.exp(scores)
        assert_close(got, torch.softmax(scores, dim), atol=1e-6, call=call,
                     diagnoses=[(torch.softmax(scores, 1 if dim == 0 else 0), DIM_IGNORED),
                                (exp / exp.sum(), WHOLE_TENSOR)])


def test_normalization_softmax_stable_survives_large_scores_and_minus_infinity():
    m = load("normalization")
    scores = torch.tensor([1000.0, 1000.0, -float("inf")])
    got = m.softmax_stable(scores)
    assert_close(got, torch.tensor([0.5, 0.5, 0.0]), atol=1e-6, call="softmax_stable(tensor([1000., 1000., -inf]))",
                 note=NO_MAX_SHIFT)


def test_normalization_softmax_stable_subtracts_each_row_s_own_maximum():
    m = load("normalization")
    # The maxima of the rows differ by orders of magnitude: subtracting the maximum of the whole
    # tensor (1000) leaves exp(0 - 1000) = 0 for every entry of the second row.
    scores = torch.tensor([[1000.0, 999.0], [0.0, -1.0]])
    for dim, s in [(-1, scores), (0, scores.T)]:
        call = f"softmax_stable(tensor({s.tolist()}), dim={dim})"
        got = m.softmax_stable(s, dim)
        assert_softmax_has_no_nan(got, s, dim=dim, call=call)
        unaligned = torch.exp(s - s.amax(dim))  # the max without keepdim=True, broadcast along the other axis
        assert_close(got, torch.softmax(s, dim), atol=1e-6, call=call,
                     diagnoses=[(torch.softmax(s, 1 + dim), DIM_IGNORED), (unaligned / unaligned.sum(dim, keepdim=True), NO_KEEPDIM)])


def test_normalization_softmax_stable_works_row_by_row():
    m = load("normalization")
    # chapter_notes_3.1-3.6.txt, section 3.3.2: torch.softmax(attn_scores, dim=-1), first two rows
    expected = torch.tensor(
        [[0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452], [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]]
    )
    inputs = journey_inputs()
    scores = inputs @ inputs.T
    got = m.softmax_stable(scores, dim=-1)
    assert_close(got[:2] if isinstance(got, torch.Tensor) and got.dim() == 2 else got, expected, atol=1e-4,
                 call="softmax_stable(inputs @ inputs.T, dim=-1)[:2]  [chapter_notes_3.1-3.6.txt, 3.3.2]",
                 diagnoses=[(torch.softmax(scores, 0)[:2], DIM_IGNORED), (torch.softmax(scores - scores.amax(-1), -1)[:2], NO_KEEPDIM)])


def test_normalization_keeps_float64_and_leaves_the_scores_unchanged():
    """The README's rules: the input's dtype kept, no argument modified in place."""
    m = load("normalization")
    scores = torch.rand(2, 3, 4, generator=torch.Generator().manual_seed(15), dtype=torch.float64) + 0.1
    for name in ("normalize_by_sum", "softmax_naive", "softmax_stable"):
        for dim in (-1, 0):
            call_in_float64(getattr(m, name), scores, dim, call=f"{name}(scores of shape (2, 3, 4), dim={dim}) [float64]",
                            shapes=[(2, 3, 4)], unchanged=["scores"])


def test_normalization_does_its_own_work():
    """softmax_naive, softmax_stable: what the exercise asks to write by hand, no library operation may do while they run (the grader's trace)."""
    assert_does_its_own_work("normalization")
