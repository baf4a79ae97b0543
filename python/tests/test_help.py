"""Every public function documents every argument (`help(hopbench.evaluate)` is the manual)."""

import inspect

import hopbench
import hopbench.backend


def test_every_argument_is_documented():
    for f in (hopbench.evaluate, hopbench.compare, hopbench.run_matrix, hopbench.load_results,
              hopbench.Results.per_query, hopbench.Results.curves, hopbench.backend.serve):
        doc = inspect.getdoc(f) or ""
        for name in inspect.signature(f).parameters:
            if name != "self":
                assert f"{name}:" in doc or f"`{name}`" in doc, f"{f.__qualname__}: {name}"
