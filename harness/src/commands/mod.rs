//! The command line: one file per command, holding its arguments (a clap `Args` struct whose
//! doc comment is its help text) and its `run`. The [`commands!`] list below registers them, in
//! the order the help lists them; nothing else names a command.
//!
//! A command declares what it needs before it runs ([`Command::overrides`], [`Command::lock`]);
//! `main` resolves the settings once from those flags, takes the lock and calls [`Command::run`].
//! Nothing here resolves a default: [`Settings::resolve`] owns every default and every
//! precedence rule.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, CommandFactory, FromArgMatches, Parser};

use crate::pipeline::settings::{Overrides, RunFlags, Settings};
use crate::store::lock;

pub mod bench;
pub mod breakdown;
pub mod compare;
pub mod compare_curves;
pub mod compare_legs;
pub mod datasets;
pub mod eval;
pub mod legs;
pub mod plot;
pub mod prepare;
pub mod report;
pub mod run_matrix;
pub mod serving_parity;
pub mod slurm;
pub mod status;

/// What a command is for: the groups of the top-level help's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Task {
    /// Running the matrix and building what it reads.
    Run,
    /// Reading what a run wrote: paired statistics, breakdowns, reports, plots.
    Analyse,
    /// Scoring a system's own output without a campaign.
    Score,
    /// Looking at the campaign.
    Inspect,
    /// Speed and cost benchmarks (not tests).
    Measure,
}

impl Task {
    /// The group's heading in the help.
    fn heading(self) -> &'static str {
        match self {
            Task::Run => "Run the matrix",
            Task::Analyse => "Read a run",
            Task::Score => "Score your own system's output",
            Task::Inspect => "Look at the campaign",
            Task::Measure => "Measure speed and cost",
        }
    }
}

/// How a command holds the results directory's lock while it runs.
#[derive(Debug, Clone, Copy)]
pub struct Lock {
    /// Wait for another writer (`false`: `--no-wait`, fail at once).
    pub wait: bool,
    /// Alone, or beside the other parts of a sharded run.
    pub mode: lock::Mode,
}

/// One command: its arguments are `Self`.
pub trait Command {
    /// Its group in the top-level help.
    const TASK: Task;
    /// The flags that take part in settings resolution; `None` for a command that resolves no
    /// settings (it runs even where `./campaign.yaml` is broken, and takes no lock).
    fn overrides(&self) -> Option<Overrides>;
    /// The results directory's lock it holds while it runs; `None` (the default) for a command
    /// that only reads.
    fn lock(&self) -> Option<Lock> {
        None
    }
    /// Runs it. `settings` is `Some` exactly when [`Command::overrides`] was.
    fn run(self, settings: Option<&Settings>) -> Result<ExitCode>;
}

/// The exit status of a command that reads results (`report`, `compare`, `compare-legs`) and
/// finished, but left something out: a cell or a budget curve whose files do not read or verify,
/// each named on stderr and in what the command wrote, the rest computed. Beside 0 (all of it),
/// 1 (`status`: not every cell is done) and 2 (an error: nothing was computed), so a script
/// tells a partial result from a whole one.
pub const LEFT_OUT: u8 = 3;

/// The exit status of a read command that left out `n` things ([`LEFT_OUT`] when any).
pub fn left_out_status(n: usize) -> ExitCode {
    if n == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(LEFT_OUT)
    }
}

/// The settings of a command that declared overrides (main resolved them).
pub fn resolved(settings: Option<&Settings>) -> &Settings {
    settings.expect("a command that declares overrides is run with its settings")
}

