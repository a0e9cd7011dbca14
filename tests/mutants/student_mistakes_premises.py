"""Student mistakes that once got a false cause, a cause named on its symptom, not on its premise (issue 38):
the same list as student_mistakes.py (which appends this one), in the same format. Each names the words of
the false cause it once got in ``not_said``, and the right one in ``expect_message``.
"""

# W_query, W_key, W_value as SelfAttention_v2, CausalAttention and MultiHeadAttention create them.
THREE_LINEARS = ("self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                 "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                 "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)")

# CausalAttention's source from its dropout layer to the forward's token count (a patch in both).
CAUSAL_INIT_TO_FORWARD = ("        self.dropout = nn.Dropout(dropout)\n"
                          '        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))\n'
                          "        ### END SOLUTION\n\n"
                          "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                          '        """x (b, T, d_in) -> context vectors (b, T, d_out); future tokens get attention weight 0."""\n'
                          "        ### BEGIN SOLUTION\n"
                          "        num_tokens = x.shape[-2]\n")

# ... and from its three layers to the forward's queries (a layer renamed in both).
CAUSAL_LAYERS_TO_QUERIES = (THREE_LINEARS + "\n" + CAUSAL_INIT_TO_FORWARD
                            + "        if num_tokens > self.context_length:\n"
                            '            raise ValueError(f"the input has {num_tokens} tokens, more than '
                            'context_length={self.context_length}")\n'
                            "        keys = self.W_key(x)\n"
                            "        queries = self.W_query(x)")

MISTAKES: list[dict] = [
    {
        "name": "multihead_attention_out_proj_without_bias",
        "exercise": "04_multihead/multihead_attention",
        "replace": "        self.out_proj = nn.Linear(d_out, d_out)\n",
        "with": "        self.out_proj = nn.Linear(d_out, d_out, bias=qkv_bias)\n",
        "expect_test": "test_multihead_attention_gpt2_size_has_the_documented_parameter_count",
        "expect_message": "out_proj has no bias",
        "not_said": ["no scaling", "√1"],
    },
    {
        "name": "gpt2_attention_with_qkv_bias",
        "exercise": "04_multihead/multihead_attention",
        "replace": "return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)",
        "with": "return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12, qkv_bias=True)",
        "expect_test": "test_multihead_attention_gpt2_size_has_the_documented_parameter_count",
        "expect_message": "gpt2_attention() gives W_query, W_key and W_value biases",
        "not_said": ["out_proj has no bias"],
    },
    {
        "name": "multihead_attention_creates_out_proj_first",
        "exercise": "04_multihead/multihead_attention",
        "replace": THREE_LINEARS + "\n        self.out_proj = nn.Linear(d_out, d_out)\n",
        "with": "self.out_proj = nn.Linear(d_out, d_out)\n        " + THREE_LINEARS + "\n",
        "expect_test": "test_multihead_attention_seed_123_matches_the_reference_values",
        "expect_message": "create W_query, W_key, W_value (then out_proj) in that order",
        "not_said": ["no scaling", "√1"],
    },
    {
        "name": "attention_score_matrix_swaps_axes_0_and_1",
        "exercise": "01_simple_attention/attention_scores",
        "replace": "return inputs @ inputs.transpose(-2, -1)",
        "with": "return inputs @ inputs.transpose(0, 1)",
        "expect_test": "test_attention_scores_matrix_keeps_a_batch_dimension",
        "expect_message": "swapped axes 0 and 1",
        "not_said": [".T on a batch"],
    },
    {
        "name": "causal_attention_counts_tokens_on_the_batch_axis",
        "exercise": "03_causal/causal_attention",
        "replace": "num_tokens = x.shape[-2]",
        "with": "num_tokens = x.shape[0]",
        "expect_test": "test_causal_attention_seed_123_matches_the_document",
        "expect_message": "the number of tokens was read from the batch axis",
        "not_said": ["not cut to T × T", "raise ValueError naming both numbers"],
    },
    {
        "name": "self_attention_v2_ignores_qkv_bias_seen_from_weight_transfer",
        "exercise": "02_trainable_weights/self_attention",
        "replace": THREE_LINEARS,
        "with": THREE_LINEARS.replace("bias=qkv_bias", "bias=False"),
        "run": "group",
        "expect_test": "test_weight_transfer_refuses_what_cannot_be_copied_and_copies_nothing",
        "expect_message": "qkv_bias is ignored",
        "expect_passed": ["test_weight_transfer_v2_to_v1", "test_weight_transfer_copies_values"],
        "not_said": ["nowhere to put v2's biases", "'NoneType' object has no attribute"],
    },
    {
        "name": "causal_mask_returns_the_complement",
        "exercise": "03_causal/causal_mask",
        "replace": "    return torch.tril(torch.ones(num_tokens, num_tokens))",
        "with": "    return torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1)",
        "expect_test": "test_causal_mask_is_lower_triangular_ones",
        "expect_message": "the mask is the complement",
        "not_said": ["a constant factor", "× 0"],
    },
    {
        "name": "causal_attention_keeps_another_tensor_in_a_plain_attribute",
        "exercise": "03_causal/causal_attention",
        "replace": CAUSAL_INIT_TO_FORWARD,
        "with": CAUSAL_INIT_TO_FORWARD.replace("nn.Dropout(dropout)\n", "nn.Dropout(dropout)\n        self.one = torch.ones(1)\n")
                .replace("x.shape[-2]\n", "x.shape[-2]\n        x = x * self.one\n"),
        "expect_test": "test_causal_attention_runs_on_any_device",
        "expect_message": "a tensor kept as a plain attribute",
        "not_said": ["register the mask"],
    },
    {
        "name": "multihead_wrapper_heads_in_a_plain_list",
        "exercise": "04_multihead/multihead_wrapper",
        "replace": "self.heads = nn.ModuleList(\n"
                   "            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]\n"
                   "        )",
        "with": "self.heads = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]",
        "expect_test": "test_multihead_wrapper_runs_on_any_device",
        "expect_message": "hold them in an nn.ModuleList",
        "not_said": ["created on the CPU (no device=)", "qkv_bias"],
    },
    {
        "name": "causal_attention_names_its_query_layer_otherwise",
        "exercise": "03_causal/causal_attention",
        "replace": CAUSAL_LAYERS_TO_QUERIES,
        "with": CAUSAL_LAYERS_TO_QUERIES.replace("self.W_query", "self.W_q"),
        "expect_test": "test_causal_attention_qkv_bias_gives_the_projections_biases",
        "expect_message": "the layers are named otherwise",
        "not_said": ["qkv_bias is ignored"],
    },
    {
        "name": "multihead_attention_keeps_the_allowed_positions_in_its_mask",
        "exercise": "04_multihead/multihead_attention",
        "replace": 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))',
        "with": 'self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))',
        "expect_test": "test_multihead_attention_splits_d_out_over_the_heads_and_keeps_a_mask_buffer",
        "expect_message": "the mask buffer marks what each token may see",
        "not_said": ["drops attention weights in training mode", "dropout acted"],
    },
]
