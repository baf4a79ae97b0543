#!/usr/bin/env python3
"""Import circles and file sizes of the workspace's crates (a design check, not a test).

Usage:
    scripts/module_graph.py [CRATE_SRC ...]     # default: datasets/src legs/src harness/src

For each crate, every `crate::a::b` path outside `#[cfg(test)]` code is resolved to the file
that defines module `a::b` (`a/b.rs` or `a/b/mod.rs`, else the nearest parent module file), and
the file-level import graph is searched for cycles (strongly connected components of two or more
files). Prints the cycles, then the five largest files. Exit 1 when a cycle exists.
"""

import re
import sys
from pathlib import Path

PATH = re.compile(r"crate::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)")


def module_file(src: Path, parts):
    """The file of the longest module prefix of `parts` that exists."""
    for n in range(len(parts), 0, -1):
        base = src.joinpath(*parts[:n])
        for cand in (base.with_suffix(".rs"), base / "mod.rs"):
            if cand.is_file():
                return cand
    return None


def non_test_text(path: Path) -> str:
    text = path.read_text()
    if path.name == "tests.rs":
        return ""
    # everything from the first `#[cfg(test)]` on is test code (the project's convention);
    # comments (doc links included) are not imports
    code = text.split("#[cfg(test)]", 1)[0]
    return "\n".join(l for l in code.splitlines() if not l.lstrip().startswith("//"))


def sccs(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main(argv):
    roots = [Path(a) for a in argv[1:]] or [Path(p) for p in ("datasets/src", "legs/src", "harness/src")]
    cycles = 0
    sizes = []
    for src in roots:
        graph = {}
        for f in sorted(src.rglob("*.rs")):
            sizes.append((len(f.read_text().splitlines()), f))
            deps = set()
            for m in PATH.finditer(non_test_text(f)):
                target = module_file(src, m.group(1).split("::"))
                if target is not None and target != f and target.name not in ("lib.rs", "main.rs"):
                    deps.add(target)
            graph[f] = deps
        for comp in sccs(graph):
            if len(comp) > 1:
                cycles += 1
                print(f"cycle in {src}: " + " -> ".join(str(p.relative_to(src)) for p in sorted(comp)))
        print(f"{src}: {len(graph)} files, import cycles: {sum(1 for c in sccs(graph) if len(c) > 1)}")
    sizes.sort(reverse=True)
    print("largest files:")
    for n, f in sizes[:5]:
        print(f"  {n:5d} {f}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
