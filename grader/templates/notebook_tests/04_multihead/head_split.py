# Tests for split_heads, merge_heads, per_head_scores (000_7ebab5a40414ec2e.txt, section 3.6.2)
x = torch.arange(8.0).reshape(1, 2, 4)
check_close("split_heads(torch.arange(8.).reshape(1, 2, 4), 2)", split_heads(x, 2),
            torch.tensor([[[[0.0, 1.0], [4.0, 5.0]], [[2.0, 3.0], [6.0, 7.0]]]]), atol=0)
check_close("merge_heads(split_heads(x, 2))", merge_heads(split_heads(x, 2)), x, atol=0)
a = torch.tensor(
    [[[[0.2745, 0.6584, 0.2775, 0.8573], [0.8993, 0.0390, 0.9268, 0.7388], [0.7179, 0.7058, 0.9156, 0.4340]],
      [[0.0772, 0.3565, 0.1479, 0.5331], [0.4066, 0.2318, 0.4545, 0.9737], [0.4606, 0.5159, 0.4220, 0.5786]]]]
)
check_close("per_head_scores(a, a)[0, 0, 0]", per_head_scores(a, a)[0, 0, 0], torch.tensor([1.3208, 1.1631, 1.2879]))
check_raises("split_heads(x of shape (1, 2, 4), 3)", lambda: split_heads(x, 3))
### BEGIN HIDDEN TESTS
gen = torch.Generator().manual_seed(39)
for b, T, h, hd in ((1, 1, 1, 3), (2, 5, 3, 2), (3, 4, 4, 4)):
    x = torch.randn(b, T, h * hd, generator=gen)
    got = split_heads(x, h)
    assert tuple(got.shape) == (b, h, T, hd), f"split_heads(x of shape {(b, T, h * hd)}, {h}) returned shape {tuple(got.shape)}"
    for bi in range(b):
        for hi in range(h):
            for t in range(T):
                assert torch.equal(got[bi, hi, t], x[bi, t, hi * hd : (hi + 1) * hd]), (
                    f"split_heads: head {hi}, token {t} must hold features {hi * hd}:{(hi + 1) * hd} of token {t}"
                )
    check_close(f"merge_heads(split_heads(x, {h}))", merge_heads(got), x, atol=0)
    q, k = torch.randn(b, h, T, hd, generator=gen), torch.randn(b, h, T, hd, generator=gen)
    expected = torch.einsum("bhid,bhjd->bhij", q, k)
    check_close(f"per_head_scores(q, k of shape {(b, h, T, hd)})", per_head_scores(q, k), expected, atol=1e-5)
### END HIDDEN TESTS
