# Tests for attention_scores (000_7ebab5a40414ec2e.txt, sections 3.3.1-3.3.2)
check_close(
    "attention_scores(inputs, inputs[1])",
    attention_scores(inputs, inputs[1]),
    torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]),
)
check_close(
    "attention_score_matrix(inputs)[0]",
    attention_score_matrix(inputs)[0],
    torch.tensor([0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310]),
)
### BEGIN HIDDEN TESTS
gen = torch.Generator().manual_seed(31)
for trial in range(5):
    T, d = (int(n) for n in torch.randint(1, 8, (2,), generator=gen))
    x = torch.randn(T, d, generator=gen)
    q = torch.randn(d, generator=gen)
    expected = torch.tensor([sum(float(x[i, k]) * float(q[k]) for k in range(d)) for i in range(T)])
    check_close(f"attention_scores(x of shape {(T, d)}, q)", attention_scores(x, q), expected, atol=1e-4)
    xb = torch.randn(3, T, d, generator=gen)
    expected = torch.empty(3, T, T)
    for b in range(3):
        for i in range(T):
            for j in range(T):
                expected[b, i, j] = float((xb[b, i] * xb[b, j]).sum())
    check_close(f"attention_score_matrix(x of shape {(3, T, d)})", attention_score_matrix(xb), expected, atol=1e-4)
### END HIDDEN TESTS
