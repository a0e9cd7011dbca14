"""Look at your attention: draw the attention weights your code computes for "Your journey starts with
one step" as a PNG, next to the reference's (full repository) or the documents' (student release).

    python -m grader view [--out attention.png]     (also: attention-kata view) in the full repository
    python view_attention.py [--out attention.png]  in the students' repository (the release)

Six 6x6 panels, rows = queries, columns = keys:

- plain: ``softmax_stable(attention_score_matrix(inputs))`` (01: section 3.3.2);
- scaled: ``scaled_dot_product(q, k, v)`` of the seed-789 SelfAttention_v2 (three ``nn.Linear(3, 2,
  bias=False)``: W_query, W_key, W_value; the documents print its every intermediate) (02: section 3.4);
- causal: ``causal_attention_weights(q kᵀ, 2)`` of the same model (03: section 3.5.1);
- dropout: ``dropout(causal weights, 0.5)`` after ``torch.manual_seed(123)`` (03: section 3.5.2);
- head 1, head 2: the softmax weights that ``MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)`` (seed 123)
  computes in its forward pass, caught as they leave ``torch.softmax`` (04: section 3.6.2). d_out is 4,
  not the documents' 2, so that a head has two features and a split with the wrong stride shows.

Each of your panels is marked "matches" or "differs" against the one below it, on one colour scale. The
reference row (``solutions/``, only in the instructor's repository) runs its heads with YOUR module's
parameters, so a right module matches however it drew its random weights. The student release has no
reference: it shows the documents' printed tensors, where they print one (no heads: drawn, not compared).
YOUR code runs in this process, unisolated: fine for your own code on your own machine, not for anyone
else's (grade other people's work with ``python -m grader score``).

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


def _table(text: str, cast: Callable = str) -> list[list]:
    """The rows of a table written as text, a row per line, its cells split at spaces (and ``cast``)."""
    return [[cast(cell) for cell in line.split()] for line in text.strip().splitlines()]


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
# The row your panels are compared with, and how close counts as the same: the reference computes the same
# numbers in float32, so only rounding may differ; the documents print four decimals.
REFERENCE, DOCUMENTS = "reference (solutions/)", "documents"
ATOL = {REFERENCE: 1e-5, DOCUMENTS: 1.5e-4}
COLOURS = {"matches": "#1a7f37", "differs": "#cf222e"}  # of a verdict's title; "not compared" is grey


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

# The documents' printed weights, for the release (it has no reference): where, and the values as printed.
PRINTED = {
    "plain": ("chapter_notes_3.1-3.6.txt, 3.3.2", _table("""
        0.2098 0.2006 0.1981 0.1242 0.1220 0.1452
        0.1385 0.2379 0.2333 0.1240 0.1082 0.1581
        0.1390 0.2369 0.2326 0.1242 0.1108 0.1565
        0.1435 0.2074 0.2046 0.1462 0.1263 0.1720
        0.1526 0.1958 0.1975 0.1367 0.1879 0.1295
        0.1385 0.2184 0.2128 0.1420 0.0988 0.1896""", float)),
    "scaled": ("notebook_causal_self_attention.txt, In [816]", _table("""
        0.1921 0.1646 0.1652 0.1550 0.1721 0.1510
        0.2041 0.1659 0.1662 0.1496 0.1665 0.1477
        0.2036 0.1659 0.1662 0.1498 0.1664 0.1480
        0.1869 0.1667 0.1668 0.1571 0.1661 0.1564
        0.1830 0.1669 0.1670 0.1588 0.1658 0.1585
        0.1935 0.1663 0.1666 0.1542 0.1666 0.1529""", float)),
    "causal": ("notebook_causal_self_attention.txt, renormalized", _table("""
        1.0000 0.0000 0.0000 0.0000 0.0000 0.0000
        0.5517 0.4483 0.0000 0.0000 0.0000 0.0000
        0.3800 0.3097 0.3103 0.0000 0.0000 0.0000
        0.2758 0.2460 0.2462 0.2319 0.0000 0.0000
        0.2175 0.1983 0.1984 0.1888 0.1971 0.0000
        0.1935 0.1663 0.1666 0.1542 0.1666 0.1529""", float)),
    # documents/README.md: reproduces on x86-64 CPUs with PyTorch >= 2.7; other platforms draw another mask.
    "dropout": ("documents/README.md (x86-64 CPU)", _table("""
        2.0000 0.0000 0.0000 0.0000 0.0000 0.0000
        0.0000 0.0000 0.0000 0.0000 0.0000 0.0000
        0.7599 0.6194 0.6206 0.0000 0.0000 0.0000
        0.0000 0.4921 0.4925 0.0000 0.0000 0.0000
        0.0000 0.3966 0.0000 0.3775 0.0000 0.0000
        0.0000 0.3327 0.3331 0.3084 0.3331 0.0000""", float)),
}


class ViewError(Exception):
    """Unusable input or a missing matplotlib: one line, exit code 2."""


@dataclass
class Empty:
    """A panel without a picture, and why ("not written yet", an error, nothing printed)."""

    reason: str
    error: bool = False


# --- loading a tree of modules (yours, or the reference) ---------------------------------------------
def panels_of(root: Path, names: Sequence[str], params: dict | None = None) -> dict[str, object]:
    """The panels (compute_panels) of the modules ``names`` of ``root``, imported from its group folders by bare
    name and run while those folders are first on ``sys.path``, as the tests run them (a sibling imported inside
    a function is found). Every module of the folders leaves ``sys.modules`` again afterwards, so a second tree
    (the reference) with the same names loads next to the first. One that cannot be imported maps to an ``Empty``."""
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
        return compute_panels(found, params)
    finally:
        sys.path[:] = saved_path
        for name in stems:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


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
    raise TimeoutError(f"no answer after {CALL_TIMEOUT_S} s (an endless loop?)")


# --- computing the panels -------------------------------------------------------------------------------
def compute_panels(kit: dict[str, object], params: dict | None = None) -> dict[str, object]:
    """{panel key: a (6, 6) tensor of weights, or an Empty}, calling the modules of ``kit``. ``params``
    carries the heads' module's parameters from your run (filled) to the reference's (copied in)."""
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
        module = m["multihead_attention"].MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
        _use_params(module, {} if params is None else params)
        module.eval()
        seen: list = []
        with _softmax_spy(seen):
            module(inputs.clone().unsqueeze(0))
        found = [w for w in seen if w.dim() >= 3 and tuple(w.shape[-3:]) == (2, 6, 6)]
        if not found:
            raise _Wrong("no softmax of shape (…, 2, 6, 6) seen in forward(): the per-head weights cannot be shown")
        return found[-1].reshape(-1, 2, 6, 6)[0]

    computed: dict[str, object] = {}
    for key, compute in (("plain", plain), ("scaled", scaled), ("causal", causal_panel), ("dropout", dropout)):
        computed[key] = _call(kit, next(p.modules for p in PANELS if p.key == key), lambda: compute(kit), (6, 6))
    both = _call(kit, ("multihead_attention",), lambda: heads(kit), (2, 6, 6))
    computed["head1"], computed["head2"] = (both, both) if isinstance(both, Empty) else both
    return computed