/// Declares the list of commands: the clap enum and the dispatch over it.
macro_rules! commands {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$attr:meta])* $variant:ident($args:ty),)* }) => {
        $(#[$meta])*
        #[derive(clap::Subcommand, Debug)]
        $vis enum $name {
            $($(#[$attr])* $variant($args),)*
        }

        impl $name {
            /// The tasks of the commands, in the order of the list.
            #[allow(dead_code)]
            pub(crate) fn tasks() -> Vec<$crate::commands::Task> {
                vec![$(<$args as $crate::commands::Command>::TASK,)*]
            }
            /// [`Command::overrides`] of the command given.
            pub fn overrides(&self) -> Option<$crate::pipeline::settings::Overrides> {
                match self {
                    $($name::$variant(a) => $crate::commands::Command::overrides(a),)*
                }
            }
            /// [`Command::lock`] of the command given.
            pub fn lock(&self) -> Option<$crate::commands::Lock> {
                match self {
                    $($name::$variant(a) => $crate::commands::Command::lock(a),)*
                }
            }
            /// [`Command::run`] of the command given.
            pub fn run(
                self,
                settings: Option<&$crate::pipeline::settings::Settings>,
            ) -> anyhow::Result<std::process::ExitCode> {
                match self {
                    $($name::$variant(a) => $crate::commands::Command::run(a, settings),)*
                }
            }
        }
    };
}
pub(crate) use commands;

commands! {
    /// Every command.
    pub enum Commands {
        RunMatrix(run_matrix::RunMatrix),
        Prepare(prepare::Prepare),
        Status(status::Status),
        Slurm(slurm::Slurm),
        Compare(compare::Compare),
        CompareLegs(compare_legs::CompareLegs),
        CompareCurves(compare_curves::CompareCurves),
        Breakdown(breakdown::Breakdown),
        Report(report::Report),
        Plot(plot::Plot),
        Eval(eval::Eval),
        Datasets(datasets::Datasets),
        Legs(legs::Legs),
        #[command(subcommand)]
        Bench(bench::Bench),
        ServingParity(serving_parity::ServingParity),
    }
}

/// hopbench: a reproducible benchmark harness for the retrieval strategies that decide what
/// goes into an LLM's context window.
///
/// It runs every retrieval leg (dense, BM25, their fusion, graph rescue, CDGR, conversational
/// tiers, your own run files or engine) on every dataset (MuSiQue, HotpotQA, 2Wiki, MTRAG, your
/// own documents, a generated default world) under a determinism contract, scores recall@k,
/// nDCG@10, document and chain coverage, latency and token spend per cell, caches each cell,
/// and compares runs and legs with paired statistics.
#[derive(Parser, Debug)]
#[command(name = "hopbench", version = VERSION)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Commands,
}

/// The whole command line, its top-level help listing the commands by task.
pub fn cli() -> clap::Command {
    let mut cmd = Cli::command();
    let tasks = Commands::tasks();
    let mut groups: Vec<(Task, Vec<(String, String)>)> = Vec::new();
    for (sub, task) in cmd.get_subcommands().zip(&tasks) {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let line = (sub.get_name().to_string(), about);
        match groups.iter_mut().find(|(t, _)| t == task) {
            Some((_, lines)) => lines.push(line),
            None => groups.push((*task, vec![line])),
        }
    }
    groups.sort_by_key(|(t, _)| *t);
    let width = groups
        .iter()
        .flat_map(|(_, l)| l.iter().map(|(n, _)| n.len()))
        .max()
        .unwrap_or(0);
    let mut listing = String::new();
    for (task, lines) in &groups {
        listing.push_str(&format!("{}:\n", task.heading()));
        for (name, about) in lines {
            listing.push_str(&format!("  {name:<width$}  {about}\n"));
        }
        listing.push('\n');
    }
    cmd = cmd.help_template(format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{}Options:\n{{options}}{{after-help}}",
        listing.replace('{', "{{").replace('}', "}}")
    ));
    cmd
}

/// `hopbench --version`: the version and what the build holds (Qdrant's engine is a build
/// feature, and the Python wheel may be built either way).
pub const VERSION: &str = if hopbench_datasets::hnsw::BUILT {
    concat!(env!("CARGO_PKG_VERSION"), " (Qdrant engine: built in)")
} else {
    concat!(
        env!("CARGO_PKG_VERSION"),
        " (Qdrant engine: not built; build with --features qdrant)"
    )
};

/// Parses the process's arguments (exits with clap's message on a bad command line).
pub fn parse() -> Cli {
    parse_from(std::env::args_os())
}

