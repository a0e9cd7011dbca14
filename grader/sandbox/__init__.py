"""The sandbox: how student code is isolated, and the grader's end of the wall.

modes (the isolation modes and clean-up), domains (the warm template and its forked domains), client
(the grader's side of one domain), wire (framing and the codec with the grader's rules), kata_worker/ (the
worker: the only code that shares a process with a student's code; it imports nothing of ``grader``).
"""
