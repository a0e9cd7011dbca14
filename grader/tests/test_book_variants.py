"""CI proof that the hidden tests accept the documents' own code (issue 23: "the documents' code scores 100").

``tests/mutants/book_variants.py`` (``VARIANTS``) holds the code printed in ``exercises/documents/``,
adapted only to a stub's names and to what the stub explicitly asks, as patches to the reference
solutions (format: grader/authoring/mutation.py): the loops that fill ``torch.empty(inputs.shape[0])`` and
``torch.zeros(query.shape)`` (float32 whatever the input), the notebook's scale
``torch.sqrt(torch.tensor(d_k))`` (√d_k rounded to float32), the chapter's MultiHeadAttention forward,
its causal masks. Each is applied to a copy of ``solutions/``, and every hidden test of the exercises
that can import the changed module (its own, and those built on it: hidden_runner.affected_by) must
pass. A control, a real mistake judged by the same verdict, must be rejected.

``PRINTED_VARIANTS`` hold the documents' code verbatim where it does not take what a stub asks (the
notebook's ``softmax_naive`` sums over the whole tensor, whatever ``dim``): the other kinds charge that, but
the printed tests compute only what the documents compute, so every printed test of its exercise passes
on it (run alone); their control, softmax_naive without exp, fails them.

All the runs share one warm process with test_hidden_tests.py's (hidden_runner.proof_runs,
grader/authoring/forked_pytest.py).
"""

from __future__ import annotations

import pytest

from grader.authoring import mutation
from grader.rubric import REPO_ROOT
from support import patch_problems

try:
    from . import hidden_runner as hr
except ImportError:
    import hidden_runner as hr

VARIANTS, CONTROL = hr.VARIANTS, hr.BOOK_CONTROL
PRINTED_VARIANTS, PRINTED_CONTROL = hr.PRINTED_VARIANTS, hr.PRINTED_CONTROL
VARIANT_KEYS = {*mutation.PATCH_KEYS, "source", "differs"}
DOCUMENTS = REPO_ROOT / "exercises" / "documents"


def variant_problems(variant: dict, results: dict[str, hr.Outcome] | hr.HiddenRunError) -> list[str]:
    """What keeps a variant from full marks: any hidden test of the exercises it can reach not passing."""
    if isinstance(results, hr.HiddenRunError):
        return [f"the hidden-test run did not complete: {results}"]
    problems = [f"{nodeid} {o.status}: {o.first_line}" for nodeid, o in sorted(results.items()) if not o.passed]
    if not any(o.exercise == variant["exercise"] for o in results.values()):
        problems.append(f"no hidden test of {variant['exercise']} ran")
    return problems


@pytest.fixture(scope="module")
def runs() -> dict:
    """``{variant name: {nodeid: Outcome} or the error}`` for every variant and the control."""
    return hr.proof_runs()[0]


def test_book_variants_are_well_formed():
    names = [v.get("name") for v in [*VARIANTS, *PRINTED_VARIANTS]]
    assert len(VARIANTS) >= 8 and PRINTED_VARIANTS and len(names) == len(set(names)), names
    documents = {p.name for p in DOCUMENTS.glob("*.txt")}
    problems = []
    for v in [*VARIANTS, *PRINTED_VARIANTS]:
        unknown = sorted(set(v) - VARIANT_KEYS)
        missing = sorted(k for k in VARIANT_KEYS if not str(v.get(k, "")).strip())
        if unknown or missing:
            problems.append(f"{v.get('name')}: unknown keys {unknown}, missing {missing}")
            continue
        if not any(doc in v["source"] for doc in documents):
            problems.append(f"{v['name']}: its source names none of exercises/documents/*.txt: {v['source']!r}")
        problems += patch_problems(v)
    assert not problems, "\n".join(problems)


@pytest.mark.timeout(300)
def test_every_hidden_test_passes_on_the_documents_own_code(runs):
    report = [f"{v['name']} [{v['exercise']}, {v['source']}]: {p}" for v in VARIANTS for p in variant_problems(v, runs[v["name"]])]
    assert not report, f"{len(report)} hidden test(s) reject the documents' own code:\n" + "\n".join(report)


@pytest.mark.timeout(300)
def test_one_script_holding_every_module_scores_as_the_module_files(runs):
    """A student who follows the chapter in one file: the intake splits it by its top-level definitions,
    and every hidden test passes on the split as on the module files (issue 39)."""
    split, files = runs["one script"], runs["solutions"]
    assert not isinstance(split, hr.HiddenRunError), split
    failing = [f"{nodeid} {o.status}: {o.first_line}" for nodeid, o in sorted(split.items()) if not o.passed]
    assert not failing and set(split) == set(files), "\n".join(failing) or sorted(set(files) ^ set(split))


@pytest.mark.timeout(300)
def test_the_verdict_rejects_a_real_mistake(runs):
    problems = variant_problems(CONTROL, runs[CONTROL["name"]])
    assert any("test_scaled_attention.py::" in p and " failed: " in p for p in problems), problems


@pytest.mark.timeout(300)
def test_every_printed_test_passes_on_the_documents_verbatim_code(runs):
    report = [f"{v['name']} [{v['exercise']}, {v['source']}]: {p}" for v in PRINTED_VARIANTS
              for p in variant_problems(v, runs[v["name"]])]
    assert not report, f"{len(report)} printed test(s) reject the documents' verbatim code:\n" + "\n".join(report)


@pytest.mark.timeout(300)
def test_the_printed_verdict_rejects_a_real_mistake(runs):
    problems = variant_problems(PRINTED_CONTROL, runs[PRINTED_CONTROL["name"]])
    assert any("::test_softmax_naive_printed failed: " in p for p in problems), problems
