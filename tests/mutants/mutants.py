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
* ``cause`` (optional): the "likely cause:" a student with this mistake must read: a message of
  exercises/kata_mistakes.py by name, or the text. A mutant with a cause is a known mistake of the public
  tests too (grader/authoring/known_results.py keeps its results; student_mistakes.py says what the
  public tests must show, ``also_named`` included).

Caught means: with the patch applied to a copy of ``solutions/``, at least one hidden test of
``exercise`` fails and no hidden test of any other exercise (outside ``collateral``) does
(grader/tests/test_hidden_tests.py; see README.md beside this file).
"""

import runpy
from pathlib import Path

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
        "cause": "DIM_IGNORED",
        "exercise": "01_simple_attention/normalization",
        "mistake": "normalize_by_sum always divides by the sum over the first axis (dim=0) and "
                   "ignores its dim argument: right for a single row of scores, wrong for a matrix "
                   "normalized row by row.",
        "replace": "return scores / scores.sum(dim=dim, keepdim=True)",
        "with": "return scores / scores.sum(dim=0, keepdim=True)",
    },
    {
        "name": "03_softmax_stable_without_max",
        "cause": "NO_MAX_SHIFT",
        "exercise": "01_simple_attention/normalization",
        "mistake": "softmax_stable forgets to subtract the maximum: it is the naive formula, so "
                   "scores like 1000 overflow to inf/nan.",
        "replace": "shifted = scores - scores.amax(dim=dim, keepdim=True)\n"
                   "    exp = torch.exp(shifted)",
        "with": "exp = torch.exp(scores)",
    },
    {
        "name": "04_context_vectors_without_softmax",
        "cause": "NO_SOFTMAX",
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
        "also_named": ["softmax over dim 0, the first dim"],  # on a matrix, dim 0 is dim -2 (student_mistakes_named.py)
        "cause": "WRONG_DIM",
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
        "cause": "SCALED_BY_D_IN",
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
        "cause": "COPY_NOT_TRANSPOSED",
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
        "cause": "MASK_TRANSPOSED",
        "exercise": "03_causal/causal_mask",
        "mistake": "causal_mask builds the upper triangle (torch.triu) instead of the lower one: the "
                   "mask is transposed, every token may look at the future and not at the past.",
        "replace": "return torch.tril(torch.ones(num_tokens, num_tokens))",
        "with": "return torch.triu(torch.ones(num_tokens, num_tokens))",
    },
    {
        "name": "14_mask_without_renormalizing",
        "cause": "NOT_RENORMALIZED",
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
        "cause": "MASKED_WITH_ZEROS",
        "exercise": "03_causal/causal_mask",
        "mistake": "causal_attention_weights hides the future by zeroing the scores (torch.tril) "
                   "instead of setting them to -inf: exp(0) = 1, so future tokens still get weight "
                   "after the softmax.",
        "replace": "return torch.softmax(mask_future_scores(attn_scores) / d_k**0.5, dim=-1)",
        "with": "return torch.softmax(torch.tril(attn_scores) / d_k**0.5, dim=-1)",
    },
    {
        "name": "17_dropout_without_rescaling",
        "cause": "NOT_RESCALED",
        "exercise": "03_causal/attention_dropout",
        "mistake": "dropout zeroes elements but forgets to scale the survivors by 1/(1-p).",
        "replace": "return x * keep.div_(1 - p)",
        "with": "return x * keep",
    },
    {
        "name": "18_dropout_ignores_training",
        "cause": "DROPOUT_IGNORES_TRAINING",
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
        "cause": "MASK_NOT_CUT",
        "exercise": "03_causal/causal_attention",
        "mistake": "CausalAttention uses the full context_length x context_length mask without "
                   "cutting it to the number of tokens: works only when T == context_length.",
        "replace": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "with": "attn_scores = attn_scores.masked_fill(self.mask.bool(), -torch.inf)",
        "collateral": ["04_multihead/multihead_wrapper"],
    },
    {
        "name": "21_causal_mask_after_softmax",
        "cause": "MASK_AFTER_SOFTMAX",
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
        "name": "34_softmax_stable_global_max",
        "cause": "GLOBAL_MAX",
        "exercise": "01_simple_attention/normalization",
        "mistake": "softmax_stable subtracts the maximum of the whole tensor (scores.max()) instead of each "
                   "row's own maximum along dim: right while the rows' maxima are close, but a row far below the "
                   "global maximum underflows to 0 / 0 = NaN.",
        "replace": "shifted = scores - scores.amax(dim=dim, keepdim=True)",
        "with": "shifted = scores - scores.max()",
    },
    {
        "name": "35_dropout_keeps_with_probability_p",
        "cause": "KEEP_PROB_SWAPPED",
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
    {
        "name": "45_scores_keys_times_queries",
        "cause": "KEYS_TIMES_QUERIES",
        "exercise": "02_trainable_weights/scaled_attention",
        "mistake": "scaled_dot_product computes keys @ queries.T (K Qᵀ) instead of queries @ keys.T: the scores "
                   "are transposed, so each query attends with another query's scores.",
        "replace": "attn_scores = queries @ keys.transpose(-2, -1)\n    attn_weights = torch.softmax(attn_scores / d_k**0.5",
        "with": "attn_scores = keys @ queries.transpose(-2, -1)\n    attn_weights = torch.softmax(attn_scores / d_k**0.5",
    },
    {
        "name": "46_dropout_divides_by_p",
        "cause": "DIVIDED_BY_P",
        "exercise": "03_causal/attention_dropout",
        "mistake": "dropout divides the survivors by p instead of 1 - p.",
        "replace": "return x * keep.div_(1 - p)",
        "with": "return x * keep.div_(p)",
    },
    {
        "name": "47_renormalize_by_column_sums",
        "cause": "RENORMALIZED_BY_COLUMNS",
        "exercise": "03_causal/causal_mask",
        "mistake": "mask_and_renormalize divides by the column sums (dim=-2) instead of each row's sum.",
        "replace": "return masked / masked.sum(dim=-1, keepdim=True)",
        "with": "return masked / masked.sum(dim=-2, keepdim=True)",
    },
    {
        "name": "48_causal_mask_tril_diagonal_1",
        "cause": "TRIL_DIAGONAL_1",
        "exercise": "03_causal/causal_mask",
        "mistake": "causal_mask uses torch.tril(..., diagonal=1): every token also sees the next one.",
        "replace": "return torch.tril(torch.ones(num_tokens, num_tokens))",
        "with": "return torch.tril(torch.ones(num_tokens, num_tokens), diagonal=1)",
    },
    {
        "name": "49_scaled_after_softmax",
        "cause": "SCALED_AFTER_SOFTMAX",
        "exercise": "02_trainable_weights/scaled_attention",
        "mistake": "scaled_dot_product divides the attention weights by √d_k after the softmax instead of the "
                   "scores before it.",
        "replace": "attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)",
        "with": "attn_weights = torch.softmax(attn_scores, dim=-1) / d_k**0.5",
    },
    {
        "name": "52_v1_weights_randn",
        "cause": "RANDN_FOR_RAND",
        "exercise": "02_trainable_weights/self_attention",
        "mistake": "SelfAttention_v1 draws its weights with torch.randn instead of torch.rand.",
        "replace": "self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n"
                   "        self.W_value = nn.Parameter(torch.rand(d_in, d_out))",
        "with": "self.W_query = nn.Parameter(torch.randn(d_in, d_out))\n        self.W_key = nn.Parameter(torch.randn(d_in, d_out))\n"
                "        self.W_value = nn.Parameter(torch.randn(d_in, d_out))",
    },
    {
        "name": "53_causal_scaled_by_d_in",
        "cause": "SCALED_BY_D_IN",
        "exercise": "03_causal/causal_attention",
        "collateral": ["04_multihead/multihead_wrapper"],
        "mistake": "CausalAttention scales the scores by the square root of the input's size (x.shape[-1] = d_in) "
                   "instead of d_k.",
        "replace": "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
        "with": "attn_weights = torch.softmax(attn_scores / x.shape[-1] ** 0.5, dim=-1)",
    },
    {
        "name": "54_causal_softmax_over_queries",
        "cause": "WRONG_DIM",
        "exercise": "03_causal/causal_attention",
        "collateral": ["04_multihead/multihead_wrapper"],
        "mistake": "CausalAttention takes the softmax over dim=-2 (the queries) instead of the keys.",
        "replace": "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
        "with": "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-2)",
    },
    {
        "name": "55_causal_masked_with_zeros",
        "cause": "MASKED_WITH_ZEROS",
        "exercise": "03_causal/causal_attention",
        "collateral": ["04_multihead/multihead_wrapper"],
        "mistake": "CausalAttention fills the future scores with 0 instead of -inf.",
        "replace": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "with": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], 0.0)",
    },
    {
        "name": "56_causal_dropout_on_the_scores",
        "cause": "DROPOUT_BEFORE_SOFTMAX",
        "exercise": "03_causal/causal_attention",
        "collateral": ["04_multihead/multihead_wrapper"],
        "mistake": "CausalAttention applies dropout to the scores before the softmax instead of to the weights after it.",
        "replace": "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n        attn_weights = self.dropout(attn_weights)",
        "with": "attn_weights = torch.softmax(self.dropout(attn_scores) / keys.shape[-1] ** 0.5, dim=-1)",
    },
    {
        "name": "57_mask_renormalized_without_keepdim",
        "cause": "NO_KEEPDIM",
        "exercise": "03_causal/causal_mask",
        "mistake": "mask_and_renormalize sums each row without keepdim=True.",
        "replace": "return masked / masked.sum(dim=-1, keepdim=True)",
        "with": "return masked / masked.sum(dim=-1)",
    },
    {
        "name": "62_causal_mask_overwritten_in_forward",
        "exercise": "03_causal/causal_attention",
        "collateral": ["04_multihead/multihead_wrapper"],
        "mistake": "CausalAttention's forward cuts the buffer itself (self.mask = self.mask[:T, :T]): a longer input after a shorter one fails.",
        "replace": "attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
        "with": "self.mask = self.mask[:num_tokens, :num_tokens]\n        attn_scores = attn_scores.masked_fill(self.mask.bool(), -torch.inf)",
    },
    {
        "name": "63_dropout_zeros_when_not_training_at_p_1",
        "exercise": "03_causal/attention_dropout",
        "mistake": "dropout checks p == 1 before training: dropout(x, 1.0, training=False) returns zeros instead of x.",
        "replace": "    if not training or p == 0.0:\n        return x\n    if p == 1.0:\n        return torch.zeros_like(x)\n",
        "with": "    if p == 1.0:\n        return torch.zeros_like(x)\n    if not training or p == 0.0:\n        return x\n",
    },
]

# The multi-head group's mutants live beside this file (a module over 450 lines is too long to read).
MUTANTS += runpy.run_path(str(Path(__file__).with_name("mutants_multihead.py")))["MUTANTS"]
