"""The GPU-run check, on the simulated GPU (no CUDA here) and with CUDA faked (the real branch on cpu).

The submissions are the reference solutions with CausalAttention (or MultiHeadAttention) changed in one
way each. What the simulated GPU itself does, op by op, against CUDA's behaviour: test_simulated_gpu.py.
Each module's share of the check is the rubric's points over its modules (gpu_check.modules); the
points are read from tests/rubric.json, never written here.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from grader.grading.engine import start_worker
from grader.grading.gpu_check import SIMULATED, GpuUnavailable, check_module, run_gpu_check
from grader.grading.remote_impl import RemoteImpl
from grader.rubric import SOLUTIONS_DIR, load_rubric
from support import build_submission, run_check

pytestmark = pytest.mark.timeout(120)
RUBRIC = load_rubric()
POINTS = RUBRIC.gpu_points
SHARE = POINTS / len(RUBRIC.gpu_modules)  # each module's fixed share
CAUSAL = Path("03_causal") / "causal_attention.py"
MASK = "self.mask.bool()[:num_tokens, :num_tokens]"
REGISTERED = 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))'


MHA = Path("04_multihead") / "multihead_attention.py"
WRAPPER = Path("04_multihead") / "multihead_wrapper.py"


def _line(file: Path, text: str, inserted: int = 0) -> str:
    """``name.py, line N``: the line of the solutions' ``file`` holding ``text``, with ``inserted`` lines
    added above it (a message names the line of the student's file that made a tensor)."""
    lines = (SOLUTIONS_DIR / file).read_text().splitlines()
    return f"{file.name}, line {next(i for i, line in enumerate(lines, 1) if text in line) + inserted}"


def submission(tmp_path: Path, old: str = "", new: str = "", file: Path = CAUSAL) -> Path:
    sub = build_submission("gpu", tmp_path)
    if old:
        source = (sub / file).read_text()
        assert old in source
        (sub / file).write_text(source.replace(old, new))
    return sub


@pytest.fixture
def check(shared_domains):
    """``check(submission, mode, ...)``: the GPU-run check's result, the worker forked from the session's
    template (starting a template of its own would import torch again for every test)."""
    return functools.partial(run_check, domains=shared_domains)


def test_correct_modules_pass_the_simulation(tmp_path: Path, check) -> None:
    result = check(submission(tmp_path))
    assert (result.status, result.score, result.max_score) == ("simulated_passed", POINTS, POINTS)
    assert "for review" not in result.message and result.for_review == ()
    assert result.device == "cuda:0 (simulated: no CUDA here)"
    lines = result.message.splitlines()  # one line per module, with the share it earned
    assert lines == [f"{m.name}: runs on the GPU (simulated) [{round(SHARE, 2):g} of {round(SHARE, 2):g}]"
                     for m in RUBRIC.gpu_modules]


def test_plain_attribute_mask_fails_and_is_named(tmp_path: Path, isolating) -> None:
    """In every isolating mode: the wrapper's domain over the stand-in starts once the tests' domain has
    ended (in uid mode both have the student's uid, and the first one's clean-up would kill the second)."""
    plain = "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)"
    result = run_check(submission(tmp_path, REGISTERED, plain), domains=isolating)
    assert result.status == "simulated_failed"
    assert "'mask'" in result.message and "register_buffer" in result.message
    assert "from self.mask, a plain attribute" in result.message
    # CausalAttention fails; the wrapper is judged over the stand-in and passes (one mistake, one charge); MHA passes
    assert result.score == pytest.approx(POINTS - SHARE, abs=0.01)
    assert result.message.splitlines()[1].startswith(OVER_STANDIN_PASSED)


def test_a_module_is_judged_over_the_stand_ins_its_regrade_takes(tmp_path: Path, check) -> None:
    """Which modules a checked one builds on is what its re-grade takes (grade.py passes scoring's
    dependencies): with the rubric's edge, the wrapper on a CausalAttention that fails here is judged over
    the stand-in; with none, over the student's own, which fails it too. Edges that loop end."""
    sub = submission(tmp_path, REGISTERED, "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)")
    by_id = {m.name: m.exercise for m in RUBRIC.gpu_modules}
    wrapper, causal = by_id["MultiHeadAttentionWrapper"], by_id["CausalAttention"]
    alone = check(sub, builds_on={})
    assert alone.score == pytest.approx(POINTS - 2 * SHARE, abs=0.01), alone.message
    assert alone.message.splitlines()[1].startswith("MultiHeadAttentionWrapper fails on the GPU (simulated)")
    looped = check(sub, builds_on={wrapper: {causal}, causal: {wrapper}})
    assert looped.score == pytest.approx(POINTS - SHARE, abs=0.01), looped.message
    assert looped.message.splitlines()[1].startswith(OVER_STANDIN_PASSED)


def test_tensor_created_on_the_cpu_in_forward_fails_naming_the_line(tmp_path: Path, check) -> None:
    result = check(submission(tmp_path, "self.mask.bool()[:num_tokens, :num_tokens]",
                              "torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1).bool()"))
    assert result.status == "simulated_failed" and "device=x.device" in result.message
    assert (f"made at {_line(CAUSAL, MASK)}: attn_scores = attn_scores.masked_fill(torch.triu(torch.ones("
            "num_tokens, num_tokens), diagonal=1).bool(), -torch.inf)") in result.message, result.message


OVER_STANDIN = "judged over a stand-in CausalAttention (the grader's own) since yours does not pass this check"
OVER_STANDIN_PASSED = f"MultiHeadAttentionWrapper: runs on the device, {OVER_STANDIN}"
NAN_CHECK = "        if bool(torch.isnan(x).any()) or x.abs().max().item() > 1e6:\n            raise ValueError('bad input')\n"


def test_data_dependent_ops_run_on_the_simulated_gpu(tmp_path: Path, check) -> None:
    """``.item()`` and a branch on a value run as on CUDA: no verdict is inconclusive."""
    result = check(submission(tmp_path, "        keys = self.W_key(x)\n", NAN_CHECK + "        keys = self.W_key(x)\n"))
    assert (result.status, result.score) == ("simulated_passed", POINTS), result.message


def test_a_data_dependent_check_does_not_hide_a_mask_left_on_the_cpu(tmp_path: Path, check) -> None:
    """The dodge that the meta device called inconclusive (10/10): a branch on a value before a mask made on
    the CPU, in both modules that mask. Both fail, as on a GPU; the wrapper, correct, is judged over the
    stand-in and keeps its share: one share in all. In CausalAttention alone: all but its share (the wrapper
    is not charged for its heads' mistake: one mistake, one charge)."""
    dodge = submission(tmp_path, "        keys = self.W_key(x)\n",
                       NAN_CHECK + "        self.mask = torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1)\n"
                                   "        keys = self.W_key(x)\n")
    alone = check(dodge)
    assert (alone.status, alone.score) == ("simulated_failed", pytest.approx(POINTS - SHARE, abs=0.01)), alone.message
    assert alone.message.splitlines()[0].startswith("CausalAttention fails on the GPU (simulated): RuntimeError: "
                                                    "Expected all tensors to be on the same device")
    made = _line(CAUSAL, "        keys = self.W_key(x)", inserted=NAN_CHECK.count("\n"))
    assert f"from the tensor made at {made}: self.mask = torch.triu(torch.ones(num_tokens" in alone.message
    assert alone.message.splitlines()[1].startswith(OVER_STANDIN_PASSED)
    assert "tests/" not in alone.message  # no path a student lacks
    source = (dodge / MHA).read_text()
    old = "        queries = self.W_query(x)"
    (dodge / MHA).write_text(source.replace(old, NAN_CHECK + "        mask = torch.triu(torch.ones(num_tokens, num_tokens), "
                                                             "diagonal=1).bool()\n" + old, 1).replace(
        "self.mask.bool()[:num_tokens, :num_tokens]", "mask"))
    both = check(dodge)
    assert (both.status, both.score) == ("simulated_failed", pytest.approx(SHARE, abs=0.01)), both.message
    lines = both.message.splitlines()
    assert [line.split(":")[0] for line in lines] == ["CausalAttention fails on the GPU (simulated)",
                                                      "MultiHeadAttentionWrapper", "MultiHeadAttention fails on the GPU (simulated)"]
    made = _line(MHA, "        queries = self.W_query(x)", inserted=NAN_CHECK.count("\n"))
    assert f"made at {made}: mask = torch.triu(" in lines[2], lines[2]
    assert "inconclusive" not in both.message


def test_cuda_branch_passes_and_names_the_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check) -> None:
    result = check(submission(tmp_path), fake_cuda=True, monkeypatch=monkeypatch)
    assert (result.status, result.device, result.score) == ("passed", "cuda:0 (Fake GPU)", POINTS)


