"""Broken: a syntax error."""

class MultiHeadAttentionWrapper(nn.Module:
    pass
