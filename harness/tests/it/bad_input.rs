//! The bad-input corpus: every way we know of that a raw dataset file, a campaign or a command
//! line can be wrong. Each case gets its own temp directory and runs the real binary, and must
//!
//! 1. exit with code 2 (not 0, and not 101, a panic);
//! 2. say on stderr which file is at fault (its file name; for a command-line case, the flag)
//!    and which field or key (`question`, `prepare.bm25.k1`, `_id`, or for a file that does
//!    not parse, the line);
//! 3. leave nothing under the results directory but its `.lock` (it may not exist at all), nor
//!    anything anywhere else in its temp directory (the model aside);
//!
//! and finish within [`TIMEOUT`] (a hang is killed and reported).
//!
//! The cases are one table ([`cases`]). What a case asserts is its row: the substrings stderr
//! must contain, the file first; `a|b` accepts either. A row without substrings is a control:
//! the valid fixture (or campaign) the bad cases are made from, which must succeed. Every case
//! runs (two at a time), and the test fails once at the end listing every case that failed and
//! why: the exit code (a panic with its first frame in this workspace), the missing
//! substrings, the files left behind, and the abbreviated stderr.
//!
//! `HOPBENCH_BAD_INPUT_VERBOSE=1 cargo nextest run -p hopbench --test it bad_input --no-capture`
//! prints every case's command, exit code and stderr, passing or not.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::Env;

/// The campaign file every case writes (a distinctive name, so that finding it in a message
/// means the message names it).
const CAMPAIGN_FILE: &str = "my_campaign.yaml";

/// What an empty corpus, an empty question set and a zero-byte file may be reported as.
const NO_PASSAGES: &str = "no passages|empty|zero passages|no records";
const NO_QUESTIONS: &str = "no questions|no queries|no query|no tasks|no task|empty";
const ZERO_BYTES: &str =
    "empty|EOF|no questions|no passages|no queries|no tasks|no judgements|zero bytes";

/// Placeholder a fixture puts where a non-finite literal goes (JSON has none).
const MARK: &str = "@NON-FINITE@";

/// A file's bytes that make the case write a directory at its path instead of a file.
const A_DIRECTORY: &[u8] = b"@DIRECTORY@";
/// A file's bytes that make the case write a FIFO (named pipe) at its path.
const A_FIFO: &[u8] = b"@FIFO@";

// ---------------------------------------------------------------------------------------------
// cases

/// One row of the table.
struct Case {
    name: String,
    campaign: String,
    /// Files to write, relative to the temp directory.
    files: Vec<(String, Vec<u8>)>,
    args: Vec<String>,
    /// `None`: a control, which must succeed. Else the needles stderr must contain, each a
    /// list of alternatives.
    expect: Option<Vec<Vec<String>>>,
}

/// The commands cases run.
#[derive(Clone, Copy)]
enum Cmd {
    /// `prepare --datasets d --data-dir data`
    Prepare,
    /// `run-matrix --datasets d --legs myleg --threads 1 --data-dir data`
    Run,
    /// `run-matrix` as [`Cmd::Run`] but without `--threads` (the campaign pins it)
    RunUnpinned,
    /// `prepare` as [`Cmd::Prepare`] but without `--data-dir` (the campaign names it)
    PrepareCampaignDataDir,
}

impl Cmd {
    fn args(self) -> Vec<String> {
        let v: &[&str] = match self {
            Cmd::Prepare => &[
                "prepare",
                "--campaign",
                CAMPAIGN_FILE,
                "--datasets",
                "d",
                "--data-dir",
                "data",
                "--quiet",
            ],
            Cmd::Run => &[
                "run-matrix",
                "--campaign",
                CAMPAIGN_FILE,
                "--datasets",
                "d",
                "--legs",
                "myleg",
                "--threads",
                "1",
                "--data-dir",
                "data",
                "--quiet",
                "--no-curves",
            ],
            Cmd::PrepareCampaignDataDir => &[
                "prepare",
                "--campaign",
                CAMPAIGN_FILE,
                "--datasets",
                "d",
                "--quiet",
            ],
            Cmd::RunUnpinned => &[
                "run-matrix",
                "--campaign",
                CAMPAIGN_FILE,
                "--datasets",
                "d",
                "--legs",
                "myleg",
                "--data-dir",
                "data",
                "--quiet",
                "--no-curves",
            ],
        };
        v.iter().map(|s| s.to_string()).collect()
    }
}

fn needles(list: &[&str]) -> Vec<Vec<String>> {
    list.iter()
        .map(|n| n.split('|').map(str::to_string).collect())
        .collect()
}

/// Collects the table.
#[derive(Default)]
struct Table(Vec<Case>);

impl Table {
    /// A raw dataset that must not prepare.
    fn raw(&mut self, name: &str, raw: Raw, expect: &[&str]) {
        self.0.push(Case {
            name: format!("{}: {name}", raw.format),
            campaign: campaign("", &raw.entry(), DEFAULT_LEGS),
            files: raw.files(),
            args: Cmd::Prepare.args(),
            expect: Some(needles(expect)),
        });
    }

    /// A valid raw dataset that must prepare (a control of the fixture).
    fn raw_control(&mut self, raw: Raw) {
        self.0.push(Case {
            name: format!("{}: control (the valid fixture prepares)", raw.format),
            campaign: campaign("", &raw.entry(), DEFAULT_LEGS),
            files: raw.files(),
            args: Cmd::Prepare.args(),
            expect: None,
        });
    }

    /// A campaign (over the valid BEIR fixture) that must be refused.
    fn campaign(&mut self, name: &str, text: String, cmd: Cmd, expect: &[&str]) {
        self.0.push(Case {
            name: format!("campaign: {name}"),
            campaign: text,
            files: beir_ok().files(),
            args: cmd.args(),
            expect: Some(needles(expect)),
        });
    }

    /// A command line (over the valid BEIR campaign) that must be refused.
    fn command(&mut self, name: &str, cmd: Cmd, replace: &[(&str, &str)], expect: &[&str]) {
        let mut args = cmd.args();
        for (flag, value) in replace {
            match args.iter().position(|a| a == flag) {
                Some(i) => args[i + 1] = value.to_string(),
                None => args.extend([flag.to_string(), value.to_string()]),
            }
        }
        self.0.push(Case {
            name: format!("command line: {name}"),
            campaign: base_campaign(),
            files: beir_ok().files(),
            args,
            expect: Some(needles(expect)),
        });
    }
}

fn cases() -> Vec<Case> {
    let mut t = Table::default();
    musique_cases(&mut t);
    hotpotqa_cases(&mut t);
    twowiki_cases(&mut t);
    mtrag_cases(&mut t);
    beir_cases(&mut t);
    campaign_cases(&mut t);
    command_line_cases(&mut t);
    t.0
}

