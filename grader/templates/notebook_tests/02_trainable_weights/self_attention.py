# Tests for SelfAttention_v1 and SelfAttention_v2 (000_7ebab5a40414ec2e.txt, section 3.4.2)
torch.manual_seed(123)
check_close("torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)[0]", SelfAttention_v1(3, 2)(inputs)[0],
            torch.tensor([0.2996, 0.8053]))
torch.manual_seed(789)
check_close("torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)[0]", SelfAttention_v2(3, 2)(inputs)[0],
            torch.tensor([-0.0739, 0.0713]))
shapes_v1 = {name: tuple(p.shape) for name, p in SelfAttention_v1(3, 2).named_parameters()}
assert shapes_v1 == {"W_query": (3, 2), "W_key": (3, 2), "W_value": (3, 2)}, f"SelfAttention_v1(3, 2) parameters: {shapes_v1}"
shapes_v2 = {name: tuple(p.shape) for name, p in SelfAttention_v2(3, 2).named_parameters()}
assert shapes_v2 == {"W_query.weight": (2, 3), "W_key.weight": (2, 3), "W_value.weight": (2, 3)}, (
    f"SelfAttention_v2(3, 2) parameters: {shapes_v2}"
)
### BEGIN HIDDEN TESTS
def _attend(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1]), dim=-1)
    return w @ v

gen = torch.Generator().manual_seed(35)
torch.manual_seed(5)
sa_v1 = SelfAttention_v1(4, 3)
torch.manual_seed(5)
drawn = [torch.rand(4, 3) for _ in range(3)]
for name, want in zip(("W_query", "W_key", "W_value"), drawn):
    check_close(f"SelfAttention_v1(4, 3).{name} after torch.manual_seed(5) (created in the order W_query, W_key, W_value)",
                getattr(sa_v1, name), want, atol=0)
x = torch.randn(2, 5, 4, generator=gen)
check_close("SelfAttention_v1(4, 3)(x of shape (2, 5, 4))", sa_v1(x),
            _attend(x @ sa_v1.W_query, x @ sa_v1.W_key, x @ sa_v1.W_value), atol=1e-5)
sa_v2 = SelfAttention_v2(4, 3, qkv_bias=True)
assert len(list(sa_v2.parameters())) == 6, "SelfAttention_v2(4, 3, qkv_bias=True) must have a bias in each projection"
check_close("SelfAttention_v2(4, 3, qkv_bias=True)(x of shape (2, 5, 4))", sa_v2(x),
            _attend(sa_v2.W_query(x), sa_v2.W_key(x), sa_v2.W_value(x)), atol=1e-5)
### END HIDDEN TESTS
