"""Each diagnosis checks its premise (exercises/kata_mistakes.py, kata_known.py): a cause is named only where
its alternative reproduces the student's result AND differs from the right one there, a cause that names code
only where the student's own error or objects show it, and a ``differs:`` line only what holds on every
element it speaks of. In-process, on small tensors; the student mistakes that once got the false causes run
in test_public_tests.py (their ``not_said`` words).
"""

from __future__ import annotations

import torch

from grader.authoring import known_results
from grader.visibility import redact

MISTAKES = known_results.students_module("kata_mistakes")
KNOWN = known_results.students_module("kata_known")


def _error(fn) -> str:
    text = MISTAKES.error_of(fn)
    assert text is not None, "the reproduction raised nothing"
    return text


def test_a_scale_of_one_over_root_1_and_an_alternative_equal_to_the_right_result_name_nothing():
    assert MISTAKES.scale_diagnoses(lambda s: torch.ones(2) * s, 1) == []
    assert len(MISTAKES.scale_diagnoses(lambda s: torch.ones(2) * s, 4)) == 3
    right = torch.tensor([1.0, 2.0])
    kept = MISTAKES.differing([(right.clone(), "same"), (right * 2, "double"), (torch.ones(3), "other shape")], right)
    assert [message for _, message in kept] == ["double", "other shape"]


def test_dot_T_is_named_only_for_the_error_dot_T_raises_and_a_swap_of_axes_0_and_1_for_its_own():
    x = torch.rand(2, 5, 3)
    pairs = dict(MISTAKES.transpose_errors(x, x))
    assert pairs[_error(lambda: x @ x.T)] == MISTAKES.BATCH_DOT_T
    assert pairs[_error(lambda: x @ x.transpose(0, 1))] == MISTAKES.AXES_0_1_SWAPPED
    square = torch.rand(3, 3, 3)  # .T and a swap of axes 0 and 1 raise nothing here: nothing to name
    assert not {MISTAKES.BATCH_DOT_T, MISTAKES.AXES_0_1_SWAPPED} & set(dict(MISTAKES.transpose_errors(square, square)).values())


def test_torch_dot_is_blamed_only_for_the_error_it_raises_on_a_batch_and_torch_sqrt_for_its_int():
    """heldout_probes_12b's p02 and p09: the cause is named for the very error text, never for another one."""
    x, matrix = torch.rand(2, 5, 3), torch.rand(5, 3)
    pairs = dict(MISTAKES.transpose_errors(x, x))
    assert pairs[_error(lambda: torch.dot(x[0], x[1]))] == MISTAKES.DOT_ON_A_BATCH
    assert pairs[_error(lambda: torch.sqrt(x.shape[-1]))] == MISTAKES.SQRT_OF_AN_INT
    assert MISTAKES.DOT_ON_A_BATCH not in dict(MISTAKES.transpose_errors(matrix, matrix)).values()  # a matrix's rows are 1-D
    assert not any(p in _error(lambda: torch.dot(x[0, 0], x[0, 0, :2])) for p in pairs)  # two vectors of unequal size


class _Attention(torch.nn.Module):
    def __init__(self, context_length: int, num_heads: int | None = None):
        super().__init__()
        self.register_buffer("mask", torch.ones(context_length, context_length).triu(1))
        if num_heads is not None:
            self.num_heads = num_heads


def test_the_mask_is_blamed_only_from_its_own_shape_and_the_error_it_gives():
    x = torch.rand(2, 5, 3)
    uncut = _error(lambda: torch.zeros(2, 5, 5).masked_fill(torch.ones(6, 6).bool(), 0.0))
    by_batch = _error(lambda: torch.zeros(2, 6, 6).masked_fill(torch.ones(2, 2).bool(), 0.0))
    assert dict(MISTAKES.mask_errors(_Attention(6), x))[uncut] == MISTAKES.MASK_NOT_CUT
    full = dict(MISTAKES.mask_errors(_Attention(6), torch.rand(2, 6, 3)))  # T = context_length: no cut needed
    assert MISTAKES.MASK_NOT_CUT not in full.values() and full[by_batch] == MISTAKES.TOKENS_FROM_BATCH
    heads = dict(MISTAKES.mask_errors(_Attention(6, num_heads=2), x))
    assert heads[_error(lambda: torch.zeros(2, 2, 5, 5).masked_fill(torch.ones(6, 6).bool(), 0.0))] == MISTAKES.MASK_NOT_CUT
    assert MISTAKES.mask_errors(torch.nn.Linear(3, 3), x) == []  # no mask: nothing to blame
    assert MISTAKES.mask_errors(_Attention(6), torch.rand(6, 6, 6)) == []  # batch = T = d_in = context_length: no wrong cut
    by_features = _error(lambda: torch.zeros(2, 5, 5).masked_fill(torch.ones(3, 3).bool(), 0.0))  # cut to d_in = 3
    assert dict(MISTAKES.mask_errors(_Attention(6), x))[by_features] == MISTAKES.TOKENS_FROM_FEATURES


