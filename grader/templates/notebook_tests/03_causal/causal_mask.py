# Tests for the causal mask functions (000_7ebab5a40414ec2e.txt, section 3.5.1; 001_1e5e282f5721c1c1.txt)
check_close("causal_mask(3)", causal_mask(3), torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]), atol=0)
# The unscaled scores Q K^T of the seed-789 SelfAttention_v2:
torch.manual_seed(789)
W_q, W_k = nn.Linear(3, 2, bias=False), nn.Linear(3, 2, bias=False)
with torch.no_grad():
    scores_789 = W_q(inputs) @ W_k(inputs).T
inf = float("inf")
check_close("mask_future_scores(scores)[0]", mask_future_scores(scores_789)[0],
            torch.tensor([0.2899, -inf, -inf, -inf, -inf, -inf]))
check_close("mask_and_renormalize(softmax(scores / sqrt(2)))[1]",
            mask_and_renormalize(torch.softmax(scores_789 / 2**0.5, dim=-1))[1],
            torch.tensor([0.5517, 0.4483, 0.0, 0.0, 0.0, 0.0]))
check_close("causal_attention_weights(scores, 2)[1]", causal_attention_weights(scores_789, 2)[1],
            torch.tensor([0.5517, 0.4483, 0.0, 0.0, 0.0, 0.0]))
### BEGIN HIDDEN TESTS
gen = torch.Generator().manual_seed(37)
for T in (1, 2, 5, 9):
    expected = torch.tensor([[1.0 if j <= i else 0.0 for j in range(T)] for i in range(T)])
    check_close(f"causal_mask({T})", causal_mask(T), expected, atol=0)
    s = torch.randn(2, T, T, generator=gen)
    before = s.clone()
    got = mask_future_scores(s)
    assert torch.equal(s, before), "mask_future_scores must not modify its input"
    for i in range(T):
        for j in range(T):
            if j > i:
                assert float(got[0, i, j]) == -inf and float(got[1, i, j]) == -inf, f"mask_future_scores: [{i}, {j}] must be -inf"
            else:
                assert torch.equal(got[:, i, j], s[:, i, j]), f"mask_future_scores: [{i}, {j}] must be unchanged"
    w = torch.softmax(s, dim=-1)
    expected = torch.zeros(2, T, T)
    for b in range(2):
        for i in range(T):
            total = float(w[b, i, : i + 1].sum())
            expected[b, i, : i + 1] = w[b, i, : i + 1] / total
    check_close(f"mask_and_renormalize(weights of shape {(2, T, T)})", mask_and_renormalize(w), expected, atol=1e-5)
    d_k = 3
    expected = torch.zeros(2, T, T)
    for b in range(2):
        for i in range(T):
            row = s[b, i, : i + 1] / math.sqrt(d_k)
            expected[b, i, : i + 1] = torch.exp(row - row.max()) / torch.exp(row - row.max()).sum()
    check_close(f"causal_attention_weights(scores of shape {(2, T, T)}, 3)", causal_attention_weights(s, d_k), expected, atol=1e-5)
### END HIDDEN TESTS
