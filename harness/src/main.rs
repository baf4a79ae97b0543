//! `hopbench`: a reproducible benchmark harness for retrieval strategies (the command line;
//! the work is in the library's modules).

use hopbench::out;
use hopbench::{bench, compare, data, fsx, lock, matrix, plot, report, spend, summary};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use hopbench::campaign::select;
use hopbench::cli::{BenchCommand, Cli, Command};
use hopbench::matrix::CellOutcome;
use hopbench::settings::{default_datasets, Settings};

fn write_json<T: serde::Serialize>(path: Option<&std::path::Path>, value: &T) -> Result<()> {
    if let Some(p) = path {
        let text = serde_json::to_string_pretty(value).expect("serialisable") + "\n";
        fsx::write_atomic(p, text.as_bytes())?;
    }
    Ok(())
}

/// `hopbench serving-parity`: prints the markdown tables and writes the files.
#[cfg(feature = "qdrant")]
fn serving_parity(
    campaign: &hopbench::campaign::Campaign,
    s: &Settings,
    a: &hopbench::cli::ParityArgs,
) -> Result<()> {
    let name = &select(&a.dataset, campaign.datasets.keys(), "dataset")?[0];
    let export = bench::open(campaign, name, &s.data)?;
    let build = hopbench_datasets::hnsw::HnswSettings {
        m: a.m,
        ef_construct: a.ef_construct,
        on_disk: a.on_disk,
    };
    let p = hopbench::parity::run(
        campaign, name, &export, &a.leg, &a.hnsw_ef, build, a.repeat, &s.data,
    )?;
    out!("{}", hopbench::parity::markdown(&p).trim_end());
    let dir = a.out.clone().unwrap_or_else(|| s.results.join("parity"));
    let mut paths = hopbench::parity::write(&dir, &p)?;
    paths.extend(hopbench::parity_plot::write(
        &dir,
        &hopbench::parity::stem(&p),
        &p,
    )?);
    for path in paths {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

#[cfg(not(feature = "qdrant"))]
fn serving_parity(
    _: &hopbench::campaign::Campaign,
    _: &Settings,
    _: &hopbench::cli::ParityArgs,
) -> Result<()> {
    anyhow::bail!(
        "serving-parity: {}",
        hopbench_legs::engine::qdrant::NOT_BUILT
    )
}

/// `hopbench bench generate`: needs no campaign, data or results directory.
fn generate_command(a: &hopbench::cli::BenchGenerateArgs) -> Result<ExitCode> {
    let seed = a
        .seed
        .unwrap_or_else(|| hopbench_datasets::synthetic::SyntheticConfig::default().seed);
    let threads = std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset".into());
    let r = hopbench::bench_generate::generate(&a.passages, a.distractors_per_entity, seed)?;
    for t in &r.results {
        let peak = match (t.peak_rss_mib, t.peak_reset) {
            (Some(p), true) => format!("peak RSS {p:.0} MiB"),
            (Some(p), false) => format!("peak RSS so far {p:.0} MiB"),
            (None, _) => "peak RSS unknown".into(),
        };
        out!(
            "{:>9} passages ({} entities, {} questions): {:.2} s, {:.1} MiB of text, {peak} (RAYON_NUM_THREADS={threads})",
            t.passages, t.entities, t.questions, t.seconds, t.text_bytes as f64 / (1024.0 * 1024.0)
        );
    }
    if let Some(k) = r.growth_exponent {
        out!("growth exponent (log-log slope of time on passages): {k:.3}");
    }
    write_json(a.json.as_deref(), &r)?;
    Ok(ExitCode::SUCCESS)
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
    if let Command::Eval(a) = &cli.command {
        return eval_command(a);
    }
    if let Command::Bench(BenchCommand::Generate(a)) = &cli.command {
        return generate_command(a);
    }
    if let Command::Bench(BenchCommand::Scale(a)) = &cli.command {
        let r = hopbench::bench_scale::run(
            &a.passages,
            &a.results,
            a.queries,
            a.repeat,
            a.threads,
            !a.no_matrix,
        )?;
        out!("{}", hopbench::bench_scale::markdown(&r).trim_end());
        write_json(a.json.as_deref(), &r)?;
        return Ok(ExitCode::SUCCESS);
    }
    let settings = Settings::resolve(&cli.command.overrides())?;
    let s = &settings;
    let campaign = &s.campaign;
    // the commands that write the results directory hold its lock until they return
    // (the parts of a sharded run hold it shared: they write disjoint files)
    let mode = |shard: Option<hopbench::shard::Shard>| match shard {
        Some(_) => lock::Mode::Shared,
        None => lock::Mode::Exclusive,
    };
    let writer = match &cli.command {
        Command::RunMatrix(a) if !a.show_settings => Some((&a.common, mode(a.shard))),
        Command::Prepare(a) => Some((&a.common, mode(a.shard))),
        Command::Bench(BenchCommand::Latency(a)) => Some((&a.common, lock::Mode::Exclusive)),
        Command::ServingParity(a) => Some((&a.common, lock::Mode::Exclusive)),
        Command::Bench(BenchCommand::Assembly(a)) => Some((&a.common, lock::Mode::Exclusive)),
        Command::Bench(BenchCommand::Prepare(a)) => Some((&a.common, lock::Mode::Exclusive)),
        _ => None,
    };
    let _lock = writer
        .map(|(c, mode)| lock::ResultsLock::take(&s.results, !c.no_wait, mode))
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
            // a part of a sharded run writes neither the matrix nor the report
            if !a.no_report && m.shard.is_none() {
                write_report(s, &m.results.join("report"))?;
            }
        }
        Command::Prepare(a) if a.shard.is_some() => {
            let shard = a.shard.expect("matched");
            let data = data::DataSettings {
                cache_part: Some(format!("embed-{}", shard.label())),
                ..s.data.clone()
            };
            for name in default_datasets(&a.datasets, campaign, s.have_data())? {
                match data::embed_part(campaign, &name, &data, shard, !a.quiet)? {
                    data::PartOutcome::ExportReady => {
                        out!("{name}: part {shard}: export ready, nothing to embed")
                    }
                    data::PartOutcome::Embedded {
                        part_texts,
                        embedded,
                    } => out!(
                        "{name}: part {shard}: {part_texts} texts, {embedded} embedded now, {} cached",
                        part_texts - embedded
                    ),
                    data::PartOutcome::Missing(reason) => out!("{name}: missing: {reason}"),
                }
            }
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
                            hopbench_datasets::embed::describe_model(&e.manifest.model_id), e.dir.display()
                        );
                    }
                    data::DatasetState::Missing(reason) => out!("{name}: missing: {reason}"),
                }
            }
        }
        Command::Slurm(a) => return slurm_command(s, &a),
        Command::Report(a) => {
            let out = a.out.clone().unwrap_or_else(|| s.results.join("report"));
            write_report(s, &out)?;
        }
        Command::Status(_) => {
            let m = s
                .matrix
                .as_ref()
                .expect("status resolves the run's settings");
            let cells = hopbench::status::cells(campaign, m)?;
            out!("{}", hopbench::status::table(&cells));
            if cells.iter().any(|(_, _, st)| st.pending()) {
                return Ok(ExitCode::from(1));
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
            if a.dataset_b.is_some() {
                anyhow::bail!("--dataset-b applies to compare-curves only");
            }
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
            let c = match &a.dataset_b {
                None => spend::compare(&s.results, &a.dataset, &a.a, &a.b, &campaign.stats)?,
                Some(db) => spend::compare_across(
                    &s.results,
                    (&a.dataset, &a.a),
                    (db, &a.b),
                    &campaign.stats,
                )?,
            };
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
                    None,
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
        Command::ServingParity(a) => serving_parity(campaign, s, &a)?,
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
            let names = select(&a.datasets, campaign.datasets.keys(), "dataset")?;
            if a.vectors.is_some() && names.len() > 1 {
                anyhow::bail!("--vectors takes one dataset (got {})", names.join(","));
            }
            let opts = bench::PrepareOptions {
                sample: a.sample,
                longest: a.longest,
                repeat: a.repeat,
                vectors: a.vectors.clone(),
            };
            for name in names {
                let r = bench::prepare(campaign, &name, &s.data, &opts)?;
                out!(
                    "{}: {} passages; read {:.2} s; tokenise+BM25 {:.0} chunks/s; embed {:.1} passages/s ({} {}passages, {:.1} tokens each, median of {} passes, {}, RAYON_NUM_THREADS={threads})",
                    r.dataset, r.passages, r.read_s, r.bm25_chunks_per_s, r.embed_passages_per_s, r.embedded,
                    if r.longest { "longest " } else { "" }, r.embed_tokens_mean, r.embed_passes_s.len(),
                    hopbench_datasets::embed::describe_model(&r.model_id)
                );
                all.push(r);
            }
            write_json(a.json.as_deref(), &all)?;
        }
        Command::Datasets(_) => {
            out!("campaign: {}", s.origin);
            if hopbench_datasets::embed::is_hashing_model(&s.data.model_dir) {
                out!(
                    "model: {}",
                    hopbench_datasets::embed::describe_model(
                        hopbench_datasets::embed::HASHING_MODEL_ID
                    )
                );
            } else {
                out!("model: {}", s.data.model_dir.display());
            }
            for (name, spec) in &campaign.datasets {
                let status = data::availability(campaign, name, s.data.data_dir.as_deref());
                // what it indexes per passage (validated when the campaign loaded)
                let indexed = hopbench::protocol::label(campaign.protocol(name), None);
                let own = spec
                    .vectors
                    .as_ref()
                    .map(|v| format!("; its own vectors, model `{}`", v.model))
                    .unwrap_or_default();
                out!(
                    "{name:<28} {:<10} {indexed:<11} {status}{own}",
                    spec.format.name().to_string(),
                );
            }
        }
        Command::Eval(_) => unreachable!("eval runs before any settings are resolved"),
        Command::Bench(BenchCommand::Generate(_) | BenchCommand::Scale(_)) => {
            unreachable!("bench generate and bench scale run before any settings are resolved")
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

/// `hopbench eval`: needs no campaign (one given lends its `recall_k` and `stats`), takes no
/// lock and writes only `--per-query`.
fn eval_command(a: &hopbench::cli::EvalArgs) -> Result<ExitCode> {
    use hopbench::campaign::{Campaign, CiMode, EMBEDDED};
    use hopbench::cli::{EvalOutput, UnknownIdsArg};
    use hopbench::eval_cmd;
    let campaign = match &a.campaign {
        Some(p) => Campaign::load(Some(p))?.0,
        None => Campaign::parse(EMBEDDED, "<embedded campaign.yaml>")?,
    };
    let mut stats = campaign.stats.clone();
    if a.no_ci {
        stats.ci = CiMode::Off;
    }
    let options = eval_cmd::EvalOptions {
        run: a.run.clone(),
        format: a.run_format.map(|f| f.format()),
        qrels: a.qrels.clone(),
        drop_unknown: a.unknown_ids == UnknownIdsArg::Drop,
        recall_k: campaign.recall_k.clone(),
        stats,
    };
    let (report, values) = eval_cmd::run(&options)?;
    if let Some(path) = &a.per_query {
        eval_cmd::write_per_query(path, &values)?;
    }
    match a.format {
        EvalOutput::Table => out!("{}", eval_cmd::table(&report).trim_end()),
        EvalOutput::Tsv => out!("{}", eval_cmd::tsv(&report).trim_end()),
        EvalOutput::Json => out!(
            "{}",
            serde_json::to_string_pretty(&report).expect("the report serialises")
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// `hopbench slurm`: plan, write, and optionally submit and wait for the job chain.
fn slurm_command(s: &Settings, a: &hopbench::cli::SlurmArgs) -> Result<ExitCode> {
    use hopbench::slurm;
    let m = s
        .matrix
        .as_ref()
        .expect("slurm resolves the run's settings");
    if a.wait && !a.submit {
        anyhow::bail!("--wait needs --submit");
    }
    let cells = if a.only_missing {
        let pending: Vec<(String, String)> = hopbench::status::cells(&s.campaign, m)?
            .into_iter()
            .filter(|(_, _, st)| st.pending())
            .map(|(d, l, _)| (d, l))
            .collect();
        if pending.is_empty() {
            out!("every cell is done: nothing to submit");
            return Ok(ExitCode::SUCCESS);
        }
        Some(pending)
    } else {
        None
    };
    let absolute = |p: &std::path::Path| -> Result<std::path::PathBuf> {
        Ok(if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir()?.join(p)
        })
    };
    let plan = slurm::SlurmPlan {
        exe: std::env::current_exe().context("cannot find the hopbench executable")?,
        workdir: std::env::current_dir().context("cannot read the working directory")?,
        campaign: a.common.campaign.as_deref().map(absolute).transpose()?,
        results: absolute(&s.results)?,
        data_dir: s.data.data_dir.as_deref().map(absolute).transpose()?,
        // the hashing embedder's name is no path: it stays as written
        model: Some(
            if hopbench_datasets::embed::is_hashing_model(&s.data.model_dir) {
                s.data.model_dir.clone()
            } else {
                absolute(&s.data.model_dir)?
            },
        ),
        datasets: m.datasets.clone(),
        legs: m.legs.clone(),
        cells,
        array: a.array,
        cpus_per_task: a.cpus_per_task,
        partition: a.partition.clone(),
        time: a.time.clone(),
        mem: a.mem.clone(),
        extra: a.extra.clone(),
        embed: !a.no_embed,
    };
    if a.dry_run {
        let scripts = slurm::scripts(&plan)?;
        for (name, text) in [
            ("embed.sh", scripts.embed.as_deref()),
            ("cells.sh", Some(scripts.cells.as_str())),
            ("collect.sh", Some(scripts.collect.as_str())),
        ] {
            if let Some(text) = text {
                out!("# ---- {name}\n{}", text.trim_end());
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let paths = slurm::write_scripts(&plan, &plan.slurm_dir())?;
    for p in &paths {
        out!("wrote {}", p.display());
    }
    if !a.submit {
        return Ok(ExitCode::SUCCESS);
    }
    let bins = slurm::SlurmBins::default();
    let jobs = slurm::submit(&paths, &bins)?;
    out!(
        "submitted: embed {}, cells {}, collect {}",
        jobs.embed.as_deref().unwrap_or("-"),
        jobs.cells,
        jobs.collect
    );
    if !a.wait {
        return Ok(ExitCode::SUCCESS);
    }
    let outcome = slurm::wait_for_collect(
        &bins,
        &jobs,
        &plan.status_file(),
        &slurm::WaitOptions::default(),
    )?;
    out!("{outcome}");
    Ok(if outcome.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Writes the HTML report of the results directory to `out` and says where it is.
fn write_report(s: &Settings, out: &std::path::Path) -> Result<()> {
    let compare: Vec<(String, String)> = s
        .campaign
        .report
        .compare
        .iter()
        .map(|[a, b]| (a.clone(), b.clone()))
        .collect();
    let started = std::time::Instant::now();
    let w = hopbench::html::write_report(&hopbench::html::ReportOptions {
        results: &s.results,
        out,
        campaign: &s.campaign,
        compare: &compare,
    })?;
    eprintln!(
        "report: {} ({} files, {} KB, {:.2} s)",
        w.index.display(),
        w.files,
        w.bytes / 1024,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