fn musique_cases(t: &mut Table) {
    let (q, c) = ("musique_train.json", "musique_train_corpus.json");
    t.raw_control(musique(|_, _| {}));
    t.raw(
        "truncated questions JSON",
        musique(|_, _| {}).edit("questions", truncated),
        &[q, "line"],
    );
    t.raw(
        "questions file is not JSON",
        musique(|_, _| {}).set(
            "questions",
            "these are not the questions you are looking for\n",
        ),
        &[q, "line 1"],
    );
    let (raw, line) = non_finite(
        musique(|qs, _| qs[0]["paragraphs"][1]["idx"] = json!(MARK)),
        "questions",
        "NaN",
    );
    t.raw("NaN literal", raw, &[q, &format!("line {line}")]);
    let (raw, line) = non_finite(
        musique(|qs, _| qs[1]["paragraphs"][0]["idx"] = json!(MARK)),
        "questions",
        "1e999",
    );
    t.raw(
        "number out of range (1e999)",
        raw,
        &[q, &format!("line {line}")],
    );
    t.raw(
        "`question` is a number",
        musique(|qs, _| qs[1]["question"] = json!(42)),
        &[q, "`question`"],
    );
    t.raw(
        "`paragraphs` is an object, not a list",
        musique(|qs, _| qs[0]["paragraphs"] = json!({"0": para(0, "J", "J.", true)})),
        &[q, "`paragraphs`"],
    );
    t.raw(
        "missing `question_decomposition`",
        musique(|qs, _| remove(&mut qs[1], "question_decomposition")),
        &[q, "`question_decomposition`"],
    );
    t.raw(
        "duplicate question id",
        musique(|qs, _| qs[1]["id"] = qs[0]["id"].clone()),
        &[q, "`id`", "duplicate"],
    );
    t.raw(
        "a record is not an object",
        musique(|qs, _| qs[1] = json!(["2hop__1_2"])),
        &[q, "record 1"],
    );
    t.raw(
        "duplicate paragraph `idx`",
        musique(|qs, _| qs[0]["paragraphs"][2]["idx"] = json!(1)),
        &[q, "paragraphs[2].idx"],
    );
    t.raw(
        "`paragraph_support_idx` names no paragraph",
        musique(|qs, _| qs[1]["question_decomposition"][2]["paragraph_support_idx"] = json!(17)),
        &[q, "question_decomposition[2].paragraph_support_idx"],
    );
    t.raw(
        "duplicate passage (same title and text)",
        musique(|_, c| c.push(json!({"title": "P", "text": "P is old."}))),
        &[c, "duplicate", "000005"],
    );
    t.raw(
        "gold not in corpus",
        musique(|_, c| {
            c.remove(1);
        }),
        &[q, "paragraphs[0]"],
    );
    t.raw(
        "empty question text",
        musique(|qs, _| qs[0]["question"] = json!("")),
        &[q, "`question`"],
    );
    t.raw(
        "whitespace-only question text",
        musique(|qs, _| qs[1]["question"] = json!(" \t\n ")),
        &[q, "`question`"],
    );
    t.raw(
        "empty sub-question text",
        musique(|qs, _| qs[0]["question_decomposition"][1]["question"] = json!("  ")),
        &[q, "question_decomposition[1].question"],
    );
    t.raw(
        "empty corpus (zero records)",
        musique(|_, c| c.clear()),
        &[c, NO_PASSAGES],
    );
    t.raw(
        "empty question set",
        musique(|qs, _| qs.clear()),
        &[q, NO_QUESTIONS],
    );
    t.raw(
        "zero-byte questions file",
        musique(|_, _| {}).set("questions", ""),
        &[q, ZERO_BYTES],
    );
    let (raw, line) = invalid_utf8(musique(|_, _| {}), "questions", "Distractor.");
    t.raw("invalid UTF-8", raw, &[q, &format!("line {line}")]);
}

fn hotpotqa_cases(t: &mut Table) {
    let (q, c) = ("hotpotqa_train.json", "hotpotqa_train_corpus.json");
    t.raw_control(hotpotqa(|_, _| {}));
    t.raw(
        "truncated corpus JSON",
        hotpotqa(|_, _| {}).edit("corpus", truncated),
        &[c, "line"],
    );
    t.raw(
        "corpus file is not JSON (CSV)",
        hotpotqa(|_, _| {}).set("corpus", "title,text\nX,X is a distractor.\n"),
        &[c, "line 1"],
    );
    let (raw, line) = non_finite(
        hotpotqa(|qs, _| qs[1]["supporting_facts"][0][1] = json!(MARK)),
        "questions",
        "-Infinity",
    );
    t.raw("-Infinity literal", raw, &[q, &format!("line {line}")]);
    t.raw(
        "`question` is a number",
        hotpotqa(|qs, _| qs[0]["question"] = json!(42)),
        &[q, "`question`"],
    );
    t.raw(
        "`supporting_facts` is an object, not a list",
        hotpotqa(|qs, _| qs[1]["supporting_facts"] = json!({"B": 1})),
        &[q, "`supporting_facts`"],
    );
    t.raw(
        "missing `_id`",
        hotpotqa(|qs, _| remove(&mut qs[1], "_id")),
        &[q, "`_id`"],
    );
    t.raw(
        "duplicate question id",
        hotpotqa(|qs, _| qs[1]["_id"] = json!("a1")),
        &[q, "`_id`", "duplicate"],
    );
    t.raw(
        "duplicate passage (a title twice in the corpus object)",
        hotpotqa(|_, c| c.push(("S".into(), json!(["S again."])))),
        &[c, "duplicate", "`S`"],
    );
    t.raw(
        "gold not in corpus",
        hotpotqa(|_, c| c.retain(|(t, _)| t != "MLS")),
        &[q, "supporting_facts[1][0]"],
    );
    t.raw(
        "empty question id (a TREC run line needs one)",
        hotpotqa(|qs, _| qs[0]["_id"] = json!("")),
        &[q, "`_id`"],
    );
    t.raw(
        "a supporting fact without its sentence index",
        hotpotqa(|qs, _| qs[0]["supporting_facts"][1] = json!(["MLS"])),
        &[q, "supporting_facts[1]"],
    );
    t.raw(
        "negative sentence index in `supporting_facts`",
        hotpotqa(|qs, _| qs[0]["supporting_facts"][0][1] = json!(-1)),
        &[q, "supporting_facts[0][1]"],
    );
    t.raw(
        "corpus sentences are a string, not a list",
        hotpotqa(|_, c| c[0].1 = json!("X is a distractor.")),
        &[c, "\"X\""],
    );
    t.raw(
        "empty question text",
        hotpotqa(|qs, _| qs[1]["question"] = json!("")),
        &[q, "`question`"],
    );
    t.raw(
        "whitespace-only question text",
        hotpotqa(|qs, _| qs[0]["question"] = json!("\u{a0}  \t")),
        &[q, "`question`"],
    );
    t.raw(
        "empty corpus (zero records)",
        hotpotqa(|_, c| c.clear()),
        &[c, NO_PASSAGES],
    );
    t.raw(
        "empty question set",
        hotpotqa(|qs, _| qs.clear()),
        &[q, NO_QUESTIONS],
    );
    t.raw(
        "zero-byte corpus file",
        hotpotqa(|_, _| {}).set("corpus", ""),
        &[c, ZERO_BYTES],
    );
    let (raw, line) = invalid_utf8(hotpotqa(|_, _| {}), "corpus", "MLS is a league.");
    t.raw("invalid UTF-8", raw, &[c, &format!("line {line}")]);
}

fn twowiki_cases(t: &mut Table) {
    let (q, c) = ("2wiki_dev.json", "2wiki_corpus.jsonl");
    t.raw_control(twowiki(|_, _| {}));
    t.raw(
        "truncated questions JSON",
        twowiki(|_, _| {}).edit("questions", truncated),
        &[q, "line"],
    );
    t.raw(
        "questions file is not JSON (an HTML error page)",
        twowiki(|_, _| {}).set("questions", "<html><body>403 Forbidden</body></html>\n"),
        &[q, "line 1"],
    );
    let (raw, line) = non_finite(
        twowiki(|_, c| c[2]["text"] = json!(MARK)),
        "corpus",
        "Infinity",
    );
    t.raw(
        "Infinity literal in the corpus",
        raw,
        &[c, &format!("line {line}")],
    );
    t.raw(
        "`question` is a number",
        twowiki(|qs, _| qs[0]["question"] = json!(42)),
        &[q, "`question`"],
    );
    t.raw(
        "`evidences` is an object, not a list",
        twowiki(|qs, _| qs[1]["evidences"] = json!({"F1": "director"})),
        &[q, "`evidences`"],
    );
    t.raw(
        "missing `supporting_facts`",
        twowiki(|qs, _| remove(&mut qs[0], "supporting_facts")),
        &[q, "`supporting_facts`"],
    );
    t.raw(
        "an evidence triple of two elements",
        twowiki(|qs, _| qs[0]["evidences"][1] = json!(["E", "date of death"])),
        &[q, "evidences[1]"],
    );
    t.raw(
        "corpus record without `text`",
        twowiki(|_, c| remove(&mut c[3], "text")),
        &[c, "`text`"],
    );
    t.raw(
        "duplicate question id",
        twowiki(|qs, _| qs[1]["_id"] = json!("c1")),
        &[q, "`_id`", "duplicate"],
    );
    t.raw(
        "duplicate passage (a title twice in the corpus)",
        twowiki(|_, c| c.push(json!({"title": "E", "text": "E again."}))),
        &[c, "duplicate", "`E`"],
    );
    t.raw(
        "gold not in corpus",
        twowiki(|_, c| c.retain(|p| p["title"] != "E")),
        &[q, "supporting_facts[1][0]"],
    );
    t.raw(
        "empty question text",
        twowiki(|qs, _| qs[0]["question"] = json!("")),
        &[q, "`question`"],
    );
    t.raw(
        "whitespace-only question text",
        twowiki(|qs, _| qs[1]["question"] = json!("\n\n")),
        &[q, "`question`"],
    );
    t.raw(
        "empty corpus (zero records)",
        twowiki(|_, c| c.clear()),
        &[c, NO_PASSAGES],
    );
    t.raw(
        "empty question set",
        twowiki(|qs, _| qs.clear()),
        &[q, NO_QUESTIONS],
    );
    t.raw(
        "zero-byte corpus file",
        twowiki(|_, _| {}).set("corpus", ""),
        &[c, ZERO_BYTES],
    );
    let (raw, line) = invalid_utf8(twowiki(|_, _| {}), "corpus", "E was a queen.");
    t.raw("invalid UTF-8", raw, &[c, &format!("line {line}")]);
}

