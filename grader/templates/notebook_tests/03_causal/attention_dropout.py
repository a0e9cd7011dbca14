# Tests for dropout (000_7ebab5a40414ec2e.txt, section 3.5.2)
torch.manual_seed(123)
expected = nn.Dropout(0.5)(torch.ones(6, 6))
torch.manual_seed(123)
check_close("torch.manual_seed(123); dropout(torch.ones(6, 6), 0.5)", dropout(torch.ones(6, 6), 0.5), expected)
x = torch.rand(4, 4)
check_close("dropout(x, 0.5, training=False)", dropout(x, 0.5, training=False), x, atol=0)
check_raises("dropout(torch.ones(3), 1.5)", lambda: dropout(torch.ones(3), 1.5))
### BEGIN HIDDEN TESTS
for seed, p, shape in ((1, 0.1, (7,)), (2, 0.3, (3, 5)), (3, 0.7, (2, 4, 6))):
    x = torch.rand(*shape) + 0.5
    torch.manual_seed(seed)
    expected = nn.Dropout(p)(x)
    torch.manual_seed(seed)
    check_close(f"torch.manual_seed({seed}); dropout(x of shape {shape}, {p})", dropout(x, p), expected, atol=1e-6)
x = torch.rand(5, 5) + 0.5
check_close("dropout(x, 0.0)", dropout(x, 0.0), x, atol=0)
check_close("dropout(x, 1.0)", dropout(x, 1.0), torch.zeros(5, 5), atol=0)
got = dropout(x, 0.25)
kept = got != 0
check_close("dropout(x, 0.25) at the kept positions", got[kept], x[kept] / 0.75, atol=1e-6)
check_raises("dropout(x, -0.1)", lambda: dropout(x, -0.1))
### END HIDDEN TESTS
