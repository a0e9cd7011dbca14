# Tests for MultiHeadAttention and gpt2_attention (chapter_notes_3.1-3.6.txt, section 3.6.2; documents/README.md)
torch.manual_seed(123)
mha = MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
check_close("torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)[0, 0]",
            mha(batch)[0, 0], torch.tensor([0.3190, 0.4858]))
n_params = sum(p.numel() for p in gpt2_attention().parameters())
assert n_params == 2_360_064, f"gpt2_attention() has {n_params:,} parameters, expected 2,360,064"
check_raises("MultiHeadAttention(3, 3, 6, 0.0, num_heads=2)", lambda: MultiHeadAttention(3, 3, 6, 0.0, num_heads=2))
### BEGIN HIDDEN TESTS
gen = torch.Generator().manual_seed(41)
d_in, d_out, heads, ctx = 4, 6, 3, 8
hd = d_out // heads
mha = MultiHeadAttention(d_in, d_out, ctx, 0.0, num_heads=heads, qkv_bias=True)
assert mha.head_dim == hd, f"head_dim is {mha.head_dim}, expected d_out // num_heads = {hd}"
for T in (1, 5, 8):
    x = torch.randn(2, T, d_in, generator=gen)
    q, k, v = mha.W_query(x), mha.W_key(x), mha.W_value(x)
    merged = torch.zeros(2, T, d_out)
    for b in range(2):
        for h in range(heads):
            cols = slice(h * hd, (h + 1) * hd)
            for i in range(T):
                row = (q[b, i, cols] @ k[b, : i + 1, cols].T) / math.sqrt(hd)
                merged[b, i, cols] = torch.softmax(row, dim=-1) @ v[b, : i + 1, cols]
    expected = mha.out_proj(merged)
    check_close(f"MultiHeadAttention(4, 6, 8, 0.0, num_heads=3, qkv_bias=True)(x of shape {(2, T, 4)})", mha(x), expected, atol=1e-5)
check_raises("MultiHeadAttention(4, 6, 8, ...)(x with 9 tokens)", lambda: mha(torch.randn(1, 9, d_in, generator=gen)))
assert "mask" in dict(mha.named_buffers()), "MultiHeadAttention.mask must be a registered buffer"
### END HIDDEN TESTS
