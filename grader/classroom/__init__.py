"""A whole class: the grades sheet, score-all and its jobs, merge, the nbgrader course and gradebook.
"""
