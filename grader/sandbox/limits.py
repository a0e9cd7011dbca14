"""The limits of a grading unless it says otherwise (``--timeout``): one definition, which the grading
options, the engine and the worker client read. Kept apart from the client so that code which only
describes a grading (its options, the grades sheet, the reports) imports none of the worker's machinery.
"""

# CPU seconds per call into the student's code; the worker's address space beyond what the template
# already maps (torch); seconds for a worker to start.
CALL_TIMEOUT = 5.0
MEMORY_MB = 2048
STARTUP_TIMEOUT = 120.0
# A call is timed out when it has used call_timeout seconds of CPU, or WALL_FACTOR times that of wall
# clock not spent waiting for a CPU (a sleeping or blocked worker): a busy grading machine delays correct
# code, it does not fail it. WALL_CEILING times call_timeout of wall clock ends any call, however busy the
# machine (a safety net: a correct call would need the machine 100 times oversubscribed to reach it).
WALL_FACTOR = 3.0
WALL_CEILING = 10.0
