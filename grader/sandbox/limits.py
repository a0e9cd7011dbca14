"""The limits of a grading unless it says otherwise (``--timeout``): one definition, which the grading
options, the engine and the worker client read. Kept apart from the client so that code which only
describes a grading (its options, the grades sheet, the reports) imports none of the worker's machinery.

A domain's memory is bounded in all, in every isolating mode (``grader isolation`` and the report say
which bound holds; grader/sandbox/cgroups.py):

* where a cgroup can be made (root, a writable cgroup v2 with the memory controller or v1's memory
  hierarchy), each domain runs in its own: MEMORY_MB + DOMAIN_HEADROOM_MB for all of its processes
  together (2560 MB by default), no swap, and NPROC processes and threads;
* where none can (a container's read-only cgroupfs), each process's address space is bounded
  (RLIMIT_AS: what the template maps, about 0.6 GB with torch 2.13's CPU build, plus MEMORY_MB) and the
  student's uid may run NPROC_WITHOUT_CGROUP processes and threads (RLIMIT_NPROC counts both). The
  worker uses two threads (its main one and a watchdog; torch's intra-op pool has one thread,
  OMP_NUM_THREADS=1, its inter-op pool at most one more), so a domain holds at most three processes:
  3 x (0.6 GB + MEMORY_MB), under 8 GB by default, the budget a machine grading one job per core
  needs per core. (With CUDA, RLIMIT_AS is off: CUDA maps far more address space than any limit
  could allow; there only a cgroup bounds a domain's memory.)
"""

# CPU seconds per call into the student's code; the worker's address space beyond what the template
# already maps (torch); seconds for a worker to start.
CALL_TIMEOUT = 5.0
MEMORY_MB = 2048
# A domain's cgroup holds it to MEMORY_MB and this much more: the template's pages the worker writes to
# (copied on write: at most the template's resident size, 155 MB here), its page tables, and its files in
# tmpfs (with namespaces: /tmp, /dev/shm and scratch, 64 MB each). RLIMIT_AS stops one process before the
# cgroup does (a MemoryError the student's code sees); the cgroup stops the domain as a whole.
DOMAIN_HEADROOM_MB = 512
NPROC = 64  # processes and threads of one domain (a cgroup's pids.max, and the student's uid's RLIMIT_NPROC)
NPROC_WITHOUT_CGROUP = 4  # the same where no cgroup bounds the total: the worker's threads and one more process
STARTUP_TIMEOUT = 120.0
# A call is timed out when it has used call_timeout seconds of CPU, or WALL_FACTOR times that of wall
# clock not spent waiting for a CPU (a sleeping or blocked worker): a busy grading machine delays correct
# code, it does not fail it. WALL_CEILING times call_timeout of wall clock ends any call, however busy the
# machine (a safety net: a correct call would need the machine 100 times oversubscribed to reach it).
WALL_FACTOR = 3.0
WALL_CEILING = 10.0
