"""Held-out student mistakes for groups 03-04 (issue 38, item 3): a measurement set, never a test's input.

    python benchmarks/heldout_probes_34b.py [first|second|all] [--show-causes]

Written by a fresh pair of eyes before reading the library of known mistakes (tests/mutants/student_mistakes*.py),
``../shared/student_mistakes/mistakes.json`` or the lists of the other held-out files, from the chapter text and
the stubs of 03_causal and 04_multihead only, as a student following the chapter would slip. No test reads this
file: a mistake of it that a test names must be named by a reproduction, not because it is listed. Each entry has
the format of ``../shared/student_mistakes/mistakes.json`` (its README); the run is benchmarks/student_mistakes.py's.

Measured at 537f081 (main, before any fix; each printed cause judged by hand): caught 16/16, a ``likely cause:``
line names 15/16, false 1/16:

* p06 unnamed: the ValueError for p = 0 and p = 1 escapes with no cause;
* p15 false: besides the right "one of these: divided by head_dim = 2; or scaled by 1/√d_out = 1/√4", the known
  result of the library's "divided the scores by d_k instead of √d_k" is named alone (on the dropout test, only it),
  though scaling by 1/√d_out gives the same result there (d_out = 4, head_dim = 2): the student's code does not
  divide by d_k;
* all other causes right (p08's "not cut to T × T" is true of a mask cut to T rows and context_length columns).

After the fixes they prompted (so p06 and p15 are no longer held out: p06 joined the library,
tests/mutants/student_mistakes_named.py; p15 was in it already, ``multihead_attention_scaled_by_d_out``, which
listed the lone d_k cause as ``also_named`` and now says it must not be said alone, ``not_said``): caught 16/16,
named 16/16, none false. Causes whose alternatives all
reproduce one result are said in one line, "one of these, which give the same result here: ..."
(kata_mistakes.together, in every assert_close), never one alone; the dropout test of MultiHeadAttention
recomputes the wrong scales from the module's own weights; a ValueError at p = 0 or 1 from a dropout that takes
p = 0.5 is named (kata_mistakes.bound_refused). p15 now reads "one of these ...: divided the scores by d_k instead
of √d_k ...; or divided by head_dim = 2 instead of √head_dim; or scaled by 1/√d_out = 1/√4 ..." (true: at d_out 4
and 2 heads the three give one result), and p06 "refused p = 0 or p = 1: [0, 1] includes its bounds ...".

``SECOND`` (q01-q06) was written after those fixes, from the same sources, and measured once on the branch as it
stood: caught 6/6, named 4/6, none false (q01 softmax over the columns, q03 no keepdim, q04 and q05 the
ValueErrors: right). Unnamed: q02 (dropout on CausalAttention's scores before the mask, and again on the weights)
and q06 (MultiHeadAttention's mask transposed: the past hidden). After the fixes they prompted (no longer held
out): q06 named by the grid of test_multihead_attention.py (the mask on the past), and the dropout moved to the
scores (q02 without its second dropout) named by test_causal_attention.py's recomputation; both joined the library.
q02 as written, dropout twice, stays unnamed: all 22 caught, 21 named, none false.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import student_mistakes  # noqa: E402  (the benchmark beside this file: one way to measure)

G3, G4 = "03_causal", "04_multihead"


probe = student_mistakes.probe


PROBES = [
    probe("p01", G3, "causal_mask", "causal_mask returns the future mask triu(ones, diagonal=1) (the buffer of 3.5.3), not tril",
          [("return torch.tril(torch.ones(num_tokens, num_tokens))",
            "return torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1)")],
          ["complement", "triu", "invert", "future"]),
    probe("p02", G3, "causal_mask", "mask_and_renormalize divides by the row sums of the unmasked weights (all 1)",
          [("return masked / masked.sum(dim=-1, keepdim=True)",
            "return masked / attn_weights.sum(dim=-1, keepdim=True)")],
          ["renormaliz", "masked", "sum"]),
    probe("p03", G3, "causal_mask", "mask_future_scores fills the future with 0 instead of -inf",
          [('return attn_scores.masked_fill(future, float("-inf"))', "return attn_scores.masked_fill(future, 0.0)")],
          ["-inf", "0 ", "zero"]),
    probe("p04", G3, "causal_mask", "causal_attention_weights divides by sqrt(d_k) after the softmax",
          [("return torch.softmax(mask_future_scores(attn_scores) / d_k**0.5, dim=-1)",
            "return torch.softmax(mask_future_scores(attn_scores), dim=-1) / d_k**0.5")],
          ["after", "before the softmax", "sum to"]),
    probe("p05", G3, "attention_dropout", "dropout rescales the survivors by 1/p instead of 1/(1-p)",
          [("return x * keep.div_(1 - p)", "return x * keep.div_(p)")],
          ["1/p", "1 / p", "by p", "1-p", "1 - p"]),
    probe("p06", G3, "attention_dropout", "dropout's check excludes the bounds: 0 < p < 1 (p = 0 and p = 1 raise)",
          [("if not 0.0 <= p <= 1.0:", "if not 0.0 < p < 1.0:")],
          ["<=", "bound", "inclusive", "[0, 1]"]),
    probe("p07", G3, "causal_attention", "CausalAttention builds the mask in forward (no device=) instead of using its buffer",
          [("attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
            "attn_scores.masked_fill(torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1).bool(), -torch.inf)")],
          ["device", "buffer"]),
    probe("p08", G3, "causal_attention", "CausalAttention cuts only the mask's rows: self.mask.bool()[:num_tokens]",
          [("self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()[:num_tokens]")],
          ["column", "T × T", "T x T", "cut"]),
    probe("p09", G4, "head_split", "split_heads unrolls d_out as (head_dim, num_heads): heads get interleaved features",
          [("return x.reshape(b, num_tokens, num_heads, d_out // num_heads).transpose(1, 2)",
            "return x.reshape(b, num_tokens, d_out // num_heads, num_heads).permute(0, 3, 1, 2)")],
          ["interleav", "(num_heads, head_dim)", "order", "stride"]),
    probe("p10", G4, "head_split", "merge_heads reshapes without moving the head axis back (no transpose)",
          [("return x.transpose(1, 2).reshape(b, num_tokens, num_heads * head_dim)",
            "return x.reshape(b, num_tokens, num_heads * head_dim)")],
          ["transpose", "head axis", "mix"]),
    probe("p11", G4, "head_split", "per_head_scores transposes heads and tokens of the keys: keys.transpose(1, 2)",
          [("return queries @ keys.transpose(2, 3)", "return queries @ keys.transpose(1, 2)")],
          ["transpose(2, 3)", "axes", "axis", "last two"]),
    probe("p12", G4, "multihead_wrapper", "the wrapper concatenates on dim=1 (the token axis of a batch), as for 2-D inputs",
          [("return torch.cat([head(x) for head in self.heads], dim=-1)",
            "return torch.cat([head(x) for head in self.heads], dim=1)")],
          ["dim", "last", "token"]),
    probe("p13", G4, "multihead_wrapper", "two_dim_wrapper gives each head d_out=2 (output 4-dimensional)",
          [("return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)",
            "return MultiHeadAttentionWrapper(d_in, 2, context_length, dropout, num_heads=2)")],
          ["d_out=1", "d_out = 1", "each head", "num_heads * d_out"]),
    probe("p14", G4, "multihead_attention", "MultiHeadAttention returns the merged heads without applying out_proj",
          [("return self.out_proj(context)", "return context")],
          ["out_proj"]),
    probe("p15", G4, "multihead_attention", "MultiHeadAttention scales by sqrt(d_out) (as CausalAttention did) not sqrt(head_dim)",
          [("torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)", "torch.softmax(attn_scores / self.d_out**0.5, dim=-1)")],
          ["d_out", "head_dim"]),
    probe("p16", G4, "multihead_attention", "MultiHeadAttention merges with .view after the transpose (no .contiguous())",
          [("(attn_weights @ values).transpose(1, 2).reshape(b, num_tokens, self.d_out)",
            "(attn_weights @ values).transpose(1, 2).view(b, num_tokens, self.d_out)")],
          ["contiguous", "view"]),
]

# Written after the fixes above, from the same sources, and measured once (not used for a fix).
SECOND = [
    probe("q01", G3, "causal_attention", "CausalAttention's softmax over dim=1 of (b, T, T): each column, not each row",
          [("attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)",
            "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=1)")],
          ["dim", "column", "row"]),
    probe("q02", G3, "causal_attention", "CausalAttention applies its dropout to the scores before masking them, and again to the weights",
          [("        attn_scores = attn_scores.masked_fill(", "        attn_scores = self.dropout(attn_scores)\n        attn_scores = attn_scores.masked_fill(")],
          ["dropout", "before"]),
    probe("q03", G3, "causal_mask", "mask_and_renormalize divides by the row sums without keepdim (broadcasts along the rows)",
          [("return masked / masked.sum(dim=-1, keepdim=True)", "return masked / masked.sum(dim=-1)")],
          ["keepdim"]),
    probe("q04", G4, "multihead_attention", "MultiHeadAttention never checks T > context_length (the mask cut is smaller)",
          [("        if num_tokens > self.context_length:\n            raise ValueError(f\"the input has {num_tokens} tokens, more than context_length={self.context_length}\")\n", "")],
          ["context_length", "ValueError"]),
    probe("q05", G4, "head_split", "split_heads does not check divisibility: reshape raises a RuntimeError",
          [("    if d_out % num_heads != 0:\n        raise ValueError(f\"d_out={d_out} is not divisible by num_heads={num_heads}\")\n", "")],
          ["divisible", "ValueError"]),
    probe("q06", G4, "multihead_attention", "MultiHeadAttention masks with the transposed mask (hides the past)",
          [("attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
            "attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens].T, -torch.inf)")],
          ["past", "transpos", "below"]),
]


def main(argv: list[str]) -> int:
    return student_mistakes.run_sets({"first": PROBES, "second": SECOND, "all": PROBES + SECOND}, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
