# Tests for normalize_by_sum, softmax_naive, softmax_stable (000_7ebab5a40414ec2e.txt, section 3.3.1)
scores_2 = torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
check_close(
    "normalize_by_sum(scores of 'journey')",
    normalize_by_sum(scores_2),
    torch.tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656]),
)
check_close(
    "softmax_naive(scores of 'journey')",
    softmax_naive(scores_2),
    torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]),
)
check_close(
    "softmax_stable(tensor([1000., 1000., -inf]))",
    softmax_stable(torch.tensor([1000.0, 1000.0, -float("inf")])),
    torch.tensor([0.5, 0.5, 0.0]),
)
### BEGIN HIDDEN TESTS
gen = torch.Generator().manual_seed(32)
for trial in range(4):
    x = torch.rand(4, 5, generator=gen) + 0.1
    before = x.clone()
    for dim in (0, 1, -1):
        expected = x / x.sum(dim=dim, keepdim=True)
        check_close(f"normalize_by_sum(x of shape (4, 5), dim={dim})", normalize_by_sum(x, dim=dim), expected, atol=1e-6)
        expected = torch.exp(x) / torch.exp(x).sum(dim=dim, keepdim=True)
        check_close(f"softmax_naive(x of shape (4, 5), dim={dim})", softmax_naive(x, dim=dim), expected, atol=1e-6)
        big = x * 300 + 700
        check_close(f"softmax_stable(large scores, dim={dim})", softmax_stable(big, dim=dim), torch.softmax(big, dim=dim), atol=1e-6)
    assert torch.equal(x, before), "the normalization functions must not modify their input"
masked = torch.tensor([[0.3, -float("inf"), 2.0], [-float("inf"), 5.0, -float("inf")]])
got = softmax_stable(masked, dim=-1)
assert not torch.isnan(got).any(), f"softmax_stable(rows holding -inf) returned NaN: {got}"
check_close("softmax_stable(rows holding -inf)", got, torch.softmax(masked, dim=-1), atol=1e-6)
assert float(got[0, 1]) == 0.0 and float(got[1, 0]) == 0.0, "masked positions must get weight exactly 0"
### END HIDDEN TESTS
