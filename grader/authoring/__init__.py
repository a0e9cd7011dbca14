"""What the maintainers build from the solutions: stubs, mutants, the release, the bundles; and the
dev check of what an exercise still lacks.
"""
