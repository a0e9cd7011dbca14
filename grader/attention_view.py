"""Look at your attention: draw the attention weights your code computes for "Your journey starts with
one step" as a PNG, next to the reference's (full repository) or the documents' (student release).

    python -m grader view [--out attention.png]     (also: attention-kata view) in the full repository
    python view_attention.py [--out attention.png]  in the students' repository (the release)

Six 6x6 panels, rows = queries, columns = keys:

- plain: ``softmax_stable(attention_score_matrix(inputs))`` (01: section 3.3.2);
- scaled: ``scaled_dot_product(q, k, v)`` with the queries/keys/values of the seed-789
  SelfAttention_v2 (three ``nn.Linear(3, 2, bias=False)`` in the order W_query, W_key, W_value,
  the model the documents print every intermediate of) (02: section 3.4);
- causal: ``causal_attention_weights(q kᵀ, 2)`` of the same model (03: section 3.5.1);
- dropout: ``dropout(causal weights, 0.5)`` after ``torch.manual_seed(123)`` (03: section 3.5.2);
- head 1, head 2: the softmax weights that ``MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)``
  (seed 123) computes in its forward pass, caught as they leave ``torch.softmax`` (04: section 3.6.2).

YOUR code runs in this process, unisolated: that is fine for your own code on your own machine, not
for anyone else's (grade other people's work with ``python -m grader score``). A module that is not
written yet shows as an empty panel. The reference row comes from ``solutions/`` and exists only in the
instructor's repository; the student release shows the documents' printed tensors instead, where they
print one.

One source: the student release ships this very file as ``view_attention.py`` (grader/authoring/release.py
copies it), so it imports nothing of the grader, and torch and matplotlib only when it draws.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence


def _table(text: str) -> list[list[str]]:
    """The rows of a table written as text, a row per line, its cells split at spaces."""
    return [line.split() for line in text.strip().splitlines()]


def _numbers(text: str) -> list[list[float]]:
    return [[float(cell) for cell in row] for row in _table(text)]


# chapter_notes_3.1-3.6.txt, section 3.3.1: each token and its embedding.
_JOURNEY = _table("""
    Your     0.43 0.15 0.89
    journey  0.55 0.87 0.66
    starts   0.57 0.85 0.64
    with     0.22 0.58 0.33
    one      0.77 0.25 0.10
    step     0.05 0.80 0.55""")
TOKENS = tuple(row[0] for row in _JOURNEY)
INPUTS = [[float(cell) for cell in row[1:]] for row in _JOURNEY]
CALL_TIMEOUT_S = 10  # per call into the student's code (Unix, main thread)


@dataclass(frozen=True)
class Panel:
    key: str
    title: str
    modules: tuple[str, ...]  # the exercise modules it calls


PANELS = (
    Panel("plain", "plain: softmax(x xᵀ)", ("attention_scores", "normalization")),
    Panel("scaled", "scaled: softmax(q kᵀ / √2), seed 789", ("scaled_attention",)),
    Panel("causal", "causal: future masked", ("causal_mask",)),
    Panel("dropout", "causal + dropout(0.5), seed 123", ("attention_dropout",)),
    Panel("head1", "MultiHeadAttention, head 1", ("multihead_attention",)),
    Panel("head2", "MultiHeadAttention, head 2", ("multihead_attention",)),
)

# The documents' printed weights, for the release (where there is no reference): where they are, and
# the values as printed, a row per line.
PRINTED = {
    "plain": ("chapter_notes_3.1-3.6.txt, 3.3.2", _numbers("""
        0.2098 0.2006 0.1981 0.1242 0.1220 0.1452
        0.1385 0.2379 0.2333 0.1240 0.1082 0.1581
        0.1390 0.2369 0.2326 0.1242 0.1108 0.1565
        0.1435 0.2074 0.2046 0.1462 0.1263 0.1720
        0.1526 0.1958 0.1975 0.1367 0.1879 0.1295
        0.1385 0.2184 0.2128 0.1420 0.0988 0.1896""")),
    "scaled": ("notebook_causal_self_attention.txt, In [816]", _numbers("""
        0.1921 0.1646 0.1652 0.1550 0.1721 0.1510
        0.2041 0.1659 0.1662 0.1496 0.1665 0.1477
        0.2036 0.1659 0.1662 0.1498 0.1664 0.1480
        0.1869 0.1667 0.1668 0.1571 0.1661 0.1564
        0.1830 0.1669 0.1670 0.1588 0.1658 0.1585
        0.1935 0.1663 0.1666 0.1542 0.1666 0.1529""")),
    "causal": ("notebook_causal_self_attention.txt, renormalized", _numbers("""
        1.0000 0.0000 0.0000 0.0000 0.0000 0.0000
        0.5517 0.4483 0.0000 0.0000 0.0000 0.0000
        0.3800 0.3097 0.3103 0.0000 0.0000 0.0000
        0.2758 0.2460 0.2462 0.2319 0.0000 0.0000
        0.2175 0.1983 0.1984 0.1888 0.1971 0.0000
        0.1935 0.1663 0.1666 0.1542 0.1666 0.1529""")),
    # documents/README.md: the value that reproduces on an x86-64 CPU with PyTorch >= 2.7 (the
    # chapter notes print one from an unseeded model); other platforms draw another mask.
    "dropout": ("documents/README.md (x86-64 CPU)", _numbers("""
        2.0000 0.0000 0.0000 0.0000 0.0000 0.0000
        0.0000 0.0000 0.0000 0.0000 0.0000 0.0000
        0.7599 0.6194 0.6206 0.0000 0.0000 0.0000
        0.0000 0.4921 0.4925 0.0000 0.0000 0.0000
        0.0000 0.3966 0.0000 0.3775 0.0000 0.0000
        0.0000 0.3327 0.3331 0.3084 0.3331 0.0000""")),
}


class ViewError(Exception):
    """Unusable input or a missing matplotlib: one line, exit code 2."""


@dataclass
class Empty:
    """A panel without a picture, and why ("not written yet", an error, nothing printed)."""

    reason: str
    error: bool = False


# --- loading a tree of modules (yours, or the reference) ---------------------------------------------


def load_modules(root: Path, names: Sequence[str]) -> dict[str, object]:
    """Import ``names`` from the group folders of ``root`` (as the exercises do: by bare name).

    Every module of ``root``'s group folders leaves ``sys.modules`` again afterwards, so a second tree
    (the reference) with the same module names can be loaded next to the first. A module that cannot
    be imported maps to an ``Empty`` with the error.
    """
    groups = sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("*.py")))
    stems = {p.stem for g in groups for p in g.glob("*.py")}
    saved_path = sys.path[:]
    saved = {name: sys.modules.pop(name) for name in list(sys.modules) if name in stems}
    sys.path[:0] = [str(g) for g in groups]
    importlib.invalidate_caches()
    found: dict[str, object] = {}
    try:
        for name in names:
            try:
                found[name] = _limited(lambda: importlib.import_module(name))
            except Exception as err:  # the student's module: anything can happen at import
                found[name] = Empty(f"{name}.py cannot be imported: {type(err).__name__}: {err}", error=True)
    finally:
        sys.path[:] = saved_path
        for name in stems:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
    return found


class _Timeout(Exception):
    pass


def _limited(call: Callable):
    """Run ``call`` with a time limit where signals allow it (Unix, main thread)."""
    try:
        previous = signal.signal(signal.SIGALRM, _raise_timeout)
    except (AttributeError, ValueError):  # no SIGALRM (Windows) or not the main thread
        return call()
    signal.alarm(CALL_TIMEOUT_S)
    try:
        return call()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _raise_timeout(signum, frame):
    raise _Timeout(f"no answer after {CALL_TIMEOUT_S} s (an endless loop?)")


# --- computing the panels -------------------------------------------------------------------------------


def compute_panels(kit: dict[str, object]) -> dict[str, object]:
    """{panel key: a (6, 6) tensor of weights, or an Empty}, calling the modules of ``kit``."""
    import torch
    import torch.nn as nn

    inputs = torch.tensor(INPUTS)
    torch.manual_seed(789)
    w_query, w_key, w_value = (nn.Linear(3, 2, bias=False) for _ in range(3))
    with torch.no_grad():
        queries, keys, values = w_query(inputs), w_key(inputs), w_value(inputs)
        scores = queries @ keys.T
        future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
        causal = torch.softmax(scores.masked_fill(future, -torch.inf) / 2**0.5, dim=-1)  # the dropout panel's input

    def plain(m):
        return m["normalization"].softmax_stable(m["attention_scores"].attention_score_matrix(inputs.clone()))

    def scaled(m):
        result = m["scaled_attention"].scaled_dot_product(queries.clone(), keys.clone(), values.clone())
        if not (isinstance(result, tuple) and len(result) == 2):
            raise _Wrong(f"scaled_dot_product returned {type(result).__name__}, expected (context, attn_weights)")
        return result[1]

    def causal_panel(m):
        return m["causal_mask"].causal_attention_weights(scores.clone(), 2)

    def dropout(m):
        torch.manual_seed(123)
        return m["attention_dropout"].dropout(causal.clone(), 0.5)

    def heads(m):
        torch.manual_seed(123)
        module = m["multihead_attention"].MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
        module.eval()
        with _SoftmaxSpy() as spy:
            module(inputs.clone().unsqueeze(0))
        found = [w for w in spy.seen if w.dim() >= 3 and tuple(w.shape[-3:]) == (2, 6, 6)]
        if not found:
            raise _Wrong("no softmax of shape (…, 2, 6, 6) seen in forward(): the per-head weights cannot be shown")
        return found[-1].reshape(-1, 2, 6, 6)[0]

    computed: dict[str, object] = {}
    for key, compute in (("plain", plain), ("scaled", scaled), ("causal", causal_panel), ("dropout", dropout)):
        panel = next(p for p in PANELS if p.key == key)
        computed[key] = _call(kit, panel.modules, lambda: compute(kit), (6, 6))
    both = _call(kit, ("multihead_attention",), lambda: heads(kit), (2, 6, 6))
    for index, key in enumerate(("head1", "head2")):
        computed[key] = both if isinstance(both, Empty) else both[index]
    return computed


class _Wrong(Exception):
    pass


def _call(kit: dict[str, object], modules: Sequence[str], compute: Callable, shape: tuple[int, ...]):
    import torch

    for name in modules:
        if isinstance(kit.get(name), Empty):
            return kit[name]
        if name not in kit:
            return Empty(f"{name}.py is missing")
    try:
        result = _limited(compute)
    except NotImplementedError as err:
        if "not written yet" in str(err):
            return Empty(f"not written yet\n({str(err).split(':')[0]})")
        return Empty(f"NotImplementedError: {err}", error=True)
    except _Wrong as err:
        return Empty(str(err), error=True)
    except Exception as err:
        return Empty(f"{type(err).__name__}: {err}", error=True)
    if not isinstance(result, torch.Tensor):
        return Empty(f"returned {type(result).__name__}, expected a tensor", error=True)
    result = result.detach().to("cpu", torch.float32)
    if tuple(result.shape) != shape:
        return Empty(f"returned shape {tuple(result.shape)}, expected {shape}", error=True)
    return result


class _SoftmaxSpy:
    """Collects every softmax output computed while active (torch.softmax, F.softmax, Tensor.softmax)."""

    def __init__(self):
        import torch
        from torch.overrides import TorchFunctionMode

        spy = self
        self.seen: list = []
        softmaxes = {torch.softmax, torch.nn.functional.softmax, torch.Tensor.softmax, torch.special.softmax}

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if func in softmaxes and isinstance(out, torch.Tensor):
                    spy.seen.append(out.detach().clone())
                return out

        self._mode = Mode()

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)


def printed_panels() -> dict[str, object]:
    import torch

    return {p.key: (torch.tensor(PRINTED[p.key][1]) if p.key in PRINTED else Empty("the documents print no\nweights for this"))
            for p in PANELS}


# --- drawing --------------------------------------------------------------------------------------------


def draw(rows: list[tuple[str, dict[str, object]]], out: Path, subtitle: str = "") -> None:
    """One row of panels per (label, panels); the first row is compared with the second."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import torch

    fig, axes = plt.subplots(len(rows), len(PANELS), figsize=(3.4 * len(PANELS), 3.55 * len(rows) + 1.2),
                             squeeze=False)
    # A fixed layout: matplotlib's constrained layout draws the figure twice (about 2 s more).
    fig.subplots_adjust(left=0.045, right=0.995, top=1 - 0.95 / fig.get_figheight(), bottom=0.75 / fig.get_figheight(),
                        wspace=0.28, hspace=0.42)
    fig.suptitle('Attention weights for "Your journey starts with one step" (rows: queries, columns: keys)'
                 + (f"\n{subtitle}" if subtitle else ""), fontsize=13)
    for col, panel in enumerate(PANELS):
        tensors = [r[panel.key] for _, r in rows if isinstance(r[panel.key], torch.Tensor)]
        top = max([float(t.max()) for t in tensors] + [1e-6])
        for row, (label, results) in enumerate(rows):
            ax = axes[row][col]
            value = results[panel.key]
            title = panel.title if row == 0 else ""
            if isinstance(value, torch.Tensor):
                ax.imshow(value.numpy(), cmap="viridis", vmin=0.0, vmax=top)
                for i in range(6):
                    for j in range(6):
                        v = float(value[i, j])
                        ax.text(j, i, f"{v:.2f}" if v else "0", ha="center", va="center", fontsize=7,
                                color="black" if v > 0.6 * top else "white")
                ax.set_xticks(range(6), TOKENS, rotation=45, ha="right", fontsize=7)
                ax.set_yticks(range(6), TOKENS, fontsize=7)
                if label == "documents" and panel.key in PRINTED:
                    ax.set_xlabel(PRINTED[panel.key][0], color="#555555", fontsize=8)
                if row == 0 and len(rows) > 1 and isinstance(rows[1][1][panel.key], torch.Tensor):
                    diff = float((value - rows[1][1][panel.key]).abs().max())
                    ok = diff <= 1e-4 if rows[1][0].startswith("reference") else diff <= 1.5e-4
                    verdict = f"matches (max diff {diff:.1g})" if ok else f"DIFFERS: max diff {diff:.3f}"
                    ax.set_xlabel(verdict, color="#1a7f37" if ok else "#cf222e", fontsize=8,
                                  fontweight="normal" if ok else "bold")
            else:
                ax.set_facecolor("#f3f3f3")
                ax.set_xticks([])
                ax.set_yticks([])
                ax.text(0.5, 0.5, "\n".join(textwrap.fill(part, 30) for part in value.reason.split("\n")),
                        ha="center", va="center", transform=ax.transAxes, wrap=True,
                        fontsize=9 if not value.error else 7.5, color="#cf222e" if value.error else "#555555")
            ax.set_title(title, fontsize=9)
            if col == 0:
                ax.set_ylabel(label, fontsize=10, fontweight="bold")
    fig.savefig(out, dpi=110)
    plt.close(fig)


