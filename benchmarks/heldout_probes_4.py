"""Held-out multi-head mistakes (group 04): a benchmark's probes, never used by a test.

    python benchmarks/heldout_probes_4.py [first|second] [--show-causes]

Two sets of realistic slips in 04_multihead, each put alone into the solutions, in the format of
``../shared/student_mistakes/mistakes.json`` (its README): ``FIRST`` was written before the library of known
mistakes was read, to measure how the public tests name mistakes no one wrote them for; ``SECOND`` was written
after the causes were made to generalize, to measure that honestly. They stay out of ``tests/``: a probe a
test checks is no longer held out. Measured with benchmarks/student_mistakes.py's method (caught, named, false).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import student_mistakes  # noqa: E402  (the benchmark beside this file; its method, not a copy)

WRAP, MHA, SPLIT = "multihead_wrapper", "multihead_attention", "head_split"


def _m(mid: str, module: str, description: str, patches: list, cause_words: list) -> dict:
    return student_mistakes.probe(mid, "04_multihead", module, description, patches, cause_words)


FIRST = [
    _m("h4-01", WRAP, "two_dim_wrapper builds heads of d_out=2 (a two-dimensional output per head), so (b, T, 4).",
       [("MultiHeadAttentionWrapper(d_in, 1, context_length", "MultiHeadAttentionWrapper(d_in, 2, context_length")],
       ["d_out=1", "d_out = 1", "per head", "each head"]),
    _m("h4-02", WRAP, "forward concatenates the heads on the token axis (dim=1) instead of the features.",
       [("for head in self.heads], dim=-1)", "for head in self.heads], dim=1)")],
       ["dim=-1", "last dim", "features", "token axis", "dim=1"]),
    _m("h4-03", WRAP, "the heads are kept in a plain Python list, so .parameters() and .to() miss them.",
       [("self.heads = nn.ModuleList(", "self.heads = list(")],
       ["modulelist", "plain list", "python list"]),
    _m("h4-04", WRAP, "qkv_bias is not passed on to the heads (they never get biases).",
       [("[CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for", "[CausalAttention(d_in, d_out, context_length, dropout) for")],
       ["qkv_bias", "bias"]),
    _m("h4-05", MHA, "head_dim = d_out, the chapter listing's bug: the view to (b, T, num_heads, head_dim) fails.",
       [("self.head_dim = d_out // num_heads", "self.head_dim = d_out")],
       ["head_dim = d_out", "d_out // num_heads"]),
    _m("h4-06", MHA, "head_dim = d_out / num_heads: a float, so view() raises a TypeError.",
       [("self.head_dim = d_out // num_heads", "self.head_dim = d_out / num_heads")],
       ["//", "float", "integer division"]),
    _m("h4-07", MHA, "the scores are scaled by √d_out instead of √head_dim.",
       [("attn_scores / self.head_dim**0.5", "attn_scores / self.d_out**0.5")],
       ["d_out", "head_dim"]),
    _m("h4-08", MHA, "split with a bare view (b, num_heads, T, head_dim): no transpose, tokens mixed into heads.",
       [("queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
         "queries = self.W_query(x).view(b, self.num_heads, num_tokens, self.head_dim)"),
        ("keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
         "keys = self.W_key(x).view(b, self.num_heads, num_tokens, self.head_dim)"),
        ("values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
         "values = self.W_value(x).view(b, self.num_heads, num_tokens, self.head_dim)")],
       ["transpose", "split", "view"]),
    _m("h4-09", MHA, "the heads are merged without moving the head axis back: (b, h, T, hd).reshape(b, T, d_out).",
       [("context = (attn_weights @ values).transpose(1, 2).reshape(b, num_tokens, self.d_out)",
         "context = (attn_weights @ values).reshape(b, num_tokens, self.d_out)")],
       ["transpose", "merge"]),
    _m("h4-10", MHA, "out_proj is created but never applied: the forward returns the merged heads.",
       [("return self.out_proj(context)", "return context")],
       ["out_proj"]),
    _m("h4-11", MHA, "the mask is not cut to T x T (the whole context_length mask is used).",
       [("self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)", "self.mask.bool(), -torch.inf)")],
       ["cut", "t × t", "t x t", "[:num_tokens"]),
    _m("h4-12", MHA, "merge with .view after .transpose (no .contiguous()): RuntimeError on a non-contiguous tensor.",
       [(".transpose(1, 2).reshape(b, num_tokens, self.d_out)", ".transpose(1, 2).view(b, num_tokens, self.d_out)")],
       ["contiguous", "reshape"]),
    _m("h4-13", MHA, "mask built with diagonal=0: each token cannot attend to itself (row 0 all -inf, NaN).",
       [('self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))',
         'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=0))')],
       ["diagonal", "itself", "nan"]),
    _m("h4-14", MHA, "the forward runs under torch.no_grad() (copied from inference code): no gradients.",
       [("        b, num_tokens, _ = x.shape\n        if num_tokens > self.context_length:",
         "        return self._forward(x)\n\n    @torch.no_grad()\n    def _forward(self, x):\n"
         "        b, num_tokens, _ = x.shape\n        if num_tokens > self.context_length:")],
       ["no_grad", "gradient", "grad"]),
    _m("h4-15", MHA, "out_proj = nn.Linear(head_dim, d_out): mat1 and mat2 shapes cannot be multiplied.",
       [("self.out_proj = nn.Linear(d_out, d_out)", "self.out_proj = nn.Linear(self.head_dim, d_out)")],
       ["out_proj", "head_dim"]),
    _m("h4-16", SPLIT, "split_heads uses a bare view (b, num_heads, T, head_dim): tokens mixed into heads.",
       [("return x.reshape(b, num_tokens, num_heads, d_out // num_heads).transpose(1, 2)",
         "return x.reshape(b, num_heads, num_tokens, d_out // num_heads)")],
       ["transpose", "view", "mixes tokens"]),
    _m("h4-17", MHA, "no divisibility check: num_heads not dividing d_out constructs and fails later.",
       [("        if d_out % num_heads != 0:\n            raise ValueError(f\"d_out={d_out} must be divisible by num_heads={num_heads}\")\n", "")],
       ["valueerror", "divisible"]),
]

SECOND = [
    _m("h4s-01", MHA, "heads split interleaved: view(b, T, head_dim, num_heads).permute(0, 3, 1, 2).",
       [(f"{n} = self.W_{w}(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
         f"{n} = self.W_{w}(x).view(b, num_tokens, self.head_dim, self.num_heads).permute(0, 3, 1, 2)")
        for n, w in (("queries", "query"), ("keys", "key"), ("values", "value"))],
       ["interleav"]),
    _m("h4s-02", MHA, "heads merged with permute(0, 2, 3, 1): the features of each token ordered by head_dim first.",
       [("context = (attn_weights @ values).transpose(1, 2).reshape(b, num_tokens, self.d_out)",
         "context = (attn_weights @ values).permute(0, 2, 3, 1).reshape(b, num_tokens, self.d_out)")],
       ["wrong order", "order"]),
    _m("h4s-03", MHA, "scaled with math.sqrt(self.d_out) instead of the head size.",
       [("import torch\nimport torch.nn as nn", "import math\n\nimport torch\nimport torch.nn as nn"),
        ("attn_scores / self.head_dim**0.5", "attn_scores / math.sqrt(self.d_out)")],
       ["d_out", "head_dim"]),
    _m("h4s-04", MHA, "dropout applied to the raw scores (before mask and softmax), not to the weights.",
       [("attn_scores = queries @ keys.transpose(2, 3)\n", "attn_scores = self.dropout(queries @ keys.transpose(2, 3))\n"),
        ("        attn_weights = self.dropout(attn_weights)\n", "")],
       ["before the softmax", "scores"]),
    _m("h4s-05", WRAP, "the heads concatenated in reverse order.",
       [("torch.cat([head(x) for head in self.heads], dim=-1)", "torch.cat([head(x) for head in reversed(self.heads)], dim=-1)")],
       ["order", "reverse"]),
    _m("h4s-06", SPLIT, "merge_heads concatenates the heads along the tokens: torch.cat(x.unbind(1), dim=1).",
       [("return x.transpose(1, 2).reshape(b, num_tokens, num_heads * head_dim)", "return torch.cat(x.unbind(1), dim=1)")],
       ["tokens", "dim=-1", "features"]),
    _m("h4s-07", MHA, "the mask is cut on its rows only: self.mask.bool()[:num_tokens].",
       [("self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)", "self.mask.bool()[:num_tokens], -torch.inf)")],
       ["cut", "[:t, :t]", "t × t"]),
    _m("h4s-08", MHA, "out_proj applied to the heads before merging them: (b, T, h, head_dim) through nn.Linear(d_out, d_out).",
       [("context = (attn_weights @ values).transpose(1, 2).reshape(b, num_tokens, self.d_out)\n        return self.out_proj(context)",
         "context = self.out_proj((attn_weights @ values).transpose(1, 2))\n        return context.reshape(b, num_tokens, self.d_out)")],
       ["merge", "before out_proj", "merged"]),
]


def main(argv: list[str]) -> int:
    return student_mistakes.run_sets({"first": FIRST, "second": SECOND}, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