fn mtrag_cases(t: &mut Table) {
    let (r, qrels) = ("reference.jsonl", "qrels_clapnq.tsv");
    t.raw_control(mtrag(|_, _| {}));
    t.raw(
        "truncated reference JSONL (last line cut)",
        mtrag(|_, _| {}).edit("reference", cut_last_line),
        &[r, "line 3"],
    );
    t.raw(
        "reference file is not JSON",
        mtrag(|_, _| {}).set("reference", "conversation_id\ttask_id\nc1\tc1<::>1\n"),
        &[r, "line 1"],
    );
    let (raw, line) = non_finite(
        mtrag(|tasks, _| tasks[1]["turn"] = json!(MARK)),
        "reference",
        "NaN",
    );
    t.raw("NaN literal", raw, &[r, &format!("line {line}")]);
    t.raw(
        "`task_id` is a number",
        mtrag(|tasks, _| tasks[2]["task_id"] = json!(42)),
        &[r, "`task_id`"],
    );
    t.raw(
        "`contexts` is an object, not a list",
        mtrag(|tasks, _| tasks[1]["contexts"] = json!({"document_id": "doc2-0-14"})),
        &[r, "`contexts`"],
    );
    t.raw(
        "missing `input`",
        mtrag(|tasks, _| remove(&mut tasks[0], "input")),
        &[r, "`input`"],
    );
    t.raw(
        "no user turn in `input`",
        mtrag(|tasks, _| tasks[2]["input"] = json!([turn("agent", "hello")])),
        &[r, "`input`"],
    );
    t.raw(
        "a turn without `speaker`",
        mtrag(|tasks, _| remove(&mut tasks[1]["input"][1], "speaker")),
        &[r, "input[1].speaker"],
    );
    t.raw(
        "duplicate task id",
        mtrag(|tasks, _| tasks[2]["task_id"] = json!("c1<::>2")),
        &[r, "`task_id`", "duplicate"],
    );
    t.raw(
        "duplicate passage (a document_id with two texts)",
        mtrag(|tasks, _| tasks[1]["contexts"][0]["text"] = json!("One is not first.")),
        &[r, "duplicate", "doc1-0-13"],
    );
    t.raw(
        "gold not in corpus",
        mtrag(|_, q| q[2] = "c1<::>2\tnosuchdoc\t1".into()),
        &[qrels, "corpus-id", "nosuchdoc"],
    );
    t.raw(
        "qrels name an unknown task",
        mtrag(|_, q| q[3] = "c9<::>1\tplain\t1".into()),
        &[qrels, "query-id", "c9<::>1"],
    );
    t.raw(
        "empty last user turn",
        mtrag(|tasks, _| tasks[1]["input"][2]["text"] = json!("")),
        &[r, "input[2].text"],
    );
    t.raw(
        "whitespace-only last user turn",
        mtrag(|tasks, _| tasks[1]["input"][2]["text"] = json!("   ")),
        &[r, "input[2].text"],
    );
    t.raw(
        "empty corpus (no task has contexts)",
        mtrag(|tasks, _| {
            for task in tasks {
                task["contexts"] = json!([]);
            }
        }),
        &[r, NO_PASSAGES],
    );
    t.raw(
        "empty question set (no tasks)",
        mtrag(|_, _| {}).set("reference", "\n"),
        &[r, NO_QUESTIONS],
    );
    t.raw(
        "zero-byte qrels file",
        mtrag(|_, _| {}).set("qrels", ""),
        &[qrels, ZERO_BYTES],
    );
    let (raw, line) = invalid_utf8(mtrag(|_, _| {}), "reference", "Two is second.");
    t.raw("invalid UTF-8", raw, &[r, &format!("line {line}")]);
    t.raw(
        "qrels line with two columns",
        mtrag(|_, q| q[2] = "c1<::>2\tdoc2-0-14".into()),
        &[qrels, "line 3"],
    );
    t.raw(
        "qrels score is not a number",
        mtrag(|_, q| q[1] = "c1<::>1\tdoc1-0-13\trelevant".into()),
        &[qrels, "line 2", "score"],
    );
}

fn beir_cases(t: &mut Table) {
    let (c, q, qrels) = ("corpus.jsonl", "queries.jsonl", "test.tsv");
    t.raw_control(beir_ok());
    t.raw(
        "corpus path is a directory",
        beir_ok().set("corpus", A_DIRECTORY),
        &[c, "is a directory", "files.corpus"],
    );
    t.raw(
        "queries path is a FIFO",
        beir_ok().set("queries", A_FIFO),
        &[q, "FIFO", "files.queries"],
    );
    t.raw(
        "truncated corpus JSONL (last line cut)",
        beir_ok().edit("corpus", cut_last_line),
        &[c, "line 3"],
    );
    t.raw(
        "queries file is not JSON (TSV)",
        beir_ok().set("queries", "q1\twhat is first?\n"),
        &[q, "line 1"],
    );
    let (raw, line) = non_finite(
        beir(|_, qs, _| qs[1]["text"] = json!(MARK)),
        "queries",
        "NaN",
    );
    t.raw("NaN literal", raw, &[q, &format!("line {line}")]);
    t.raw(
        "query `text` is a number",
        beir(|_, qs, _| qs[2]["text"] = json!(42)),
        &[q, "`text`"],
    );
    t.raw(
        "corpus `text` is a list",
        beir(|c, _, _| c[1]["text"] = json!(["second"])),
        &[c, "`text`"],
    );
    t.raw(
        "corpus `_id` is an object",
        beir(|c, _, _| c[0]["_id"] = json!({"id": "d1"})),
        &[c, "`_id`"],
    );
    t.raw(
        "query `_id` is a fraction",
        beir(|_, qs, _| qs[1]["_id"] = json!(1.5)),
        &[q, "`_id`"],
    );
    t.raw(
        "corpus `_id` is empty (a TREC run line needs one)",
        beir(|c, _, _| c[1]["_id"] = json!("")),
        &[c, "`_id`"],
    );
    t.raw(
        "deeply nested JSON",
        beir_ok().set("corpus", "[".repeat(100_000) + &"]".repeat(100_000) + "\n"),
        &[c, "line 1"],
    );
    t.raw(
        "query without `_id`",
        beir(|_, qs, _| remove(&mut qs[2], "_id")),
        &[q, "`_id`"],
    );
    t.raw(
        "duplicate query id",
        beir(|_, qs, _| qs[2]["_id"] = json!("q1")),
        &[q, "`_id`", "duplicate"],
    );
    t.raw(
        "duplicate passage id",
        beir(|c, _, _| c[2]["_id"] = json!("d2")),
        &[c, "`_id`", "duplicate", "d2"],
    );
    t.raw(
        "gold not in corpus",
        beir(|_, _, r| r[2] = "q1\tnosuchdoc\t1".into()),
        &[qrels, "corpus-id", "nosuchdoc"],
    );
    t.raw(
        "qrels name an unknown query",
        beir(|_, _, r| r[3] = "q9\td2\t0".into()),
        &[qrels, "query-id", "q9"],
    );
    t.raw(
        "empty query text",
        beir(|_, qs, _| qs[0]["text"] = json!("")),
        &[q, "`text`"],
    );
    t.raw(
        "whitespace-only query text",
        beir(|_, qs, _| qs[2]["text"] = json!("\t")),
        &[q, "`text`"],
    );
    t.raw(
        "empty corpus (zero records)",
        beir_ok().set("corpus", "\n"),
        &[c, NO_PASSAGES],
    );
    t.raw(
        "empty query set (zero records)",
        beir_ok().set("queries", "\n"),
        &[q, NO_QUESTIONS],
    );
    t.raw(
        "zero-byte qrels file",
        beir_ok().set("qrels", ""),
        &[qrels, ZERO_BYTES],
    );
    let (raw, line) = invalid_utf8(beir_ok(), "corpus", "second");
    t.raw(
        "invalid UTF-8 in the corpus",
        raw,
        &[c, &format!("line {line}")],
    );
    let (raw, line) = invalid_utf8(beir_ok(), "qrels", "q1\td1");
    t.raw(
        "invalid UTF-8 in the qrels",
        raw,
        &[qrels, &format!("line {line}")],
    );
    t.raw(
        "qrels line with two columns",
        beir(|_, _, r| r[2] = "q1\td1".into()),
        &[qrels, "line 3"],
    );
    t.raw(
        "qrels line with four columns",
        beir(|_, _, r| r[4] = "q3\td1\t1\textra".into()),
        &[qrels, "line 5"],
    );
    t.raw(
        "qrels score is not a number",
        beir(|_, _, r| r[1] = "q3\t3\ttwo".into()),
        &[qrels, "line 2", "score"],
    );
    t.raw(
        "qrels score is NaN",
        beir(|_, _, r| r[1] = "q3\t3\tNaN".into()),
        &[qrels, "line 2", "score"],
    );
    t.raw(
        "qrels score is infinite",
        beir(|_, _, r| r[1] = "q3\t3\tinf".into()),
        &[qrels, "line 2", "score"],
    );
    t.raw(
        "qrels line with an empty corpus-id",
        beir(|_, _, r| r[1] = "q3\t\t2".into()),
        &[qrels, "line 2", "corpus-id"],
    );
}