/// Parses `args` (`args[0]`: the program's name); exits with clap's message on a bad command
/// line, or after printing `--help` / `--version`.
pub fn parse_from<I, T>(args: I) -> Cli
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = cli().get_matches_from(args);
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// The `hopbench` command line `args`, run: parsed, settings resolved once, the results lock
/// taken for a command that writes results, then dispatched to the command's file; an error is
/// printed as `hopbench: ...` with exit status 2. The binary's `main` and the Python package's
/// `hopbench` command are this one function.
pub fn main_from<I, T>(args: I) -> std::process::ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match run_cli(parse_from(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hopbench: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

fn run_cli(cli: Cli) -> anyhow::Result<std::process::ExitCode> {
    let command = cli.command;
    let settings = command
        .overrides()
        .map(|o| crate::pipeline::settings::Settings::resolve(&o))
        .transpose()?;
    // a command that writes the results directory holds its lock until it returns
    let _lock = match (&settings, command.lock()) {
        (Some(s), Some(l)) => Some(crate::store::lock::ResultsLock::take(
            &s.results, l.wait, l.mode,
        )?),
        _ => None,
    };
    command.run(settings.as_ref())
}

/// The flags every command that reads the campaign, the data and the model takes.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Campaign file (default: ./campaign.yaml, else the compiled-in default).
    #[arg(long)]
    pub campaign: Option<PathBuf>,
    /// Directory holding the raw datasets (default: $HOPBENCH_DATA, else the campaign's
    /// `data_dir`; none: only generated data).
    #[arg(long, env = "HOPBENCH_DATA")]
    pub data_dir: Option<PathBuf>,
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Embedding model directory (default: $HOPBENCH_MODEL_DIR, else the campaign's `model`).
    #[arg(long, env = "HOPBENCH_MODEL_DIR")]
    pub model: Option<PathBuf>,
    /// Let a dataset's `files` name absolute paths, `..` and links that lead outside the data
    /// directory (refused by default).
    #[arg(long)]
    pub allow_outside_data_dir: bool,
    /// Fail at once when another hopbench process is writing the results directory (default:
    /// wait for it).
    #[arg(long)]
    pub no_wait: bool,
}

impl CommonArgs {
    /// These flags as overrides of the campaign.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            campaign: self.campaign.clone(),
            results: self.results.clone(),
            data_dir: self.data_dir.clone(),
            model: self.model.clone(),
            allow_outside_data_dir: self.allow_outside_data_dir,
            run: None,
        }
    }

    /// The exclusive lock of a command that writes the results directory alone.
    pub fn exclusive(&self) -> Lock {
        self.lock_for(None)
    }

    /// The lock of a command that may run as one part of a sharded run (`--shard`): the parts
    /// hold it shared, beside each other, because each writes files of its own; a whole run
    /// holds it alone.
    pub fn lock_for(&self, shard: Option<crate::pipeline::shard::Shard>) -> Lock {
        Lock {
            wait: !self.no_wait,
            mode: match shard {
                Some(_) => lock::Mode::Shared,
                None => lock::Mode::Exclusive,
            },
        }
    }
}

/// The [`Command`] items of a benchmark that reads the campaign, the data and the model through
/// its `common` flags ([`CommonArgs`]): its task, its overrides, and the results directory's
/// lock held alone (a benchmark may prepare exports and fill the embedding cache, as a run does).
macro_rules! exclusive_benchmark {
    () => {
        const TASK: $crate::commands::Task = $crate::commands::Task::Measure;

        fn overrides(&self) -> Option<$crate::pipeline::settings::Overrides> {
            Some(self.common.overrides())
        }

        fn lock(&self) -> Option<$crate::commands::Lock> {
            Some(self.common.exclusive())
        }
    };
}
pub(crate) use exclusive_benchmark;

/// The flags of a command that only reads a results directory.
#[derive(Args, Debug, Clone)]
pub struct ReadArgs {
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Campaign file, for the default results directory and its settings (default:
    /// ./campaign.yaml, else the compiled-in default).
    #[arg(long)]
    pub campaign: Option<PathBuf>,
}

impl ReadArgs {
    /// These flags as overrides of the campaign.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            campaign: self.campaign.clone(),
            results: self.results.clone(),
            ..Overrides::default()
        }
    }
}

/// Which cells: the datasets and legs a matrix command covers.
#[derive(Args, Debug, Clone)]
pub struct Selection {
    /// `all` or a comma list of dataset names (default: the campaign's `run.datasets`, else all).
    #[arg(long)]
    pub datasets: Option<String>,
    /// `all` or a comma list of leg names (default: the campaign's `run.legs`, else all).
    #[arg(long)]
    pub legs: Option<String>,
}

impl Selection {
    /// The run flags of a command that plans cells without running them (`status`, `slurm`):
    /// no cell key depends on the thread count, so one is pinned to pass the contract check.
    pub fn planning(&self, limit: Option<usize>) -> RunFlags {
        RunFlags {
            datasets: self.datasets.clone(),
            legs: self.legs.clone(),
            limit,
            threads: Some(1),
            force: false,
            quiet: true,
            no_curves: false,
            shard: None,
            cells: None,
        }
    }
}

