"""The top README stays short and true: CI runs exactly its set-up commands, and the docs' paths exist.

Cheap (no subprocess, no torch): it reads README.md, .ci/run and the Markdown files under docs/,
tests/ and benchmarks/, and runs the folder steps of docs/class-grading.md's shard workflow and scripts. The whole top README's paths are checked by
test_release.py::test_every_relative_path_in_the_whole_top_readme_resolves; this file reuses its
``broken_paths`` for the other Markdown files.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from support import broken_paths

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
CI_RUN = REPO_ROOT / ".ci" / "run"
MAX_README_LINES = 120
FENCE = re.compile(r"^```(install|test)\n(.*?)^```$", re.M | re.S)


def readme_commands() -> dict[str, list[str]]:
    """The README's ```install and ```test blocks: {"install": [command, ...], "test": [...]}."""
    blocks: dict[str, list[str]] = {}
    for name, body in FENCE.findall(README.read_text(encoding="utf-8")):
        assert name not in blocks, f"README.md has two ```{name} blocks"
        blocks[name] = [line.strip() for line in body.splitlines() if line.strip()]
    return blocks


def _words(command: str) -> list[str]:
    """A shell command as words; pip's quiet flag changes nothing installed, so it is dropped."""
    words = shlex.split(command, comments=True)
    if words[:4] == ["python", "-m", "pip", "install"]:
        words = [w for w in words if w not in ("-q", "--quiet")]
    return words


def ci_commands() -> list[list[str]]:
    return [_words(line) for line in CI_RUN.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_the_readme_has_one_install_and_one_test_block():
    blocks = readme_commands()
    assert sorted(blocks) == ["install", "test"], "README.md needs a ```install and a ```test block"
    assert blocks["install"] and blocks["test"]


def test_ci_runs_exactly_the_readmes_install_and_test_commands():
    blocks = readme_commands()
    ci = ci_commands()
    positions = []
    for name in ("install", "test"):
        for command in blocks[name]:
            words = _words(command)
            assert words in ci, (f".ci/run does not run the README's {name} command {command!r} "
                                 f"(only pip's -q may differ)")
            positions.append(ci.index(words))
    assert positions == sorted(positions), ".ci/run must run the README's commands in the README's order"


def _docs_markdown() -> list[Path]:
    return [*sorted((REPO_ROOT / "docs").glob("*.md")), REPO_ROOT / "tests" / "README.md",
            REPO_ROOT / "benchmarks" / "README.md"]


def test_every_relative_path_in_the_docs_resolves():
    """Links resolve from the file's folder (as GitHub renders them); a path in a code span may also be
    written from the repository root (`grader/classroom/score_all.py` in docs/), as these pages do."""
    files = _docs_markdown()
    assert len(files) >= 5, files
    broken = []
    for md in files:
        for line in broken_paths(md):
            span = re.fullmatch(re.escape(f"{md}: path `") + r"(.+)`", line)
            if span and (REPO_ROOT / span.group(1)).exists():
                continue
            broken.append(line)
    assert broken == [], "\n".join(broken)


def test_the_readme_fits_on_two_screens():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, (f"README.md has {lines} lines (at most {MAX_README_LINES}): "
                                       "move the details to docs/")


# --- docs/class-grading.md's shard workflow and scripts, their folder steps run as written ----------------

CLASS_GRADING = REPO_ROOT / "docs" / "class-grading.md"
SCRIPT_FENCE = re.compile(r"^```(yaml|bash)\n(.*?)^```$", re.M | re.S)
# What the shell gives the scripts: GitHub's matrix value, Slurm's array variables (the folder is the
# simulation's root, see _run_folder_steps).
SHELL_VALUES = {"${{ matrix.shard }}": "1"}
SLURM_ENV = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "8", "SLURM_CPUS_PER_TASK": "4"}


