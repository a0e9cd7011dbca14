"""Which of the student's modules imported which, as the code ran: plain data for the grader.

A student's CausalAttention may call the student's own ``mask_future_scores``: when causal_mask fails
its tests, the grader re-grades causal_attention over a stand-in causal_mask (grader/grading/scoring.py),
as it does for the rubric's ``depends_on``. It learns of the edge from here: every import of one of
the student's modules that runs is noted with the student's module that ran it (the nearest frame of
the student's files), whatever the route: an ``import`` or ``from`` statement at module or function
level, ``__import__(...)``, ``importlib.import_module(...)``, or a first load through the meta-path
finder (worker.KataModules).

Nothing here decides anything. Code that hides an import only loses its own re-grade; an edge that
code invents is a re-grade over a stand-in that counts only when it does better, with the reference
computed over the same stand-in (the grader's rule).
"""

import builtins
import importlib
import os
import sys

MAX_EDGES = 2000  # what one worker notes at most (a student's module count is bounded by the bundle's)
MAX_FRAMES = 64  # how far up the stack the importing module is looked for


class ImportRecorder:
    """Notes ``(importer, imported)`` for the student's modules ``files`` (name -> path) once installed."""

    def __init__(self, files):
        self.names = frozenset(files)
        self.by_file = {**{path: name for name, path in files.items()},
                        **{os.path.abspath(path): name for name, path in files.items()}}
        self.edges = set()
        self._import = builtins.__import__
        self._import_module = importlib.import_module

    def install(self):
        builtins.__import__ = self.builtin_import
        importlib.import_module = self.import_module

    def builtin_import(self, name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and type(name) is str:
            self.note(name.partition(".")[0])
        return self._import(name, globals, locals, fromlist, level)

    def import_module(self, name, package=None):
        if type(name) is str and not name.startswith("."):
            self.note(name.partition(".")[0])
        return self._import_module(name, package)

    def note(self, imported):
        """Note that the student's module running now imports ``imported`` (if both are the student's)."""
        if imported not in self.names or len(self.edges) >= MAX_EDGES:
            return
        importer = self.running()
        if importer is not None and importer != imported:
            self.edges.add((importer, imported))

    def running(self):
        """The student's module whose code is nearest on the stack, or None."""
        frame = sys._getframe(2)
        for _ in range(MAX_FRAMES):
            if frame is None:
                return None
            name = self.by_file.get(frame.f_code.co_filename)
            if name is not None:
                return name
            frame = frame.f_back
        return None

    def recorded(self):
        """The edges as plain data: ``[[importer, imported], ...]``, sorted."""
        return [list(edge) for edge in sorted(self.edges)]
