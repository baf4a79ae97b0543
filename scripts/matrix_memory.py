#!/usr/bin/env python3
"""The peak memory and wall time of a computing `hopbench run-matrix`, one leg at a time: what the
memory goals of a scale run are checked with.

Each leg runs alone in its own `run-matrix` child (`--force`, so every cell is computed, and
`--no-curves`), and its peak resident set is the kernel's for that child (`os.wait4`'s
`ru_maxrss`), so no leg's memory is counted in another's.

Usage:
    scripts/matrix_memory.py --campaign C --dataset D --legs lexical,dense [--limit 100]
                             [--threads 2] [--hopbench target/release/hopbench]

For example, after `hopbench bench scale --passages 1000000 --results /work/rs --no-matrix`:
    scripts/matrix_memory.py --campaign /work/rs/scale-campaign.yaml --dataset scale-1000000 \\
        --legs lexical

Prints a markdown table: leg, peak RSS (KB, as `/usr/bin/time -v` reports it), wall seconds.
Exits 1 when a run fails (its stderr's last lines are printed).
"""

import argparse
import os
import subprocess
import sys
import time


def measure(cmd):
    """Runs `cmd`; returns (exit status, peak RSS in KB, wall seconds, stderr)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # the pipe is drained before the wait, so a chatty child never blocks on a full pipe
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss, time.perf_counter() - t0, err


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--legs", required=True, help="comma list, each measured alone")
    ap.add_argument("--limit", type=int, default=100, help="questions per cell (run-matrix --limit)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hopbench", default="target/release/hopbench")
    a = ap.parse_args()
    print("| leg | peak RSS (KB) | wall (s) |\n|---|---:|---:|")
    failed = False
    for leg in [x for x in a.legs.split(",") if x]:
        cmd = [a.hopbench, "run-matrix", "--campaign", a.campaign, "--datasets", a.dataset,
               "--legs", leg, "--force", "--limit", str(a.limit), "--threads", str(a.threads),
               "--quiet", "--no-curves"]
        code, kb, secs, err = measure(cmd)
        if code != 0:
            failed = True
            print(f"| {leg} | failed (exit {code}) | {secs:.1f} |")
            print("\n".join(err.strip().splitlines()[-5:]), file=sys.stderr)
            continue
        print(f"| {leg} | {kb:,} | {secs:.1f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
