"""The attention-kata grader: scores untrusted submissions with the hidden tests in tests/."""
