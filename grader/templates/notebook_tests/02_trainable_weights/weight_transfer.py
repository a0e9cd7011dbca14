# Tests for copy_weights_v2_to_v1 and copy_weights_v1_to_v2 (000_7ebab5a40414ec2e.txt, section 3.4.2)
# They use your SelfAttention_v1 and SelfAttention_v2 from above.
torch.manual_seed(789)
sa_v2, sa_v1 = SelfAttention_v2(3, 2), SelfAttention_v1(3, 2)
copy_weights_v2_to_v1(sa_v2, sa_v1)
check_close("copy_weights_v2_to_v1(sa_v2, sa_v1); sa_v1(inputs)", sa_v1(inputs), sa_v2(inputs), atol=1e-6)
torch.manual_seed(123)
sa_v1, sa_v2 = SelfAttention_v1(3, 2), SelfAttention_v2(3, 2)
copy_weights_v1_to_v2(sa_v1, sa_v2)
check_close("copy_weights_v1_to_v2(sa_v1, sa_v2); sa_v2(inputs)", sa_v2(inputs), sa_v1(inputs), atol=1e-6)
### BEGIN HIDDEN TESTS
sa_v2, sa_v1 = SelfAttention_v2(4, 3), SelfAttention_v1(4, 3)
kept = sa_v1.W_key
copy_weights_v2_to_v1(sa_v2, sa_v1)
assert sa_v1.W_key is kept, "copy_weights_v2_to_v1 must copy into the existing nn.Parameter, not replace it"
with torch.no_grad():
    sa_v2.W_key.weight.add_(1.0)
check_close("sa_v1.W_key after changing sa_v2 following the copy (no shared storage)", sa_v1.W_key,
            (sa_v2.W_key.weight - 1.0).T, atol=1e-6)

sa_v2_bias, sa_v1 = SelfAttention_v2(3, 2, qkv_bias=True), SelfAttention_v1(3, 2)
before = {name: p.detach().clone() for name, p in sa_v1.named_parameters()}
check_raises("copy_weights_v2_to_v1(v2 with qkv_bias=True, v1)", lambda: copy_weights_v2_to_v1(sa_v2_bias, sa_v1))
for name, p in sa_v1.named_parameters():
    assert torch.equal(p, before[name]), f"sa_v1.{name} changed although the copy raised"
check_raises("copy_weights_v2_to_v1(SelfAttention_v2(3, 2), SelfAttention_v1(4, 2))",
             lambda: copy_weights_v2_to_v1(SelfAttention_v2(3, 2), SelfAttention_v1(4, 2)))
check_raises("copy_weights_v1_to_v2(SelfAttention_v1(4, 2), SelfAttention_v2(3, 2))",
             lambda: copy_weights_v1_to_v2(SelfAttention_v1(4, 2), SelfAttention_v2(3, 2)))

gen = torch.Generator().manual_seed(36)
x = torch.randn(2, 5, 4, generator=gen)
sa_v1, sa_v2_bias = SelfAttention_v1(4, 3), SelfAttention_v2(4, 3, qkv_bias=True)
copy_weights_v1_to_v2(sa_v1, sa_v2_bias)
for name in ("W_query", "W_key", "W_value"):
    assert float(getattr(sa_v2_bias, name).bias.detach().abs().sum()) == 0.0, f"sa_v2.{name}.bias must be set to zero"
check_close("copy_weights_v1_to_v2(sa_v1, v2 with biases); sa_v2(x)", sa_v2_bias(x), sa_v1(x), atol=1e-5)
### END HIDDEN TESTS
