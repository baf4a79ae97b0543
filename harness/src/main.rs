//! `hopbench`: a reproducible benchmark harness for retrieval strategies.
//!
//! The binary is a thin layer: clap parses arguments (`cli`), `settings` resolves them with the
//! campaign and the environment into one [`settings::Settings`], once, and the modules below do
//! the work, reading it by reference and passing plain structs:
//! `campaign` (typed campaign.yaml) -> `data` (raw files -> export) -> `matrix` (legs x queries)
//! -> `evaluate`/`metrics` -> `summary` (cells) -> `report`, `compare`, `trec`.

/// `println!` that ends the process quietly when stdout is closed (`hopbench ... | head`), as
/// command-line tools should, instead of panicking on the broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = writeln!(stdout, $($arg)*).and_then(|_| stdout.flush()) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            panic!("cannot write to stdout: {e}");
        }
    }};
}

mod bench;
mod breakdown;
mod cache;
mod campaign;
mod cli;
mod compare;
mod contract;
mod curve;
mod data;
mod evaluate;
mod fsx;
mod leg_build;
mod lock;
mod matrix;
mod metrics;
mod plot;
mod report;
mod settings;
mod spend;
mod stats;
mod summary;
mod trec;

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use crate::campaign::select;
use crate::cli::{BenchCommand, Cli, Command};
use crate::matrix::CellOutcome;
use crate::settings::{default_datasets, Settings};

