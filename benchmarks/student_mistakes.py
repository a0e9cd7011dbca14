"""Benchmark: how many realistic student mistakes the public tests catch and name, and how many causes are false.

    python benchmarks/student_mistakes.py [MISTAKES.json] [--show-causes]

MISTAKES.json defaults to ``../shared/student_mistakes/mistakes.json`` beside the repository (its README
says the format: each mistake a list of ``[replace, with]`` patches to one solution, the words a right
diagnosis contains, the false causes once printed). Each mistake is put alone into a copy of the solutions
(its patches applied in order, each anchor exactly once, by grader/authoring/mutation.py) and its group's
public tests run as the project's own runs do (grader/authoring/known_results.py: the solutions first on the
path, the patched module before them; ``"run": "group"``). Per mistake:

* caught: a public test of the group failed;
* named: a ``likely cause:`` line of a failing test contains one of its ``cause_words``;
* false: a ``likely cause:`` line contains a word of its ``false_causes_seen`` (a false cause printed before);
* to judge: a ``likely cause:`` line that contains none of its ``cause_words`` nor a false cause's: printed
  as ``judge``, for a person to read (a right cause in other words, or a new false one).

It prints the counts, then every mistake not caught or not named, every false cause and every cause to judge;
a mistake whose anchor no longer occurs in the solution is listed apart (its patch is out of date, not
caught). A benchmark, not a test: the held-out mistakes a reviewer runs are not in the repository.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from grader.authoring import known_results, mutation
from grader.rubric import REPO_ROOT

DEFAULT = REPO_ROOT.parent / "shared" / "student_mistakes" / "mistakes.json"
CAUSE = "likely cause:"


def as_patch(mistake: dict) -> dict:
    """The mistake as one patch of mutation.py's format (the whole file replaced), run with its group's tests;
    mutation.PatchError when an anchor does not occur exactly once."""
    exercise = f"{mistake['group']}/{mistake['module']}"
    original = source = mutation.reference_source({"name": mistake["id"], "exercise": exercise})
    for i, (old, new) in enumerate(mistake["patches"]):
        source = mutation.apply(source, {"name": f"{mistake['id']}[{i}]", "exercise": exercise, "replace": old, "with": new})
    return {"name": mistake["id"], "exercise": exercise, "replace": original, "with": source, "run": "group"}


def causes(result: dict) -> list[str]:
    """The ``likely cause:`` lines of a run's failing tests, each once, in the tests' order."""
    found: dict[str, None] = {}
    for status, _, message in result.get("tests", {}).values():
        if status in ("failed", "error"):
            for line in message.splitlines():
                if CAUSE in line:
                    found[line.split(CAUSE, 1)[1].strip()] = None
    return list(found)


def judge(mistake: dict, result: dict) -> dict:
    """caught / named / the causes that are false for ``mistake``, from its run's result."""
    failed = [node.split("::")[-1] for node, (status, _, _) in result.get("tests", {}).items()
              if status in ("failed", "error")]
    shown = causes(result)
    right = [c for c in shown if any(w.lower() in c.lower() for w in mistake["cause_words"])]
    seen_false = [c for c in shown if any(w.lower() in c.lower() for w in mistake["false_causes_seen"])]
    other = [c for c in shown if c not in right and c not in seen_false]
    return {"caught": bool(failed), "named": bool(right), "false": seen_false, "judge": other, "failed": failed,
            "causes": shown, "error": result.get("__error__")}


def measure(mistakes: list[dict]) -> tuple[dict[str, dict], dict[str, str]]:
    """``({id: judged}, {id: why its patch does not apply})``."""
    patches, stale = [], {}
    for mistake in mistakes:
        try:
            patches.append(as_patch(mistake))
        except mutation.PatchError as err:
            stale[mistake["id"]] = str(err)
    raw, _ = known_results.run_public_tests(patches)
    return {m["id"]: judge(m, raw.get(m["id"], {})) for m in mistakes if m["id"] not in stale}, stale


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    path = Path(args[0]) if args else DEFAULT
    if not path.is_file():
        print(f"error: no {path} (pass the mistakes file: ../shared/student_mistakes/mistakes.json)", file=sys.stderr)
        return 2
    return report(json.loads(path.read_text(encoding="utf-8")), argv)


def probe(pid: str, group: str, module: str, description: str, patches: list, words: list) -> dict:
    """One mistake in the format above, written in Python (the held-out files, benchmarks/heldout_probes_*.py)."""
    return {"id": pid, "group": group, "module": module, "description": description,
            "patches": [list(p) for p in patches], "cause_words": words, "false_causes_seen": []}


def run_sets(sets: dict[str, list[dict]], argv: list[str]) -> int:
    """A held-out file's command line: the set its first plain argument names (the first set if none),
    measured by :func:`report`."""
    which = next((a for a in argv if not a.startswith("--")), next(iter(sets)))
    if which not in sets:
        print(f"error: no set {which!r} (the sets: {', '.join(sets)})", file=sys.stderr)
        return 2
    return report(sets[which], argv)


def report(mistakes: list[dict], argv: list[str]) -> int:
    """Measure ``mistakes`` (the format above) and print what main prints (``--show-causes`` in ``argv``: every cause)."""
    judged, stale = measure(mistakes)
    by_id = {m["id"]: m for m in mistakes}
    counts = [sum(bool(j[k]) for j in judged.values()) for k in ("caught", "named", "false", "judge")]
    print(f"{len(mistakes)} mistakes: caught {counts[0]}, named {counts[1]}, with a false cause seen before {counts[2]}, "
          f"with a cause to judge {counts[3]}{f', patch out of date {len(stale)}' if stale else ''}")
    for mid, why in stale.items():
        print(f"  stale   {mid}: {why}")
    for mid, j in judged.items():
        if j["error"]:
            print(f"  ERROR   {mid}: {j['error']}")
        if not j["caught"]:
            print(f"  missed  {mid}: {by_id[mid]['description'][:110]}")
        elif not j["named"]:
            print(f"  unnamed {mid} ({', '.join(j['failed'][:3])}): {by_id[mid]['description'][:110]}")
        for cause in j["false"]:
            print(f"  false   {mid}: {cause[:160]}")
        for cause in j["judge"]:
            print(f"  judge   {mid}: {cause[:160]}")
        if "--show-causes" in argv:
            print(f"  {mid}: {j['causes']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
