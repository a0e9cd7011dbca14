"""The same answers on every CPU: the known results (``exercises/known_results.json``,
``tests/known_results.json``) are written on one machine and read on others, an AMD or an Intel with
AVX-512, whose float sums round otherwise. Their up-to-date checks and the matching of a student's result
compare within float noise (``FLOAT_NOISE``, exercises/kata_known.py), never byte for byte.

* the library recomputed on another float path (grader/authoring/known_results.py's ``OTHER_FLOAT_PATH``:
  ATen's portable kernels, MKL's compatible code path) gives other bytes, still matches both files, and the
  public tests run on that path name every library mistake's own cause and no other (as on this CPU:
  test_public_tests.py);
* results nudged by float noise still match, and are still named as their mistake; a real difference, a
  result gone or another mistake does not match.
"""

from __future__ import annotations

import copy
import random
import struct

import pytest
import torch

from grader.authoring import known_results

FILES = (known_results.DATA_FILE, known_results.HIDDEN_DATA_FILE)
KATA_KNOWN = known_results.students_module("kata_known")


def _f32(value: float, ulps: int) -> float:
    """``value`` moved by ``ulps`` units in the last place of a float32 (as another CPU's rounding moves it)."""
    bits = struct.unpack("<i", struct.pack("<f", value))[0]
    return struct.unpack("<f", struct.pack("<i", bits + (ulps if value >= 0 else -ulps)))[0]


def _nudged(data: dict[str, list[dict]], seed: int = 5) -> dict[str, list[dict]]:
    """Every float32 value of ``data`` moved by up to 4 units in its last place, at random."""
    rng, out = random.Random(seed), copy.deepcopy(data)
    for entries in out.values():
        for entry in entries:
            got = entry["got"]
            if got.get("dtype") == "torch.float32":
                got["values"] = [_f32(v, rng.choice((-4, -2, -1, 1, 2, 4))) if isinstance(v, float) and v else v
                                 for v in got["values"]]
    return out


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_known_results_match_and_name_the_same_causes_when_recomputed_on_another_float_path():
    recomputed, runs = known_results.computed_with_runs(known_results.OTHER_FLOAT_PATH)
    texts = {path: path.read_text(encoding="utf-8") for path in FILES}
    assert any(known_results.render(recomputed[path]) != texts[path] for path in FILES), (
        "the other float path gave the same bytes as the files: this test would not tell a byte-for-byte "
        "comparison from one within float noise")
    for path in FILES:
        stale = known_results.mismatches(known_results.read(path), recomputed[path])
        assert not stale, f"{path.name} on another float path:\n" + "\n".join(stale[:10])
    for patch in known_results.library():  # its results on that path matched against the files: the same causes
        causes, named = known_results.likely_causes(runs[patch["name"]].get("tests", {}).values()), known_results.named_words(patch)
        assert any(n in c for c in causes for n in named), f"{patch['name']} is not named on another float path: {causes}"
        assert all(any(n in c for n in named) for c in causes), f"{patch['name']} is told another cause there: {causes}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_results_nudged_by_float_noise_are_current_and_other_results_are_not(path):
    written = known_results.read(path)
    nudged = _nudged(written)
    assert known_results.render(nudged) != path.read_text(encoding="utf-8")  # a byte-for-byte check would fail
    assert known_results.mismatches(written, nudged) == []
    key, entry = next((k, e) for k, entries in written.items() for e in entries
                      if e["got"].get("dtype") == "torch.float32" and isinstance(e["got"]["values"][0], float))
    wrong = copy.deepcopy(written)
    target = next(e for e in wrong[key] if e["mistake"] == entry["mistake"])
    target["got"]["values"][0] = float(target["got"]["values"][0]) + 1e-3
    assert known_results.mismatches(written, wrong) == [f"{key}: {entry['mistake']}'s result differs beyond float noise"]
    gone = {k: v for k, v in written.items() if k != key}
    assert known_results.mismatches(written, gone) == [f"{key}: only in the file"]
    renamed = copy.deepcopy(written)
    renamed[key][0]["mistake"] = "another_mistake"
    assert len(known_results.mismatches(written, renamed)) == 1


def test_a_result_off_by_float_noise_is_named_as_its_mistake_and_a_real_difference_is_not():
    torch.manual_seed(0)
    scores = torch.randn(4, 6) * 8  # typical of the library's results: one value cancels far below the rest
    scores[0, 0] = -0.1045
    known = KATA_KNOWN.encode(scores)
    noisy = torch.tensor([_f32(v, 6) for v in scores.reshape(-1).tolist()]).reshape(scores.shape)
    noisy[0, 0] = scores[0, 0] + 2.1e-6  # what AMD and the portable path gave apart for one such value
    assert not torch.equal(noisy, scores)
    assert KATA_KNOWN.same(noisy, known, atol=0.0) and KATA_KNOWN.same(KATA_KNOWN.encode(noisy), known)
    off = scores.clone()
    off[1, 2] += 1e-3
    assert not KATA_KNOWN.same(off, known, atol=1e-6) and not KATA_KNOWN.same(scores.double(), known)
    assert KATA_KNOWN.same(off, known, atol=1e-2)  # the check's own tolerance, when looser, is used
    error = {"error": "RuntimeError: shapes differ"}
    assert KATA_KNOWN.same(RuntimeError("shapes differ"), error) and not KATA_KNOWN.same(noisy, error)