def test_cuda_branch_fails_when_the_device_output_differs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check) -> None:
    result = check(submission(tmp_path), fake_cuda=True, corrupt=True, monkeypatch=monkeypatch)
    assert result.status == "failed" and result.score == 0 and "differs from its output on the CPU" in result.message


def test_require_without_cuda_and_skip(tmp_path: Path, check) -> None:
    sub = submission(tmp_path)
    with pytest.raises(GpuUnavailable, match="CUDA is not available"):
        check(sub, mode="require")
    skipped = check(sub, mode="skip")
    assert (skipped.status, skipped.max_score) == ("skipped", 0.0)


def test_simulate_runs_the_simulated_gpu_even_with_cuda(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check) -> None:
    result = check(submission(tmp_path), mode="simulate", fake_cuda=True, monkeypatch=monkeypatch)
    assert (result.status, result.device, result.score) == ("simulated_passed", "cuda:0 (simulated: --gpu simulate)", POINTS)


# ---- a mistake costs only the module it is in: its exercise, and its own share here ----------------------

def test_a_mask_not_cut_to_tokens_is_judged_at_context_length(tmp_path: Path, check) -> None:
    """T = 5 < context_length fails on the CPU (its exercise charges that); T = context_length runs on the
    device. CausalAttention's share counts as its exercise's core points do: all of it when they are all
    earned, 60% of it when 60% are, and the other modules' shares do not move."""
    sub = submission(tmp_path, "self.mask.bool()[:num_tokens, :num_tokens]", "self.mask.bool()")
    result = check(sub)
    assert (result.status, result.score) == ("simulated_passed", POINTS), result.message
    partial = check(sub, fractions={"CausalAttention": 0.6})
    assert (partial.status, partial.score) == ("simulated_passed", pytest.approx(POINTS - 0.4 * SHARE, abs=0.01))
    assert partial.message.splitlines()[0].endswith(f"[{round(0.6 * SHARE, 2):g} of {round(SHARE, 2):g}: 60% of "
                                                    "its exercise's core points are earned, and its share counts as much]")


