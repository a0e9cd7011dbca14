"""Every student module imported once when its domain starts, before anything is asked of it.

A notebook-style module ends with ``print(x)`` or ``_x = torch.rand(2, 3)``. Imported on its first
use, that is inside a test, after ``impl.manual_seed(123)``: its draw shifts every seeded draw that
follows, and the student loses points for code that changes nothing. So each domain (the hidden
tests', a re-grade's, the GPU-run check's) first imports the modules of :attr:`Preload.modules`, in
the rubric's order, each in a request of its own with the call timeout, and only then takes the
request that started it. An import that raises is left to that module's tests, which import it again
and report the error as before; one that hangs, kills the worker or breaks the protocol twice (the
second time with every other such module refused: the first may only have imported the culprit) is
refused from then on in this domain and the next ones (the worker raises ImportError for it at once,
wherever it is imported; ``bad imports`` in grader/grading/engine.py): it costs that module only, and a
module that imports it is re-graded over its stand-in.

The worker also notes which student module imported which (kata_worker/imports.py); :meth:`Preload.fetch`
collects those edges into :attr:`Preload.edges` (grader/grading/scoring.py re-grades over them).
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Mapping

from grader.rubric import load_rubric
from grader.sandbox.bundle import MODULE_FILE
from grader.sandbox.client import WorkerClient, WorkerFailure

BREAKS_THE_WORKER = ("timeout", "died", "protocol")
FETCH_TIMEOUT = 2.0  # seconds for the worker's list of edges (our code there, unless the student's replaced it)
MAX_EDGES = 2000


class Preload:
    """What one client's domains import first, the modules refused, and the edges seen so far."""

    def __init__(self, modules: Iterable[str], refused: dict[str, str] | None = None, edges_wanted: bool = True):
        self.modules = tuple(modules)
        self.refused: dict[str, str] = dict(refused or {})  # module -> why (the tests' failure message)
        self.suspects: dict[str, str] = {}  # modules whose import broke a worker once (see _import_all)
        self.edges: set[tuple[str, str]] = set()
        self.ready_generation = 0  # the client's generation whose imports are done
        self.seconds = 0.0  # spent importing: the grader's time, not a test's
        # Until fetching once failed (the student's code broke our recorder: we stop asking); never in a
        # domain with stand-ins (a re-grade's), where nothing is decided from them.
        self.fetching = edges_wanted

    def ensure(self, client: WorkerClient) -> None:
        """Import the modules in ``client``'s domain unless done for it; starts one if none runs."""
        while client._proc is None or self.ready_generation != client.generation:
            started, startup = time.monotonic(), client.startup_seconds
            try:
                if self._import_all(client):
                    self.ready_generation = client.generation
            finally:  # a domain's start is already the client's startup_seconds
                self.seconds += time.monotonic() - started - (client.startup_seconds - startup)

    def _import_all(self, client: WorkerClient) -> bool:
        """One domain's imports; False when one broke it (the next domain goes on).

        A module whose import broke a worker is a suspect first: it may only have imported one that
        breaks. It is tried again last, with the other suspects refused, and refused itself only if it
        breaks again."""
        client.start()
        for module in sorted(self.modules, key=lambda m: m in self.suspects):  # stable: the rubric's order
            if module in self.refused:
                continue
            refuse = {**self.refused, **{m: why for m, why in self.suspects.items() if m != module}}
            try:
                client.request({"op": "import", "module": module, "refuse": refuse}, f"import of {module}")
            except WorkerFailure as failure:
                if failure.kind not in BREAKS_THE_WORKER:
                    raise  # the client is closed or out of starts: the request that asked fails with it
                self._blame(client, module, failure)
                return False
            except Exception:  # noqa: BLE001 - the student's import error: its module's tests report it
                pass
            else:
                client.imported.add(module)
            self.suspects.pop(module, None)
        self.fetch(client)
        return True

    def _blame(self, client: WorkerClient, module: str, failure: WorkerFailure) -> None:
        why = f"not run: importing {module} broke the worker earlier ({failure})"
        if module in self.suspects:  # it broke again, with every other suspect refused: its own doing
            del self.suspects[module]
            self.refused[module] = why
        else:
            self.suspects[module] = why
        if client.max_starts is not None:  # the next start is the grader's, not a test's (at most two a module)
            client.max_starts += 1

    def fetch(self, client: WorkerClient) -> None:
        """Add the worker's import edges to :attr:`edges` (never starts a domain; a failure ends fetching)."""
        if not self.fetching or client._proc is None or client.closed:
            return
        try:
            edges = client.request({"op": "imports"}, "the list of imports", min(FETCH_TIMEOUT, client.call_timeout))
        except Exception:  # noqa: BLE001 - the student's code broke our recorder: its edges are its loss
            self.fetching = False
            return
        self.edges |= _plain_edges(edges)


def _plain_edges(value: Any) -> set[tuple[str, str]]:
    """The pairs of module names in what the worker sent (anything else is dropped)."""
    if type(value) is not list:
        return set()
    edges = set()
    for item in value[:MAX_EDGES]:
        if type(item) in (list, tuple) and len(item) == 2 and all(
                type(name) is str and MODULE_FILE.fullmatch(name + ".py") for name in item):
            edges.add((item[0], item[1]))
    return edges


def attach_preload(client: WorkerClient, modules: Iterable[str] | None = None,
                   refused: Mapping[str, str] | None = None) -> Preload:
    """Give ``client`` its :class:`Preload`: ``modules`` (default: the rubric's, in its order), ``refused``
    but for the modules a stand-in replaces there; a domain with stand-ins (a re-grade's) reports no edges."""
    if modules is None:
        modules = [ex.module for ex in load_rubric().exercises.values()]
    kept = {module: why for module, why in (refused or {}).items() if module not in client.substitutes}
    client.preload = Preload(modules, kept, edges_wanted=not client.substitutes)
    return client.preload


def preload_of(client: Any) -> Preload | None:
    """The client's :class:`Preload` (grader/grading/engine.py's ``start_worker`` gives one), or None."""
    return getattr(client, "preload", None)
