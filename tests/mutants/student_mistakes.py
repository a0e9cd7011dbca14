"""Realistic student mistakes that the PUBLIC tests must catch, each with the diagnosis they must show.

Each entry is a patch to one reference solution, in the format of ``grader/authoring/mutation.py`` (``name``,
``exercise``, ``replace``, which must occur exactly once in ``solutions/<exercise>.py``, and ``with``),
with what the public tests must do once it is applied: ``exercises/<group>/test_<module>.py`` (the
whole group's folder when ``run`` is ``"group"``) must fail the test ``expect_test`` with a message
containing ``expect_message``; every test whose name starts with one of ``expect_passed`` must still
pass. ``grader/tests/test_public_tests.py`` proves it for every entry.

Like the mutants (mutants.py), an entry may name its ``cause`` (a message of exercises/kata_mistakes.py, or
the text): then it is a known mistake whose results the public tests keep (grader/authoring/known_results.py)
and name when a student's result reproduces them. ``also_named``: other "likely cause:" lines its runs may
show, each right for it (an exact check that names the same mistake in other words). Every "likely cause:"
line of an entry's failing tests must contain its ``cause``, its ``expect_message`` or one of these.
``not_said``: words no failing test of its run may say: a false cause the tests once printed for it (named on
its symptom, not its premise), or a test's own crash on the student's object.
"""

from __future__ import annotations

import runpy
from pathlib import Path

# W_query, W_key, W_value as SelfAttention_v2, CausalAttention and MultiHeadAttention create them.
THREE_LINEARS = ("self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                 "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                 "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)")