def test_the_wrapper_on_an_identity_causal_attention_is_judged_over_the_stand_in(tmp_path: Path, check) -> None:
    """CausalAttention returns its values (no attention): it runs on the device, but its exercise earns no
    core points, and so it earns nothing of its share here. The wrapper built on it is judged over the
    stand-in, as its re-grade is; MultiHeadAttention on its own: its share."""
    sub = submission(tmp_path, "        return attn_weights @ values\n", "        return values\n")
    result = check(sub, fractions={"CausalAttention": 0.0})
    assert result.score == pytest.approx(POINTS - SHARE, abs=0.01), result.message
    lines = result.message.splitlines()
    assert lines[0] == (f"CausalAttention: runs on the GPU (simulated) [0 of {round(SHARE, 2):g}: its exercise earns "
                        "none of its core points, so none of its share]")
    assert lines[1].startswith(OVER_STANDIN_PASSED)
    unknown = check(sub)  # told its tests all pass: it does not match the reference here, and earns nothing
    assert unknown.score == pytest.approx(POINTS - SHARE, abs=0.01), unknown.message
    assert unknown.message.startswith("CausalAttention does not match the reference on the CPU here"), unknown.message


def test_a_stub_earns_nothing_as_a_missing_module_does(tmp_path: Path, check) -> None:
    """A CausalAttention whose forward raises (a stub) earns nothing of its share, as a deleted file does;
    the wrapper built on either is judged over the stand-in and keeps its share. A stub and a deleted file
    score the same, and a wrapper that is a stub too earns nothing over the stand-in either."""
    stub = submission(tmp_path / "stub", "        num_tokens = x.shape[-2]\n", "        raise NotImplementedError('not written yet')\n")
    result = check(stub, fractions={"CausalAttention": 0.0})
    assert result.score == pytest.approx(POINTS - SHARE, abs=0.01), result.message
    lines = result.message.splitlines()
    assert lines[0].startswith("CausalAttention does not run on the CPU (NotImplementedError") and lines[1].startswith(OVER_STANDIN_PASSED)
    deleted = submission(tmp_path / "deleted")
    (deleted / CAUSAL).unlink()
    again = check(deleted, fractions={"CausalAttention": 0.0})
    assert (again.score, again.message.splitlines()[1:]) == (result.score, lines[1:])
    assert again.message.startswith("CausalAttention: not there (no causal_attention.py)")
    source = (stub / WRAPPER).read_text()
    (stub / WRAPPER).write_text(source.replace("        return torch.cat(", "        raise NotImplementedError\n        return torch.cat("))
    both = check(stub, fractions={"CausalAttention": 0.0, "MultiHeadAttentionWrapper": 0.0})
    assert both.score == pytest.approx(SHARE, abs=0.01) and both.message.splitlines()[1].startswith(
        "MultiHeadAttentionWrapper does not run on the CPU (NotImplementedError"), both.message


