//! `hopbench eval`: needs no campaign (one given lends its `recall_k` and `stats`), takes no
//! lock and writes only `--per-query`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{Command, Task};
use crate::analysis::eval;
use crate::measure::stats_config::CiMode;
use crate::pipeline::campaign::{Campaign, EMBEDDED};
use crate::pipeline::settings::{Overrides, Settings};

/// Score a run file (TREC, JSON or parquet) against TREC qrels with hopbench's metrics, mean
/// and 95% CI per metric (no campaign, export or model needed).
///
/// Gains: nDCG's gain is the judgement's grade (trec_eval's ndcg and ndcg_cut; negative grades
/// gain 0); every other measure is binary: relevant when grade >= --relevance-level (1). Ties:
/// equal scores in ascending document id (--ties id), or trec_eval's descending document id
/// (--ties trec-eval).
///
/// Measures (-m; ir_measures', ranx's and trec_eval's spellings read too): recall@k (R@k),
/// ndcg and ndcg@k (nDCG@k, ndcg_cut.k), mrr and mrr@k (RR, recip_rank), AP and AP@k (map,
/// map_cut.k), P@k, Rprec, Success@k, Judged@k, Bpref, NumRet, NumRel, NumRelRet; a binary one
/// at its own level as P(rel=2)@5.
#[derive(Args, Debug)]
pub struct Eval {
    /// The run: TREC (`qid Q0 docid rank score tag`), JSON (`{qid: {docid: score}}`) or
    /// parquet (columns `query_id`, `doc_id`, `score`).
    pub run: PathBuf,
    /// TREC qrels (`qid 0 docid rel`; relevant when rel > 0).
    pub qrels: PathBuf,
    /// The run's format (default: from its extension: .trec, .txt, .run, .json, .parquet).
    #[arg(long, value_enum)]
    pub run_format: Option<RunFormatArg>,
    /// How to print the result (`trec-eval`: trec_eval's `measure<TAB>all<TAB>value` lines).
    #[arg(long, value_enum, default_value = "table")]
    pub format: EvalOutput,
    /// Measures to compute, repeatable or a comma list (`-m nDCG@10,AP -m P.5,10`); default:
    /// recall@k for the campaign's recall k, ndcg@10 and mrr@10.
    #[arg(short = 'm', long = "measure", value_name = "MEASURE")]
    pub measures: Vec<String>,
    /// Relevant when grade >= N, for every binary measure (trec_eval's -l).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub relevance_level: i64,
    /// The order of equal scores: `id` (ascending document id) or `trec-eval` (descending
    /// document id, as trec_eval sorts).
    #[arg(long, value_enum, default_value = "id")]
    pub ties: TiesArg,
    /// With `--format trec-eval`: every query's lines before the `all` lines (trec_eval's -q).
    #[arg(short = 'q', long)]
    pub per_query_lines: bool,
    /// Also write the per-query values: FILE.json (`{qid: {metric: value}}`) or FILE.tsv.
    #[arg(long)]
    pub per_query: Option<PathBuf>,
    /// A run query the qrels do not judge: `error`, or `drop` (its records are dropped and
    /// counted).
    #[arg(long, value_enum, default_value = "error")]
    pub unknown_ids: UnknownIdsArg,
    /// Campaign whose `recall_k` and `stats` to use (default: the compiled-in campaign's).
    #[arg(long)]
    pub campaign: Option<PathBuf>,
    /// No confidence intervals (the bootstrap costs resamples x queries per metric).
    #[arg(long)]
    pub no_ci: bool,
}

/// `--run-format`.
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum RunFormatArg {
    /// `qid Q0 docid rank score tag` lines.
    Trec,
    /// `{qid: {docid: score}}`.
    Json,
    /// Columns `query_id`, `doc_id`, `score`.
    Parquet,
}

impl RunFormatArg {
    /// The reader's format.
    pub fn format(self) -> hopbench_datasets::runfile::RunFormat {
        use hopbench_datasets::runfile::RunFormat;
        match self {
            RunFormatArg::Trec => RunFormat::Trec,
            RunFormatArg::Json => RunFormat::Json,
            RunFormatArg::Parquet => RunFormat::Parquet,
        }
    }
}

/// `--format`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalOutput {
    /// An aligned table with the counts above it.
    Table,
    /// The whole report as JSON.
    Json,
    /// One row per metric: `metric mean ci_lo ci_hi queries`.
    Tsv,
    /// trec_eval's lines: `measure<TAB>all<TAB>value`, trec_eval's names, 4 decimals.
    #[value(name = "trec-eval", alias = "trec_eval")]
    TrecEval,
}

/// `--ties`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TiesArg {
    /// Ascending document id (byte order).
    Id,
    /// Descending document id (byte order), as trec_eval sorts.
    #[value(name = "trec-eval", alias = "trec_eval")]
    TrecEval,
}

/// `--unknown-ids`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownIdsArg {
    /// An error naming the file and the line.
    Error,
    /// Dropped and counted.
    Drop,
}

impl Command for Eval {
    const TASK: Task = Task::Score;

    /// None: a broken `./campaign.yaml` must not stop the scoring of a run file.
    fn overrides(&self) -> Option<Overrides> {
        None
    }

    fn run(self, _: Option<&Settings>) -> Result<ExitCode> {
        let campaign = match &self.campaign {
            Some(p) => Campaign::load(Some(p))?.0,
            None => Campaign::parse(EMBEDDED, "<embedded campaign.yaml>")?,
        };
        let mut stats = campaign.stats.clone();
        if self.no_ci {
            stats.ci = CiMode::Off;
        }
        let measures = if self.measures.is_empty() {
            None
        } else {
            Some(
                crate::measure::metrics::At::parse_list(&self.measures)
                    .map_err(|e| anyhow::anyhow!("-m: {e}"))?,
            )
        };
        if self.per_query_lines && self.format != EvalOutput::TrecEval {
            anyhow::bail!("-q prints trec_eval's per-query lines: give it with --format trec-eval");
        }
        let options = eval::EvalOptions {
            run: self.run.clone(),
            format: self.run_format.map(|f| f.format()),
            qrels: self.qrels.clone(),
            drop_unknown: self.unknown_ids == UnknownIdsArg::Drop,
            recall_k: campaign.recall_k.clone(),
            measures,
            level: self.relevance_level,
            ties: match self.ties {
                TiesArg::Id => eval::Ties::Id,
                TiesArg::TrecEval => eval::Ties::TrecEval,
            },
            stats,
        };
        let (report, values) = eval::run(&options)?;
        if let Some(path) = &self.per_query {
            eval::write_per_query(path, &values)?;
        }
        match self.format {
            EvalOutput::Table => out!("{}", eval::table(&report).trim_end()),
            EvalOutput::Tsv => out!("{}", eval::tsv(&report).trim_end()),
            EvalOutput::TrecEval => out!(
                "{}",
                eval::trec_eval(&values, &report.measures, self.per_query_lines).trim_end()
            ),
            EvalOutput::Json => out!(
                "{}",
                serde_json::to_string_pretty(&report).expect("the report serialises")
            ),
        }
        Ok(ExitCode::SUCCESS)
    }
}