def test_too_many_tokens_names_the_batch_axis_only_when_the_module_refuses_a_batch_of_one_token_inputs():
    def counts_the_batch(x):
        if x.shape[0] > 4:
            raise ValueError("too many")
        return x

    x = torch.rand(1, 5, 3)
    assert MISTAKES.too_many_tokens(counts_the_batch, x, 4) == MISTAKES.TOKENS_FROM_BATCH
    assert MISTAKES.too_many_tokens(lambda x: x, x, 4) == MISTAKES.TOO_MANY_TOKENS


def test_a_differs_line_says_only_what_holds_on_every_element():
    expected = torch.tril(torch.ones(4, 4))
    complement = KNOWN.differences(1 - expected, expected)
    assert not any("constant factor" in d for d in complement) and any("the complement" in d for d in complement)
    assert any("× 2 everywhere" in d for d in KNOWN.differences(2 * expected, expected))
    almost = 2 * expected
    almost[0, 3] = 1.0  # twice the expected value but where the expected value is 0
    assert not any("constant factor" in d for d in KNOWN.differences(almost, expected))


def test_not_assert_is_said_only_to_an_assert():
    assert MISTAKES.not_divisible(AssertionError("d_out must be divisible")) == MISTAKES.NOT_DIVISIBLE
    for raised in (None, RuntimeError("shape '[1, 2, 2, 2]' is invalid for input of size 10")):
        assert MISTAKES.not_divisible(raised) == MISTAKES.DIVISIBILITY_NOT_CHECKED
        assert "assert" not in MISTAKES.not_divisible(raised)
    nan = torch.tensor([float("nan"), 1.0, 2.0])
    assert not KNOWN.differences(torch.tensor([float("nan"), 1.0, 2.0 + 1e-7]), nan)  # no "× 1": it holds nowhere new
    assert not any("constant factor" in d for d in KNOWN.differences(torch.tensor([3.0, 2.0, 4.0]), nan))


def test_the_attention_grid_recomputes_each_slip_and_leaves_out_one_that_equals_the_right_result_or_cannot_run():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.rand(2, 4, 3, generator=g) for _ in range(3))
    hide = torch.ones(4, 4, dtype=torch.bool).triu(1)

    def attention(mask, values=v):
        return torch.softmax((q @ k.mT).masked_fill(mask, -torch.inf) / 3**0.5, -1) @ values

    grid = {message: alt for alt, message in MISTAKES.attention_grid(q, k, v, 3**-0.5, hide)}
    assert torch.allclose(grid[MISTAKES.MASK_HIDES_THE_PAST], attention(hide.mT))
    assert torch.isnan(grid[MISTAKES.MASK_HIDES_THE_DIAGONAL][:, 0]).all()  # token 0 sees nothing: NaN, as the student's
    assert torch.allclose(grid[MISTAKES.VALUES_FROM_KEYS], attention(hide, k))
    same = MISTAKES.differing(MISTAKES.attention_grid(q, k, k, 3**-0.5, hide), attention(hide, k))
    assert MISTAKES.VALUES_FROM_KEYS not in [m for _, m in same]  # the values are the keys: no slip there
    wide = MISTAKES.attention_grid(torch.rand(2, 3, 4), torch.rand(2, 5, 4), torch.rand(2, 5, 7), 0.5)
    assert MISTAKES.KEYS_TIMES_QUERIES not in [m for _, m in wide]  # K Qᵀ cannot meet values of 5 tokens: left out


def test_an_alternative_of_another_shape_is_named_only_for_a_result_of_its_own_shape_and_values():
    alternatives = [(torch.ones(2, 3), "same"), (torch.ones(3, 2), "transposed"), (torch.zeros(2, 3), "other values")]
    assert MISTAKES.reshaped(torch.ones(2, 3), alternatives) == ["same"]
    assert MISTAKES.reshaped("not a tensor", alternatives) == []


def test_permute_of_three_axes_is_named_only_for_the_error_it_raises_on_a_matrix():
    x = torch.rand(6, 3)
    assert dict(MISTAKES.transpose_errors(x, x))[_error(lambda: x @ x.permute(0, 2, 1))] == MISTAKES.PERMUTED_THREE_AXES
    batch = torch.rand(2, 5, 3)  # permute(0, 2, 1) is right on a batch: nothing to name
    assert MISTAKES.PERMUTED_THREE_AXES not in dict(MISTAKES.transpose_errors(batch, batch)).values()


