"""Held-out student mistakes for groups 03_causal and 04_multihead: a final fresh set, a measurement, never a test's input.

    python benchmarks/heldout_probes_final_b.py [--show-causes]

Written by a fresh session after all fixes (branch measure2, from main), as a measurement only: no code, test
or message was changed for it, and it was run once. Written from the READMEs of exercises/03_causal and
04_multihead, the solutions' docstrings and student texts (solutions/03_causal, solutions/04_multihead),
without opening tests/mutants/, ../shared/student_mistakes/mistakes.json (only its README, for the format)
or the probe lists of the other benchmarks/heldout_probes_*.py (of heldout_probes_12b.py, only its
docstring, its probe() and main() were read; a few of its group 01-02 entries were seen around them). No test
reads this file. 12 slips: 4 in 03 (one per module, two in CausalAttention), 8 in 04 (2 head_split, 3
wrapper, 3 MultiHeadAttention). Each printed ``likely cause:`` line was judged by reading it against the
patched code: right, false (wrong for that code) or none.

Result: caught 12/12; a right cause named for 12/12; false causes 0.

    id   module               slip                                             caught  verdict
    c01  causal_mask          mask_future_scores: triu without diagonal=1     yes     right (diagonal hidden, row 0 NaN)
    c02  attention_dropout    bernoulli_(p) instead of bernoulli_(1 - p)      yes     right
    c03  causal_attention     masked_fill(..., 0.0) instead of -inf           yes     right
    c04  causal_attention     mask a plain attribute, not register_buffer     yes     right
    h01  head_split           split_heads: reshape to (b, h, T, hd) directly  yes     right (1)
    h02  head_split           merge_heads: reshape without transpose(1, 2)    yes     right
    w01  multihead_wrapper    heads in a plain list, not nn.ModuleList        yes     right
    w02  multihead_wrapper    qkv_bias not passed to the heads                yes     right
    w03  multihead_wrapper    two_dim_wrapper with d_out=2 per head           yes     right
    m01  multihead_attention  head_dim = d_out (the listing's bug)            yes     right
    m02  multihead_attention  scores / sqrt(d_out), not sqrt(head_dim)        yes     right (2)
    m03  multihead_attention  .view after transpose when merging              yes     right (contiguous)

(1) Two lines: "a bare .view(b, num_heads, T, head_dim)" (right: a reshape straight to that shape is the
same slip) and a "one of these, which give the same result here" line listing that cause and "split without
moving the head axis"; the alternative is not this code, but it is offered as indistinguishable, with the
right one, so not counted false. (2) Two lines: "scaled by 1/sqrt(d_out) = 1/sqrt(2)" (right) and a
"one of these" line (d_k instead of sqrt(d_k); head_dim instead of sqrt(head_dim); 1/sqrt(d_out) = 1/sqrt(4)),
which contains the right cause: with d_out 4 and head_dim 2 the three divide by the same number.

Caveat on what this measures: most of these slips are ones the READMEs, docstrings or hints warn about by
name (bare view, head_dim = d_out, plain list, register_buffer, d_out = 1, bernoulli_(1 - p), view after a
transpose), which is what a student following the chapter meets, but also what the library was most likely
built around; less documented slips (e.g. a missing out_proj, dropout before the softmax, a mask not cut to
T x T) were not in this set. Run: ``python benchmarks/heldout_probes_final_b.py --show-causes``, about
12 CPU-s user, 21 s wall.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import student_mistakes  # noqa: E402  (the benchmark beside this file: one way to measure)

G3, G4 = "03_causal", "04_multihead"


probe = student_mistakes.probe

PROBES = [
    probe("c01", G3, "causal_mask", "mask_future_scores: torch.triu without diagonal=1 (the diagonal masked too)",
          [(", device=attn_scores.device), diagonal=1)", ", device=attn_scores.device))")],
          ["diagonal", "triu"]),
    probe("c02", G3, "attention_dropout", "dropout: bernoulli_(p), p taken as the keep probability",
          [("bernoulli_(1 - p)\n", "bernoulli_(p)\n")],
          ["1 - p", "keep probability", "bernoulli_(p)", "drop probability", "probability to drop"]),
    probe("c03", G3, "causal_attention", "CausalAttention: masked_fill with 0 instead of -inf",
          [("[:num_tokens, :num_tokens], -torch.inf)", "[:num_tokens, :num_tokens], 0.0)")],
          ["-inf", "inf", "zero"]),
    probe("c04", G3, "causal_attention", "CausalAttention: the mask a plain attribute, not a registered buffer",
          [('self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))',
            "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)")],
          ["buffer", "device", "state_dict"]),
    probe("h01", G4, "head_split", "split_heads: one reshape straight to (b, h, T, hd), no transpose",
          [("return x.reshape(b, num_tokens, num_heads, d_out // num_heads).transpose(1, 2)",
            "return x.reshape(b, num_heads, num_tokens, d_out // num_heads)")],
          ["transpose", "mix", "(b, t, h", "view", "reshape"]),
    probe("h02", G4, "head_split", "merge_heads: reshape without moving the head axis back (no transpose)",
          [("return x.transpose(1, 2).reshape(b, num_tokens, num_heads * head_dim)",
            "return x.reshape(b, num_tokens, num_heads * head_dim)")],
          ["transpose", "mix", "reshape"]),
    probe("w01", G4, "multihead_wrapper", "MultiHeadAttentionWrapper: heads kept in a plain Python list",
          [("self.heads = nn.ModuleList(\n            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) "
            "for _ in range(num_heads)]\n        )",
            "self.heads = [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]")],
          ["modulelist", "plain list", "python list", "registered"]),
    probe("w02", G4, "multihead_wrapper", "MultiHeadAttentionWrapper: qkv_bias not passed to the heads",
          [("CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for",
            "CausalAttention(d_in, d_out, context_length, dropout) for")],
          ["qkv_bias", "bias"]),
    probe("w03", G4, "multihead_wrapper", "two_dim_wrapper: d_out=2 per head (output 4-dim)",
          [("return MultiHeadAttentionWrapper(d_in, 1, context_length", "return MultiHeadAttentionWrapper(d_in, 2, context_length")],
          ["d_out=1", "d_out = 1", "per head", "each head", "num_heads * d_out", "two-dimensional"]),
    probe("m01", G4, "multihead_attention", "MultiHeadAttention: the listing's head_dim = d_out",
          [("self.head_dim = d_out // num_heads", "self.head_dim = d_out")],
          ["head_dim", "// num_heads"]),
    probe("m02", G4, "multihead_attention", "MultiHeadAttention: scores scaled by sqrt(d_out), not sqrt(head_dim)",
          [("attn_scores / self.head_dim**0.5", "attn_scores / self.d_out**0.5")],
          ["head_dim", "scale", "√"]),
    probe("m03", G4, "multihead_attention", "MultiHeadAttention: .view after the transpose when merging (non-contiguous)",
          [(".transpose(1, 2).reshape(b, num_tokens, self.d_out)", ".transpose(1, 2).view(b, num_tokens, self.d_out)")],
          ["contiguous", "view"]),
]


def main(argv: list[str]) -> int:
    return student_mistakes.report(PROBES, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
