"""Held-out student mistakes for groups 01-03: a final measurement, never a test's input.

    python benchmarks/heldout_probes_final_a.py [--show-causes]

Written by a fresh session (helper ``measure1``) at main 33e5c7d, after all fixes, from the stubs'
docstrings/READMEs/hints and the solutions of 01_simple_attention, 02_trainable_weights and 03_causal only,
without opening tests/mutants/, ../shared/student_mistakes/mistakes.json or the probe lists of the other
benchmarks/heldout_probes_*.py. 12 slips, 4 per group, each alone in a copy of the solutions, run once,
unchanged since; no code, test or message was changed for them. No test reads this file. Each entry has
the format of ``../shared/student_mistakes/mistakes.json`` (its README); the run is
benchmarks/student_mistakes.py's ``report``.

Result (run once, --show-causes, each ``likely cause:`` line judged by reading it against the patched code):
caught 12/12; a right cause named for 11/12; false causes 0; no cause for 1 (f04).

    id   group  mistake                                              verdict
    f01  01     attention_score_matrix with inputs.T (batch breaks)   right  (.T on a batch reverses all dims)
    f02  01     softmax_stable shifts by scores.max() (whole tensor)  right  (whole tensor's max, not each row's)
    f03  01     context_vectors softmax over dim=0                    right  (wrong dim: columns instead of rows)
    f04  01     context_vector as (inputs * attn_weights).sum(0)      none   (RuntimeError "size of tensor a (3)
                                                                             must match ... b (6)" shown with the
                                                                             call and shapes, no likely cause)
    f05  02     scaled_dot_product divides by d_k, not sqrt(d_k)      right  (divided by d_k instead of √d_k)
    f06  02     SelfAttention_v2 scales by sqrt(x.shape[-1]) = d_in   right  (scaled by 1/√d_in, not √d_out)
    f07  02     SelfAttention_v1 creates W_key before W_query         right  (creation order, hedged "if only
                                                                             this seeded test fails")
    f08  02     v2->v1 setattr(new nn.Parameter(weight.T))            right  (parameter replaced by a new object)
    f09  03     causal_mask with torch.triu instead of torch.tril     right  (mask transposed; keep the lower
                                                                             triangle: triu(ones) is tril(ones).T)
    f10  03     dropout keep-mask bernoulli_(p)                       right  (bernoulli_(p): keep with 1 - p)
    f11  03     CausalAttention mask not cut to T x T                 right  (mask not cut to T × T)
    f12  03     mask_future_scores with masked_fill_ (in place)       right  (in-place op on attn_scores)

Totals: caught 12, named right 11, false 0 (none: 1). Run: about 9 s wall, 8 CPU-s.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import student_mistakes  # noqa: E402  (the benchmark beside this file: one way to measure)

G1, G2, G3 = "01_simple_attention", "02_trainable_weights", "03_causal"


probe = student_mistakes.probe


PROBES = [
    probe("f01", G1, "attention_scores", "score matrix with .T as in the document's 2-D listing (breaks a batch)",
          [("return inputs @ inputs.transpose(-2, -1)", "return inputs @ inputs.T")],
          ["transpose", ".t", "batch"]),
    probe("f02", G1, "normalization", "softmax_stable shifts by the max of the whole tensor, not each row's",
          [("shifted = scores - scores.amax(dim=dim, keepdim=True)", "shifted = scores - scores.max()")],
          ["whole", "row", "own", "global", "each"]),
    probe("f03", G1, "context_vectors", "context_vectors takes the softmax over dim=0 (columns) instead of each row",
          [("torch.softmax(attn_scores, dim=-1)", "torch.softmax(attn_scores, dim=0)")],
          ["dim", "column", "axis"]),
    probe("f04", G1, "context_vectors", "context_vector multiplies (T, d) by (T,) elementwise without unsqueeze",
          [("    return attn_weights @ inputs\n    ### END SOLUTION\n\n\ndef context_vectors",
            "    return (inputs * attn_weights).sum(dim=0)\n    ### END SOLUTION\n\n\ndef context_vectors")],
          ["broadcast", "unsqueeze", "[:, none]", "shape", "t-sized", "column"]),
    probe("f05", G2, "scaled_attention", "divides the scores by d_k, not by its square root",
          [("attn_scores / d_k**0.5", "attn_scores / d_k")],
          ["sqrt", "√", "square root", "** 0.5"]),
    probe("f06", G2, "self_attention", "SelfAttention_v2 scales by √d_in (x.shape[-1]) instead of √d_out",
          [("        keys = self.W_key(x)\n        queries = self.W_query(x)\n        values = self.W_value(x)\n"
            "        attn_scores = queries @ keys.transpose(-2, -1)\n"
            "        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
            "        keys = self.W_key(x)\n        queries = self.W_query(x)\n        values = self.W_value(x)\n"
            "        attn_scores = queries @ keys.transpose(-2, -1)\n"
            "        attn_weights = torch.softmax(attn_scores / x.shape[-1] ** 0.5, dim=-1)")],
          ["d_in", "d_out", "input dimension", "x.shape"]),
    probe("f07", G2, "self_attention", "SelfAttention_v1 creates W_key before W_query (other random numbers)",
          [("        self.W_query = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_key = nn.Parameter(torch.rand(d_in, d_out))",
            "        self.W_key = nn.Parameter(torch.rand(d_in, d_out))\n        self.W_query = nn.Parameter(torch.rand(d_in, d_out))")],
          ["order"]),
    probe("f08", G2, "weight_transfer", "v2->v1 replaces v1's parameters with new nn.Parameters of v2's weight.T",
          [("            getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)",
            "            setattr(sa_v1, name, nn.Parameter(getattr(sa_v2, name).weight.T))")],
          ["replace", "copy_", "share", "storage", "in place", "new parameter"]),
    probe("f09", G3, "causal_mask", "causal_mask with torch.triu (the upper triangle) instead of torch.tril",
          [("return torch.tril(torch.ones(num_tokens, num_tokens))", "return torch.triu(torch.ones(num_tokens, num_tokens))")],
          ["triu", "tril", "upper", "transpose"]),
    probe("f10", G3, "attention_dropout", "draws the keep-mask with bernoulli_(p) (the drop probability)",
          [("keep = torch.empty_like(x).bernoulli_(1 - p)", "keep = torch.empty_like(x).bernoulli_(p)")],
          ["1 - p", "keep probability", "drop probability", "bernoulli_(p)"]),
    probe("f11", G3, "causal_attention", "CausalAttention uses the full mask, not cut to T x T",
          [("self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()")],
          ["cut", "[:t", "num_tokens", "slice", "t x t", "t × t"]),
    probe("f12", G3, "causal_mask", "mask_future_scores fills in place (masked_fill_), changing the caller's scores",
          [('return attn_scores.masked_fill(future, float("-inf"))', 'return attn_scores.masked_fill_(future, float("-inf"))')],
          ["in place", "masked_fill_", "modif", "input", "copy"]),
]


def main(argv: list[str]) -> int:
    return student_mistakes.report(PROBES, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