/// The flags of a command over the matrix's cells (`run-matrix`, `status`, `slurm`): the
/// campaign, the data and the model, and which datasets and legs.
#[derive(Args, Debug, Clone)]
pub struct MatrixArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub select: Selection,
}

impl MatrixArgs {
    /// These flags as overrides of the campaign, with the run flags `run`.
    pub fn overrides(&self, run: RunFlags) -> Overrides {
        Overrides {
            run: Some(run),
            ..self.common.overrides()
        }
    }
}

/// Two legs of one dataset in one results directory (`compare-legs`, `compare-curves`).
#[derive(Args, Debug, Clone)]
pub struct LegPair {
    #[command(flatten)]
    pub read: ReadArgs,
    /// Dataset name.
    #[arg(long)]
    pub dataset: String,
    /// Leg A (the baseline).
    pub a: String,
    /// Leg B.
    pub b: String,
    #[command(flatten)]
    pub json: JsonOut,
}

impl LegPair {
    /// These flags as overrides of the campaign.
    pub fn overrides(&self) -> Overrides {
        self.read.overrides()
    }

    /// Prints the pair's comparison `compare` makes from the settings, as `table` writes it,
    /// and writes it to the `--json` file; the exit status is `status`'s of the comparison.
    pub fn print<T: serde::Serialize>(
        &self,
        settings: Option<&Settings>,
        compare: impl FnOnce(&Settings, &LegPair) -> Result<T>,
        table: impl FnOnce(&T) -> String,
        status: impl FnOnce(&T) -> ExitCode,
    ) -> Result<ExitCode> {
        let c = compare(resolved(settings), self)?;
        out!("{}", table(&c));
        self.json.write(&c)?;
        Ok(status(&c))
    }
}

/// `--json FILE`: also write the command's result there (atomically).
#[derive(Args, Debug, Clone)]
pub struct JsonOut {
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

impl JsonOut {
    /// Writes `value` to the `--json` file, if one was given.
    pub fn write<T: serde::Serialize>(&self, value: &T) -> Result<()> {
        write_json(self.json.as_deref(), value)
    }
}

/// Writes `value` as pretty JSON to `path`, if one was given.
pub fn write_json<T: serde::Serialize>(path: Option<&Path>, value: &T) -> Result<()> {
    use anyhow::Context as _;
    if let Some(p) = path {
        let text = serde_json::to_string_pretty(value).expect("serialisable") + "\n";
        crate::store::fsx::write_atomic(p, text.as_bytes())
            .with_context(|| format!("{}", p.display()))?;
    }
    Ok(())
}

/// A count that must be positive (`--limit 0` would measure nothing and look like a result).
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command and subcommand says what it does: a command without help text fails here.
    #[test]
    fn every_command_has_help_text() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for sub in cmd.get_subcommands() {
                let name = format!("{path} {}", sub.get_name());
                let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
                if about.trim().is_empty() {
                    missing.push(name.clone());
                }
                walk(sub, &name, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&cli(), "hopbench", &mut missing);
        assert!(
            missing.is_empty(),
            "commands without help text: {missing:?}"
        );
        cli().debug_assert();
    }

    #[test]
    fn the_top_level_help_lists_every_command_under_its_task() {
        let help = cli().render_help().to_string();
        assert!(help.contains("reproducible benchmark harness"), "{help}");
        for task in [
            Task::Run,
            Task::Analyse,
            Task::Score,
            Task::Inspect,
            Task::Measure,
        ] {
            assert!(help.contains(task.heading()), "{task:?} missing:\n{help}");
        }
        for sub in cli().get_subcommands() {
            assert!(
                help.contains(&format!("  {} ", sub.get_name())),
                "{} missing:\n{help}",
                sub.get_name()
            );
        }
        // the groups come in task order, each command once
        let run = help.find(Task::Run.heading()).unwrap();
        let analyse = help.find(Task::Analyse.heading()).unwrap();
        assert!(run < analyse);
        assert_eq!(help.matches("  run-matrix ").count(), 1, "{help}");
    }

    #[test]
    fn counts_below_one_are_refused() {
        assert!(at_least_one("0").is_err());
        assert!(at_least_one("-1").is_err());
        assert_eq!(at_least_one("3"), Ok(3));
    }
}
