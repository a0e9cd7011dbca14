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
# clock (a sleeping or starved worker): a busy grading machine does not fail correct code.
WALL_FACTOR = 3.0
