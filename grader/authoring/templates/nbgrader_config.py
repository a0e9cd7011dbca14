# nbgrader configuration of the attention-kata course (written by `python -m grader release`).
# One assignment per group, each released (and due) on its own:
#
#   cd <this folder>
#   nbgrader generate_assignment 03_causal --force   # source/03_causal -> release/03_causal (students' copy)
#   nbgrader release_assignment 03_causal            # then, after the due date: nbgrader collect 03_causal
#   python -m grader nbgrader . --assignment 03_causal   # grade with the isolated grader (NOT nbgrader autograde)
#   nbgrader export                                  # grades.csv; nbgrader release_feedback 03_causal
#
# `nbgrader autograde` would run the students' code in the grading kernel, where it can forge its
# own grades; `python -m grader nbgrader` never runs it in-process (docs/nbgrader.md).
import os

c = get_config()  # noqa: F821 -- provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "attention-kata"

# The course's own exchange, where release_assignment, submit, collect and release_feedback meet:
# `exchange/` beside this course folder (OUT/exchange for `python -m grader release OUT`), not
# nbgrader's default (/usr/local/share/nbgrader/exchange in nbgrader 0.9), which every course on the
# machine shares. Not inside this folder: that holds the solutions and must stay yours alone
# (chmod o-rwx), while students must reach the exchange. Create it once, writable by everyone as
# nbgrader requires, and give the students' nbgrader the same folder (docs/nbgrader.md):
#   mkdir -m 1777 <the folder holding this course folder>/exchange
c.Exchange.root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "exchange")

# The notebooks mark regions with full comment lines, the same markers as solutions/*.py.
c.ClearSolutions.begin_solution_delimeter = "### BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "### END SOLUTION"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
