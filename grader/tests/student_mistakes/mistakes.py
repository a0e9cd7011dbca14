"""Realistic student mistakes that the PUBLIC tests must catch, each with the diagnosis they must show.

Each entry is a small patch to one reference solution (``solutions/<file>``): the text ``replace``,
which must occur exactly once in that file, becomes ``with``. With the patch applied,
``exercises/<group>/test_<module>.py`` (the public tests of the patched module; the whole group's
folder when ``run`` is ``"group"``) must fail the test ``expect_test`` with a message containing
``expect_message``; every test whose name starts with one of ``expect_passed`` must still pass.
``grader/tests/test_public_tests.py`` proves it for every entry (see ``driver.py``).
"""

from __future__ import annotations

MISTAKES: list[dict] = [
    {
        "name": "softmax_naive_ignores_dim",
        "file": "01_simple_attention/normalization.py",
        "replace": "exp = torch.exp(scores)\n    return exp / exp.sum(dim=dim, keepdim=True)",
        "with": "exp = torch.exp(scores)\n    return exp / exp.sum(dim=-1, keepdim=True)",
        "expect_test": "test_normalization_softmax_naive_along_each_dim",
        "expect_message": "the dim argument is ignored",
    },
    {
        "name": "normalize_by_sum_without_keepdim",
        "file": "01_simple_attention/normalization.py",
        "replace": "return scores / scores.sum(dim=dim, keepdim=True)",
        "with": "return scores / scores.sum(dim=dim)",
        "expect_test": "test_normalization_normalize_by_sum_of_a_matrix_along_each_dim",
        "expect_message": "summed without keepdim=True",
    },
    {
        "name": "context_vectors_softmax_over_columns",
        "file": "01_simple_attention/context_vectors.py",
        "replace": "attn_weights = torch.softmax(attn_scores, dim=-1)",
        "with": "attn_weights = torch.softmax(attn_scores, dim=-2)",
        "expect_test": "test_context_vectors_keep_a_batch_dimension",
        "expect_message": "softmax over the wrong dim",
    },
    {
        "name": "self_attention_v2_keys_dot_T",
        "file": "02_trainable_weights/self_attention.py",
        "replace": "keys = self.W_key(x)\n        queries = self.W_query(x)\n        values = self.W_value(x)\n"
                   "        attn_scores = queries @ keys.transpose(-2, -1)",
        "with": "keys = self.W_key(x)\n        queries = self.W_query(x)\n        values = self.W_value(x)\n"
                "        attn_scores = queries @ keys.T",
        "expect_test": "test_self_attention_v1_and_v2_keep_a_batch_dimension",
        "expect_message": ".T on a batch",
    },
    {
        "name": "copy_v2_to_v1_aliases",
        "file": "02_trainable_weights/weight_transfer.py",
        "replace": "getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)",
        "with": "getattr(sa_v1, name).data = getattr(sa_v2, name).weight.data.T",
        "expect_test": "test_weight_transfer_copies_values_into_the_existing_parameters",
        "expect_message": "share storage (aliases)",
    },
    {
        "name": "copy_v2_to_v1_reshape_not_transpose",
        "file": "02_trainable_weights/weight_transfer.py",
        "replace": "getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)",
        "with": "getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.reshape(getattr(sa_v1, name).shape))",
        "expect_test": "test_weight_transfer_v2_to_v1_makes_both_compute_the_same",
        "expect_message": "copied without transposing",
    },
    {
        "name": "copy_v1_to_v2_keeps_bias",
        "file": "02_trainable_weights/weight_transfer.py",
        "replace": "if linear.bias is not None:\n                linear.bias.zero_()",
        "with": "pass",
        "expect_test": "test_weight_transfer_v1_to_v2_with_biases_makes_both_compute_the_same",
        "expect_message": "set v2's biases to zero",
    },
    {
        "name": "copy_v2_to_v1_without_checking_shapes_first",
        "file": "02_trainable_weights/weight_transfer.py",
        "replace": "if linear.weight.T.shape != param.shape:",
        "with": "if False:",
        "expect_test": "test_weight_transfer_refuses_what_cannot_be_copied_and_copies_nothing",
        "expect_message": "check every shape (and bias) first, then copy",
    },
    {
        "name": "mask_future_scores_without_device",
        "file": "03_causal/causal_mask.py",
        "replace": "dtype=torch.bool, device=attn_scores.device)",
        "with": "dtype=torch.bool)",
        "expect_test": "test_causal_mask_functions_work_on_a_batch_on_any_device",
        "expect_message": "created on the CPU (no device=)",
    },
    {
        "name": "dropout_nan_at_p_one",
        "file": "03_causal/attention_dropout.py",
        "replace": "    if p == 1.0:\n        return torch.zeros_like(x)\n",
        "with": "",
        "expect_test": "test_attention_dropout_drops_everything_at_p_one",
        "expect_message": "divided by 1 - p = 0 at p = 1",
    },
    {
        "name": "dropout_negative_p_wrong_exception",
        "file": "03_causal/attention_dropout.py",
        "replace": "if not 0.0 <= p <= 1.0:",
        "with": "if p > 1.0:",
        "expect_test": "test_attention_dropout_rejects_a_probability_outside_0_and_1[-0.1]",
        "expect_message": "expected ValueError",
    },
    {
        "name": "causal_attention_never_applies_dropout",
        "file": "03_causal/causal_attention.py",
        "replace": "        attn_weights = self.dropout(attn_weights)\n",
        "with": "",
        "expect_test": "test_causal_attention_applies_dropout_to_the_weights_in_training_mode_only",
        "expect_message": "dropout was never applied",
    },
    {
        "name": "causal_attention_mask_plain_attribute",
        "file": "03_causal/causal_attention.py",
        "replace": 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))',
        "with": "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)",
        "expect_test": "test_causal_attention_mask_is_a_buffer",
        "expect_message": "register the mask with self.register_buffer",
    },
    {
        "name": "causal_attention_mask_not_persistent",
        "file": "03_causal/causal_attention.py",
        "replace": "torch.triu(torch.ones(context_length, context_length), diagonal=1))",
        "with": "torch.triu(torch.ones(context_length, context_length), diagonal=1), persistent=False)",
        "expect_test": "test_causal_attention_mask_is_a_buffer",
        "expect_message": "registered with persistent=False",
    },
    {
        "name": "causal_attention_mask_not_cut_to_tokens",
        "file": "03_causal/causal_attention.py",
        "replace": "self.mask.bool()[:num_tokens, :num_tokens]",
        "with": "self.mask.bool()",
        "expect_test": "test_causal_attention_matches_attention_computed_from_its_own_weights",
        "expect_message": "the mask was not cut to T × T",
    },
    {
        "name": "causal_attention_syntax_error_spares_the_other_modules",
        "file": "03_causal/causal_attention.py",
        "replace": "def forward(self, x: torch.Tensor) -> torch.Tensor:",
        "with": "def forward(self, x: torch.Tensor) -> torch.Tensor",
        "run": "group",
        "expect_test": "test_causal_attention_seed_123_matches_the_document",
        "expect_message": "cannot import causal_attention: SyntaxError in causal_attention.py",
        "expect_passed": ["test_causal_mask_", "test_attention_dropout_"],
    },
    {
        "name": "wrapper_ignores_qkv_bias",
        "file": "04_multihead/multihead_wrapper.py",
        "replace": "[CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]",
        "with": "[CausalAttention(d_in, d_out, context_length, dropout) for _ in range(num_heads)]",
        "expect_test": "test_multihead_wrapper_passes_qkv_bias_to_every_head",
        "expect_message": "qkv_bias is not passed on",
    },
    {
        "name": "multihead_attention_without_scaling",
        "file": "04_multihead/multihead_attention.py",
        "replace": "torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)",
        "with": "torch.softmax(attn_scores, dim=-1)",
        "expect_test": "test_multihead_attention_with_head_dim_2_matches_attention_from_its_own_weights",
        "expect_message": "no scaling: off by a factor √head_dim",
    },
    {
        "name": "multihead_attention_scaled_by_d_out",
        "file": "04_multihead/multihead_attention.py",
        "replace": "torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)",
        "with": "torch.softmax(attn_scores / self.d_out**0.5, dim=-1)",
        "expect_test": "test_multihead_attention_seed_123_matches_the_reference_values",
        "expect_message": "scaled by 1/√d_out = 1/√2",
    },
    {
        "name": "multihead_attention_forgets_out_proj",
        "file": "04_multihead/multihead_attention.py",
        "replace": "return self.out_proj(context)",
        "with": "return context",
        "expect_test": "test_multihead_attention_with_head_dim_2_matches_attention_from_its_own_weights",
        "expect_message": "before out_proj",
    },
    {
        "name": "multihead_attention_mask_made_in_forward_without_device",
        "file": "04_multihead/multihead_attention.py",
        "replace": "attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "with": "attn_scores.masked_fill(torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1).bool(), -torch.inf)",
        "expect_test": "test_multihead_attention_runs_on_any_device",
        "expect_message": "created on the CPU (no device=)",
    },
]


def apply(source: str, mistake: dict) -> str:
    """``source`` with the mistake's one replacement; ValueError unless its anchor occurs exactly once."""
    count = source.count(mistake["replace"])
    if count != 1:
        raise ValueError(f"{mistake['name']}: the text to replace occurs {count} times in solutions/{mistake['file']} "
                         f"(expected exactly once): {mistake['replace']!r}")
    return source.replace(mistake["replace"], mistake["with"])