# --- the command ----------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the command, shared by ``attention-kata view`` and the stand-alone script."""
    parser.description = DESCRIPTION
    parser.add_argument("--out", type=Path, default=Path("attention.png"), metavar="FILE.png",
                        help="the picture to write (default: attention.png)")
    parser.add_argument("--exercises", type=Path, default=Path("exercises"), metavar="DIR",
                        help="the exercises folder (default: ./exercises)")


HELP = ("draw your attention weights next to the reference's as a PNG (runs YOUR code in this process: "
        "for your own code on your own machine)")
DESCRIPTION = ('Draw the attention weights your code computes for "Your journey starts with one step" (plain, '
               "scaled, causal, with dropout, per head) as a PNG, next to the reference's (full repository) or the "
               "documents' printed tensors (student release). Your code runs in this process, not isolated: that "
               "is fine for your own code on your own machine; grade anyone else's work with `score`. Needs "
               "matplotlib (python -m pip install matplotlib).")


def run_command(args: argparse.Namespace, reference: Path | None = None, out=None) -> int:
    """Draw ``args.exercises``'s weights, next to ``reference`` (a solutions folder) if there is one."""
    out = out or sys.stdout
    exercises: Path = args.exercises
    if not exercises.is_dir():
        raise ViewError(f"{exercises}: no such folder (run this from the folder that holds exercises/, or pass --exercises DIR)")
    if args.out.suffix.lower() != ".png":
        raise ViewError(f"--out {args.out}: the picture is a PNG, name it *.png")
    if not args.out.resolve().parent.is_dir():
        raise ViewError(f"--out {args.out}: directory {args.out.parent} does not exist")
    if args.out.is_dir():
        raise ViewError(f"--out {args.out}: is a directory")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ViewError("matplotlib is not installed: python -m pip install matplotlib") from None
    names = sorted({m for p in PANELS for m in p.modules})
    import torch  # noqa: F401 -- before any student module: torch's import must not run inside a student import's time limit

    rows = [("yours", compute_panels(load_modules(exercises, names)))]
    if reference is not None and reference.is_dir():
        rows.append(("reference (solutions/)", compute_panels(load_modules(reference, names))))
        subtitle = "top: your code; bottom: the reference solutions"
    else:
        rows.append(("documents", printed_panels()))
        subtitle = "top: your code; bottom: the tensors the documents print (where they print one)"
    draw(rows, args.out, subtitle)
    written = sum(not isinstance(v, Empty) for v in rows[0][1].values())
    print(f"wrote {args.out} ({written}/{len(PANELS)} of your panels drawn)", file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The stand-alone script of the student release: ``python view_attention.py [--out FILE.png]``."""
    parser = _OneLineParser(prog=Path(sys.argv[0]).name)
    add_arguments(parser)
    try:
        return run_command(parser.parse_args(argv))
    except ViewError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        raise ViewError(message)


if __name__ == "__main__":
    sys.exit(main())