fn campaign_cases(t: &mut Table) {
    let f = CAMPAIGN_FILE;
    let beir = beir_ok().entry();
    let with_top = |top: &str| campaign(top, &beir, DEFAULT_LEGS);
    let with_legs = |legs: &str| campaign("", &beir, legs);
    let with_dataset = |entry: &str| campaign("", entry, DEFAULT_LEGS);
    let synthetic = |cfg: &str| {
        with_dataset(&format!(
            "  d: {{format: synthetic, synthetic: {{{cfg}}}}}\n"
        ))
    };

    t.0.push(Case {
        name: "campaign: control (the base campaign runs)".into(),
        campaign: base_campaign(),
        files: beir_ok().files(),
        args: Cmd::Run.args(),
        expect: None,
    });
    t.campaign(
        "unknown top-level key",
        with_top("budgetz: [1]\n"),
        Cmd::Prepare,
        &[f, "budgetz"],
    );
    t.campaign(
        "missing `legs`",
        base_campaign().replace("legs:\n  myleg: {kind: bm25}\n", ""),
        Cmd::Prepare,
        &[f, "legs"],
    );
    let broken = base_campaign().replace("  myleg: {kind: bm25}", "  myleg: {kind: bm25");
    let line = line_of(broken.as_bytes(), b"  myleg:");
    t.campaign(
        "YAML syntax error (unclosed `{`)",
        broken,
        Cmd::Prepare,
        &[f, &format!("line {line}")],
    );
    t.campaign(
        "zero-byte campaign file",
        String::new(),
        Cmd::Prepare,
        &[f, "line 1|empty|datasets"],
    );
    t.campaign(
        "campaign is a YAML list",
        "- a\n- b\n".into(),
        Cmd::Prepare,
        &[f, "line 1"],
    );
    t.campaign(
        "deeply nested YAML",
        with_top(&format!(
            "budgets: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        )),
        Cmd::Prepare,
        &[f, "line 4"],
    );
    t.campaign(
        "duplicate key",
        with_legs("  myleg: {kind: bm25}\n  myleg: {kind: lexical}\n"),
        Cmd::Prepare,
        &[f, "myleg", "duplicate"],
    );
    t.campaign(
        "unknown key in a leg",
        with_legs("  myleg: {kind: bm25, pool_kk: 3}\n"),
        Cmd::Run,
        &[f, "myleg", "pool_kk"],
    );
    t.campaign(
        "leg parameter of the wrong type",
        with_legs("  myleg: {kind: bm25, pool_k: many}\n"),
        Cmd::Run,
        &[f, "myleg", "pool_k"],
    );
    t.campaign(
        "leg `pool_k: 0`",
        with_legs("  myleg: {kind: bm25, pool_k: 0}\n"),
        Cmd::Run,
        &[f, "myleg", "pool_k"],
    );
    t.campaign(
        "leg `rrf_k: 0`",
        with_legs("  myleg: {kind: bm25, rrf_k: 0}\n"),
        Cmd::Run,
        &[f, "myleg", "rrf_k"],
    );
    t.campaign(
        "leg of unknown `kind`",
        with_legs("  myleg: {kind: nosuchkind}\n"),
        Cmd::Run,
        &[f, "myleg", "nosuchkind"],
    );
    t.campaign(
        "leg without `kind`",
        with_legs("  myleg: {pool_k: 5}\n"),
        Cmd::Run,
        &[f, "myleg", "kind"],
    );
    t.campaign(
        "`prepare.bm25.k1: -1`",
        with_top("prepare: {bm25: {k1: -1, b: 0.4}}\n"),
        Cmd::Prepare,
        &[f, "prepare.bm25.k1"],
    );
    t.campaign(
        "`prepare.bm25.k1: .inf`",
        with_top("prepare: {bm25: {k1: .inf, b: 0.4}}\n"),
        Cmd::Prepare,
        &[f, "prepare.bm25.k1"],
    );
    t.campaign(
        "`prepare.bm25.b: 2`",
        with_top("prepare: {bm25: {k1: 0.9, b: 2}}\n"),
        Cmd::Prepare,
        &[f, "prepare.bm25.b"],
    );
    t.campaign(
        "`prepare.bm25.b: .nan`",
        with_top("prepare: {bm25: {k1: 0.9, b: .nan}}\n"),
        Cmd::Prepare,
        &[f, "prepare.bm25.b"],
    );
    t.campaign(
        "`stats.resamples: 0`",
        campaign_stats("stats: {resamples: 0, permutations: 500, seed: 7}\n", &beir),
        Cmd::Prepare,
        &[f, "stats.resamples"],
    );
    t.campaign(
        "`stats.permutations: 50`",
        campaign_stats(
            "stats: {resamples: 200, permutations: 50, seed: 7}\n",
            &beir,
        ),
        Cmd::Prepare,
        &[f, "stats.permutations"],
    );
    t.campaign(
        "`stats.ci: maybe`",
        campaign_stats(
            "stats: {resamples: 200, permutations: 500, seed: 7, ci: maybe}\n",
            &beir,
        ),
        Cmd::Prepare,
        &[f, "stats.ci|`ci`|ci: maybe", "maybe"],
    );
    t.campaign(
        "`budgets: [0]`",
        with_top("budgets: [0]\n"),
        Cmd::Prepare,
        &[f, "budgets"],
    );
    t.campaign(
        "`budgets: [-5]`",
        with_top("budgets: [-5]\n"),
        Cmd::Prepare,
        &[f, "budgets"],
    );
    t.campaign(
        "`recall_k: [0]`",
        with_top("recall_k: [0]\n"),
        Cmd::Prepare,
        &[f, "recall_k"],
    );
    t.campaign(
        "`recall_k: []`",
        with_top("recall_k: []\n"),
        Cmd::Prepare,
        &[f, "recall_k"],
    );
    t.campaign(
        "`recall_k: [1, five]`",
        with_top("recall_k: [1, five]\n"),
        Cmd::Prepare,
        &[f, "recall_k"],
    );
    t.campaign(
        "`run.limit: 0`",
        with_top("run: {limit: 0}\n"),
        Cmd::Run,
        &[f, "run.limit"],
    );
    t.campaign(
        "`run.threads: 0`",
        with_top("run: {threads: 0}\n"),
        Cmd::RunUnpinned,
        &[f, "run.threads"],
    );
    t.campaign(
        "`run.threads: 0` (refused when the campaign loads)",
        with_top("run: {threads: 0}\n"),
        Cmd::Prepare,
        &[f, "run.threads", "at least 1"],
    );
    t.campaign(
        "`legs: {}` (a run of nothing)",
        with_legs("").replace("legs:\n", "legs: {}\n"),
        Cmd::Prepare,
        &[f, "field `legs`", "names none"],
    );
    t.campaign(
        "`datasets: {}` (a run of nothing)",
        campaign("", "", DEFAULT_LEGS).replace("datasets:\n", "datasets: {}\n"),
        Cmd::Prepare,
        &[f, "field `datasets`", "names none"],
    );
    t.campaign(
        "`prepare.bm25.k1: \"0.9\"` (a number in quotes)",
        with_top("prepare: {bm25: {k1: \"0.9\", b: 0.4}}\n"),
        Cmd::Prepare,
        &[f, "prepare.bm25.k1", "in quotes"],
    );
    t.campaign(
        "leg `pool_k: '5'` (a number in quotes)",
        with_legs("  myleg: {kind: bm25, pool_k: '5'}\n"),
        Cmd::Prepare,
        &[f, "line 9", "pool_k", "string \"5\""],
    );
    t.campaign(
        "`run.force: \"true\"` (a boolean in quotes)",
        with_top("run: {force: \"true\"}\n"),
        Cmd::Prepare,
        &[f, "run.force", "in quotes"],
    );
    t.campaign(
        "a custom YAML tag on a value",
        with_top("prepare: {bm25: {k1: !secret 0.9, b: 0.4}}\n"),
        Cmd::Prepare,
        &[f, "secret|tag"],
    );
    t.campaign(
        "`alpha: 5` (a derived seed above a named one)",
        with_legs("  myleg: {kind: graph_rescue, alpha: 5}\n"),
        Cmd::Prepare,
        &[f, "myleg", "alpha"],
    );
    t.campaign(
        "`low_agreement` above `high_agreement`",
        with_legs("  myleg: {kind: graph_rescue, low_agreement: 0.8, high_agreement: 0.6}\n"),
        Cmd::Prepare,
        &[f, "myleg", "low_agreement", "high_agreement"],
    );
    t.campaign(
        "conversation `half_life: 0`",
        with_legs("  myleg: {kind: multi_horizon, conversation: {turn_log: {half_life: 0}}}\n"),
        Cmd::Prepare,
        &[f, "myleg", "half_life"],
    );
    for (what, bytes, says) in [
        ("a directory", A_DIRECTORY, "is a directory"),
        ("a FIFO", A_FIFO, "FIFO"),
    ] {
        t.0.push(Case {
            name: format!("campaign: a `kind: run` leg's file is {what}"),
            campaign: with_legs("  myleg: {kind: run, file: my_run.trec}\n"),
            files: [
                beir_ok().files(),
                vec![("my_run.trec".into(), bytes.to_vec())],
            ]
            .concat(),
            args: Cmd::Run.args(),
            expect: Some(needles(&["my_run.trec", "myleg", says])),
        });
    }
    t.campaign(
        "unknown key in `run`",
        with_top("run: {thread: 2}\n"),
        Cmd::Run,
        &[f, "thread"],
    );
    t.campaign(
        "synthetic `entities: 3`",
        synthetic("entities: 3"),
        Cmd::Prepare,
        &[f, "datasets.d.synthetic.entities"],
    );
    t.campaign(
        "synthetic `questions: 0`",
        synthetic("questions: 0"),
        Cmd::Prepare,
        &[f, "datasets.d.synthetic.questions"],
    );
    t.campaign(
        "synthetic `hop_mix: [0, 0, 0]`",
        synthetic("hop_mix: [0, 0, 0]"),
        Cmd::Prepare,
        &[f, "datasets.d.synthetic.hop_mix"],
    );
    t.campaign(
        "synthetic `confusable_percent: 200`",
        synthetic("confusable_percent: 200"),
        Cmd::Prepare,
        &[f, "datasets.d.synthetic.confusable_percent"],
    );
    t.campaign(
        "synthetic `questions: 18446744073709551615`",
        synthetic("questions: 18446744073709551615"),
        Cmd::Prepare,
        &[f, "datasets.d.synthetic.questions"],
    );
    t.campaign(
        "synthetic `entities: 18446744073709551615`",
        synthetic("entities: 18446744073709551615"),
        Cmd::Prepare,
        &[f, "datasets.d.synthetic.entities"],
    );
    t.campaign(
        "synthetic `questions: 18446744073709551616` (beyond u64)",
        synthetic("questions: 18446744073709551616"),
        Cmd::Prepare,
        &[f, "synthetic", "questions"],
    );
    t.campaign(
        "synthetic unknown key",
        synthetic("entitys: 50"),
        Cmd::Prepare,
        &[f, "synthetic", "entitys"],
    );
    t.campaign(
        "`files` leading outside the data dir (`../../etc/passwd`)",
        with_dataset("  d: {format: musique, files: {questions: ../../etc/passwd}}\n"),
        Cmd::Prepare,
        &[f, "files.questions"],
    );
    t.campaign(
        "`files` with an absolute path",
        with_dataset("  d: {format: musique, files: {questions: /etc/passwd}}\n"),
        Cmd::Prepare,
        &[f, "files.questions"],
    );
    t.campaign(
        "unknown `files` role",
        with_dataset(
            "  d: {format: musique, files: {questions: musique/q.json, corpuz: musique/c.json}}\n",
        ),
        Cmd::Prepare,
        &[f, "files.corpuz"],
    );
    t.campaign(
        "unknown dataset `format`",
        with_dataset("  d: {format: hotpot, files: {questions: h/q.json}}\n"),
        Cmd::Prepare,
        &[f, "format", "hotpot"],
    );
    t.campaign(
        "dataset name with a space",
        with_dataset("  'd e': {format: synthetic}\n"),
        Cmd::Prepare,
        &[f, "d e"],
    );
    t.campaign(
        "unknown `context_header`",
        with_dataset("  d: {format: synthetic, context_header: bogus}\n"),
        Cmd::Prepare,
        &[f, "context_header", "bogus"],
    );
    t.campaign(
        "a pool of members that index differently",
        with_dataset("  s: {format: synthetic}\n  t: {format: synthetic, context_header: title}\n  p: {format: pool, pool: [s, t]}\n"),
        Cmd::Prepare,
        &[f, "datasets.p", "context_header", "index differently"],
    );
    t.campaign(
        "a pool of one dataset",
        with_dataset(&format!("{beir}  p: {{format: pool, pool: [d]}}\n")),
        Cmd::Prepare,
        &[f, "pool"],
    );
    t.campaign(
        "dialogues without `derive_from`",
        with_dataset(&format!("{beir}  dd: {{format: dialogues}}\n")),
        Cmd::Prepare,
        &[f, "derive_from"],
    );
    t.campaign(
        "`stats.resamples: 18446744073709551615`",
        campaign_stats(
            "stats: {resamples: 18446744073709551615, permutations: 500, seed: 7}\n",
            &beir,
        ),
        Cmd::Run,
        &[f, "stats.resamples"],
    );
    t.campaign(
        "`stats.permutations: 18446744073709551615`",
        campaign_stats(
            "stats: {resamples: 200, permutations: 18446744073709551615, seed: 7}\n",
            &beir,
        ),
        Cmd::Prepare,
        &[f, "stats.permutations"],
    );
    t.campaign(
        "`results: \"\"`",
        base_campaign().replace("results: results", "results: ''"),
        Cmd::Prepare,
        &[f, "`results`"],
    );
    t.campaign(
        "`model: \"\"`",
        base_campaign().replace("model: model", "model: ''"),
        Cmd::Prepare,
        &[f, "`model`"],
    );
    t.campaign(
        "`data_dir` that does not exist",
        with_top("data_dir: no-such-dir\n"),
        Cmd::PrepareCampaignDataDir,
        &[f, "data_dir", "no-such-dir"],
    );
    let mut bytes = base_campaign().into_bytes();
    bytes.splice(0..0, b"# caf\xe9\n".iter().copied());
    t.0.push(Case {
        name: "campaign: invalid UTF-8".into(),
        campaign: String::new(),
        files: [beir_ok().files(), vec![(CAMPAIGN_FILE.to_string(), bytes)]].concat(),
        args: Cmd::Prepare.args(),
        expect: Some(needles(&[f, "line 1"])),
    });
}

fn command_line_cases(t: &mut Table) {
    t.command(
        "`--limit 0`",
        Cmd::Run,
        &[("--limit", "0")],
        &["--limit", "at least 1"],
    );
    t.command(
        "`--limit abc`",
        Cmd::Run,
        &[("--limit", "abc")],
        &["--limit", "abc"],
    );
    t.command(
        "`--threads 0`",
        Cmd::Run,
        &[("--threads", "0")],
        &["--threads", "at least 1"],
    );
    t.command(
        "`--threads 100000` (above the bound)",
        Cmd::Run,
        &[("--threads", "100000")],
        &["--threads is 100000", "above the bound"],
    );
    t.command(
        "`--threads -1`",
        Cmd::Run,
        &[("--threads", "-1")],
        &["--threads"],
    );
    t.command(
        "`--data-dir` that does not exist (prepare)",
        Cmd::Prepare,
        &[("--data-dir", "no-such-dir")],
        &["--data-dir", "no-such-dir"],
    );
    t.command(
        "`--data-dir` that does not exist (run-matrix)",
        Cmd::Run,
        &[("--data-dir", "no-such-dir")],
        &["--data-dir", "no-such-dir"],
    );
    t.command(
        "`--data-dir` that is a file",
        Cmd::Prepare,
        &[("--data-dir", "my_campaign.yaml")],
        &["--data-dir", "my_campaign.yaml"],
    );
    t.command(
        "`--model` that does not exist",
        Cmd::Prepare,
        &[("--model", "no-such-model")],
        &["--model", "no-such-model"],
    );
    t.command(
        "`--results` that is a file",
        Cmd::Prepare,
        &[("--results", "my_campaign.yaml")],
        &["my_campaign.yaml", "results"],
    );
    t.command(
        "`--campaign` that does not exist",
        Cmd::Prepare,
        &[("--campaign", "no-such-campaign.yaml")],
        &["no-such-campaign.yaml"],
    );
    t.command(
        "`--datasets` naming an unknown dataset",
        Cmd::Prepare,
        &[("--datasets", "nosuchset")],
        &["nosuchset", "--datasets|unknown dataset"],
    );
    t.command(
        "`--legs` naming an unknown leg",
        Cmd::Run,
        &[("--legs", "nosuchleg")],
        &["nosuchleg", "--legs|unknown leg"],
    );
}

// ---------------------------------------------------------------------------------------------
// the test

#[test]
fn every_bad_input_is_exit_2_naming_file_and_field_and_writes_nothing() {
    let started = Instant::now();
    let cases = cases();
    let bad = cases.iter().filter(|c| c.expect.is_some()).count();
    let results: Vec<(usize, Result<(), String>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let cases = &cases;
                s.spawn(move || {
                    (w..cases.len())
                        .step_by(2)
                        .map(|i| (i, run_case(&cases[i])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<_> = workers
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect();
        all.sort_by_key(|(i, _)| *i);
        all
    });
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(i, r)| {
            r.as_ref()
                .err()
                .map(|why| format!("FAILED {}\n{why}", cases[*i].name))
        })
        .collect();
    println!(
        "{} cases ({bad} bad inputs, {} controls) in {:.1} s: {} failed",
        cases.len(),
        cases.len() - bad,
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// How long one case may run before it counts as a hang (and is killed).
const TIMEOUT: Duration = Duration::from_secs(30);

/// What the binary did.
struct Outcome {
    /// The exit code; `None` when killed by a signal (see `signal`) or timed out.
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

/// Runs `hopbench args...` in `dir` as [`Env::run`] does (no HOPBENCH_* or RAYON_NUM_THREADS
/// from the environment), with backtraces on (a panic's location is reported) and a time limit.
fn run_bounded(dir: &Path, args: &[String]) -> Outcome {
    // the captured output lives outside the temp dir's tree walk (created before it)
    let out_path = dir.join("bad_input.stdout");
    let err_path = dir.join("bad_input.stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hopbench"))
        .args(args)
        .current_dir(dir)
        .env_remove("HOPBENCH_DATA")
        .env_remove("HOPBENCH_MODEL_DIR")
        .env_remove("RAYON_NUM_THREADS")
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).expect("stdout file"))
        .stderr(File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("run hopbench");
    let deadline = Instant::now() + TIMEOUT;
    let (status, timed_out) = loop {
        match child.try_wait().expect("wait") {
            Some(status) => break (Some(status), false),
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break (None, true);
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    Outcome {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        stdout: read(&out_path),
        stderr: read(&err_path),
    }
}

/// `text` with the temp dir hidden, a panic's backtrace cut to its frames in this workspace,
/// and at most `max` characters.
fn abbreviated(text: &str, temp: &str, max: usize) -> String {
    let text = text.trim_end().replace(temp, "[TEMP]");
    let text = match text.split_once("stack backtrace:") {
        Some((head, trace)) => {
            let ours: Vec<&str> = trace
                .lines()
                .map(str::trim)
                .filter(|l| {
                    l.starts_with("at ") && !l.contains("/rustc/") && !l.contains("/.cargo/")
                })
                .take(4)
                .collect();
            format!(
                "{}\n[backtrace, workspace frames:] {}",
                head.trim_end(),
                ours.join(" <- ")
            )
        }
        None => text,
    };
    if text.chars().count() > max {
        text.chars().take(max).collect::<String>() + " [...]"
    } else {
        text
    }
}

/// Where a panic happened: the first backtrace frame in this workspace, else the `panicked at`
/// location.
fn panic_location(stderr: &str) -> String {
    let frame = stderr
        .split_once("stack backtrace:")
        .and_then(|(_, trace)| {
            trace
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("at ") && !l.contains("/rustc/") && !l.contains("/.cargo/"))
                .map(|l| l.trim_start_matches("at ").to_string())
        });
    let message = stderr
        .lines()
        .skip_while(|l| !l.contains("panicked at "))
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    match frame {
        Some(f) => format!("{f} ({message})"),
        None => message,
    }
}

/// Runs one case in a fresh temp directory; `Err` says everything that was wrong.
fn run_case(case: &Case) -> Result<(), String> {
    let env = Env::new();
    std::fs::write(env.path().join(CAMPAIGN_FILE), &case.campaign).expect("campaign");
    for (path, bytes) in &case.files {
        let p = env.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
        match bytes.as_slice() {
            A_DIRECTORY => std::fs::create_dir(&p).expect("directory"),
            A_FIFO => assert!(Command::new("mkfifo")
                .arg(&p)
                .status()
                .expect("mkfifo")
                .success()),
            _ => std::fs::write(&p, bytes).expect("raw file"),
        }
    }
    for name in ["bad_input.stdout", "bad_input.stderr"] {
        File::create(env.path().join(name)).expect("output file");
    }
    // the whole temp dir, so that a write outside the results directory is caught too
    let before = walk(env.path());
    let out = run_bounded(env.path(), &case.args);
    let temp = env.path().display().to_string();
    let shown = || {
        let code = match (out.code, out.signal, out.timed_out) {
            (_, _, true) => format!("none (killed after {} s)", TIMEOUT.as_secs()),
            (Some(c), _, _) => c.to_string(),
            (None, Some(sig), _) => format!("none (killed by signal {sig})"),
            (None, None, _) => "none".to_string(),
        };
        let mut text = format!(
            "  command: hopbench {}\n  exit code: {code}\n  stderr: {}",
            case.args.join(" "),
            abbreviated(&out.stderr, &temp, 1500).replace('\n', "\n          ")
        );
        if out.code == Some(0) && !out.stdout.trim().is_empty() {
            text += &format!(
                "\n  stdout: {}",
                abbreviated(&out.stdout, &temp, 600).replace('\n', "\n          ")
            );
        }
        text
    };
    if std::env::var_os("HOPBENCH_BAD_INPUT_VERBOSE").is_some() {
        println!("CASE {}\n{}\n", case.name, shown());
    }
    let Some(expect) = &case.expect else {
        return if out.code == Some(0) {
            Ok(())
        } else {
            Err(format!(
                "  - the control did not succeed (the fixture is wrong?)\n{}",
                shown()
            ))
        };
    };
    let mut problems = Vec::new();
    match (out.code, out.signal, out.timed_out) {
        (_, _, true) => problems.push(format!(
            "no exit within {} s (a hang?): killed",
            TIMEOUT.as_secs()
        )),
        (Some(2), _, _) => {}
        (Some(0), _, _) => problems.push("exit code 0: the bad input was accepted".to_string()),
        (Some(101), _, _) => problems.push(format!(
            "exit code 101: panicked at {}",
            panic_location(&out.stderr)
        )),
        (Some(c), _, _) => problems.push(format!("exit code {c}, expected 2")),
        (None, sig, _) => problems.push(format!(
            "killed by signal {sig:?} (6 = abort, e.g. an allocation failure; 11 = a stack overflow)"
        )),
    }
    for alternatives in expect {
        if !alternatives.iter().any(|n| out.stderr.contains(n.as_str())) {
            problems.push(format!(
                "stderr does not contain {}",
                alternatives
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ));
        }
    }
    let after = walk(env.path());
    let left: Vec<&str> = after
        .difference(&before)
        .map(String::as_str)
        .filter(|p| !matches!(*p, "results/" | "results/.lock"))
        .collect();
    if !left.is_empty() {
        problems.push(format!(
            "files written (only results/.lock may be): {}",
            left.join(", ")
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("  - {}\n{}", problems.join("\n  - "), shown()))
    }
}

/// Every path under `dir` but the model, relative, directories with a trailing `/` (empty if
/// `dir` is absent).
fn walk(dir: &Path) -> BTreeSet<String> {
    fn go(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            if rel == "model" {
                continue;
            }
            if p.is_dir() {
                out.insert(format!("{rel}/"));
                go(root, &p, out);
            } else {
                out.insert(rel);
            }
        }
    }
    let mut out = BTreeSet::new();
    go(dir, dir, &mut out);
    out
}

// ---------------------------------------------------------------------------------------------
// campaigns

const DEFAULT_LEGS: &str = "  myleg: {kind: bm25}\n";
const DEFAULT_STATS: &str = "stats: {resamples: 200, permutations: 500, seed: 7}\n";

/// A campaign with `top` lines, the dataset entries `datasets` and the leg entries `legs`.
fn campaign(top: &str, datasets: &str, legs: &str) -> String {
    format!(
        "results: results\nmodel: model\n{DEFAULT_STATS}{top}datasets:\n{datasets}legs:\n{legs}"
    )
}

/// A campaign with its own `stats` line.
fn campaign_stats(stats: &str, datasets: &str) -> String {
    format!("results: results\nmodel: model\n{stats}datasets:\n{datasets}legs:\n{DEFAULT_LEGS}")
}

/// The valid campaign of the campaign and command-line cases: the BEIR fixture, one bm25 leg.
fn base_campaign() -> String {
    campaign("", &beir_ok().entry(), DEFAULT_LEGS)
}

// ---------------------------------------------------------------------------------------------
// raw datasets: valid fixtures and ways to break them

#[derive(Clone)]
struct RawFile {
    role: &'static str,
    /// Under `data/`.
    path: &'static str,
    /// Whether the role takes a list of files.
    list: bool,
    bytes: Vec<u8>,
}

/// A dataset's raw files, by role.
#[derive(Clone)]
struct Raw {
    format: &'static str,
    files: Vec<RawFile>,
}

impl Raw {
    fn file_mut(&mut self, role: &str) -> &mut RawFile {
        self.files
            .iter_mut()
            .find(|f| f.role == role)
            .unwrap_or_else(|| panic!("no role {role}"))
    }
    fn text(&mut self, role: &str) -> String {
        String::from_utf8(self.file_mut(role).bytes.clone()).expect("fixture text")
    }
    fn set(mut self, role: &str, bytes: impl Into<Vec<u8>>) -> Raw {
        self.file_mut(role).bytes = bytes.into();
        self
    }
    fn edit(mut self, role: &str, f: impl FnOnce(&str) -> Vec<u8>) -> Raw {
        let text = self.text(role);
        self.set(role, f(&text))
    }
    /// The campaign entry of dataset `d`.
    fn entry(&self) -> String {
        let files: Vec<String> = self
            .files
            .iter()
            .map(|f| {
                if f.list {
                    format!("{}: [{}]", f.role, f.path)
                } else {
                    format!("{}: {}", f.role, f.path)
                }
            })
            .collect();
        format!(
            "  d:\n    format: {}\n    files: {{{}}}\n",
            self.format,
            files.join(", ")
        )
    }
    /// The files to write.
    fn files(&self) -> Vec<(String, Vec<u8>)> {
        self.files
            .iter()
            .map(|f| (format!("data/{}", f.path), f.bytes.clone()))
            .collect()
    }
}

fn file(role: &'static str, path: &'static str, bytes: impl Into<Vec<u8>>) -> RawFile {
    RawFile {
        role,
        path,
        list: false,
        bytes: bytes.into(),
    }
}

/// A JSON list, one element per line group (pretty), as downloaded files often are.
fn json_list(items: &[Value]) -> String {
    serde_json::to_string_pretty(&Value::Array(items.to_vec())).expect("json") + "\n"
}

/// JSON Lines.
fn jsonl(items: &[Value]) -> String {
    items.iter().map(|v| format!("{v}\n")).collect()
}

fn lines(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn remove(v: &mut Value, key: &str) {
    v.as_object_mut().expect("object").remove(key);
}

/// The first half of `text`: cut in the middle of a record.
fn truncated(text: &str) -> Vec<u8> {
    text.as_bytes()[..text.len() / 2].to_vec()
}

/// `text` with its last line cut in half (and no final newline).
fn cut_last_line(text: &str) -> Vec<u8> {
    let body = text.trim_end_matches('\n');
    let start = body.rfind('\n').map_or(0, |i| i + 1);
    let keep = start + (body.len() - start) / 2;
    body.as_bytes()[..keep].to_vec()
}

/// 1-based line of the first `needle` in `text`.
fn line_of(text: &[u8], needle: &[u8]) -> usize {
    let at = text
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap_or_else(|| panic!("{:?} not in the fixture", String::from_utf8_lossy(needle)));
    text[..at].iter().filter(|&&b| b == b'\n').count() + 1
}

/// `raw` with the [`MARK`] string in `role`'s file replaced by the bare `literal`, and its line.
fn non_finite(mut raw: Raw, role: &str, literal: &str) -> (Raw, usize) {
    let text = raw.text(role);
    let mark = format!("\"{MARK}\"");
    let line = line_of(text.as_bytes(), mark.as_bytes());
    (raw.set(role, text.replacen(&mark, literal, 1)), line)
}

/// `raw` with an invalid UTF-8 byte inserted before the first `at` of `role`'s file, and its
/// line.
fn invalid_utf8(mut raw: Raw, role: &str, at: &str) -> (Raw, usize) {
    let text = raw.text(role);
    let line = line_of(text.as_bytes(), at.as_bytes());
    let i = text.find(at).expect("found");
    let mut bytes = text.as_bytes()[..i].to_vec();
    bytes.extend_from_slice(b"\xff\xfe");
    bytes.extend_from_slice(&text.as_bytes()[i..]);
    (raw.set(role, bytes), line)
}

// MuSiQue, HippoRAG layout: a JSON list of questions and a JSON list corpus of {title, text}.

fn para(idx: usize, title: &str, text: &str, sup: bool) -> Value {
    json!({"idx": idx, "title": title, "paragraph_text": text, "is_supporting": sup})
}

fn musique(edit: impl FnOnce(&mut Vec<Value>, &mut Vec<Value>)) -> Raw {
    let mut questions = vec![
        json!({
            "id": "2hop__1_2", "question": "Who founded the publisher of J?", "answer": "Z",
            "answer_aliases": [], "answerable": true,
            "paragraphs": [para(0, "J", "J is published by P.", true),
                           para(1, "X", "Distractor.", false),
                           para(2, "P", "P was founded by Z.", true)],
            "question_decomposition": [
                {"id": 1, "question": "Who publishes J?", "answer": "P", "paragraph_support_idx": 0},
                {"id": 2, "question": "Who founded #1?", "answer": "Z", "paragraph_support_idx": 2}]
        }),
        json!({
            "id": "3hop1__3_4_5", "question": "Which W is older than P?", "answer": "A",
            "answer_aliases": [], "answerable": true,
            "paragraphs": [para(0, "P", "P was founded by Z.", true),
                           para(1, "X", "Distractor.", false),
                           para(2, "P", "P is old.", true),
                           para(3, "W", "W is a river.", true)],
            "question_decomposition": [
                {"id": 3, "question": "h1", "answer": "a1", "paragraph_support_idx": 3},
                {"id": 4, "question": "h2 #1", "answer": "a2", "paragraph_support_idx": 0},
                {"id": 5, "question": "h3 #2", "answer": "a3", "paragraph_support_idx": 2}]
        }),
    ];
    let mut corpus = vec![
        json!({"title": "X", "text": "Distractor."}),
        json!({"title": "J", "text": "J is published by P."}),
        json!({"title": "P", "text": "P was founded by Z."}),
        json!({"title": "P", "text": "P is old."}),
        json!({"title": "W", "text": "W is a river."}),
    ];
    edit(&mut questions, &mut corpus);
    Raw {
        format: "musique",
        files: vec![
            file(
                "questions",
                "musique/musique_train.json",
                json_list(&questions),
            ),
            file(
                "corpus",
                "musique/musique_train_corpus.json",
                json_list(&corpus),
            ),
        ],
    }
}

// HotpotQA, HippoRAG layout: a JSON list of questions and a corpus object {title: [sentence]}.

fn hotpotqa(edit: impl FnOnce(&mut Vec<Value>, &mut Vec<(String, Value)>)) -> Raw {
    let mut questions = vec![
        json!({
            "_id": "a1", "question": "Which league does S play in?", "answer": "MLS",
            "type": "bridge", "level": "hard",
            "supporting_facts": [["S", 0], ["MLS", 0], ["MLS", 2]],
            "context": [["X", ["X is a distractor.", " Really."]],
                        ["S", ["S plays for R."]],
                        ["MLS", ["MLS is a league.", " It has 22 teams.", " Third."]]]
        }),
        json!({
            "_id": "b2", "question": "Older, A or B?", "answer": "A",
            "type": "comparison", "level": "medium",
            "supporting_facts": [["B", 1], ["A", 0]],
            "context": [["A", ["A is old."]], ["B", ["B is", " young."]]]
        }),
    ];
    let mut corpus: Vec<(String, Value)> = vec![
        ("X".into(), json!(["X is a distractor.", " Really."])),
        ("S".into(), json!(["S plays for R."])),
        (
            "MLS".into(),
            json!(["MLS is a league.", " It has 22 teams.", " Third."]),
        ),
        ("A".into(), json!(["A is old."])),
        ("B".into(), json!(["B is", " young."])),
    ];
    edit(&mut questions, &mut corpus);
    // one entry a line, so that entries have line numbers (and repeated keys survive)
    let body: Vec<String> = corpus
        .iter()
        .map(|(k, v)| format!("  {}: {v}", Value::String(k.clone())))
        .collect();
    let corpus = if body.is_empty() {
        "{}\n".to_string()
    } else {
        format!("{{\n{}\n}}\n", body.join(",\n"))
    };
    Raw {
        format: "hotpotqa",
        files: vec![
            file(
                "questions",
                "hotpotqa/hotpotqa_train.json",
                json_list(&questions),
            ),
            file("corpus", "hotpotqa/hotpotqa_train_corpus.json", corpus),
        ],
    }
}

// 2WikiMultihopQA, corpus layout: a JSON list of questions and a JSONL corpus of {title, text}.

fn twowiki(edit: impl FnOnce(&mut Vec<Value>, &mut Vec<Value>)) -> Raw {
    let mut questions = vec![
        json!({
            "_id": "c1", "type": "compositional", "question": "When did L's mother die?",
            "answer": "851",
            "context": [["L", ["L was a king.", "His mother was E."]],
                        ["E", ["E was a queen.", "She died in 851."]]],
            "supporting_facts": [["L", 1], ["E", 1]],
            "evidences": [["L", "mother", "E"], ["E", "date of death", "851"]]
        }),
        json!({
            "_id": "b2", "type": "bridge_comparison",
            "question": "Whose director was born first?", "answer": "F1",
            "context": [["F1", ["F1 is a film by D1."]], ["F2", ["F2 is a film by D2."]],
                        ["D1", ["D1 was born in 1900."]], ["D2", ["D2 was born in 1910."]]],
            "supporting_facts": [["F1", 0], ["F2", 0], ["D1", 0], ["D2", 0]],
            "evidences": [["F1", "director", "D1"], ["F2", "director", "D2"],
                          ["D1", "date of birth", "1900"], ["D2", "date of birth", "1910"]]
        }),
    ];
    let mut corpus = vec![
        json!({"title": "T", "text": "T is unrelated."}),
        json!({"title": "L", "text": "L was a king. His mother was E."}),
        json!({"title": "E", "text": "E was a queen. She died in 851."}),
        json!({"title": "F1", "text": "F1 is a film by D1."}),
        json!({"title": "F2", "text": "F2 is a film by D2."}),
        json!({"title": "D1", "text": "D1 was born in 1900."}),
        json!({"title": "D2", "text": "D2 was born in 1910."}),
    ];
    edit(&mut questions, &mut corpus);
    let corpus = if corpus.is_empty() {
        "[]\n".to_string()
    } else {
        jsonl(&corpus)
    };
    Raw {
        format: "twowiki",
        files: vec![
            file("questions", "2wiki/2wiki_dev.json", json_list(&questions)),
            file("corpus", "2wiki/2wiki_corpus.jsonl", corpus),
        ],
    }
}

// MTRAG-UN: reference.jsonl (tasks with their contexts and conversation) and BEIR qrels.

fn turn(speaker: &str, text: &str) -> Value {
    json!({"speaker": speaker, "text": text, "metadata": {"author_type": "human"}})
}

fn task(conv: &str, turn_no: usize, contexts: Value, input: Value) -> Value {
    json!({
        "conversation_id": conv, "task_id": format!("{conv}<::>{turn_no}"), "task_type": "rag",
        "turn": turn_no.to_string(), "dataset": "MT-RAG 2.0", "contexts": contexts,
        "input": input, "targets": [{"speaker": "agent", "text": "..."}],
        "answerability": ["ANSWERABLE"], "Question Type": ["Factoid"],
        "Multi-Turn": ["Follow-up"], "Collection": "clapnq"
    })
}

fn mtrag(edit: impl FnOnce(&mut Vec<Value>, &mut Vec<String>)) -> Raw {
    let one = json!({"document_id": "doc1-0-13", "title": "One", "text": "One is first."});
    let two = json!({"document_id": "doc2-0-14", "text": "Two is second."});
    let mut tasks = vec![
        task(
            "c1",
            1,
            json!([one.clone()]),
            json!([turn("user", "what is one?")]),
        ),
        task(
            "c1",
            2,
            json!([one, two]),
            json!([
                turn("user", "what is one?"),
                turn("agent", "the first."),
                turn("user", "and two?")
            ]),
        ),
        task(
            "c2",
            1,
            json!([{"document_id": "plain", "text": "Plain text."}]),
            json!([turn("user", "what is plain?")]),
        ),
    ];
    let mut qrels: Vec<String> = [
        "query-id\tcorpus-id\tscore",
        "c1<::>1\tdoc1-0-13\t1",
        "c1<::>2\tdoc2-0-14\t1",
        "c2<::>1\tplain\t1",
    ]
    .map(String::from)
    .to_vec();
    edit(&mut tasks, &mut qrels);
    Raw {
        format: "mtrag",
        files: vec![
            file("reference", "mtrag/reference.jsonl", jsonl(&tasks)),
            RawFile {
                list: true,
                ..file("qrels", "mtrag/qrels_clapnq.tsv", lines(&qrels))
            },
        ],
    }
}

// BEIR: corpus.jsonl, queries.jsonl, qrels/test.tsv.

fn beir(edit: impl FnOnce(&mut Vec<Value>, &mut Vec<Value>, &mut Vec<String>)) -> Raw {
    let mut corpus = vec![
        json!({"_id": "d1", "title": "One", "text": "first"}),
        json!({"_id": "d2", "title": "", "text": "second", "metadata": {}}),
        json!({"_id": 3, "text": "third"}),
    ];
    let mut queries = vec![
        json!({"_id": "q1", "text": "what is first?"}),
        json!({"_id": "q2", "text": "unjudged"}),
        json!({"_id": "q3", "text": "what is third?", "metadata": {"x": 1}}),
    ];
    let mut qrels: Vec<String> = [
        "query-id\tcorpus-id\tscore",
        "q3\t3\t2",
        "q1\td1\t1",
        "q1\td2\t0",
        "q3\td1\t1",
    ]
    .map(String::from)
    .to_vec();
    edit(&mut corpus, &mut queries, &mut qrels);
    Raw {
        format: "beir",
        files: vec![
            file("corpus", "beir/corpus.jsonl", jsonl(&corpus)),
            file("queries", "beir/queries.jsonl", jsonl(&queries)),
            file("qrels", "beir/qrels/test.tsv", lines(&qrels)),
        ],
    }
}

fn beir_ok() -> Raw {
    beir(|_, _, _| {})
}
