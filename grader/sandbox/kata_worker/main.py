"""Entry point: ``main(["--fd", N])`` with the template's control socket on descriptor N.

Order matters: every module of this package, and torch with them (the codec needs it), is imported
first; then come the process-wide limits, the warm-up and the template loop. A domain puts the
student's group folders (the groups its spawn spec names) on ``sys.path`` only when it serves, after
all of that (so a student's ``torch.py`` or ``channel.py`` shadows nothing).
"""

import faulthandler
import gc
import os
import resource
import signal
import socket
import sys
import warnings

import torch

import kata_gpu
import kata_trace

from kata_worker import channel, codec, domain, template, worker as worker_module

FSIZE_LIMIT = 64 * 2**20


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    opts = dict(zip(argv[0::2], argv[1::2]))
    _prepare()
    template.serve(int(opts["--fd"]), serve_worker)


def _prepare() -> None:
    faulthandler.enable()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writing past the size limit fails with EFBIG instead
    domain.set_limit(resource.RLIMIT_FSIZE, FSIZE_LIMIT)
    domain.set_limit(resource.RLIMIT_NOFILE, 256)
    torch.set_num_interop_threads(1)  # threads count toward the domain's process limit (grader/sandbox/limits.py)
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # noise in every failure message
    worker_module.init(torch)
    _warm_up(torch)


def _warm_up(torch) -> None:
    """Use once what every grading uses: autograd, the layers, masking, dropout, state dicts, the
    codec, the trace and the simulated GPU (their first use in a process costs about 0.1 s; the template pays it
    once for all forks)."""
    linear, dropout = torch.nn.Linear(3, 4), torch.nn.Dropout(0.5)
    x = torch.rand(2, 5, 3, requires_grad=True)
    with kata_trace.Trace():  # every request runs under it (kata_worker/tracing.py)
        scores = linear(x) @ linear(x).transpose(1, 2)
        scores = scores.masked_fill(torch.triu(torch.ones(5, 5), diagonal=1).bool(), float("-inf"))
        weights = dropout(torch.softmax(scores / 2.0, dim=-1))
        torch.cat([weights, torch.tril(weights)], dim=-1).sum().backward()
    torch.empty_like(x).bernoulli_(0.5)
    linear.load_state_dict(linear.state_dict())
    str(weights)  # tensor printing imports modules lazily
    codec.decode(codec.encode({"x": x.detach(), "n": [1, "a", None]}))
    with torch.no_grad(), kata_gpu.simulated_gpu():
        str(linear.to(kata_gpu.DEVICE)(x.detach().to(kata_gpu.DEVICE)).sum().item())
    gc.freeze()  # torch's objects live as long as we do: full collections need not walk them


def serve_worker(sock_fd: int, copy_dir: str, groups: list, watch_parent: bool) -> None:
    """Serve one domain: the copy's group folders go on sys.path only now."""
    sys.path[:0] = [os.path.join(copy_dir, g) for g in groups]
    worker = worker_module.Worker(channel.Channel(socket.socket(fileno=sock_fd)), copy_dir, watch_parent, groups)
    worker.channel.send({"ready": {"pid": os.getpid(), "uid": os.getuid()}})
    worker.serve()