def test_a_module_not_there_earns_nothing_and_moves_no_share(tmp_path: Path, check) -> None:
    """No multihead_attention.py: its exercise charges it, and its share is not earned; the other two
    modules keep their own shares, no more (no split over what is there)."""
    sub = submission(tmp_path)
    (sub / "04_multihead" / "multihead_attention.py").unlink()
    result = check(sub)
    assert (result.status, result.score) == ("simulated_passed", pytest.approx(POINTS - SHARE, abs=0.01)), result.message
    assert result.message.splitlines()[2] == (f"MultiHeadAttention: not there (no multihead_attention.py); its own "
                                              f"exercise counts it [0 of {round(SHARE, 2):g}]")


def test_a_module_whose_import_fails_when_run_is_there_and_fails(tmp_path: Path, check) -> None:
    """Whether a module is there is read from its files: one that fails its import only when run (here, or
    only in this check's worker) cannot make itself vanish from the check. The wrapper that imports it is
    judged over the stand-in."""
    sub = submission(tmp_path)
    (sub / CAUSAL).write_text("raise ImportError('not in this worker')\n" + (sub / CAUSAL).read_text())
    result = check(sub)  # told nothing of its tests
    assert (result.status, result.score) == ("simulated_failed", pytest.approx(POINTS - SHARE, abs=0.01)), result.message
    lines = result.message.splitlines()
    assert lines[0].startswith("CausalAttention cannot be imported (") and lines[1].startswith(OVER_STANDIN_PASSED)


def test_with_nothing_there_the_check_earns_nothing(tmp_path: Path, check) -> None:
    """No causal_attention.py, multihead_wrapper.py or multihead_attention.py: 0, not a free full score."""
    sub = submission(tmp_path)
    for file in (CAUSAL, WRAPPER, MHA):
        (sub / file).unlink()
    result = check(sub)
    assert (result.status, result.score) == ("simulated_failed", 0.0), result.message
    assert result.message.splitlines()[0] == "none of the modules is there: nothing to run on the device"
    assert len(result.message.splitlines()) == 1 + len(RUBRIC.gpu_modules)  # and one line per module


def test_the_simulation_imports_no_compiler(tmp_path: Path, shared_domains) -> None:
    """The meta device's first use imported torch._dynamo (1.5 s of CPU per worker); the simulated GPU
    must not: after a whole check, the worker still has not imported it."""
    sub = submission(tmp_path)
    with (sub / "01_simple_attention" / "attention_scores.py").open("a") as f:
        f.write("\n\ndef dynamo_imported():\n    import sys\n    return 'torch._dynamo' in sys.modules\n")
    with start_worker(sub, domains=shared_domains) as client:
        runs = run_gpu_check(RemoteImpl(client, load_rubric().owner_of), "auto", POINTS, pytest.fail)
        result = runs.scored(dict.fromkeys((m.name for m in RUBRIC.gpu_modules), 1.0))
        assert result.status == "simulated_passed", result.message
        assert RemoteImpl(client, {"dynamo_imported": "01_simple_attention/attention_scores"}).dynamo_imported() is False


