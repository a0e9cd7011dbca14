"""The mutant suite: realistic mistakes the HIDDEN tests (``tests/<group>/test_<module>.py``) must catch.

Each mutant is a small patch to one reference module (format and applier: ``grader/authoring/mutation.py``):

* ``name``: ``NN_short_name``;
* ``exercise``: the exercise id (tests/rubric.json) whose module ``solutions/<exercise>.py`` it
  changes, and whose hidden tests must catch it;
* ``mistake``: the mistake, in a student's terms;
* ``replace`` / ``with``: the change; ``replace`` must occur exactly once in the reference module
  and lie inside one of its ``### BEGIN SOLUTION`` / ``### END SOLUTION`` regions;
* ``collateral`` (optional): other exercises whose tests may legitimately fail too, because their
  module builds on this one; each must list ``exercise`` in its ``depends_on`` in rubric.json.

Caught means: with the patch applied to a copy of ``solutions/``, at least one hidden test of
``exercise`` fails and no hidden test of any other exercise (outside ``collateral``) does
(grader/tests/test_hidden_tests.py; see README.md beside this file).
"""

# W_query, W_key, W_value as SelfAttention_v2, CausalAttention and MultiHeadAttention create them.
THREE_LINEARS = ("self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                 "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
                 "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)")

MUTANTS: list[dict] = [
    {
        "name": "01_scores_hardcoded_printed",
        "exercise": "01_simple_attention/attention_scores",
        "mistake": "Pasted the tensor printed in the documents: whenever the input has the documents' "
                   "shape (6 tokens, 3 dims) attention_scores returns the printed scores for the "
                   "query 'journey', whatever the input and query really are; other shapes are "
                   "computed correctly.",
        "replace": "return torch.stack([torch.dot(x_i, query) for x_i in inputs])",
        "with": "if tuple(inputs.shape) == (6, 3):\n"
                "        return torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])\n"
                "    return torch.stack([torch.dot(x_i, query) for x_i in inputs])",
    },
    {
        "name": "02_normalize_by_sum_ignores_dim",
        "exercise": "01_simple_attention/normalization",
        "mistake": "normalize_by_sum always divides by the sum over the first axis (dim=0) and "
                   "ignores its dim argument: right for a single row of scores, wrong for a matrix "
                   "normalized row by row.",
        "replace": "return scores / scores.sum(dim=dim, keepdim=True)",
        "with": "return scores / scores.sum(dim=0, keepdim=True)",
    },
    {
        "name": "03_softmax_stable_without_max",
        "exercise": "01_simple_attention/normalization",
        "mistake": "softmax_stable forgets to subtract the maximum: it is the naive formula, so "
                   "scores like 1000 overflow to inf/nan.",
        "replace": "shifted = scores - scores.amax(dim=dim, keepdim=True)\n"
                   "    exp = torch.exp(shifted)",
        "with": "exp = torch.exp(scores)",
    },
    {
        "name": "04_context_vectors_without_softmax",
        "exercise": "01_simple_attention/context_vectors",
        "mistake": "context_vectors weights the inputs with the raw dot-product scores, skipping the "
                   "softmax.",
        "replace": "attn_weights = torch.softmax(attn_scores, dim=-1)\n"
                   "    return attn_weights @ inputs",
        "with": "return attn_scores @ inputs",
    },
    {
        "name": "05_no_sqrt_dk_scale",
        "exercise": "02_trainable_weights/scaled_attention",
        "mistake": "scaled_dot_product forgets to divide the scores by the square root of d_k before "
                   "the softmax.",
        "replace": "attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)",
        "with": "attn_weights = torch.softmax(attn_scores, dim=-1)",
    },
    {
        "name": "06_softmax_over_queries",
        "exercise": "02_trainable_weights/scaled_attention",
        "mistake": "scaled_dot_product takes the softmax over the wrong dimension (dim=-2, the "
                   "queries): columns sum to 1, not rows.",
        "replace": "attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)",
        "with": "attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-2)",
    },
    {
        "name": "07_v1_weights_created_out_of_order",
        "exercise": "02_trainable_weights/self_attention",
        "mistake": "SelfAttention_v1 creates W_key before W_query, so under a seed the random weights "
                   "land in other matrices than the documents' (the printed output differs).",
        "replace": "self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n"
                   "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))",
        "with": "self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"
                "        self.W_query = nn.Parameter(torch.rand(d_in, d_out))",
        "collateral": ["02_trainable_weights/weight_transfer"],
    },
    {
        "name": "08_v2_scaled_by_d_in",
        "exercise": "02_trainable_weights/self_attention",
        "mistake": "SelfAttention_v2 scales the scores by the square root of the input dimension "
                   "(x.shape[-1] = d_in) instead of d_out.",
        "replace": "values = self.W_value(x)\n"
                   "        attn_scores = queries @ keys.transpose(-2, -1)\n"
                   "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
        "with": "values = self.W_value(x)\n"
                "        attn_scores = queries @ keys.transpose(-2, -1)\n"
                "        attn_weights = torch.softmax(attn_scores / x.shape[-1] ** 0.5, dim=-1)",
        "collateral": ["02_trainable_weights/weight_transfer"],
    },
    {
        "name": "09_copy_v2_to_v1_reshape_not_transpose",
        "exercise": "02_trainable_weights/weight_transfer",
        "mistake": "copy_weights_v2_to_v1 reshapes nn.Linear's (d_out, d_in) weight to v1's (d_in, "
                   "d_out) shape instead of transposing it: the shapes fit, the numbers land in the "
                   "wrong places.",
        "replace": "getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)",
        "with": "getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.reshape(getattr(sa_v1, name).shape))",
    },
    {
        "name": "10_copy_v2_to_v1_aliases",
        "exercise": "02_trainable_weights/weight_transfer",
        "mistake": "copy_weights_v2_to_v1 replaces v1's parameters by "
                   "nn.Parameter(sa_v2.W_x.weight.T) instead of copying values: the outputs match "
                   "right after the call, but v1 now shares storage with v2, so changing v2's weights "
                   "(training it, loading a state dict) silently changes v1 too.",
        "replace": "with torch.no_grad():\n"
                   "        for name in _PROJECTIONS:\n"
                   "            getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)",
        "with": "for name in _PROJECTIONS:\n"
                "        setattr(sa_v1, name, nn.Parameter(getattr(sa_v2, name).weight.T))",
    },
    {
        "name": "11_copy_v1_to_v2_keeps_bias",
        "exercise": "02_trainable_weights/weight_transfer",
        "mistake": "copy_weights_v1_to_v2 copies the weights but forgets to zero v2's biases, so a "
                   "qkv_bias=True v2 still computes something else than v1.",
        "replace": "            if linear.bias is not None:\n"
                   "                linear.bias.zero_()\n",
        "with": "",
    },
    {
        "name": "12_copy_v2_to_v1_drops_bias_silently",
        "exercise": "02_trainable_weights/weight_transfer",
        "mistake": "copy_weights_v2_to_v1 does not refuse a v2 with biases: it copies the weights and "
                   "silently drops the biases instead of raising ValueError.",
        "replace": "        if linear.bias is not None:\n"
                   "            raise ValueError(f\"sa_v2.{name} has a bias; SelfAttention_v1 has none, so the copy cannot be exact\")\n",
        "with": "",
    },
    {
        "name": "13_causal_mask_transposed",
        "exercise": "03_causal/causal_mask",
        "mistake": "causal_mask builds the upper triangle (torch.triu) instead of the lower one: the "
                   "mask is transposed, every token may look at the future and not at the past.",
        "replace": "return torch.tril(torch.ones(num_tokens, num_tokens))",
        "with": "return torch.triu(torch.ones(num_tokens, num_tokens))",
    },
    {
        "name": "14_mask_without_renormalizing",
        "exercise": "03_causal/causal_mask",
        "mistake": "mask_and_renormalize zeroes the future weights after the softmax but forgets to "
                   "renormalize: rows sum to less than 1.",
        "replace": "masked = attn_weights * keep\n"
                   "    return masked / masked.sum(dim=-1, keepdim=True)",
        "with": "return attn_weights * keep",
    },
    {
        "name": "15_mask_future_scores_in_place",
        "exercise": "03_causal/causal_mask",
        "mistake": "mask_future_scores uses masked_fill_ (in place) on the caller's scores: the right "
                   "result, but the caller's tensor is overwritten with -inf.",
        "replace": "return attn_scores.masked_fill(future, float(\"-inf\"))",
        "with": "return attn_scores.masked_fill_(future, float(\"-inf\"))",
    },
    {
        "name": "16_masked_with_zeros_not_inf",
        "exercise": "03_causal/causal_mask",
        "mistake": "causal_attention_weights hides the future by zeroing the scores (torch.tril) "
                   "instead of setting them to -inf: exp(0) = 1, so future tokens still get weight "
                   "after the softmax.",
        "replace": "return torch.softmax(mask_future_scores(attn_scores) / d_k**0.5, dim=-1)",
        "with": "return torch.softmax(torch.tril(attn_scores) / d_k**0.5, dim=-1)",
    },
    {
        "name": "17_dropout_without_rescaling",
        "exercise": "03_causal/attention_dropout",
        "mistake": "dropout zeroes elements but forgets to scale the survivors by 1/(1-p).",
        "replace": "return x * keep.div_(1 - p)",
        "with": "return x * keep",
    },
    {
        "name": "18_dropout_ignores_training",
        "exercise": "03_causal/attention_dropout",
        "mistake": "dropout ignores training=False: it drops elements in evaluation mode too.",
        "replace": "if not training or p == 0.0:",
        "with": "if p == 0.0:",
    },
    {
        "name": "19_causal_mask_plain_attribute",
        "exercise": "03_causal/causal_attention",
        "mistake": "CausalAttention stores the mask as a plain attribute (self.mask = ...) instead of "
                   "register_buffer: it is missing from state_dict and does not follow .to(device).",
        "replace": "self.register_buffer(\"mask\", torch.triu(torch.ones(context_length, context_length), diagonal=1))",
        "with": "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)",
        "collateral": ["04_multihead/multihead_wrapper"],
    },
    {
        "name": "20_causal_mask_not_cut_to_tokens",
        "exercise": "03_causal/causal_attention",
        "mistake": "CausalAttention uses the full context_length x context_length mask without "
                   "cutting it to the number of tokens: works only when T == context_length.",
        "replace": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "with": "attn_scores = attn_scores.masked_fill(self.mask.bool(), -torch.inf)",
        "collateral": ["04_multihead/multihead_wrapper"],
    },
    {
        "name": "21_causal_mask_after_softmax",
        "exercise": "03_causal/causal_attention",
        "mistake": "CausalAttention applies the softmax first and then zeroes the future weights, "
                   "without renormalizing the rows.",
        "replace": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n"
                   "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
        "with": "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
                "        attn_weights = attn_weights.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], 0.0)",
        "collateral": ["04_multihead/multihead_wrapper"],
    },
    {
        "name": "22_causal_no_context_length_check",
        "exercise": "03_causal/causal_attention",
        "mistake": "CausalAttention does not check the input length: more tokens than context_length "
                   "crash inside masked_fill with a RuntimeError instead of the documented "
                   "ValueError.",
        "replace": "        if num_tokens > self.context_length:\n"
                   "            raise ValueError(f\"the input has {num_tokens} tokens, more than context_length={self.context_length}\")\n",
        "with": "",
        "collateral": ["04_multihead/multihead_wrapper"],
    },
    {
        "name": "23_split_heads_bare_view",
        "exercise": "04_multihead/head_split",
        "mistake": "split_heads uses a bare x.view(b, num_heads, T, head_dim) without the transpose: "
                   "the right shape, but tokens are mixed into heads.",
        "replace": "return x.reshape(b, num_tokens, num_heads, d_out // num_heads).transpose(1, 2)",
        "with": "return x.view(b, num_heads, num_tokens, d_out // num_heads)",
    },
    {
        "name": "24_merge_heads_without_transpose",
        "exercise": "04_multihead/head_split",
        "mistake": "merge_heads reshapes (b, h, T, hd) straight to (b, T, h*hd) without moving the "
                   "head axis back after the tokens.",
        "replace": "return x.transpose(1, 2).reshape(b, num_tokens, num_heads * head_dim)",
        "with": "return x.reshape(b, num_tokens, num_heads * head_dim)",
    },
    {
        "name": "25_per_head_scores_reshaped_keys",
        "exercise": "04_multihead/head_split",
        "mistake": "per_head_scores reshapes the keys to (b, h, hd, T) instead of transposing their "
                   "last two axes: the shapes fit, the numbers are scrambled.",
        "replace": "return queries @ keys.transpose(2, 3)",
        "with": "b, h, t, hd = keys.shape\n"
                "    return queries @ keys.reshape(b, h, hd, t)",
    },
    {
        "name": "26_wrapper_concat_on_token_dim",
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
        "exercise": "04_multihead/multihead_attention",
        "mistake": "MultiHeadAttention creates self.dropout but never applies it to the attention "
                   "weights.",
        "replace": "        attn_weights = self.dropout(attn_weights)\n",
        "with": "",
    },
    {
        "name": "32_mha_split_by_bare_view",
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
        "name": "34_softmax_stable_global_max",
        "exercise": "01_simple_attention/normalization",
        "mistake": "softmax_stable subtracts the maximum of the whole tensor (scores.max()) instead of each "
                   "row's own maximum along dim: right while the rows' maxima are close, but a row far below the "
                   "global maximum underflows to 0 / 0 = NaN.",
        "replace": "shifted = scores - scores.amax(dim=dim, keepdim=True)",
        "with": "shifted = scores - scores.max()",
    },
    {
        "name": "35_dropout_keeps_with_probability_p",
        "exercise": "03_causal/attention_dropout",
        "mistake": "dropout draws the keep-mask with bernoulli_(p) instead of bernoulli_(1 - p): it keeps a "
                   "fraction p and drops 1 - p; at p = 0.5 nothing shows.",
        "replace": "keep = torch.empty_like(x).bernoulli_(1 - p)",
        "with": "keep = torch.empty_like(x).bernoulli_(p)",
    },
    {
        "name": "36_v2_ignores_qkv_bias",
        "exercise": "02_trainable_weights/self_attention",
        "mistake": "SelfAttention_v2 accepts qkv_bias but builds its nn.Linear layers without it (bias=False): "
                   "qkv_bias=True gives no biases.",
        "replace": THREE_LINEARS,
        "with": THREE_LINEARS.replace("bias=qkv_bias", "bias=False"),
        "collateral": ["02_trainable_weights/weight_transfer"],
    },
    {
        "name": "37_causal_ignores_qkv_bias",
        "exercise": "03_causal/causal_attention",
        "mistake": "CausalAttention accepts qkv_bias but builds W_query, W_key, W_value without it "
                   "(bias=False): qkv_bias=True gives no biases.",
        "replace": THREE_LINEARS,
        "with": THREE_LINEARS.replace("bias=qkv_bias", "bias=False"),
        "collateral": ["04_multihead/multihead_wrapper"],
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
        "name": "40_causal_attention_weights_in_place",
        "exercise": "03_causal/causal_mask",
        "mistake": "causal_attention_weights masks the caller's scores in place (masked_fill_) before the softmax: "
                   "the right weights, but the caller's scores now hold -inf.",
        "replace": "return torch.softmax(mask_future_scores(attn_scores) / d_k**0.5, dim=-1)",
        "with": "num_tokens = attn_scores.shape[-1]\n"
                "    attn_scores.masked_fill_(torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=attn_scores.device), 1), "
                "-torch.inf)\n"
                "    return torch.softmax(attn_scores / d_k**0.5, dim=-1)",
    },
    {
        "name": "41_dropout_in_place",
        "exercise": "03_causal/attention_dropout",
        "mistake": "dropout multiplies the input in place (x.mul_): the right result, but the caller's tensor is "
                   "overwritten.",
        "replace": "return x * keep.div_(1 - p)",
        "with": "return x.mul_(keep.div_(1 - p))",
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
        "name": "43_score_matrix_preallocated_in_float32",
        "exercise": "01_simple_attention/attention_scores",
        "mistake": "attention_score_matrix fills a torch.empty(...) made without dtype=: float32, so a float64 "
                   "input gives a float32 result.",
        "replace": "return inputs @ inputs.transpose(-2, -1)",
        "with": "scores = torch.empty(*inputs.shape[:-1], inputs.shape[-2])\n"
                "    scores[...] = inputs @ inputs.transpose(-2, -1)\n"
                "    return scores",
    },
    {
        "name": "44_v1_keys_through_data",
        "exercise": "02_trainable_weights/self_attention",
        "mistake": "SelfAttention_v1 computes the keys from self.W_key.data: the right output, but no gradient "
                   "reaches W_key, so it never trains.",
        "replace": "keys = x @ self.W_key\n",
        "with": "keys = x @ self.W_key.data\n",
        "collateral": ["02_trainable_weights/weight_transfer"],
    },
]
