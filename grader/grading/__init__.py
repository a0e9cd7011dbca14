"""One grading: a submission in, a report of plain values out.

intake (what the instructor points at -> group folders), engine (the hidden tests run here against
remote objects), remote_impl (the student's objects, seen through the wall), scoring (outcomes -> points,
the re-grade), gpu_check (the GPU-run check), results (the plain result types), grade (the whole grading).
"""
