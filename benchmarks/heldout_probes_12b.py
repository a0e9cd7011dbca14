"""Held-out student mistakes for groups 01-02 (issue 38, item 3): a second fresh set, a measurement, never a test's input.

    python benchmarks/heldout_probes_12b.py [probes|after|idioms] [--show-causes]

Written from the chapter text (exercises/documents/) and the stubs of 01_simple_attention and
02_trainable_weights only, before reading the library of known mistakes (tests/mutants/), the shared
mistakes (../shared/student_mistakes/) or the lists of benchmarks/heldout_probes_13.py: slips a student
copying the documents' listings would make. No test reads this file. Each entry has the format of
``../shared/student_mistakes/mistakes.json`` (its README); the run is benchmarks/student_mistakes.py's.

Step 1, at main 537f081, before any change (judged by reading each cause against the patched code):
caught 14/14; a right cause named for 9/14 (p03 p04 p07 p08 p10 p11 p12 p13 p14); one false cause:
p05 (amax without keepdim) was told "summed without keepdim=True" in the float64 test (the sum has
keepdim; the known error text of a library mistake matched), and its 2-D failures named nothing; no cause
for p01 (IndexError), p02 (torch.dot on a batch), p06 (size mismatch), p09 (torch.sqrt of an int).

Step 2, fixed AFTER being seen (so these five no longer measure anything held out): caught 14/14, a right
cause for 14/14, none false. NO_KEEPDIM now says "a sum (or max) along dim without keepdim=True", and
assert_softmax_has_no_nan and softmax_stable's tests recompute the max without keepdim (p05); the errors
of torch.dot looped over a batch and of torch.sqrt of the int d_k are reproduced in transpose_errors (p02,
p09); attention_scores and context_vector run under call_checked with the error a d-sized / T-sized
tensor raises on the test's own inputs (p01, p06). Each is in the library (student_mistakes_families.py,
as a variant of the patch here).

``AFTER`` (5 slips near the fixed ones, written after step 2 and run once, unchanged since): caught 5/5, a right
cause for 5/5 (q04's WEIGHT_SHAPE_SWAPPED is the library's family cause for every swapped weight: right, not
specific to nn.Linear). ``IDIOMS`` (4 right answers in other words: einsum, the document's loop, the
notebook's torch.sqrt(torch.tensor(d_k)), max(...).values): none fails a public test.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import student_mistakes  # noqa: E402  (the benchmark beside this file: one way to measure)

G1, G2 = "01_simple_attention", "02_trainable_weights"
STABLE_SHIFT = "shifted = scores - scores.amax(dim=dim, keepdim=True)"


probe = student_mistakes.probe


PROBES = [
    probe("p01", G1, "attention_scores", "attention_scores: the document's loop, torch.empty sized by d (shape[-1]) not T",
          [("return torch.stack([torch.dot(x_i, query) for x_i in inputs])",
            "attn_scores = torch.empty(inputs.shape[-1])\n    for i, x_i in enumerate(inputs):\n"
            "        attn_scores[i] = torch.dot(x_i, query)\n    return attn_scores")],
          ["shape[-1]", "shape[0]", "number of tokens", "sized", "T entries"]),
    probe("p02", G1, "attention_scores", "attention_score_matrix: the document's double loop, len_words = inputs.shape[0]",
          [("return inputs @ inputs.transpose(-2, -1)",
            "len_words = inputs.shape[0]\n    scores = torch.empty(len_words, len_words)\n"
            "    for i, row in enumerate(inputs):\n        for j, col in enumerate(inputs):\n"
            "            scores[i, j] = torch.dot(row, col)\n    return scores")],
          ["batch", "loop", "matrix product", "shape[0]"]),
    probe("p03", G1, "normalization", "normalize_by_sum: dim hard-coded to -1, the dim argument ignored",
          [("return scores / scores.sum(dim=dim, keepdim=True)", "return scores / scores.sum(dim=-1, keepdim=True)")],
          ["dim", "ignored", "last"]),
    probe("p04", G1, "normalization", "softmax_stable: scores.max(dim, keepdim=True) returns (values, indices)",
          [(STABLE_SHIFT, "shifted = scores - scores.max(dim=dim, keepdim=True)")],
          ["values", ".max", "amax", "namedtuple", "indices"]),
    probe("p05", G1, "normalization", "softmax_stable: amax without keepdim (right for a vector, wrong for a matrix)",
          [(STABLE_SHIFT, "shifted = scores - scores.amax(dim=dim)")], ["keepdim"]),
    probe("p06", G1, "context_vectors", "context_vector: the document's loop with torch.zeros(attn_weights.shape), (T,) not (d,)",
          [("### BEGIN SOLUTION\n    return attn_weights @ inputs",
            "context = torch.zeros(attn_weights.shape)\n    for i, x_i in enumerate(inputs):\n"
            "        context += attn_weights[i] * x_i\n    return context")],
          ["zeros", "shape", "(d,)", "query.shape", "inputs.shape[1]", "inputs.shape[-1]"]),
    probe("p07", G1, "context_vectors", "context_vectors: softmax over dim=1 (right for 2-D, columns on a batch)",
          [("torch.softmax(attn_scores, dim=-1)", "torch.softmax(attn_scores, dim=1)")], ["dim"]),
    probe("p08", G2, "scaled_attention", "scaled_dot_product: d_k = keys.shape[0] (T, not the feature size)",
          [("d_k = keys.shape[-1]", "d_k = keys.shape[0]")], ["shape[0]", "T_k", "tokens", "√6", "shape[-1]"]),
    probe("p09", G2, "scaled_attention", "scaled_dot_product: torch.sqrt(d_k) on a Python int",
          [("attn_scores / d_k**0.5", "attn_scores / torch.sqrt(d_k)")], ["sqrt", "int", "tensor"]),
    probe("p10", G2, "scaled_attention", "scaled_dot_product: softmax first, then divided by sqrt(d_k)",
          [("torch.softmax(attn_scores / d_k**0.5, dim=-1)", "torch.softmax(attn_scores, dim=-1) / d_k**0.5")],
          ["after", "before the softmax", "sum to 1", "order"]),
    probe("p11", G2, "self_attention", "SelfAttention_v1: the 3.4.1 listing's requires_grad=False copied into the class",
          [(f"self.{w} = nn.Parameter(torch.rand(d_in, d_out))",
            f"self.{w} = nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)") for w in ("W_query", "W_key", "W_value")],
          ["requires_grad", "gradient"]),
    probe("p12", G2, "self_attention", "SelfAttention_v2.forward: x @ self.W_key.weight.T, the biases left out",
          [("keys = self.W_key(x)\n        queries = self.W_query(x)\n        values = self.W_value(x)",
            "keys = x @ self.W_key.weight.T\n        queries = x @ self.W_query.weight.T\n"
            "        values = x @ self.W_value.weight.T")],
          ["bias"]),
    probe("p13", G2, "weight_transfer", "copy_weights_v2_to_v1: copy_ into the parameters without torch.no_grad()",
          [("    with torch.no_grad():\n        for name in _PROJECTIONS:\n            getattr(sa_v1, name).copy_",
            "    if True:\n        for name in _PROJECTIONS:\n            getattr(sa_v1, name).copy_")],
          ["no_grad", "in-place", "leaf"]),
    probe("p14", G2, "weight_transfer", "copy_weights_v1_to_v2: v2's biases left as they were",
          [("            if linear.bias is not None:\n                linear.bias.zero_()\n", "")], ["bias"]),
]


# Written after step 2, before being run: new slips near the fixed ones (do the new causes generalize, and stay true?).
AFTER = [
    probe("q01", G1, "attention_scores", "attention_scores: the loop fills torch.zeros(len(query))",
          [("return torch.stack([torch.dot(x_i, query) for x_i in inputs])",
            "s = torch.zeros(len(query))\n    for i in range(len(inputs)):\n        s[i] = torch.dot(inputs[i], query)\n    return s")],
          ["indexed by token", "T = inputs.shape[0]"]),
    probe("q02", G1, "normalization", "softmax_naive: exp / exp.sum(dim) without keepdim",
          [("exp = torch.exp(scores)\n    return exp / exp.sum(dim=dim, keepdim=True)",
            "exp = torch.exp(scores)\n    return exp / exp.sum(dim=dim)")], ["keepdim"]),
    probe("q03", G2, "self_attention", "SelfAttention_v1.forward: scaled by torch.sqrt(keys.shape[-1])",
          [("attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n        return attn_weights @ values\n        ### END SOLUTION\n\n\nclass",
            "attn_weights = torch.softmax(attn_scores / torch.sqrt(keys.shape[-1]), dim=-1)\n        return attn_weights @ values\n        ### END SOLUTION\n\n\nclass")],
          ["torch.sqrt takes a tensor"]),
    probe("q04", G2, "self_attention", "SelfAttention_v2: nn.Linear(d_out, d_in, ...), in and out swapped",
          [("self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
            "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)",
            "self.W_query = nn.Linear(d_out, d_in, bias=qkv_bias)\n        self.W_key = nn.Linear(d_out, d_in, bias=qkv_bias)\n"
            "        self.W_value = nn.Linear(d_out, d_in, bias=qkv_bias)")], ["d_in", "swapped", "nn.Linear"]),
    probe("q05", G2, "weight_transfer", "copy_weights_v2_to_v1: sa_v1.W_query = nn.Parameter(sa_v2.W_query.weight.T)",
          [("getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)",
            "setattr(sa_v1, name, nn.Parameter(getattr(sa_v2, name).weight.T))")], ["replaced", "alias", "share"]),
]

# Right code in other words than the solutions: none may fail (a test that fails one charges an honest idiom).
IDIOMS = [
    probe("r01", G1, "attention_scores", "attention_score_matrix with einsum",
          [("return inputs @ inputs.transpose(-2, -1)", "return torch.einsum('...id,...jd->...ij', inputs, inputs)")], []),
    probe("r02", G1, "context_vectors", "context_vector: the document's loop with torch.zeros(inputs.shape[1])",
          [("### BEGIN SOLUTION\n    return attn_weights @ inputs",
            "### BEGIN SOLUTION\n    z = torch.zeros(inputs.shape[1], dtype=inputs.dtype)\n    for i, x_i in enumerate(inputs):\n"
            "        z = z + attn_weights[i] * x_i\n    return z")], []),
    probe("r03", G2, "scaled_attention", "scaled_dot_product: the notebook's torch.sqrt(torch.tensor(d_k))",
          [("attn_scores / d_k**0.5", "attn_scores / torch.sqrt(torch.tensor(d_k))")], []),
    probe("r04", G1, "normalization", "softmax_stable: scores.max(dim=dim, keepdim=True).values",
          [(STABLE_SHIFT, "shifted = scores - scores.max(dim=dim, keepdim=True).values")], []),
]


def main(argv: list[str]) -> int:
    return student_mistakes.run_sets({"probes": PROBES, "after": AFTER, "idioms": IDIOMS}, argv)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
