"""What a grading says: every report format, the feedback, the class summary.
"""
