"""The `hopbench` command installed with the package: the Rust binary's own code, run in this
process (`hopbench._native.cli`)."""

import signal
import sys


def main():
    """Runs the command line in `sys.argv` and exits with its status."""
    from . import _native

    # Ctrl-C stops the command as it stops the Rust binary (Python's handler would only set a
    # flag that the Rust code never reads)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    sys.exit(_native.cli(["hopbench", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
