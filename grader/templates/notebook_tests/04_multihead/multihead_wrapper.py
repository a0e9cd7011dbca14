# Tests for MultiHeadAttentionWrapper and two_dim_wrapper (000_7ebab5a40414ec2e.txt, section 3.6.1)
torch.manual_seed(123)
mha = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
check_close("torch.manual_seed(123); MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)[0, 0]",
            mha(batch)[0, 0], torch.tensor([-0.4519, 0.2216, 0.4772, 0.1063]))
heads = getattr(MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3), "heads", None)
assert isinstance(heads, nn.ModuleList) and len(heads) == 3, f"MultiHeadAttentionWrapper(..., num_heads=3).heads: {heads!r}"
torch.manual_seed(123)
check_close("torch.manual_seed(123); two_dim_wrapper(3, 6)(batch)[0, 0]", two_dim_wrapper(3, 6)(batch)[0, 0],
            torch.tensor([-0.5740, 0.2216]))
### BEGIN HIDDEN TESTS
gen = torch.Generator().manual_seed(40)
for num_heads in (1, 3):
    mha = MultiHeadAttentionWrapper(4, 3, 7, 0.0, num_heads=num_heads)
    assert all(isinstance(head, CausalAttention) for head in mha.heads), "every head must be a CausalAttention"
    x = torch.randn(2, 5, 4, generator=gen)
    expected = torch.cat([head(x) for head in mha.heads], dim=-1)
    check_close(f"MultiHeadAttentionWrapper(4, 3, 7, 0.0, num_heads={num_heads})(x of shape (2, 5, 4))", mha(x), expected, atol=1e-6)
mha = MultiHeadAttentionWrapper(4, 3, 7, 0.0, num_heads=2, qkv_bias=True)
assert len(list(mha.parameters())) == 12, "qkv_bias=True must reach every head"
for d_in in (3, 5):
    out = two_dim_wrapper(d_in, 8)(torch.randn(3, 8, d_in, generator=gen))
    assert tuple(out.shape) == (3, 8, 2), f"two_dim_wrapper({d_in}, 8)(x of shape (3, 8, {d_in})) returned shape {tuple(out.shape)}"
### END HIDDEN TESTS
