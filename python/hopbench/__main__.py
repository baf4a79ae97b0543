"""`python -m hopbench ...`: the `hopbench` command."""

from ._cli import main

main()