# Each variant: (file, old, new) applied to the solutions. Correct ones pass the check; the others keep a
# tensor on the CPU and fail it, naming the line that made the tensor (or the plain attribute it came from).
TRIU_T = "torch.triu(torch.ones(num_tokens, num_tokens{}), diagonal=1).bool()"
CORRECT = {
    "buffer, persistent=False": (CAUSAL, "diagonal=1))", "diagonal=1), persistent=False)"),
    "bool buffer": (CAUSAL, "diagonal=1))", "diagonal=1).bool())"),
    "made in forward with device=x.device": (CAUSAL, "self.mask.bool()[:num_tokens, :num_tokens]",
                                             TRIU_T.format(", device=x.device")),
    "tril form with device=": (CAUSAL, "self.mask.bool()[:num_tokens, :num_tokens]",
                               "torch.tril(torch.ones(num_tokens, num_tokens, device=x.device)) == 0"),
    "a plain attribute moved in forward": (CAUSAL, 'self.register_buffer("mask", ', "self.mask = ("),
    "a 0-dim CPU tensor as the scale": (CAUSAL, "attn_scores / keys.shape[-1] ** 0.5",
                                        "attn_scores / torch.sqrt(torch.tensor(keys.shape[-1]))"),
    "MHA mask made with device=": (MHA, "self.mask.bool()[:num_tokens, :num_tokens]", TRIU_T.format(", device=x.device")),
}
KEEPS_ON_CPU = {
    "made in forward without device=": (CAUSAL, "self.mask.bool()[:num_tokens, :num_tokens]", TRIU_T.format(""),
                                        _line(CAUSAL, MASK)),
    "tril form without device=": (CAUSAL, "self.mask.bool()[:num_tokens, :num_tokens]",
                                  "torch.tril(torch.ones(num_tokens, num_tokens)) == 0", _line(CAUSAL, MASK)),
    "an additive -inf mask on the CPU": (CAUSAL, "attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)",
                                         "attn_scores + torch.full((num_tokens, num_tokens), -torch.inf).triu(1)",
                                         _line(CAUSAL, MASK)),
    "MHA plain attribute": (MHA, 'self.register_buffer("mask", ', "self.mask = (", "from self.mask, a plain attribute"),
    "MHA mask made without device=": (MHA, "self.mask.bool()[:num_tokens, :num_tokens]", TRIU_T.format(""),
                                      _line(MHA, MASK)),
    "output moved to the CPU": (MHA, "return self.out_proj(context)", "return self.out_proj(context).cpu()",
                                "is on cpu, expected cuda:0"),
}


def _verdicts(tmp_path: Path, domains, variants: dict, plain_moved: bool = False) -> dict[str, tuple[str, str]]:
    """{variant: (verdict, message)} of its module's check on the simulated GPU."""
    found = {}
    for i, (variant, (file, old, new, *_)) in enumerate(variants.items()):
        sub = submission(tmp_path / str(i), old, new, file)
        if new == "self.mask = (" and variant in CORRECT:  # moved in forward: self.mask.to(x.device)
            source = (sub / file).read_text().replace("self.mask.bool()", "self.mask.to(x.device).bool()")
            (sub / file).write_text(source)
        checked = next(m for m in RUBRIC.gpu_modules if m.module == file.stem)
        with start_worker(sub, domains=domains) as client:
            part = check_module(RemoteImpl(client, load_rubric().owner_of), checked, SIMULATED)
        found[variant] = (part.verdict, part.message)
    return found


def test_every_correct_variant_passes(tmp_path: Path, shared_domains) -> None:
    found = _verdicts(tmp_path, shared_domains, CORRECT)
    assert {v: verdict for v, (verdict, _) in found.items()} == dict.fromkeys(CORRECT, "passed"), found


def test_every_variant_keeping_a_tensor_on_the_cpu_fails_naming_where_it_came_from(tmp_path: Path, shared_domains) -> None:
    found = _verdicts(tmp_path, shared_domains, KEEPS_ON_CPU)
    wrong = {v: found[v] for v, (*_, named) in KEEPS_ON_CPU.items() if found[v][0] != "failed" or named not in found[v][1]}
    assert not wrong, wrong


# --- the simulated GPU answers as CUDA does (issue 37): idioms built from the solutions ---------------------------
PLAIN = "self.mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)"
MASK_USE = "self.mask.bool()[:num_tokens, :num_tokens]"


