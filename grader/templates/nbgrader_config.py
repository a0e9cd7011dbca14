# nbgrader configuration of the attention-kata course (written by `grader.release.build_release`).
#
#   cd <this folder>
#   nbgrader generate_assignment attention-kata --force   # source/ -> release/ (students' copies)
#   nbgrader autograde attention-kata                     # after collecting into submitted/
#   nbgrader export                                       # grades.csv
c = get_config()  # noqa: F821 -- provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "attention-kata"

# The notebooks mark regions with full comment lines, the same markers as solutions/*.py.
c.ClearSolutions.begin_solution_delimeter = "### BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "### END SOLUTION"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearHiddenTests.begin_test_delimeter = "### BEGIN HIDDEN TESTS"
c.ClearHiddenTests.end_test_delimeter = "### END HIDDEN TESTS"

# Autograding runs every cell; the GPT-2-sized module takes a moment on a slow CPU.
c.ExecutePreprocessor.timeout = 120