MISTAKES: list[dict] = [
    {
        "name": "attention_score_matrix_preallocated_in_float32",
        "exercise": "01_simple_attention/attention_scores",
        "replace": "return inputs @ inputs.transpose(-2, -1)",
        "with": "scores = torch.empty(*inputs.shape[:-1], inputs.shape[-2])\n"
                "    scores[...] = inputs @ inputs.transpose(-2, -1)\n"
                "    return scores",
        "expect_test": "test_attention_scores_keep_float64_and_leave_their_inputs_unchanged",
        "expect_message": "keep the input's dtype",
    },
    {
        "name": "softmax_naive_ignores_dim",
        "cause": "DIM_IGNORED",
        "exercise": "01_simple_attention/normalization",
        "replace": "exp = torch.exp(scores)\n    return exp / exp.sum(dim=dim, keepdim=True)",
        "with": "exp = torch.exp(scores)\n    return exp / exp.sum(dim=-1, keepdim=True)",
        "expect_test": "test_normalization_softmax_naive_along_each_dim",
        "expect_message": "the dim argument is ignored",
    },
    {
        "name": "normalize_by_sum_without_keepdim",
        "cause": "NO_KEEPDIM",
        "exercise": "01_simple_attention/normalization",
        "replace": "return scores / scores.sum(dim=dim, keepdim=True)",
        "with": "return scores / scores.sum(dim=dim)",
        "expect_test": "test_normalization_normalize_by_sum_of_a_matrix_along_each_dim",
        "expect_message": "without keepdim=True: it has one dimension fewer",
    },
    {
        "name": "softmax_stable_subtracts_the_global_max",
        "cause": "GLOBAL_MAX",
        "exercise": "01_simple_attention/normalization",
        "replace": "shifted = scores - scores.amax(dim=dim, keepdim=True)",
        "with": "shifted = scores - scores.max()",
        "expect_test": "test_normalization_softmax_stable_subtracts_each_row_s_own_maximum",
        "expect_message": "subtracted the maximum of the whole tensor, not each row's own",
    },
    {
        "name": "context_vectors_softmax_over_columns",
        "cause": "WRONG_DIM",
        "exercise": "01_simple_attention/context_vectors",
        "replace": "attn_weights = torch.softmax(attn_scores, dim=-1)",
        "with": "attn_weights = torch.softmax(attn_scores, dim=-2)",
        "expect_test": "test_context_vectors_keep_a_batch_dimension",
        "expect_message": "softmax over the wrong dim",
    },
    {
        "name": "self_attention_v2_keys_dot_T",
        "cause": "BATCH_DOT_T",
        "exercise": "02_trainable_weights/self_attention",
        "replace": "keys = self.W_key(x)\n        queries = self.W_query(x)\n        values = self.W_value(x)\n"
                   "        attn_scores = queries @ keys.transpose(-2, -1)",
        "with": "keys = self.W_key(x)\n        queries = self.W_query(x)\n        values = self.W_value(x)\n"
                "        attn_scores = queries @ keys.T",
        "expect_test": "test_self_attention_v1_and_v2_keep_a_batch_dimension",
        "expect_message": ".T on a batch",
    },
    {
        "name": "self_attention_v2_ignores_qkv_bias",
        "exercise": "02_trainable_weights/self_attention",
        "replace": THREE_LINEARS,
        "with": THREE_LINEARS.replace("bias=qkv_bias", "bias=False"),
        "expect_test": "test_self_attention_parameters_have_the_documented_shapes",
        "expect_message": "qkv_bias is ignored",
    },
    {
        "name": "self_attention_v1_keys_through_data",
        "exercise": "02_trainable_weights/self_attention",
        "replace": "keys = x @ self.W_key\n",
        "with": "keys = x @ self.W_key.data\n",
        "expect_test": "test_self_attention_gradients_reach_every_parameter",
        "expect_message": "keep the forward differentiable",
    },
    {
        "name": "copy_v2_to_v1_aliases",
        "exercise": "02_trainable_weights/weight_transfer",
        "replace": "getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)",
        "with": "getattr(sa_v1, name).data = getattr(sa_v2, name).weight.data.T",
        "expect_test": "test_weight_transfer_copies_values_into_the_existing_parameters",
        "expect_message": "share storage (aliases)",
    },
    {
        "name": "copy_v2_to_v1_reshape_not_transpose",
        "cause": "COPY_NOT_TRANSPOSED",
        "exercise": "02_trainable_weights/weight_transfer",
        "replace": "getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)",
        "with": "getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.reshape(getattr(sa_v1, name).shape))",
        "expect_test": "test_weight_transfer_v2_to_v1_makes_both_compute_the_same",
        "expect_message": "copied without transposing",
    },
    {
        "name": "copy_v1_to_v2_keeps_bias",
        "exercise": "02_trainable_weights/weight_transfer",
        "replace": "if linear.bias is not None:\n                linear.bias.zero_()",
        "with": "pass",
        "expect_test": "test_weight_transfer_v1_to_v2_with_biases_makes_both_compute_the_same",
        "expect_message": "set v2's biases to zero",
    },
    {
        "name": "copy_v2_to_v1_without_checking_shapes_first",
        "exercise": "02_trainable_weights/weight_transfer",
        "replace": "if linear.weight.T.shape != param.shape:",
        "with": "if False:",
        "expect_test": "test_weight_transfer_refuses_what_cannot_be_copied_and_copies_nothing",
        "expect_message": "check every shape (and bias) first, then copy",
    },
    {
        "name": "mask_future_scores_without_device",
        "exercise": "03_causal/causal_mask",
        "replace": "dtype=torch.bool, device=attn_scores.device)",
        "with": "dtype=torch.bool)",
        "expect_test": "test_causal_mask_functions_work_on_a_batch_on_any_device",
        "expect_message": "created on the CPU (no device=)",
    },
    {
        "name": "causal_attention_weights_masks_the_scores_in_place",
        "exercise": "03_causal/causal_mask",
        "replace": "return torch.softmax(mask_future_scores(attn_scores) / d_k**0.5, dim=-1)",
        "with": "num_tokens = attn_scores.shape[-1]\n"
                "    attn_scores.masked_fill_(torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=attn_scores.device), 1), "
                "-torch.inf)\n"
                "    return torch.softmax(attn_scores / d_k**0.5, dim=-1)",
        "expect_test": "test_causal_mask_functions_keep_float64_and_leave_their_inputs_unchanged",
        "expect_message": "an in-place operation on 'attn_scores'",
    },
    {
        "name": "dropout_keeps_with_probability_p",
        "cause": "KEEP_PROB_SWAPPED",
        "exercise": "03_causal/attention_dropout",
        "replace": "keep = torch.empty_like(x).bernoulli_(1 - p)",
        "with": "keep = torch.empty_like(x).bernoulli_(p)",
        "expect_test": "test_attention_dropout_keeps_a_fraction_1_minus_p_scaled_by_1_over_1_minus_p",
        "expect_message": "drew the keep-mask with bernoulli_(p)",
        "expect_passed": ["test_attention_dropout_drops_what_nn_dropout_drops"],
    },
    {
        "name": "dropout_in_place",
        "exercise": "03_causal/attention_dropout",
        "replace": "return x * keep.div_(1 - p)",
        "with": "return x.mul_(keep.div_(1 - p))",
        "expect_test": "test_attention_dropout_keeps_float64_and_leaves_x_unchanged",
        "expect_message": "an in-place operation on 'x'",
    },
    {
        "name": "dropout_nan_at_p_one",
        "cause": "NAN_AT_P1",
        "exercise": "03_causal/attention_dropout",
        "replace": "    if p == 1.0:\n        return torch.zeros_like(x)\n",
        "with": "",
        "expect_test": "test_attention_dropout_drops_everything_at_p_one",
        "expect_message": "divided by 1 - p = 0 at p = 1",
    },
    {
        "name": "dropout_negative_p_wrong_exception",
        "exercise": "03_causal/attention_dropout",
        "replace": "if not 0.0 <= p <= 1.0:",
        "with": "if p > 1.0:",
        "expect_test": "test_attention_dropout_rejects_a_probability_outside_0_and_1[-0.1]",
        "expect_message": "check that 0 <= p <= 1 first",
    },
    {
        "name": "causal_attention_ignores_qkv_bias",
        "exercise": "03_causal/causal_attention",
        "replace": THREE_LINEARS,
        "with": THREE_LINEARS.replace("bias=qkv_bias", "bias=False"),
        "expect_test": "test_causal_attention_qkv_bias_gives_the_projections_biases",
        "expect_message": "qkv_bias is ignored",
    },
    {
        "name": "causal_attention_never_applies_dropout",
        "cause": "DROPOUT_NOT_APPLIED",
        "exercise": "03_causal/causal_attention",
        "replace": "        attn_weights = self.dropout(attn_weights)\n",
        "with": "",
        "expect_test": "test_causal_attention_applies_dropout_to_the_weights_in_training_mode_only",
        "expect_message": "dropout was never applied",
    },
    {
        "name": "causal_attention_mask_plain_attribute",
        "exercise": "03_causal/causal_attention",
        "replace": 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))',
        "with": "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)",
        "expect_test": "test_causal_attention_mask_is_a_buffer",
        "expect_message": "register the mask with self.register_buffer",
    },
    {
        "name": "causal_attention_mask_not_persistent",
        "exercise": "03_causal/causal_attention",
        "replace": "torch.triu(torch.ones(context_length, context_length), diagonal=1))",
        "with": "torch.triu(torch.ones(context_length, context_length), diagonal=1), persistent=False)",
        "expect_test": "test_causal_attention_mask_is_a_buffer",
        "expect_message": "registered with persistent=False",
    },
    {
        "name": "causal_attention_mask_not_cut_to_tokens",
        "cause": "MASK_NOT_CUT",
        "exercise": "03_causal/causal_attention",
        "replace": "self.mask.bool()[:num_tokens, :num_tokens]",
        "with": "self.mask.bool()",
        "expect_test": "test_causal_attention_matches_attention_computed_from_its_own_weights",
        "expect_message": "the mask was not cut to T × T",
    },
    {
        "name": "causal_attention_syntax_error_spares_the_other_modules",
        "exercise": "03_causal/causal_attention",
        "replace": "def forward(self, x: torch.Tensor) -> torch.Tensor:",
        "with": "def forward(self, x: torch.Tensor) -> torch.Tensor",
        "run": "group",
        "expect_test": "test_causal_attention_seed_123_matches_the_document",
        "expect_message": "SyntaxError in causal_attention.py",
        "expect_passed": ["test_causal_mask_", "test_attention_dropout_"],
    },
    {
        "name": "causal_attention_cuts_its_mask_buffer",
        "exercise": "03_causal/causal_attention",
        "replace": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "with": "self.mask = self.mask[:num_tokens, :num_tokens]\n        attn_scores = attn_scores.masked_fill(self.mask.bool(), -torch.inf)",
        "expect_test": "test_causal_attention_takes_a_longer_input_after_a_shorter_one",
        "expect_message": "forward changed self.mask",
    },
    {
        "name": "dropout_zeros_when_not_training_at_p_one",
        "exercise": "03_causal/attention_dropout",
        "replace": "    if not training or p == 0.0:\n        return x\n    if p == 1.0:\n        return torch.zeros_like(x)\n",
        "with": "    if p == 1.0:\n        return torch.zeros_like(x)\n    if not training or p == 0.0:\n        return x\n",
        "expect_test": "test_attention_dropout_returns_x_unchanged_when_not_training_whatever_p",
        "expect_message": "returned zeros for p = 1 with training=False",
    },
    {
        "name": "multihead_attention_changes_its_mask_in_place",
        "exercise": "04_multihead/multihead_attention",
        "replace": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "with": "mask = self.mask[:num_tokens, :num_tokens]\n        mask[mask.bool()] = -torch.inf\n"
                "        attn_scores = attn_scores + mask",
        "expect_test": "test_multihead_attention_takes_a_longer_input_after_a_shorter_one",
        "expect_message": "forward changed self.mask",
    },
    {
        "name": "gpt2_attention_with_dropout",
        "exercise": "04_multihead/multihead_attention",
        "replace": "return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)",
        "with": "return MultiHeadAttention(768, 768, context_length=1024, dropout=0.1, num_heads=12)",
        "expect_test": "test_multihead_attention_gpt2_size_has_no_dropout",
        "expect_message": "build it with dropout=0.0",
    },
    {
        "name": "wrapper_ignores_qkv_bias",
        "exercise": "04_multihead/multihead_wrapper",
        "replace": "[CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]",
        "with": "[CausalAttention(d_in, d_out, context_length, dropout) for _ in range(num_heads)]",
        "expect_test": "test_multihead_wrapper_passes_qkv_bias_to_every_head",
        "expect_message": "qkv_bias is not passed on",
    },
    {
        "name": "multihead_attention_ignores_qkv_bias",
        "exercise": "04_multihead/multihead_attention",
        "replace": THREE_LINEARS,
        "with": THREE_LINEARS.replace("bias=qkv_bias", "bias=False"),
        "expect_test": "test_multihead_attention_qkv_bias_gives_the_projections_biases",
        "expect_message": "qkv_bias is ignored",
    },
    {
        "name": "multihead_attention_asserts_divisibility",
        "exercise": "04_multihead/multihead_attention",
        "replace": "if d_out % num_heads != 0:\n"
                   "            raise ValueError(f\"d_out={d_out} must be divisible by num_heads={num_heads}\")",
        "with": "assert d_out % num_heads == 0, \"d_out must be divisible by num_heads\"",
        "expect_test": "test_multihead_attention_rejects_an_indivisible_d_out_and_too_many_tokens",
        "expect_message": "an assert raises AssertionError",
    },
    {
        "name": "multihead_attention_without_scaling",
        "exercise": "04_multihead/multihead_attention",
        "replace": "torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)",
        "with": "torch.softmax(attn_scores, dim=-1)",
        "expect_test": "test_multihead_attention_with_head_dim_2_matches_attention_from_its_own_weights",
        "expect_message": "no scaling: off by a factor √head_dim",
    },
    {
        "name": "multihead_attention_scaled_by_d_out",
        "also_named": ["divided the scores by d_k instead of √d_k"],  # with d_out 4, head_dim 2: √d_out = head_dim
        "exercise": "04_multihead/multihead_attention",
        "replace": "torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)",
        "with": "torch.softmax(attn_scores / self.d_out**0.5, dim=-1)",
        "expect_test": "test_multihead_attention_seed_123_matches_the_reference_values",
        "expect_message": "scaled by 1/√d_out",
        "not_said": ["likely cause: divided the scores by d_k"],  # alone (heldout_probes_34b p15): said together, as one of these
    },
    {
        "name": "multihead_attention_forgets_out_proj",
        "also_named": ["forward does not use ['out_proj.bias', 'out_proj.weight']"],
        "cause": "NO_OUT_PROJ",
        "exercise": "04_multihead/multihead_attention",
        "replace": "return self.out_proj(context)",
        "with": "return context",
        "expect_test": "test_multihead_attention_with_head_dim_2_matches_attention_from_its_own_weights",
        "expect_message": "before out_proj",
    },
    {
        "name": "multihead_attention_mask_made_in_forward_without_device",
        "exercise": "04_multihead/multihead_attention",
        "replace": "attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "with": "attn_scores.masked_fill(torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1).bool(), -torch.inf)",
        "expect_test": "test_multihead_attention_runs_on_any_device",
        "expect_message": "created on the CPU (no device=)",
    },
    {
        "name": "softmax_stable_through_torch_softmax",
        "exercise": "01_simple_attention/normalization",
        "replace": "shifted = scores - scores.amax(dim=dim, keepdim=True)\n    exp = torch.exp(shifted)\n"
                   "    return exp / exp.sum(dim=dim, keepdim=True)",
        "with": "return torch.softmax(scores, dim=dim)",
        "expect_test": "test_normalization_does_its_own_work",
        "expect_message": "softmax_stable ran softmax (torch function softmax",
        "expect_passed": ["test_normalization_softmax_stable"],
    },
    {
        "name": "dropout_through_nn_dropout",
        "exercise": "03_causal/attention_dropout",
        "replace": "keep = torch.empty_like(x).bernoulli_(1 - p)\n    return x * keep.div_(1 - p)",
        "with": "return torch.nn.functional.dropout(x, p, training)",
        "expect_test": "test_attention_dropout_does_its_own_work",
        "expect_message": "dropout ran dropout (torch function dropout",
    },
]

# The mistakes that once got a false cause (issue 38), checked to get their own: the same list, in another file.
MISTAKES += runpy.run_path(str(Path(__file__).with_name("student_mistakes_premises.py")))["MISTAKES"]
# Issue 38's mistakes (each named by a reproduction, or by what the student's objects show) live beside this file
# (a module over 450 lines is too long to read): the same list, appended.
MISTAKES += runpy.run_path(str(Path(__file__).with_name("student_mistakes_named.py")))["MISTAKES"]
# Groups 01-03's families of issue 38, item 3 (each named by a reproduction from the student's own objects).
MISTAKES += runpy.run_path(str(Path(__file__).with_name("student_mistakes_families.py")))["MISTAKES"]