fn write_json<T: serde::Serialize>(path: Option<&std::path::Path>, value: &T) -> Result<()> {
    if let Some(p) = path {
        let text = serde_json::to_string_pretty(value).expect("serialisable") + "\n";
        fsx::write_atomic(p, text.as_bytes())?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hopbench: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let settings = Settings::resolve(&cli.command.overrides())?;
    let s = &settings;
    let campaign = &s.campaign;
    // the commands that write the results directory hold its lock until they return
    let writer = match &cli.command {
        Command::RunMatrix(a) if !a.show_settings => Some(&a.common),
        Command::Prepare(a) => Some(&a.common),
        Command::Bench(BenchCommand::Latency(a)) => Some(&a.common),
        Command::Bench(BenchCommand::Assembly(a)) => Some(&a.common),
        Command::Bench(BenchCommand::Prepare(a)) => Some(&a.common),
        _ => None,
    };
    let _lock = writer
        .map(|c| lock::ResultsLock::acquire(&s.results, !c.no_wait))
        .transpose()?;
    match cli.command {
        Command::RunMatrix(a) => {
            if a.show_settings {
                out!("{}", s.to_yaml().trim_end());
                return Ok(ExitCode::SUCCESS);
            }
            let m = s.matrix.as_ref().expect("run-matrix resolves its settings");
            let started = std::time::Instant::now();
            let cells = matrix::run(campaign, m)?;
            let count = |o: CellOutcome| cells.iter().filter(|(_, x)| *x == o).count();
            eprintln!(
                "{} cells: {} computed, {} cached, {} missing inputs; {:.2} s; matrix written to {}",
                cells.len(),
                count(CellOutcome::Computed),
                count(CellOutcome::Cached),
                count(CellOutcome::Missing),
                started.elapsed().as_secs_f64(),
                m.results.join("matrix.md").display()
            );
        }
        Command::Prepare(a) => {
            for name in default_datasets(&a.datasets, campaign, s.have_data())? {
                match data::open(campaign, &name, &s.data, !a.quiet)? {
                    data::DatasetState::Ready(e) => {
                        let st = &e.manifest.stats;
                        out!(
                            "{name}: {} chunks, {} documents, {} queries, {} gold chunks, {} with chain, {} with header; {} BM25 terms; \
                             KG: {} entities, {} edges, {} hyperedges, {} communities, {} chunks mentioning another entity; model {}; export {}",
                            st.chunks, st.documents, st.queries, st.gold_chunks, st.queries_with_chain, st.chunks_with_header, st.bm25_terms,
                            st.kg.entities, st.kg.edges, st.kg.hyperedges, st.kg.communities, st.kg.chunks_with_mentions,
                            e.manifest.model_id, e.dir.display()
                        );
                    }
                    data::DatasetState::Missing(reason) => out!("{name}: missing: {reason}"),
                }
            }
        }
        Command::Compare(a) => {
            for d in [&a.a, &a.b] {
                if !d.join("cells").is_dir() {
                    anyhow::bail!(
                        "{}: not a results directory (no cells/ inside)",
                        d.display()
                    );
                }
            }
            let c = compare::compare(&a.a, &a.b, &campaign.stats)?;
            out!("{}", compare::table(&c));
            if let Some(path) = a.json {
                let text = serde_json::to_string_pretty(&c).expect("comparison serialises") + "\n";
                fsx::write_atomic(&path, text.as_bytes())
                    .with_context(|| format!("{}", path.display()))?;
            }
        }
        Command::CompareLegs(a) => {
            let (results, stats) = (&s.results, &campaign.stats);
            let c = match &a.by {
                Some(by) => compare::compare_legs_by(results, &a.dataset, &a.a, &a.b, by, stats)?,
                None => compare::compare_legs(results, &a.dataset, &a.a, &a.b, stats)?,
            };
            out!("{}", compare::table(&c));
            write_json(a.json.as_deref(), &c)?;
        }
        Command::CompareCurves(a) => {
            if a.by.is_some() {
                anyhow::bail!("--by applies to compare-legs only");
            }
            let c = spend::compare(&s.results, &a.dataset, &a.a, &a.b, &campaign.stats)?;
            out!("{}", spend::table(&c));
            write_json(a.json.as_deref(), &c)?;
        }
        Command::Breakdown(a) => {
            let mut found = 0;
            for leg in select(&a.legs, campaign.legs.keys(), "leg")? {
                let path = summary::CellPaths::new(&s.results, &a.dataset, &leg).summary;
                if !path.exists() {
                    continue;
                }
                found += 1;
                out!("{}", report::breakdown_text(&summary::read_summary(&path)?));
            }
            if found == 0 {
                anyhow::bail!(
                    "no cells of dataset `{}` under {} (run run-matrix first)",
                    a.dataset,
                    s.results.join("cells").display()
                );
            }
        }
        Command::Plot(a) => {
            let out = a.out.clone().unwrap_or_else(|| s.results.join("plots"));
            let all = plot::collect(&s.results)?;
            if all.is_empty() {
                anyhow::bail!(
                    "{}: no budget curves (run-matrix writes them for selecting legs)",
                    s.results.join("curves").display()
                );
            }
            let wanted: Vec<String> = all.iter().map(|(d, _)| d.clone()).collect();
            let wanted = select(&a.datasets, wanted.iter(), "dataset with curves")?;
            for (dataset, curves) in all.iter().filter(|(d, _)| wanted.contains(d)) {
                for p in plot::write(&out, dataset, curves)? {
                    out!("{}", p.display());
                }
            }
        }
        Command::Bench(BenchCommand::Latency(a)) => {
            let legs = select(&a.legs, campaign.legs.keys(), "leg")?;
            let from = match &a.queries_from {
                Some(d) => Some(bench::open(
                    campaign,
                    &select(d, campaign.datasets.keys(), "dataset")?[0],
                    &s.data,
                )?),
                None => None,
            };
            let mut all = Vec::new();
            for name in select(&a.datasets, campaign.datasets.keys(), "dataset")? {
                let export = bench::open(campaign, &name, &s.data)?;
                for r in bench::latency(
                    campaign,
                    &name,
                    &export,
                    from.as_deref(),
                    &legs,
                    a.repeat.max(1),
                    a.top,
                    &s.data,
                )? {
                    out!(
                        "{:<24} {:<20} {:>6} chunks {:>5} queries x{:<3} median {:>8.4} ms  p95 {:>8.4} ms  {:>10.0} q/s",
                        r.dataset, r.leg, r.chunks, r.queries, r.repeat, r.median_ms, r.p95_ms, r.qps
                    );
                    all.push(r);
                }
            }
            write_json(a.json.as_deref(), &all)?;
        }
        Command::Bench(BenchCommand::Assembly(a)) => {
            let mut all = Vec::new();
            for name in select(&a.datasets, campaign.datasets.keys(), "dataset")? {
                let export = bench::open(campaign, &name, &s.data)?;
                let r =
                    bench::assembly(campaign, &name, &export, &a.leg, a.repeat.max(1), &s.data)?;
                out!(
                    "{:<22} {:>4} turns (mean {:.1} per conversation) x{:<3} assemble median {:.4} ms p95 {:.4} ms | {} retrieve median {:.4} ms p95 {:.4} ms | conv_last_turn median {:.4} ms p95 {:.4} ms",
                    r.dataset, r.queries, r.turns_mean, r.repeat, r.assemble_ms[0], r.assemble_ms[1],
                    r.leg, r.multi_horizon_ms[0], r.multi_horizon_ms[1], r.last_turn_ms[0], r.last_turn_ms[1]
                );
                all.push(r);
            }
            write_json(a.json.as_deref(), &all)?;
        }
        Command::Bench(BenchCommand::Prepare(a)) => {
            let threads =
                std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset (all cores)".into());
            let mut all = Vec::new();
            for name in select(&a.datasets, campaign.datasets.keys(), "dataset")? {
                let r = bench::prepare(campaign, &name, &s.data, a.sample)?;
                out!(
                    "{}: {} passages; read {:.2} s; tokenise+BM25 {:.0} chunks/s; embed {:.1} passages/s ({} passages, {}, RAYON_NUM_THREADS={threads})",
                    r.dataset, r.passages, r.read_s, r.bm25_chunks_per_s, r.embed_passages_per_s, r.embedded, r.model_id
                );
                all.push(r);
            }
            write_json(a.json.as_deref(), &all)?;
        }
        Command::Datasets(_) => {
            out!("campaign: {}", s.origin);
            for (name, spec) in &campaign.datasets {
                let status = data::availability(campaign, name, s.data.data_dir.as_deref());
                out!(
                    "{name:<28} {:<10} {}",
                    spec.format.name().to_string(),
                    status
                );
            }
        }
        Command::Legs(_) => {
            out!("campaign: {}", s.origin);
            for (name, spec) in &campaign.legs {
                out!(
                    "{name:<24} {}",
                    serde_json::to_string(spec).expect("spec serialises")
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
