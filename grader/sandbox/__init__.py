"""The sandbox: how student code is isolated, and the grader's end of the wall.

modes (the isolation modes, the sandbox's file layout, the clean-up), bubblewrap (the template's sandbox in
the ``bwrap`` mode), domains (the warm template and its forked domains), bundle (the files a domain gets),
client (the grader's side of one domain) and process (that domain as it runs), wire (framing and the
codec with the grader's rules), kata_worker/ (the worker: the only code that shares a process with a
student's code; it imports nothing of ``grader``).
"""
