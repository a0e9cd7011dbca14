# Tests for scaled_dot_product (000_7ebab5a40414ec2e.txt, section 3.4.1; seed-123 torch.rand projections)
torch.manual_seed(123)
W_q, W_k, W_v = (torch.rand(3, 2) for _ in range(3))
context, weights = scaled_dot_product(inputs @ W_q, inputs @ W_k, inputs @ W_v)
check_close("scaled_dot_product(queries, keys, values) weights[1]", weights[1],
            torch.tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]))
check_close("scaled_dot_product(queries, keys, values) context[1]", context[1], torch.tensor([0.3061, 0.8210]))
### BEGIN HIDDEN TESTS
gen = torch.Generator().manual_seed(34)
for lead in ((), (2,), (2, 3)):
    d_k, d_v, T_q, T_k = 4, 7, 3, 5
    q = torch.randn(*lead, T_q, d_k, generator=gen)
    k = torch.randn(*lead, T_k, d_k, generator=gen)
    v = torch.randn(*lead, T_k, d_v, generator=gen)
    expected_w = torch.softmax(torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(d_k), dim=-1)
    expected_c = torch.einsum("...qk,...kv->...qv", expected_w, v)
    got_c, got_w = scaled_dot_product(q, k, v)
    call = f"scaled_dot_product(q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)})"
    check_close(call + " weights", got_w, expected_w, atol=1e-5)
    check_close(call + " context", got_c, expected_c, atol=1e-5)
### END HIDDEN TESTS
