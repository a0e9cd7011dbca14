"""Held-out student mistakes for groups 01-03 (issue 38, item 3): a measurement set, never a test's input.

    python benchmarks/heldout_probes_13.py [first|second|all] [--show-causes]

Written before reading the library of known mistakes (tests/mutants/student_mistakes*.py), as a student
following the chapter would slip, so that it measures how far the public tests' causes generalize beyond
the mistakes they were built from. ``FIRST`` was written before the causes of groups 01-03 were reworked,
``SECOND`` after, without looking at which of ``FIRST`` got named. No test reads this file: a mistake of
it that a test names must be named by a reproduction, not because it is listed. Each entry has the format of
``../shared/student_mistakes/mistakes.json`` (its README); the run is benchmarks/student_mistakes.py's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import student_mistakes  # noqa: E402  (the benchmark beside this file: one way to measure)

G1, G2, G3 = "01_simple_attention", "02_trainable_weights", "03_causal"


probe = student_mistakes.probe


FIRST = [
    probe("h01", G1, "attention_scores", "attention_score_matrix written inputs.T @ inputs (a (d, d) Gram matrix)",
          [("return inputs @ inputs.transpose(-2, -1)", "return inputs.transpose(-2, -1) @ inputs")],
          ["order", "transpose", "(d, d)", "features"]),
    probe("h02", G1, "context_vectors", "context_vectors: softmax over dim=0 (columns) instead of each row",
          [("torch.softmax(attn_scores, dim=-1)", "torch.softmax(attn_scores, dim=0)")], ["dim", "column", "axis"]),
    probe("h03", G1, "context_vectors", "context_vectors: weights normalized by their sum instead of softmax",
          [("attn_weights = torch.softmax(attn_scores, dim=-1)",
            "attn_weights = attn_scores / attn_scores.sum(dim=-1, keepdim=True)")], ["softmax", "sum"]),
    probe("h04", G1, "normalization", "normalize_by_sum: sum without keepdim",
          [("return scores / scores.sum(dim=dim, keepdim=True)", "return scores / scores.sum(dim=dim)")],
          ["keepdim", "broadcast"]),
    probe("h05", G1, "normalization", "softmax_stable subtracts the whole tensor's max, not each row's",
          [("shifted = scores - scores.amax(dim=dim, keepdim=True)", "shifted = scores - scores.max()")],
          ["whole", "each row", "global", "row's own", "every row"]),
    probe("h06", G1, "normalization", "softmax_naive sums over the whole tensor (no dim)",
          [("exp = torch.exp(scores)\n    return exp / exp.sum(dim=dim, keepdim=True)",
            "exp = torch.exp(scores)\n    return exp / exp.sum()")], ["whole", "dim", "all elements"]),
    probe("h07", G1, "attention_scores", "attention_scores sums the elementwise product over dim 0 (tokens)",
          [("return torch.stack([torch.dot(x_i, query) for x_i in inputs])", "return (inputs * query).sum(dim=0)")],
          ["dim", "axis", "token"]),
    probe("h08", G2, "scaled_attention", "scaled_dot_product divides by d_k, not its square root",
          [("attn_scores / d_k**0.5", "attn_scores / d_k")], ["√", "sqrt", "square root"]),
    probe("h09", G2, "scaled_attention", "scaled_dot_product multiplies by sqrt(d_k)",
          [("attn_scores / d_k**0.5", "attn_scores * d_k**0.5")], ["multipl", "divide", "inverse", "×"]),
    probe("h10", G2, "scaled_attention", "scaled_dot_product scales by d_v (values.shape[-1])",
          [("d_k = keys.shape[-1]", "d_k = values.shape[-1]")], ["d_v", "values", "value"]),
    probe("h11", G2, "self_attention", "SelfAttention_v1 scales by the input's width d_in",
          [("attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n        return attn_weights @ values\n        ### END SOLUTION\n\n\nclass SelfAttention_v2",
            "attn_weights = torch.softmax(attn_scores / x.shape[-1] ** 0.5, dim=-1)\n        return attn_weights @ values\n        ### END SOLUTION\n\n\nclass SelfAttention_v2")],
          ["d_in"]),
    probe("h12", G2, "self_attention", "SelfAttention_v2: values come from W_key (copy-paste)",
          [("values = self.W_value(x)", "values = self.W_key(x)")], ["w_value", "value", "w_key"]),
    probe("h13", G2, "self_attention", "SelfAttention_v2 always has biases (bias=True ignores qkv_bias)",
          [("self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n        ### END SOLUTION\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        \"\"\"x (..., T, d_in) -> context vectors (..., T, d_out); keys = self.W_key(x)",
            "self.W_query = nn.Linear(d_in, d_out, bias=True)\n        self.W_key = nn.Linear(d_in, d_out, bias=True)\n        self.W_value = nn.Linear(d_in, d_out, bias=True)\n        ### END SOLUTION\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        \"\"\"x (..., T, d_in) -> context vectors (..., T, d_out); keys = self.W_key(x)")],
          ["bias"]),
    probe("h14", G2, "weight_transfer", "copy_weights_v2_to_v1 copies weight.reshape(param.shape), not the transpose",
          [("getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)",
            "getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.reshape(getattr(sa_v1, name).shape))")],
          ["transpose", ".t", "reshape", "view"]),
    probe("h15", G2, "weight_transfer", "copy_weights_v1_to_v2 leaves v2's biases as they were",
          [("            if linear.bias is not None:\n                linear.bias.zero_()\n", "")], ["bias"]),
    probe("h16", G3, "causal_mask", "causal_mask built with tril(..., diagonal=-1): the diagonal is hidden too",
          [("return torch.tril(torch.ones(num_tokens, num_tokens))", "return torch.tril(torch.ones(num_tokens, num_tokens), diagonal=-1)")],
          ["diagonal"]),
    probe("h17", G3, "causal_mask", "mask_future_scores masks with triu(diagonal=0): each token hides itself",
          [("dtype=torch.bool, device=attn_scores.device), diagonal=1)", "dtype=torch.bool, device=attn_scores.device), diagonal=0)")],
          ["diagonal"]),
    probe("h18", G3, "causal_mask", "mask_and_renormalize renormalizes over dim=-2",
          [("return masked / masked.sum(dim=-1, keepdim=True)", "return masked / masked.sum(dim=-2, keepdim=True)")],
          ["dim", "column", "axis"]),
    probe("h19", G3, "causal_mask", "causal_attention_weights masks with 0 instead of -inf (masked_fill with 0)",
          [("return torch.softmax(mask_future_scores(attn_scores) / d_k**0.5, dim=-1)",
            "future = torch.triu(torch.ones_like(attn_scores, dtype=torch.bool), diagonal=1)\n    return torch.softmax(attn_scores.masked_fill(future, 0.0) / d_k**0.5, dim=-1)")],
          ["-inf", "zero", "0 instead"]),
    probe("h20", G3, "attention_dropout", "dropout scales the survivors by (1 - p) instead of 1/(1 - p)",
          [("return x * keep.div_(1 - p)", "return x * keep.mul_(1 - p)")], ["1/(1", "1 / (1", "scale", "divid"]),
    probe("h21", G3, "attention_dropout", "dropout keeps with probability p (bernoulli_(p))",
          [("bernoulli_(1 - p)\n    return", "bernoulli_(p)\n    return")], ["1 - p", "keep", "bernoulli"]),
    probe("h22", G3, "causal_attention", "CausalAttention applies dropout to the scores before the softmax",
          [("        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)\n        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n        attn_weights = self.dropout(attn_weights)",
            "        attn_scores = self.dropout(attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf))\n        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)")],
          ["dropout", "before"]),
    probe("h23", G3, "causal_attention", "CausalAttention keeps the mask as a plain attribute, not a buffer",
          [('self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))',
            "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)")],
          ["buffer", "register_buffer"]),
    probe("h24", G3, "causal_attention", "CausalAttention's mask is tril: it hides the past and keeps the future",
          [('torch.triu(torch.ones(context_length, context_length), diagonal=1))', 'torch.tril(torch.ones(context_length, context_length), diagonal=-1))')],
          ["tril", "past", "transpos", "above", "below", "inverted", "the other side"]),
    probe("h25", G3, "causal_attention", "CausalAttention scales by sqrt(d_in) (x.shape[-1])",
          [("attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "attn_weights = torch.softmax(attn_scores / x.shape[-1] ** 0.5, dim=-1)")],
          ["d_in"]),
    probe("h26", G1, "context_vectors", "context_vectors returns the attention weights, not the context vectors",
          [("attn_weights = torch.softmax(attn_scores, dim=-1)\n    return attn_weights @ inputs", "attn_weights = torch.softmax(attn_scores, dim=-1)\n    return attn_weights")],
          ["weights", "context"]),
    probe("h27", G1, "attention_scores", "attention_score_matrix uses permute(0, 2, 1): right for a batch, fails on a matrix",
          [("return inputs @ inputs.transpose(-2, -1)", "return inputs @ inputs.permute(0, 2, 1)")],
          ["permute", "transpose(-2, -1)", "2-d", "matrix", "dimensions"]),
    probe("h28", G1, "normalization", "normalize_by_sum always sums over the last dim (dim ignored)",
          [("return scores / scores.sum(dim=dim, keepdim=True)", "return scores / scores.sum(dim=-1, keepdim=True)")],
          ["dim"]),
    probe("h29", G1, "normalization", "softmax_stable computes the shift but exponentiates the raw scores",
          [("exp = torch.exp(shifted)", "exp = torch.exp(scores)")], ["max", "shift", "subtract"]),
    probe("h30", G2, "scaled_attention", "scaled_dot_product multiplies the weights by the keys, not the values",
          [("return attn_weights @ values, attn_weights", "return attn_weights @ keys, attn_weights")],
          ["values", "keys"]),
    probe("h31", G2, "self_attention", "SelfAttention_v2 multiplies by the nn.Linear weight instead of calling the layer",
          [("queries = self.W_query(x)", "queries = x @ self.W_query.weight")],
          ["weight", "call the layer", ".t", "w_query(x)", "(d_out, d_in)"]),
    probe("h32", G2, "weight_transfer", "copy_weights_v1_to_v2 copies W_query into every layer (copy-paste)",
          [("linear.weight.copy_(getattr(sa_v1, name).T)", "linear.weight.copy_(sa_v1.W_query.T)")],
          ["w_query", "same", "each", "every"]),
    probe("h33", G3, "attention_dropout", "dropout returns x unchanged at p == 1 (the p == 1 case forgotten)",
          [("    if p == 1.0:\n        return torch.zeros_like(x)\n    keep", "    if p == 1.0:\n        return x\n    keep")],
          ["p = 1", "p == 1", "zeros", "every element"]),
    probe("h34", G3, "attention_dropout", "dropout works in place on x (mul_ and div_)",
          [("return x * keep.div_(1 - p)", "return x.mul_(keep).div_(1 - p)")], ["in place", "in-place"]),
    probe("h35", G3, "causal_mask", "causal_mask returns a bool mask",
          [("return torch.tril(torch.ones(num_tokens, num_tokens))", "return torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool))")],
          ["bool", "float", "dtype"]),
    probe("h36", G3, "causal_mask", "causal_attention_weights masks after the softmax",
          [("return torch.softmax(mask_future_scores(attn_scores) / d_k**0.5, dim=-1)",
            "return mask_future_scores(torch.softmax(attn_scores / d_k**0.5, dim=-1))")],
          ["after the softmax", "before the softmax"]),
    probe("h37", G3, "causal_attention", "CausalAttention refuses T == context_length too (>=)",
          [("if num_tokens > self.context_length:", "if num_tokens >= self.context_length:")],
          [">=", "equal", "context_length tokens", "at most"]),
    probe("h38", G3, "causal_attention", "CausalAttention softmax over dim=1 (the queries)",
          [("attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=1)")],
          ["dim"]),
    probe("h39", G3, "causal_attention", "CausalAttention applies dropout to the values",
          [("        attn_weights = self.dropout(attn_weights)\n        return attn_weights @ values", "        return attn_weights @ self.dropout(values)")],
          ["dropout"]),
]

SECOND = [
    probe("s01", G1, "context_vectors", "context_vector multiplies weights (T,) by inputs (T, d) elementwise, then sums over dim 0",
          [("### BEGIN SOLUTION\n    return attn_weights @ inputs", "### BEGIN SOLUTION\n    return (attn_weights * inputs).sum(dim=0)")],
          ["broadcast", "[:, none]", "unsqueeze", "align"]),
    probe("s02", G1, "context_vectors", "context_vectors uses inputs.T for the scores (breaks on a batch)",
          [("attn_scores = inputs @ inputs.transpose(-2, -1)", "attn_scores = inputs @ inputs.T")],
          [".t", "transpose(-2, -1)"]),
    probe("s03", G2, "scaled_attention", "scaled_dot_product writes d_k ** 1/2 (precedence: d_k / 2)",
          [("attn_scores / d_k**0.5", "attn_scores / (d_k ** 1/2)")], ["scal", "√", "precedence"]),
    probe("s04", G2, "scaled_attention", "scaled_dot_product scales the context instead of the scores",
          [("attn_weights = torch.softmax(attn_scores / d_k**0.5, dim=-1)\n    return attn_weights @ values, attn_weights",
            "attn_weights = torch.softmax(attn_scores, dim=-1)\n    return attn_weights @ values / d_k**0.5, attn_weights")],
          ["scal", "before the softmax"]),
    probe("s05", G2, "self_attention", "SelfAttention_v2 computes queries.T @ keys (features x features)",
          [("values = self.W_value(x)\n        attn_scores = queries @ keys.transpose(-2, -1)\n        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n        return attn_weights @ values\n        ### END SOLUTION\n", 
            "values = self.W_value(x)\n        attn_scores = queries.transpose(-2, -1) @ keys\n        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n        return attn_weights @ values\n        ### END SOLUTION\n")],
          ["transpose", "order", "features", "queries @ keys"]),
    probe("s06", G2, "weight_transfer", "copy_weights_v1_to_v2 checks no shapes (copy_ raises RuntimeError)",
          [("        if param.T.shape != linear.weight.shape:\n            raise ValueError(\n                f\"sa_v1.{name}.T has shape {tuple(param.T.shape)}, \"\n                f\"sa_v2.{name}.weight has shape {tuple(linear.weight.shape)}\"\n            )\n", "        pass\n")],
          ["valueerror", "shape"]),
    probe("s07", G3, "attention_dropout", "dropout writes x * keep / 1 - p (precedence)",
          [("return x * keep.div_(1 - p)", "return x * keep / 1 - p")], ["1 - p", "parenthes", "precedence", "divid"]),
    probe("s08", G3, "attention_dropout", "dropout refuses only p > 1 (a negative p is let through)",
          [("if not 0.0 <= p <= 1.0:", "if p > 1.0:")], ["0 <= p", "valueerror", "check"]),
    probe("s09", G3, "causal_mask", "mask_and_renormalize divides by the row sums without keepdim",
          [("return masked / masked.sum(dim=-1, keepdim=True)", "return masked / masked.sum(dim=-1)")],
          ["keepdim", "broadcast"]),
    probe("s10", G3, "causal_mask", "mask_future_scores passes a float 0/1 mask to masked_fill",
          [("future = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=attn_scores.device), diagonal=1)",
            "future = torch.triu(torch.ones(num_tokens, num_tokens, device=attn_scores.device), diagonal=1)")],
          ["bool"]),
    probe("s11", G3, "causal_mask", "causal_attention_weights divides by d_k (no square root)",
          [("return torch.softmax(mask_future_scores(attn_scores) / d_k**0.5, dim=-1)", "return torch.softmax(mask_future_scores(attn_scores) / d_k, dim=-1)")],
          ["d_k", "√"]),
    probe("s12", G3, "causal_attention", "CausalAttention cuts only the mask's rows (self.mask[:T])",
          [("self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()[:num_tokens]")],
          ["cut", "[:t, :t]", "columns"]),
    probe("s13", G3, "causal_attention", "CausalAttention reads num_tokens from x.shape[-1] (d_in)",
          [("num_tokens = x.shape[-2]", "num_tokens = x.shape[-1]")], ["shape[-1]", "num_tokens", "features", "d_in", "shape[1]"]),
    probe("s14", G3, "causal_attention", "CausalAttention makes the keys with W_query (copy-paste)",
          [("keys = self.W_key(x)\n        queries = self.W_query(x)", "keys = self.W_query(x)\n        queries = self.W_query(x)")],
          ["w_key"]),
]


def main(argv: list[str]) -> int:
    return student_mistakes.run_sets({"first": FIRST, "second": SECOND, "all": FIRST + SECOND}, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
