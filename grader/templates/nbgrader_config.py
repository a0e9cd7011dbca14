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
c = get_config()  # noqa: F821 -- provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "attention-kata"

# The notebooks mark regions with full comment lines, the same markers as solutions/*.py.
c.ClearSolutions.begin_solution_delimeter = "### BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "### END SOLUTION"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
