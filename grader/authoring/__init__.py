"""What the maintainers build from the solutions: stubs, mutants, the release, the bundles.
"""