class _Heads(torch.nn.Module):
    def __init__(self, out_in: int = 4, query_in: int = 3, listed: list | None = None):
        super().__init__()
        self.W_query, self.out_proj = torch.nn.Linear(query_in, 4), torch.nn.Linear(out_in, 4)
        self.kept = listed if listed is not None else []


def test_no_gradient_is_blamed_on_the_parameters_that_show_it():
    module, x = torch.nn.Linear(3, 2), torch.rand(2, 3)
    assert MISTAKES.gradient_causes(module, module(x)) == []  # a graph: nothing to explain
    assert MISTAKES.gradient_causes(module, module(x).detach()) == [MISTAKES.NO_GRADIENT]
    module.bias.requires_grad_(False)
    assert MISTAKES.gradient_causes(module, None, ["bias"]) == [f"bias: {MISTAKES.PARAMETERS_FROZEN}"]
    module.weight.requires_grad_(False)
    causes = MISTAKES.gradient_causes(module, module(x))  # every parameter frozen: no graph, and no cut to blame
    assert causes == [f"weight, bias: {MISTAKES.PARAMETERS_FROZEN}"]


def test_a_layer_is_blamed_for_mat1_and_mat2_only_where_its_own_size_is_wrong():
    x = torch.rand(2, 5, 3)
    assert MISTAKES.layer_errors(_Heads(), x) == []  # out_proj square, W_query from d_in: the input is to blame
    (pattern, cause), = MISTAKES.layer_errors(_Heads(out_in=2), x)
    error = MISTAKES.error_of(lambda: _Heads(out_in=2).out_proj(torch.rand(10, 4)))
    assert pattern in error and cause.startswith("out_proj: nn.Linear(2, 4)") and "nn.Linear(d_out, d_out)" in cause
    (pattern, cause), = MISTAKES.layer_errors(_Heads(query_in=4), x)
    assert pattern == " and 4x4)" and cause.startswith("W_query: nn.Linear(4, 4)") and "d_in = 3" in cause
    plain = dict(MISTAKES.layer_errors(_Heads(listed=[torch.nn.Linear(3, 3)]), x))
    assert plain == {"same dtype": MISTAKES.MODULES_IN_A_PLAIN_LIST}
    assert MISTAKES.layer_errors(_Heads(listed=[torch.nn.ReLU(), 3]), x) == []  # no parameters left behind by .to()
    merged = _Heads()
    merged.head_dim = 2  # a right out_proj given the heads unmerged: blamed on the merge, not on its size
    assert dict(MISTAKES.layer_errors(merged, x)) == {"x2 and 4x4)": MISTAKES.OUT_PROJ_BEFORE_MERGE}


def test_causes_that_reproduce_one_result_are_said_together_never_one_alone():
    """Two alternatives that give the student's result both hold there (scaled by 1/√d_out, divided by head_dim = 2
    with d_out 4 and 2 heads): one line says them together, each once, so neither reads as the code's."""
    joined = MISTAKES.together(["a", MISTAKES.SAME_RESULT + "b; or a", "c"])
    assert joined == [MISTAKES.SAME_RESULT + "a; or b; or c"]
    assert MISTAKES.together(["a", "a"]) == ["a"] and MISTAKES.together([]) == []
    # --visibility messages keeps the kata's own words of such a line whole (0.5 in DIVIDED_BY_D_K), redacts the rest
    joined = [f"  likely cause: {MISTAKES.together([MISTAKES.DIVIDED_BY_D_K, s])[0]}" for s in ("scaled by 0.25", "x is [0.1, 0.2]")]
    assert [redact(j, "messages") for j in joined] == [j.replace("0.25", "…").replace("[0.1, 0.2]", "[…]") for j in joined]


def test_dropout_is_told_of_its_bounds_only_when_it_raises_there_and_takes_an_inner_p():
    def strict(x, p):
        if not 0 < p < 1:
            raise ValueError(f"p = {p}")
        return x

    def refuses_all(x, p):
        raise ValueError(f"p = {p}")

    x = torch.ones(3)
    assert MISTAKES.bound_refused(strict, x, 1.0) == MISTAKES.bound_refused(strict, x, 0.0) == [("ValueError:", MISTAKES.P_BOUND_REFUSED)]
    assert MISTAKES.bound_refused(strict, x, 1.5) == [] and MISTAKES.bound_refused(refuses_all, x, 0.0) == []
