"""Attack: a torch.py next to the modules: if it ever shadowed the real torch, the worker would exit."""

import os

os._exit(5)
