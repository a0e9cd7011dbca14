# Tests for context_vector and context_vectors (000_7ebab5a40414ec2e.txt, sections 3.3.1-3.3.2)
check_close(
    "context_vector(inputs, softmax(scores of 'journey'))",
    context_vector(inputs, torch.softmax(inputs @ inputs[1], dim=0)),
    torch.tensor([0.4419, 0.6515, 0.5683]),
)
check_close("context_vectors(inputs)[1]", context_vectors(inputs)[1], torch.tensor([0.4419, 0.6515, 0.5683]))
check_close("context_vectors(inputs)[0]", context_vectors(inputs)[0], torch.tensor([0.4421, 0.5931, 0.5790]))
### BEGIN HIDDEN TESTS
gen = torch.Generator().manual_seed(33)
for trial in range(4):
    T, d = (int(n) for n in torch.randint(1, 7, (2,), generator=gen))
    x = torch.randn(T, d, generator=gen)
    w = torch.softmax(torch.randn(T, generator=gen), dim=0)
    expected = torch.zeros(d)
    for i in range(T):
        expected += w[i] * x[i]
    check_close(f"context_vector(x of shape {(T, d)}, w)", context_vector(x, w), expected, atol=1e-5)
    xb = torch.randn(2, T, d, generator=gen)
    expected = torch.zeros(2, T, d)
    for b in range(2):
        for i in range(T):
            row = torch.tensor([float(xb[b, i] @ xb[b, j]) for j in range(T)])
            weights = torch.exp(row - row.max()) / torch.exp(row - row.max()).sum()
            for j in range(T):
                expected[b, i] += weights[j] * xb[b, j]
    check_close(f"context_vectors(x of shape {(2, T, d)})", context_vectors(xb), expected, atol=1e-4)
### END HIDDEN TESTS
