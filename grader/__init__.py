"""The attention-kata grader: scores untrusted submissions with the hidden tests in tests/."""

import sys

# jsonschema, which nbformat and nbgrader import, imports rfc3987_syntax when it is installed (nbgrader's
# dependencies install it) only to check the "iri" string formats, and that import builds a parser for
# about 3 s. No schema this grader validates uses those formats: skip it (jsonschema then leaves the
# format unchecked, as it does when the package is absent). grader/tests/test_gradebook.py checks both.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
