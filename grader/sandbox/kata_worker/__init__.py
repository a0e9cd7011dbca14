"""The worker side of the grader: the only code that shares a process with a student's code.

Self-contained on purpose (the standard library, torch and the students' tools that tools.py loads;
nothing else of ``grader/``): the grader starts ``python -I -B -c "...; from kata_worker.main import
main; main()"`` with only this folder's parent on ``sys.path`` (under bubblewrap, only this folder and
those tools are visible at all). Before any student's
code runs, every module here is imported, so a student's ``channel.py`` cannot take their place.

    main.py      entry point: process-wide limits, ``import torch``, warm-up, then the template
    template.py  the template: forks one isolation domain per request of the grader
    domain.py    one domain: namespaces, its private copy and scratch, the unprivileged uid, limits
    channel.py   framing and the plain-data codec on the domain's socket
    worker.py    the requests the grader may make (import, call, getattr, ..., device_run)
    tracing.py   what each request's student code ran (exercises/kata_trace.py), for which public name,
                 and what could hide it: plain values beside the answer
    imports.py   which of the student's modules imported which, as they ran (plain data for the grader)
    public_tests.py  runs the students' public tests the grader sends, for a flag: {test: passed}
    codec.py     plain data <-> bytes, no pickle (the grader imports the same file)
    tools.py     loads the students' tools the worker uses too: exercises/kata_gpu.py, the simulated
                 GPU of the GPU-run check, and exercises/kata_trace.py, the trace of the operations that
                 ran (one file each for the public tests and the worker)
"""