def class_grading_scripts() -> dict[str, list[str]]:
    """docs/class-grading.md's GitHub Actions jobs and Slurm scripts: {name: shell lines in order} (a
    job's ``run`` steps, with ``actions/download-artifact``'s folder as the ``mkdir -p`` it amounts to)."""
    scripts: dict[str, list[str]] = {}
    for i, (kind, body) in enumerate(SCRIPT_FENCE.findall(CLASS_GRADING.read_text(encoding="utf-8"))):
        if kind == "bash":
            scripts[f"bash block {i}"] = body.splitlines()
            continue
        for name, job in yaml.safe_load(body)["jobs"].items():
            lines = scripts.setdefault(f"workflow job {name}", [])
            for step in job["steps"]:
                if str(step.get("uses", "")).startswith("actions/download-artifact"):
                    lines.append(f"mkdir -p {step['with']['path']}")
                lines += str(step.get("run", "")).splitlines()
    return scripts


def _run_folder_steps(lines: list[str], root: Path) -> list[str]:
    """Run the ``mkdir``, ``cd`` and variable assignments of a script in the empty folder ``root``; read
    each ``python -m grader score-all|merge`` with the grader's own parser and say where its output
    (the CSV, the gradebook) would go into a folder that does not exist: score-all and merge exit 2 there."""
    from grader.cli import build_parser

    env = dict(SLURM_ENV, SLURM_SUBMIT_DIR=str(root))
    text = "\n".join(lines).replace("\\\n", " ")
    for key, value in SHELL_VALUES.items():
        text = text.replace(key, value)
    cwd, problems, grader_commands = root, [], 0
    for line in text.splitlines():
        for command in re.split(r"&&|;|\|\|", line):
            command = re.sub(r"\$\{?([A-Za-z_]\w*)\}?", lambda m: env.get(m[1], m[0]), command)
            words = shlex.split(command, comments=True)
            if words[:1] == ["sudo"]:
                words = words[1:]
            if not words:
                continue
            if re.fullmatch(r"[A-Za-z_]\w*=\S*", words[0]) and len(words) == 1:
                key, _, value = words[0].partition("=")
                env[key] = value
            elif words[0] == "cd":
                cwd = cwd / words[1]
            elif words[0] == "mkdir":
                for folder in (w for w in words[1:] if not w.startswith("-")):
                    (cwd / folder).mkdir(parents="-p" in words, exist_ok="-p" in words)
            elif words[0].endswith("python") and words[1:3] == ["-m", "grader"]:
                grader_commands += 1
                args = build_parser().parse_args(words[3:])
                outputs = [args.csv if args.command == "score-all" else args.out, args.gradebook]
                for out in filter(None, outputs):
                    if not (cwd / out).parent.is_dir():
                        problems.append(f"{command.strip()}: writes into {out.parent}/, which no step created")
                for folder in filter(None, [getattr(args, "json_dir", None), getattr(args, "feedback_dir", None)]):
                    (cwd / folder).mkdir(parents=True, exist_ok=True)  # as score-all and merge do
    return problems if grader_commands else ["no python -m grader command found"]


def test_the_documented_shard_workflow_and_scripts_create_every_folder_they_write_into(tmp_path: Path):
    scripts = class_grading_scripts()
    assert {"workflow job grade", "workflow job merge"} <= set(scripts) and len(scripts) == 4, sorted(scripts)
    problems = []
    for i, (name, lines) in enumerate(scripts.items()):
        root = tmp_path / str(i)
        root.mkdir()
        problems += [f"{name}: {problem}" for problem in _run_folder_steps(lines, root)]
    assert problems == [], "\n".join(problems)


def test_every_documented_install_pins_the_readmes_torch():
    """The hidden tests hold RNG-dependent printed values: a workflow that installs another torch can move
    grades between two runs. Every install line of torch in the docs, the top README and the release's
    templates names the README's own version."""
    pin = next(w for line in readme_commands()["install"] for w in _words(line) if w.startswith("torch=="))
    files = [README, *(REPO_ROOT / "docs").glob("*.md"), *(REPO_ROOT / "grader" / "authoring" / "templates").rglob("*")]
    unpinned = []
    for path in (f for f in files if f.is_file() and f.suffix != ".pyc"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            command = re.search(r"\bpip3? install\b([^`#]*)", line)  # a pip command, up to a code span's end
            words = command.group(1).split() if command else []
            if any(re.fullmatch(r"torch([=<>~!].*)?", w) for w in words) and pin not in words:
                unpinned.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not unpinned, f"install {pin}, as the README does:\n" + "\n".join(unpinned)
