# Tests for CausalAttention (001_1e5e282f5721c1c1.txt; 000_7ebab5a40414ec2e.txt, section 3.5.3)
torch.manual_seed(123)
ca = CausalAttention(3, 2, 6, 0.0)
check_close("torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)[0, 0]", ca(batch)[0, 0], torch.tensor([-0.4519, 0.2216]))
check_close("torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)[1, 5]", ca(batch)[1, 5], torch.tensor([-0.5299, -0.1081]))
assert "mask" in dict(ca.named_buffers()), "CausalAttention.mask must be a registered buffer (self.register_buffer)"
check_raises("CausalAttention(3, 2, 4, 0.0)(batch with 6 tokens)", lambda: CausalAttention(3, 2, 4, 0.0)(batch))
### BEGIN HIDDEN TESTS
gen = torch.Generator().manual_seed(38)
for T in (1, 4, 8):
    ca = CausalAttention(5, 3, 8, 0.0, qkv_bias=True)
    assert len(list(ca.parameters())) == 6, "CausalAttention(..., qkv_bias=True) must have a bias in each projection"
    x = torch.randn(2, T, 5, generator=gen)
    q, k, v = ca.W_query(x), ca.W_key(x), ca.W_value(x)
    expected = torch.zeros(2, T, 3)
    for b in range(2):
        for i in range(T):
            row = (q[b, i] @ k[b, : i + 1].T) / math.sqrt(3)
            w = torch.softmax(row, dim=-1)
            expected[b, i] = w @ v[b, : i + 1]
    check_close(f"CausalAttention(5, 3, 8, 0.0, qkv_bias=True)(x of shape {(2, T, 5)})", ca(x), expected, atol=1e-5)
x = torch.randn(1, 6, 5, generator=gen)
changed = x.clone()
changed[0, 4:] = torch.randn(2, 5, generator=gen)
ca = CausalAttention(5, 3, 6, 0.0)
check_close("CausalAttention: outputs of tokens 0-3 after changing tokens 4-5", ca(changed)[0, :4], ca(x)[0, :4], atol=1e-6)
ca = CausalAttention(5, 3, 6, 0.5)
ca.eval()
reference = CausalAttention(5, 3, 6, 0.0)
reference.load_state_dict(ca.state_dict())
check_close("CausalAttention(..., dropout=0.5) in eval mode", ca(x), reference(x), atol=1e-6)
assert "mask" in ca.state_dict(), "the mask must be saved in state_dict (a buffer)"
### END HIDDEN TESTS