def _use_params(module, params: dict) -> None:
    """Copy ``params`` (your module's) into ``module`` (the reference's) or, while it is empty, fill it
    with ``module``'s own: the reference computes with your weights. Its buffers (the mask) stay its own."""
    import torch

    own = dict(module.named_parameters())
    if not params:
        params.update((name, value.detach().clone()) for name, value in own.items())
        return
    wrong = [f"{name} {tuple(value.shape)}" for name, value in own.items()
             if name not in params or params[name].shape != value.shape]
    if wrong:
        raise _Wrong(f"cannot run the reference with your weights: your MultiHeadAttention has no {', '.join(wrong)}")
    with torch.no_grad():
        for name, value in own.items():
            value.copy_(params[name])


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


def _softmax_spy(seen: list):
    """A torch function mode that adds to ``seen`` every softmax output (torch.softmax, F.softmax,
    Tensor.softmax) computed while it is active: how the heads are caught inside your forward()."""
    import torch
    from torch.overrides import TorchFunctionMode

    softmaxes = {torch.softmax, torch.nn.functional.softmax, torch.Tensor.softmax, torch.special.softmax}

    class Spy(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func in softmaxes and isinstance(out, torch.Tensor):
                seen.append(out.detach().clone())
            return out

    return Spy()


# --- comparing ------------------------------------------------------------------------------------------
# What your panels are compared with, as the picture's subtitle and the text printed say it.
AGAINST = {REFERENCE: "the reference solutions; their heads run with your MultiHeadAttention's parameters",
           DOCUMENTS: "the tensors the documents print, where they print one; this repository has no reference, "
                      "so the heads are drawn, not compared"}


def panel_rows(exercises: Path, reference: Path | None) -> list[tuple[str, dict]]:
    """[("yours", your panels), (REFERENCE or DOCUMENTS, what they are compared with)]: the reference's
    panels where ``reference`` is a folder (the full repository), else the documents' (the release)."""
    import torch

    names = sorted({m for p in PANELS for m in p.modules})
    params: dict = {}  # your MultiHeadAttention's, for the reference's
    yours = panels_of(exercises, names, params)
    if reference is not None and reference.is_dir():
        return [("yours", yours), (REFERENCE, panels_of(reference, names, params))]
    none = Empty("the documents print no\nweights for this")
    return [("yours", yours), (DOCUMENTS, {p.key: torch.tensor(PRINTED[p.key][1]) if p.key in PRINTED else none
                                           for p in PANELS})]


def verdicts(rows: list[tuple[str, dict]]) -> dict[str, str]:
    """{panel key: "matches (max diff …)", "differs: max diff …" or "not compared: why"}, your panel
    against the one below it, to the tolerance ATOL gives that row."""
    (_, yours), (label, theirs) = rows
    found = {}
    for panel in PANELS:
        mine, other = yours[panel.key], theirs[panel.key]
        if isinstance(mine, Empty) or isinstance(other, Empty):
            why = f"yours: {mine.reason}" if isinstance(mine, Empty) else other.reason
            found[panel.key] = "not compared: " + why.replace("\n", " ")
            continue
        diff = float((mine - other).abs().max())  # NaN where either has one: never <= ATOL, so "differs"
        found[panel.key] = f"matches (max diff {diff:.1g})" if diff <= ATOL[label] else f"differs: max diff {diff:.3g}"
    return found


def pair_scale(*values) -> tuple[float, float]:
    """(vmin, vmax): one colour scale for a panel and the one it is compared with, so that equal pictures
    look equal; from 0 (or the lowest value, if negative) to the highest finite value."""
    import torch

    finite = [f for t in values if isinstance(t, torch.Tensor) and (f := t[torch.isfinite(t)]).numel()]
    low = min([0.0] + [float(t.min()) for t in finite])
    return low, max([low + 1e-6] + [float(t.max()) for t in finite])


# --- drawing --------------------------------------------------------------------------------------------
def draw(rows: list[tuple[str, dict]], found: dict[str, str], out: Path, subtitle: str = "") -> dict[str, list]:
    """One row of panels per (label, panels), yours on top with each panel's verdict (``found``) in its
    title. Returns the colour scale, (vmin, vmax), of each picture drawn, by panel, read back from the figure."""
    import matplotlib
    matplotlib.use("Agg")  # no window: before pyplot
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), len(PANELS), figsize=(3.4 * len(PANELS), 3.55 * len(rows) + 1.5),
                             squeeze=False)
    # A fixed layout: matplotlib's constrained layout draws the figure twice (about 2 s more).
    fig.subplots_adjust(left=0.045, right=0.995, top=1 - 1.25 / fig.get_figheight(), bottom=0.75 / fig.get_figheight(),
                        wspace=0.28, hspace=0.42)
    fig.suptitle('Attention weights for "Your journey starts with one step" (rows: queries, columns: keys)'
                 + (f"\n{subtitle}" if subtitle else ""), fontsize=13)
    scales: dict[str, list] = {}
    for col, panel in enumerate(PANELS):
        vmin, vmax = pair_scale(*(panels[panel.key] for _, panels in rows))
        for row, (label, panels) in enumerate(rows):
            ax, value = axes[row][col], panels[panel.key]
            if isinstance(value, Empty):
                ax.set(facecolor="#f3f3f3", xticks=[], yticks=[])
                ax.text(0.5, 0.5, "\n".join(textwrap.fill(part, 30) for part in value.reason.split("\n")),
                        ha="center", va="center", transform=ax.transAxes, fontsize=7.5 if value.error else 9,
                        color="#cf222e" if value.error else "#555555")
            else:
                image = ax.imshow(value.numpy(), cmap="viridis", vmin=vmin, vmax=vmax)
                for k, v in enumerate(value.flatten().tolist()):  # row k // 6, column k % 6
                    ax.text(k % 6, k // 6, f"{v:.2f}" if v else "0", ha="center", va="center", fontsize=7,
                            color="black" if v > vmin + 0.6 * (vmax - vmin) else "white")
                ax.set_xticks(range(6), TOKENS, rotation=45, ha="right", fontsize=7)
                ax.set_yticks(range(6), TOKENS, fontsize=7)
                scales.setdefault(panel.key, []).append(tuple(float(v) for v in image.get_clim()))
            if label == DOCUMENTS and panel.key in PRINTED:
                ax.set_xlabel(PRINTED[panel.key][0], color="#555555", fontsize=8)
            if row == 0:
                verdict = found[panel.key]
                word = verdict.split(":")[0] if verdict.startswith("not compared") else verdict
                ax.set_title(f"{panel.title}\n{word}", fontsize=9, color=COLOURS.get(verdict[:7], "#555555"),
                             fontweight="bold" if verdict.startswith("differs") else "normal")
            if col == 0:
                ax.set_ylabel(label, fontsize=10, fontweight="bold")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return scales


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
               "scaled, causal, with dropout, per head) as a PNG, each panel marked as matching or differing from "
               "the reference's (full repository) or the documents' printed tensors (student release). Your code "
               "runs in this process, not isolated: that is fine for your own code on your own machine; grade "
               "anyone else's work with `score`. Needs matplotlib (python -m pip install matplotlib).")


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
    import torch  # noqa: F401 -- before any student module: torch's import must not run inside a student import's time limit

    rows = panel_rows(exercises, reference)
    found, against = verdicts(rows), rows[1][0]
    draw(rows, found, args.out, f"top: your code; bottom: {AGAINST[against]}")
    written = sum(not isinstance(v, Empty) for v in rows[0][1].values())
    print(f"wrote {args.out} ({written}/{len(PANELS)} of your panels drawn)", file=out)
    print(f"compared (atol {ATOL[against]:g}) with {AGAINST[against]}:", file=out)
    for key, verdict in found.items():
        print(f"  {key:<8} {verdict}", file=out)
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
