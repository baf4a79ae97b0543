"""hopbench from Python: the benchmark harness's Python package.

`hopbench.backend` writes an external first-stage engine as one Python function.
"""
