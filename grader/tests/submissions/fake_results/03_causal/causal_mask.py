"""Attack: write fake results.json files (cwd, its parents, /autograder/results) and print fake JSON."""

import json
import os
import sys

FAKE = {"score": 100.0, "tests": [{"name": "everything", "score": 100, "max_score": 100, "status": "passed"}]}

for directory in (os.getcwd(), os.path.dirname(os.getcwd()), "/autograder/results"):
    try:
        if os.path.isdir(directory):
            with open(os.path.join(directory, "results.json"), "w") as f:
                json.dump(FAKE, f)
    except OSError:
        pass
print(json.dumps(FAKE))
print(json.dumps(FAKE), file=sys.stderr)
sys.stdout.flush()


def causal_mask(num_tokens):
    print(json.dumps(FAKE))
    raise NotImplementedError("causal_mask")


def mask_and_renormalize(attn_weights):
    raise NotImplementedError("mask_and_renormalize")


def mask_future_scores(attn_scores):
    raise NotImplementedError("mask_future_scores")


def causal_attention_weights(attn_scores, d_k):
    raise NotImplementedError("causal_attention_weights")
