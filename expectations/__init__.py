"""Great Expectations suites and alert routing."""
