#!/usr/bin/env python3
"""Tests of scripts/module_graph.py: `python3 scripts/test_module_graph.py` (plain unittest).

Each pattern of import cycle the check must see is a small crate written to a temporary directory
(the shapes of the two cycles of the tree it was written against: two sibling files through
`super::`, five files of `report/html/` around `dataset.rs`'s `Job`), plus crates whose only
"edges" are in test code, comments and literals, which must have none. One test runs the check on
the repository itself and only asserts that it runs.
"""

import re
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import module_graph as mg  # noqa: E402


def write_tree(root: Path, files: dict) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


class Fixture(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def crate(self, files, name="src"):
        return write_tree(self.tmp / name, files)

    def edges(self, src, **kw):
        """{(from, to): [line, ..]} of the crate under `src`."""
        out = {}
        for e in mg.analyse(src, **kw)[1]:
            key = (e.src.relative_to(src).as_posix(), e.dst.relative_to(src).as_posix())
            out.setdefault(key, []).append(e.line)
        return out


class Cycles(Fixture):
    def test_super_between_sibling_files(self):
        # datasets/src/synthetic: names.rs `use super::world::Kind`, world.rs
        # `use super::names::{Named, Namer}`; the tests module at the end uses both
        src = self.crate({
            "lib.rs": "pub mod synthetic;\n",
            "synthetic/mod.rs": """
                mod names;
                #[cfg(test)]
                mod pinned;
                mod world;
                pub use world::World;
            """,
            "synthetic/names.rs": """
                //! Names of a world's entities.
                use super::world::Kind;
                use crate::rng::SplitMix64;
                pub(crate) struct Namer;
                pub(crate) trait Named { fn kind(&self) -> Kind; }
            """,
            "synthetic/world.rs": """
                use super::names::{Named, Namer};
                pub struct World;
                pub enum Kind { A }
                #[cfg(test)]
                mod tests {
                    use super::*;
                }
            """,
            "synthetic/pinned.rs": "use super::*;\n",
        })
        self.assertEqual(mg.find_cycles(src), [["synthetic/names.rs", "synthetic/world.rs"]])
        e = self.edges(src)
        self.assertEqual(e[("synthetic/names.rs", "synthetic/world.rs")], [2])
        self.assertEqual(e[("synthetic/world.rs", "synthetic/names.rs")], [1, 1])
        # the parent's `pub use world::World` uses its own child: no edge; pinned.rs is test code
        self.assertNotIn(("synthetic/mod.rs", "synthetic/world.rs"), e)
        self.assertNotIn("synthetic/pinned.rs", {a for a, _ in e})

    def test_grouped_imports_around_a_struct(self):
        # harness/src/report/html: curves, matrix, pairs take `super::dataset::Job`; dataset.rs
        # takes them back through one group; groups.rs closes the circle through matrix.rs;
        # mod.rs builds the jobs (its children: no edge) and the children use its items
        src = self.crate({
            "lib.rs": "pub mod report;\npub mod store;\n",
            "store.rs": "pub struct CellSummary;\n",
            "report/mod.rs": "pub mod html;\n",
            "report/html/mod.rs": """
                mod curves;
                mod dataset;
                mod groups;
                mod matrix;
                mod pairs;
                pub struct ReportOptions;
                pub const MARKER: &str = "hopbench report";
                pub fn write_report(o: &ReportOptions) {
                    let jobs = vec![dataset::Job { n: 0 }];
                    let _ = matrix::page(o, &jobs);
                }
            """,
            "report/html/dataset.rs": """
                use super::matrix::{dataset_counts,
                    is_oracle};
                use super::{curves, groups, pairs, ReportOptions};
                pub struct Job { pub n: usize }
            """,
            "report/html/curves.rs": """
                use super::dataset::Job;
                use super::{ReportOptions};
                pub fn section(o: &ReportOptions, job: &Job) -> &'static str { super::MARKER }
            """,
            "report/html/matrix.rs": """
                use super::dataset::Job;
                use crate::store::CellSummary;
                pub fn page(o: &super::ReportOptions, jobs: &[Job]) {}
            """,
            "report/html/pairs.rs": """
                pub use super::dataset::{
                    Job,
                };
            """,
            "report/html/groups.rs": "use super::matrix::{self, is_oracle};\n",
        })
        html = ["report/html/" + n for n in
                ("curves.rs", "dataset.rs", "groups.rs", "matrix.rs", "pairs.rs")]
        self.assertEqual(mg.find_cycles(src), [html])
        e = self.edges(src)
        self.assertEqual(e[("report/html/dataset.rs", "report/html/matrix.rs")], [1, 2])
        self.assertEqual(e[("report/html/pairs.rs", "report/html/dataset.rs")], [2])
        self.assertIn(("report/html/curves.rs", "report/html/mod.rs"), e)  # child -> parent
        self.assertNotIn(("report/html/mod.rs", "report/html/dataset.rs"), e)
        # counting the parent's uses of its children too puts mod.rs in the circle
        self.assertEqual(mg.find_cycles(src, descendant_edges=True),
                         [sorted(html + ["report/html/mod.rs"])])

    def test_nested_and_multiline_groups(self):
        src = self.crate({
            "lib.rs": "pub mod p;\npub mod q;\npub mod r;\n",
            "p.rs": """
                use crate::{
                    r::R,
                    q::{
                        Q as Queue,
                        helper,
                    },
                };
                pub struct P;
            """,
            "q.rs": "pub use super::{p::P, r};\npub struct Q;\npub fn helper() {}\n",
            "r.rs": "pub struct R;\n",
        })
        self.assertEqual(mg.find_cycles(src), [["p.rs", "q.rs"]])
        e = self.edges(src)
        self.assertEqual(e[("p.rs", "q.rs")], [4, 5])
        self.assertEqual(e[("p.rs", "r.rs")], [2])
        self.assertEqual(sorted(e[("q.rs", "r.rs")]), [1])

    def test_circle_after_a_test_module(self):
        # the first version stopped reading at the first #[cfg(test)]
        src = self.crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": """
                #[cfg(test)]
                mod tests {
                    use super::*;
                    fn braces() {
                        let s = "}}}";
                        let r = r#"} "quoted" }"#;
                        let c = '}';
                        let q = '\\'';
                        /* } /* nested } */ } */
                        // }
                    }
                }

                #[cfg(test)]
                fn helper<'a>(x: &'a str) -> &'a str { x }

                use crate::b::B;
                pub struct A;
            """,
            "b.rs": "use crate::a::A;\npub struct B;\n",
        })
        self.assertEqual(mg.find_cycles(src), [["a.rs", "b.rs"]])
        self.assertEqual(self.edges(src)[("a.rs", "b.rs")], [17])

    def test_inline_crate_paths(self):
        src = self.crate({
            "lib.rs": "pub mod m;\npub mod n;\n",
            "m.rs": """
                pub struct T;
                pub fn f() -> u32 {
                    crate::n::g() + 1
                }
            """,
            "n.rs": """
                pub fn g() -> u32 { 0 }
                pub struct S(pub crate :: m :: T);
            """,
        })
        self.assertEqual(mg.find_cycles(src), [["m.rs", "n.rs"]])
        e = self.edges(src)
        self.assertEqual(e[("m.rs", "n.rs")], [3])
        self.assertEqual(e[("n.rs", "m.rs")], [2])

    def test_super_super_self_and_inline_modules(self):
        src = self.crate({
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a/mod.rs": "pub mod deep;\n",
            "a/deep.rs": "pub fn d() { super::super::b::bb() }\n",
            "b.rs": """
                pub fn bb() {}
                mod inner {
                    fn i() {
                        self::helper();
                        super::super::a::deep::d();
                    }
                    fn helper() {}
                }
            """,
        })
        self.assertEqual(mg.find_cycles(src), [["a/deep.rs", "b.rs"]])
        e = self.edges(src)
        self.assertEqual(e[("b.rs", "a/deep.rs")], [5])
        self.assertEqual(e[("a/deep.rs", "b.rs")], [1])

    def test_non_mod_rs_children_and_path_attribute(self):
        src = self.crate({
            "lib.rs": "pub mod engine;\n#[path = \"odd/place.rs\"]\npub mod placed;\n",
            "engine.rs": "pub mod served;\npub struct Spec;\n",
            "engine/served.rs": "use crate::placed::P;\npub struct Served;\n",
            "odd/place.rs": "pub struct P;\nfn f() { let _ = crate::engine::served::Served; }\n",
        })
        self.assertEqual(mg.find_cycles(src), [["engine/served.rs", "odd/place.rs"]])
        files = {f.relative_to(src).as_posix() for f in mg.analyse(src)[0]}
        self.assertEqual(files, {"lib.rs", "engine.rs", "engine/served.rs", "odd/place.rs"})

    def test_files_declared_by_a_macro_are_read(self):
        # legs/src/kinds/mod.rs: `kinds! { dense::Dense, .. }` expands to `pub mod dense;`
        src = self.crate({
            "lib.rs": "pub mod kinds;\npub mod registry;\n",
            "kinds/mod.rs": """
                macro_rules! kinds { ($($m:ident :: $t:ident),*) => { $(pub mod $m;)* }; }
                kinds! { dense::Dense }
                #[cfg(test)]
                mod tests;
            """,
            "kinds/dense.rs": "use crate::registry::Spec;\npub struct Dense;\n",
            "kinds/tests.rs": "use crate::registry::Spec;\n",
            "registry.rs": "pub struct Spec;\nfn f() { let _ = crate::kinds::dense::Dense; }\n",
        })
        self.assertEqual(mg.find_cycles(src), [["kinds/dense.rs", "registry.rs"]])
        files = {f.relative_to(src).as_posix() for f in mg.analyse(src)[0]}
        self.assertNotIn("kinds/tests.rs", files)


class NoCycles(Fixture):
    def test_edges_only_in_tests_comments_and_literals(self):
        src = self.crate({
            "lib.rs": """
                pub mod a;
                pub mod b;
                pub mod c;
                #[cfg(test)]
                mod helpers;
                #[cfg(all(test, feature = "qdrant"))]
                mod qdrant_tests;
            """,
            "a.rs": """
                //! [`crate::b::B`] and `super::b` in a doc comment.
                // use crate::b::B;
                /* crate::b::f(); /* super::b::f() */ */
                /// See [`crate::b`].
                pub const S: &str = "crate::b::B super::b::f()";
                pub const R: &str = r#"use crate::b::B;"#;
                pub const BS: &[u8] = b"crate::b::B";
                pub const Q: char = '"';
                pub const E: char = '\\u{7B}';
                pub struct A<'a> {
                    pub x: &'a str,
                    #[cfg(test)]
                    pub(crate) seen: std::collections::HashMap<u8, crate::b::B>,
                    pub y: u8,
                }
                #[cfg(test)]
                use crate::b::B;
                #[cfg(test)]
                fn t() { crate::b::f(); }
                #[cfg(test)]
                impl A<'_> {
                    fn g() { super::b::f() }
                }
                #[cfg(test)]
                mod tests {
                    use crate::b::*;
                }
                #[cfg(any(test, feature = "x"))]
                use crate::c::C;
                pub fn after() { let _ = '{'; crate::c::h(); }
            """,
            "b.rs": "use crate::a::A;\npub struct B;\npub fn f() {}\n",
            "c.rs": "pub struct C;\npub fn h() {}\n",
            "helpers.rs": "use crate::a::A;\npub fn f() { crate::b::f() }\n",
            "qdrant_tests.rs": "use crate::a::A;\n",
        })
        self.assertEqual(mg.find_cycles(src), [])
        e = self.edges(src)
        self.assertEqual(e[("b.rs", "a.rs")], [1])  # the other direction exists
        self.assertNotIn(("a.rs", "b.rs"), e)
        # `cfg(any(test, ..))` is not test-only; code after every test item is read
        self.assertEqual(e[("a.rs", "c.rs")], [29, 30])
        files = {f.relative_to(src).as_posix() for f in mg.analyse(src)[0]}
        self.assertEqual(files, {"lib.rs", "a.rs", "b.rs", "c.rs"})

    def test_test_only_file_and_not_test(self):
        src = self.crate({
            "lib.rs": "pub mod a;\npub mod b;\npub mod t;\n",
            "a.rs": "#[cfg(not(test))]\nuse crate::b::B;\npub struct A;\n",
            "b.rs": "pub struct B;\n",
            "t.rs": "#![cfg(test)]\nuse crate::a::A;\n",
        })
        e = self.edges(src)
        self.assertEqual(e, {("a.rs", "b.rs"): [2]})
        self.assertEqual(mg.find_cycles(src), [])

    def test_parent_and_child(self):
        # a facade: the parent names its children, the children its items
        src = self.crate({
            "lib.rs": "pub mod export;\n",
            "export/mod.rs": """
                mod build;
                pub use build::build;
                pub struct Config;
                pub fn run() { self::build::build(); build::build(); }
            """,
            "export/build.rs": "use super::Config;\npub fn build() {}\n",
        })
        self.assertEqual(mg.find_cycles(src), [])
        self.assertEqual(mg.find_cycles(src, descendant_edges=True),
                         [["export/build.rs", "export/mod.rs"]])

    def test_paths_into_other_crates_and_the_root(self):
        src = self.crate({
            "lib.rs": "pub mod a;\npub mod b;\npub use a::A;\npub struct Root;\n",
            "a.rs": "use crate::Root;\nuse std::fmt;\nuse hopbench_datasets::b::B;\npub struct A;\n",
            "b.rs": "use crate::A;\nuse ::b::x;\n",
        })
        self.assertEqual(self.edges(src), {})


class Pieces(unittest.TestCase):
    def test_blanking_keeps_offsets_and_lifetimes(self):
        src = "fn f<'a>(x: &'a str) -> char { let _ = \"//\"; 'x' } // crate::a\n/* a */ b'q'"
        out = mg.blank_comments_and_literals(src)
        self.assertEqual(len(out), len(src))
        self.assertIn("fn f<'a>(x: &'a str) -> char", out)
        self.assertNotIn("crate::a", out)
        self.assertNotIn("'x'", out)
        self.assertNotIn("q", out)

    def test_cfg_predicates(self):
        yes = ["test", "all(test, feature = \"x\")", "all(unix, test)", "any(test, all(test))"]
        no = ["not(test)", "any(test, feature = \"x\")", "feature = \"test\"", "unix", "all()"]
        for p in yes:
            self.assertTrue(mg.cfg_implies_test(p), p)
        for p in no:
            self.assertFalse(mg.cfg_implies_test(p), p)


class Cli(Fixture):
    def run_script(self, *args, cwd=None):
        return subprocess.run([sys.executable, str(HERE / "module_graph.py"), *map(str, args)],
                              capture_output=True, text=True, cwd=cwd or REPO)

    def test_exit_codes_and_lines(self):
        bad = self.crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "use crate::a::A;\npub struct B;\n",
        }, name="bad")
        good = self.crate({"lib.rs": "mod a;\n", "a.rs": "pub struct A;\n"}, name="good")
        r = self.run_script(bad, good)
        self.assertEqual(r.returncode, 1, r.stderr)
        cycles = [l for l in r.stdout.splitlines() if l.startswith("cycle in ")]
        self.assertEqual(cycles, [f"cycle in {bad}: a.rs -> b.rs -> a.rs"])
        self.assertIn(f"{bad}: 3 files, 2 file imports, import cycles: 1", r.stdout)
        r = self.run_script("--edges", bad)
        self.assertIn("    a.rs:1: crate::b::B  -> b.rs", r.stdout)
        r = self.run_script(good)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{good}: 2 files, 0 file imports, import cycles: 0", r.stdout)

    def test_real_repository(self):
        r = self.run_script()
        self.assertIn(r.returncode, (0, 1), r.stderr)
        for crate in ("datasets/src", "legs/src", "harness/src"):
            self.assertRegex(r.stdout, re.compile(
                rf"^{re.escape(crate)}: \d+ files, \d+ file imports, import cycles: \d+$", re.M))
        self.assertEqual(r.returncode == 1, "cycle in " in r.stdout)


if __name__ == "__main__":
    unittest.main()
