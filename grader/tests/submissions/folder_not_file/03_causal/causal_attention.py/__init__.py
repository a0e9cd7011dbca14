"""Broken: a folder where 03_causal/causal_attention.py should be."""