def test_the_not_available_trick_does_not_lift_a_plain_attribute_mask(tmp_path: Path, isolating) -> None:
    """``if x.is_cuda and not torch.cuda.is_available()`` was true only in the simulation: the mask stays on
    the CPU, as on CUDA, and the message names the attribute; in every isolating mode."""
    sub = submission(tmp_path, REGISTERED, PLAIN)
    trick = ("        mask = self.mask\n        if x.is_cuda and not torch.cuda.is_available():\n"
             "            mask = mask.to(x.device)\n        keys = self.W_key(x)\n")
    source = (sub / CAUSAL).read_text().replace("        keys = self.W_key(x)\n", trick, 1)
    (sub / CAUSAL).write_text(source.replace(MASK_USE, "mask.bool()[:num_tokens, :num_tokens]"))
    result = run_check(sub, domains=isolating)
    first = result.message.splitlines()[0]
    assert result.status == "simulated_failed" and result.score < result.max_score, result.message
    assert first.startswith("CausalAttention fails on the GPU (simulated)") and "'mask'" in first, first
    assert "register_buffer" in first and "from self.mask, a plain attribute" in first


def test_code_that_asks_whether_cuda_is_available_runs_as_on_a_gpu(tmp_path: Path, check) -> None:
    """The device-agnostic idiom ("CUDA semantics"): a mask moved to "cuda" when the input is there and
    CUDA is available runs on the simulated GPU as it does on CUDA."""
    sub = submission(tmp_path, REGISTERED, PLAIN)
    source = (sub / CAUSAL).read_text()
    (sub / CAUSAL).write_text(source.replace(MASK_USE, '''self.mask.to("cuda" if x.is_cuda and torch.cuda.is_available() '''
                                                       '''else "cpu").bool()[:num_tokens, :num_tokens]'''))
    result = check(sub)
    assert (result.status, result.score) == ("simulated_passed", result.max_score), result.message
    assert "for review" not in result.message


def test_a_cpu_buffer_filled_from_the_device_and_moved_back_passes(tmp_path: Path, check) -> None:
    """Heads written into a CPU buffer by slices (a device-to-host ``copy_`` on CUDA), returned with
    ``.to(x.device)``: it runs on the device."""
    buffer = ("        context = torch.zeros(b, num_tokens, self.d_out)\n"
              "        for h in range(self.num_heads):\n"
              "            context[..., h * self.head_dim:(h + 1) * self.head_dim] = attn_weights[:, h] @ values[:, h]\n"
              "        return self.out_proj(context.to(x.device))\n")
    result = check(submission(tmp_path, "        context = (attn_weights @ values).transpose(1, 2).reshape(b, num_tokens, "
                                        "self.d_out)\n        return self.out_proj(context)\n", buffer, file=MHA))
    assert (result.status, result.score) == ("simulated_passed", result.max_score), result.message
    assert "for review" not in result.message


def test_asking_the_dispatch_internals_is_shown_for_review_and_costs_nothing(tmp_path: Path, check) -> None:
    snoop = "        torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)\n        keys = self.W_key(x)\n"
    result = check(submission(tmp_path, "        keys = self.W_key(x)\n", snoop))
    assert (result.status, result.score) == ("simulated_passed", result.max_score), result.message
    assert result.message.startswith("CausalAttention: runs on the GPU (simulated) [for review: CausalAttention told "
                                     "the simulated GPU from CUDA by torch's dispatch internals "
                                     "(torch._C._get_dispatch_mode) at causal_attention.py, line "), result.message
    # the wrapper's heads are this CausalAttention: its run asked too
    assert [r.split(":")[0] for r in result.for_review] == ["CausalAttention", "MultiHeadAttentionWrapper"], result
    assert all("(torch._C._get_dispatch_mode) at causal_attention.py, line " in r for r in result.for_review)


def test_a_detection_reaches_the_reports_review_list(tmp_path: Path, shared_domains) -> None:
    """What told the simulated GPU from CUDA joins the grading's review list, which the JSON report, the text,
    the CSV's review column and the class summary show (test_from_scratch_rule.py follows that list there)."""
    from grader.grading.grade import grade
    from grader.grading.options import GradeOptions

    snoop = "        torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)\n        keys = self.W_key(x)\n"
    sub = submission(tmp_path, "        keys = self.W_key(x)\n", snoop)
    report = grade(sub, GradeOptions(gpu="simulate", exercises=(RUBRIC.owner_of["CausalAttention"],)), shared_domains)
    assert report.gpu_check.score == report.gpu_check.max_score, report.gpu_check.message
    assert [line for line in report.review if line.startswith("GPU-run check: CausalAttention: torch's dispatch "
                                                              "internals (torch._C._get_dispatch_mode)")], report.review
