"""The mutants of 04_multihead: the same list as mutants.py (which appends this one), in the same format."""

# W_query, W_key, W_value as CausalAttention and MultiHeadAttention create them.
THREE_LINEARS = ("self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                 "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                 "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)")

MUTANTS: list[dict] = [
    {
        "name": "23_split_heads_bare_view",
        "also_named": ["split without moving the head axis"],  # with T = num_heads the two views agree
        "cause": "SPLIT_BARE_VIEW",
        "exercise": "04_multihead/head_split",
        "mistake": "split_heads uses a bare x.view(b, num_heads, T, head_dim) without the transpose: "
                   "the right shape, but tokens are mixed into heads.",
        "replace": "return x.reshape(b, num_tokens, num_heads, d_out // num_heads).transpose(1, 2)",
        "with": "return x.view(b, num_heads, num_tokens, d_out // num_heads)",
    },
    {
        "name": "24_merge_heads_without_transpose",
        "cause": "MERGE_BARE_RESHAPE",
        "exercise": "04_multihead/head_split",
        "mistake": "merge_heads reshapes (b, h, T, hd) straight to (b, T, h*hd) without moving the "
                   "head axis back after the tokens.",
        "replace": "return x.transpose(1, 2).reshape(b, num_tokens, num_heads * head_dim)",
        "with": "return x.reshape(b, num_tokens, num_heads * head_dim)",
    },
    {
        "name": "25_per_head_scores_reshaped_keys",
        "cause": "KEYS_RESHAPED",
        "exercise": "04_multihead/head_split",
        "mistake": "per_head_scores reshapes the keys to (b, h, hd, T) instead of transposing their "
                   "last two axes: the shapes fit, the numbers are scrambled.",
        "replace": "return queries @ keys.transpose(2, 3)",
        "with": "b, h, t, hd = keys.shape\n"
                "    return queries @ keys.reshape(b, h, hd, t)",
    },
    {
        "name": "26_wrapper_concat_on_token_dim",
        "cause": "CONCAT_ON_TOKENS",
        "exercise": "04_multihead/multihead_wrapper",
        "mistake": "MultiHeadAttentionWrapper concatenates the heads' outputs along the token "
                   "dimension (dim=1) instead of the feature dimension (dim=-1).",
        "replace": "return torch.cat([head(x) for head in self.heads], dim=-1)",
        "with": "return torch.cat([head(x) for head in self.heads], dim=1)",
    },
    {
        "name": "27_two_dim_wrapper_d_out_2",
        "exercise": "04_multihead/multihead_wrapper",
        "mistake": "two_dim_wrapper builds its heads with d_out=2, so the concatenated output is "
                   "4-dimensional, not 2-dimensional (exercise 3.2 wants d_out=1 per head).",
        "replace": "return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)",
        "with": "return MultiHeadAttentionWrapper(d_in, 2, context_length, dropout, num_heads=2)",
    },
    {
        "name": "28_mha_scaled_by_d_out",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention scales the scores by the square root of d_out instead of "
                   "head_dim.",
        "replace": "attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)",
        "with": "attn_weights = torch.softmax(attn_scores / self.d_out**0.5, dim=-1)",
    },
    {
        "name": "29_mha_out_proj_not_applied",
        "also_named": ["forward does not use ['out_proj.bias', 'out_proj.weight']"],
        "cause": "NO_OUT_PROJ",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention creates out_proj but returns the merged heads without applying "
                   "it.",
        "replace": "return self.out_proj(context)",
        "with": "return context",
    },
    {
        "name": "30_mha_mask_plain_attribute",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention stores the mask as a plain attribute (self.mask = ...) instead "
                   "of register_buffer: it is missing from state_dict and does not follow "
                   ".to(device).",
        "replace": "self.register_buffer(\"mask\", torch.triu(torch.ones(context_length, context_length), diagonal=1))",
        "with": "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)",
    },
    {
        "name": "31_mha_no_attention_dropout",
        "cause": "DROPOUT_NOT_APPLIED",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention creates self.dropout but never applies it to the attention "
                   "weights.",
        "replace": "        attn_weights = self.dropout(attn_weights)\n",
        "with": "",
    },
    {
        "name": "32_mha_split_by_bare_view",
        "cause": "SPLIT_BARE_VIEW",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention splits Q, K and V into heads with a bare .view(b, num_heads, "
                   "T, head_dim) without the transpose, mixing tokens into heads.",
        "replace": "queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
                   "        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)\n"
                   "        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
        "with": "queries = self.W_query(x).view(b, self.num_heads, num_tokens, self.head_dim)\n"
                "        keys = self.W_key(x).view(b, self.num_heads, num_tokens, self.head_dim)\n"
                "        values = self.W_value(x).view(b, self.num_heads, num_tokens, self.head_dim)",
    },
    {
        "name": "33_gpt2_attention_with_qkv_bias",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "gpt2_attention turns on qkv_bias, so the module has 2,362,368 parameters instead "
                   "of the documented 2,360,064.",
        "replace": "return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)",
        "with": "return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12, qkv_bias=True)",
    },
    {
        "name": "38_wrapper_ignores_qkv_bias",
        "exercise": "04_multihead/multihead_wrapper",
        "mistake": "MultiHeadAttentionWrapper does not pass qkv_bias on to its CausalAttention heads.",
        "replace": "[CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]",
        "with": "[CausalAttention(d_in, d_out, context_length, dropout) for _ in range(num_heads)]",
    },
    {
        "name": "39_mha_ignores_qkv_bias",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention accepts qkv_bias but builds W_query, W_key, W_value without it "
                   "(bias=False): qkv_bias=True gives no biases.",
        "replace": THREE_LINEARS,
        "with": THREE_LINEARS.replace("bias=qkv_bias", "bias=False"),
    },
    {
        "name": "42_mha_asserts_divisibility",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention checks d_out % num_heads with assert, as the chapter's listing does, instead "
                   "of raising the ValueError its docstring asks for.",
        "replace": "if d_out % num_heads != 0:\n"
                   "            raise ValueError(f\"d_out={d_out} must be divisible by num_heads={num_heads}\")",
        "with": "assert d_out % num_heads == 0, \"d_out must be divisible by num_heads\"",
    },
    {
        "name": "50_split_heads_interleaved",
        "cause": "HEADS_INTERLEAVED",
        "exercise": "04_multihead/head_split",
        "mistake": "split_heads views the features as (head_dim, num_heads) and permutes: the right shape, but "
                   "head h gets every num_heads-th feature instead of a contiguous block.",
        "replace": "return x.reshape(b, num_tokens, num_heads, d_out // num_heads).transpose(1, 2)",
        "with": "return x.reshape(b, num_tokens, d_out // num_heads, num_heads).permute(0, 3, 1, 2)",
    },
    {
        "name": "51_merge_heads_in_the_wrong_order",
        "cause": "MERGED_IN_WRONG_ORDER",
        "exercise": "04_multihead/head_split",
        "mistake": "merge_heads permutes to (b, T, head_dim, num_heads) before reshaping: the heads' features "
                   "come out interleaved.",
        "replace": "return x.transpose(1, 2).reshape(b, num_tokens, num_heads * head_dim)",
        "with": "return x.permute(0, 2, 3, 1).reshape(b, num_tokens, num_heads * head_dim)",
    },
    {
        "name": "58_mha_softmax_over_queries",
        "cause": "WRONG_DIM",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention takes the softmax over dim=-2 (the queries) instead of the keys.",
        "replace": "attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)",
        "with": "attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-2)",
    },
    {
        "name": "59_mha_masked_with_zeros",
        "cause": "MASKED_WITH_ZEROS",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention fills the future scores with 0 instead of -inf.",
        "replace": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "with": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], 0.0)",
    },
    {
        "name": "60_wrapper_one_head_repeated",
        "cause": "ONE_HEAD_REPEATED",
        "exercise": "04_multihead/multihead_wrapper",
        "mistake": "MultiHeadAttentionWrapper repeats one CausalAttention num_heads times ([head] * num_heads): every "
                   "head has the same weights.",
        "replace": "[CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]",
        "with": "[CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)] * num_heads",
    },
    {
        "name": "61_mha_dropout_on_the_scores",
        "cause": "DROPOUT_BEFORE_SOFTMAX",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention applies dropout to the scores before the softmax instead of to the weights after it.",
        "replace": "attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)\n        attn_weights = self.dropout(attn_weights)",
        "with": "attn_weights = torch.softmax(self.dropout(attn_scores) / self.head_dim**0.5, dim=-1)",
    },
    {
        "name": "64_mha_mask_changed_in_place",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention writes -inf into a view of its mask buffer and adds it to the scores: the "
                   "output is right, but every forward changes the module's mask (and what state_dict saves).",
        "replace": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "with": "mask = self.mask[:num_tokens, :num_tokens]\n        mask[mask.bool()] = -torch.inf\n"
                "        attn_scores = attn_scores + mask",
    },
    {
        "name": "65_gpt2_attention_with_dropout",
        "exercise": "04_multihead/multihead_attention",
        "mistake": "gpt2_attention uses GPT-2's training dropout 0.1 instead of the 0.0 its docstring states.",
        "replace": "return MultiHeadAttention(768, 768, context_length=1024, dropout=0.0, num_heads=12)",
        "with": "return MultiHeadAttention(768, 768, context_length=1024, dropout=0.1, num_heads=12)",
    },
]
