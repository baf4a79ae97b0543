//! `hopbench bench scale`: what a prepare and a query cost as the corpus grows to a million
//! chunks, measured on generated worlds with the non-semantic `hashing-384` embedder (so the
//! benchmark measures the harness, not a model).
//!
//! For each size the world of [`crate::bench::generate::config_for`] is prepared through the
//! ordinary path into `<results>/exports/scale-<n>/` (each stage timed with its own peak
//! resident set: [`hopbench_datasets::stages`]), with the optional parts its legs read (none:
//! no scale leg walks the similarity graph); with the `qdrant` feature the dense engine's HNSW
//! shard is built (stage `dense_shard`); then every leg is timed one query at a time on one
//! thread over the first `--queries` questions. Finally the whole scale matrix runs as
//! `hopbench run-matrix` twice in a child process (the same binary): once to compute every
//! cell, once more to show what a cached rerun costs. Growth exponents are least-squares
//! slopes of log(time) on log(chunks).
//!
//! The scale campaign is written to `<results>/scale-campaign.yaml`, so any row can be rerun
//! or inspected with the ordinary commands.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use hopbench_datasets::stages::{self, Stage};
use serde::Serialize;

use crate::bench::generate::{config_for, log_log_slope};
use crate::pipeline::campaign::Campaign;
use crate::pipeline::data::DataSettings;

/// Whether this build serves the dense side through Qdrant (the `_qdrant` legs and the
/// `dense_shard` stage are measured only then).
fn served() -> bool {
    use hopbench_legs::engine::EngineKind;
    hopbench_legs::engine::QdrantSpec::BUILT.is_ok()
}

/// The settings of the quantised served legs: int8 walked in RAM, the float vectors on disk
/// rescoring four candidates per hit (what a corpus too large for its float vectors in RAM is
/// served with).
const INT8: &str = "{engine: qdrant, quantization: int8, oversampling: 4, on_disk: true}";

/// Every leg the benchmark can time, as its campaign entry (`name: {...}`; a `{}` stands for
/// [`INT8`]), and whether it is served through Qdrant.
const LEGS: &[(&str, bool)] = &[
    ("dense: {kind: dense}", false),
    ("lexical: {kind: lexical}", false),
    ("bm25: {kind: bm25}", false),
    (
        "graph_rescue: {kind: graph_rescue, graph_mode: auto}",
        false,
    ),
    ("dense_qdrant: {kind: dense, dense: {engine: qdrant}}", true),
    (
        "graph_rescue_qdrant: {kind: graph_rescue, graph_mode: auto, dense: {engine: qdrant}}",
        true,
    ),
    ("dense_qdrant_int8: {kind: dense, dense: {}}", true),
    (
        "graph_rescue_qdrant_int8: {kind: graph_rescue, graph_mode: auto, dense: {}}",
        true,
    ),
];

/// The name of a [`LEGS`] entry.
fn leg_name(entry: &str) -> &str {
    entry.split_once(':').map_or(entry, |(name, _)| name)
}

/// Timed unless `--legs` says otherwise: every leg but the quantised ones, the served ones
/// where this build serves.
pub fn default_legs() -> Vec<String> {
    LEGS.iter()
        .filter(|&&(entry, q)| (!q || served()) && !leg_name(entry).ends_with("_int8"))
        .map(|&(entry, _)| leg_name(entry).to_string())
        .collect()
}

/// Whether leg `name` is served through Qdrant.
fn is_served(name: &str) -> bool {
    LEGS.iter().any(|&(entry, q)| leg_name(entry) == name && q)
}

/// The campaign's `legs:` block for `legs` (each a name of [`LEGS`]; one served through Qdrant
/// only where this build serves), the served legs' shards in parts of at most `part_points`
/// points where it is given.
pub fn legs_yaml(legs: &[String], part_points: Option<usize>) -> Result<String> {
    let mut s = String::new();
    for name in legs {
        let Some(&(entry, q)) = LEGS.iter().find(|&&(entry, _)| leg_name(entry) == name) else {
            let known: Vec<&str> = LEGS.iter().map(|&(entry, _)| leg_name(entry)).collect();
            bail!(
                "--legs: no leg `{name}`; bench scale times {}",
                known.join(", ")
            );
        };
        if q && !served() {
            bail!(
                "--legs: `{name}` is served through Qdrant, which this build lacks (the \
                 `qdrant` feature)"
            );
        }
        let mut entry = entry.replace("{}", INT8);
        if let Some(n) = part_points.filter(|_| q) {
            entry = entry.replace(
                "engine: qdrant",
                &format!("engine: qdrant, part_points: {n}"),
            );
        }
        s += &format!("  {entry}\n");
    }
    if s.is_empty() {
        bail!("--legs: name at least one leg");
    }
    Ok(s)
}

/// The scale campaign for `sizes` (passages) and `legs`, writing into `results`.
pub fn campaign_yaml(
    results: &Path,
    sizes: &[usize],
    seed: u64,
    legs: &[String],
    part_points: Option<usize>,
) -> Result<String> {
    let mut s = format!(
        "# written by `hopbench bench scale`\nresults: {}\nmodel: hashing-384\ndatasets:\n",
        serde_json::to_string(&results.display().to_string()).expect("a string")
    );
    for &n in sizes {
        let cfg = config_for(n, 1, seed);
        s += &format!(
            "  scale-{n}:\n    format: synthetic\n    synthetic: {}\n",
            serde_json::to_string(&cfg).expect("a synthetic config serialises")
        );
    }
    Ok(s + "legs:\n" + &legs_yaml(legs, part_points)?)
}

/// One leg at one size.
#[derive(Debug, Serialize)]
pub struct LegTiming {
    /// Leg.
    pub leg: String,
    /// Median per-query latency (retrieve + select), ms.
    pub median_ms: f64,
    /// p95, ms.
    pub p95_ms: f64,
}

/// One size.
#[derive(Debug, Serialize)]
pub struct SizeReport {
    /// Passages asked for.
    pub passages: usize,
    /// Chunks in the export.
    pub chunks: usize,
    /// Questions in the export.
    pub questions: usize,
    /// Questions each leg was timed on.
    pub timed_queries: usize,
    /// The prepare's stages in order (time and peak resident set each).
    pub stages: Vec<Stage>,
    /// Wall time of the whole prepare, seconds.
    pub prepare_secs: f64,
    /// Peak resident set over the prepare, MiB (the largest stage peak).
    pub prepare_peak_rss_mib: Option<f64>,
    /// Per leg, one thread.
    pub legs: Vec<LegTiming>,
}

/// The whole benchmark.
#[derive(Debug, Serialize)]
pub struct ScaleReport {
    /// Rayon threads of the prepare.
    pub threads: usize,
    /// Per size, in the order asked.
    pub sizes: Vec<SizeReport>,
    /// Growth exponent of each stage's time (with two sizes or more).
    pub stage_exponents: BTreeMap<String, f64>,
    /// Growth exponent of each leg's median latency.
    pub leg_exponents: BTreeMap<String, f64>,
    /// `run-matrix` over every size and leg (`--limit` queries), computing every cell, s.
    pub matrix_secs: Option<f64>,
    /// The same again, every cell cached, s.
    pub cached_matrix_secs: Option<f64>,
    /// Cells of the matrix.
    pub matrix_cells: usize,
}

/// Runs the benchmark over `legs` (names of [`LEGS`]). `threads` is the prepare's and the
/// matrix's thread count; latencies are one query at a time on the calling thread.
#[allow(clippy::too_many_arguments)]
pub fn run(
    sizes: &[usize],
    legs: &[String],
    results: &Path,
    queries: usize,
    repeat: usize,
    threads: usize,
    matrix: bool,
    part_points: Option<usize>,
) -> Result<ScaleReport> {
    if sizes.is_empty() {
        bail!("--passages: give at least one size");
    }
    // the same bound as a run's thread count (the flag is this command's `--threads`)
    crate::pipeline::contract::pinned_threads(Some(threads), None).map_err(anyhow::Error::msg)?;
    let seed = hopbench_datasets::synthetic::SyntheticConfig::default().seed;
    let yaml = campaign_yaml(results, sizes, seed, legs, part_points)?;
    std::fs::create_dir_all(results).with_context(|| format!("creating {}", results.display()))?;
    let campaign_path = results.join("scale-campaign.yaml");
    crate::store::fsx::write_atomic(&campaign_path, yaml.as_bytes())?;
    let campaign = Campaign::parse(&yaml, &campaign_path.display().to_string())?;
    let data = DataSettings {
        data_dir: None,
        exports: results.join("exports"),
        embeddings: results.join("embeddings"),
        model_dir: PathBuf::from(hopbench_datasets::embed::HASHING_MODEL),
        prepare: campaign.prepare.clone(),
        cache_part: None,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("building the thread pool")?;
    let legs: Vec<String> = campaign.legs.keys().cloned().collect();
    let mut out = Vec::new();
    for &n in sizes {
        let name = format!("scale-{n}");
        stages::take();
        let t = Instant::now();
        let parts = campaign.parts_read(legs.iter().map(String::as_str));
        // the legs are timed on the first `queries` questions: only their vectors are held
        let timed =
            |all: &[hopbench_datasets::export::QueryRecord]| (0..queries.min(all.len())).collect();
        let export = pool
            .install(|| crate::bench::open_keeping(&campaign, &name, &data, parts, Some(&timed)))?;
        // each served leg's shard is built (or opened) here, so its cost is a stage of its own
        let served_legs: Vec<&String> = legs.iter().filter(|l| is_served(l)).collect();
        if !served_legs.is_empty() {
            pool.install(|| {
                stages::timed("dense_shard", || {
                    // built as the timing below builds them, so the shard is the one it opens
                    served_legs.iter().try_for_each(|&name| {
                        crate::pipeline::leg_build::build(
                            &campaign.legs[name],
                            name,
                            &export,
                            &data,
                        )?
                        .map(drop)
                        .with_context(|| format!("leg {name} on {}", export.manifest.dataset))
                    })
                })
            })?;
        }
        let prepare_secs = t.elapsed().as_secs_f64();
        let stage_log = stages::take();
        let prepare_peak_rss_mib = stage_log
            .iter()
            .filter_map(|s| s.peak_rss_mib)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        let timed = crate::bench::latency(
            &campaign,
            &name,
            &export,
            None,
            &legs,
            repeat,
            0,
            Some(queries),
            &data,
        )?;
        let row = SizeReport {
            passages: n,
            chunks: export.chunks.len(),
            questions: export.queries.len(),
            timed_queries: queries.min(export.queries.len()),
            stages: stage_log,
            prepare_secs,
            prepare_peak_rss_mib,
            legs: timed
                .into_iter()
                .map(|l| LegTiming {
                    leg: l.leg,
                    median_ms: l.median_ms,
                    p95_ms: l.p95_ms,
                })
                .collect(),
        };
        eprintln!("{}", size_line(&row));
        out.push(row);
    }
    let (mut matrix_secs, mut cached_matrix_secs) = (None, None);
    if matrix {
        matrix_secs = Some(run_matrix(&campaign_path, results, threads, queries)?);
        cached_matrix_secs = Some(run_matrix(&campaign_path, results, threads, queries)?);
    }
    Ok(ScaleReport {
        threads,
        stage_exponents: exponents(&out, |r| {
            r.stages
                .iter()
                .map(|s| (s.name.to_string(), s.secs))
                .collect()
        }),
        leg_exponents: exponents(&out, |r| {
            r.legs
                .iter()
                .map(|l| (l.leg.clone(), l.median_ms))
                .collect()
        }),
        matrix_cells: sizes.len() * legs.len(),
        sizes: out,
        matrix_secs,
        cached_matrix_secs,
    })
}

/// The least-squares growth exponent of each named value against chunks, where it was measured
/// at two sizes or more (a stage that takes no measurable time is left out).
fn exponents(
    rows: &[SizeReport],
    values: impl Fn(&SizeReport) -> Vec<(String, f64)>,
) -> BTreeMap<String, f64> {
    let mut points: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        for (name, v) in values(r) {
            if v > 0.0 {
                points.entry(name).or_default().push((r.chunks as f64, v));
            }
        }
    }
    points
        .into_iter()
        .filter_map(|(name, p)| log_log_slope(&p).map(|s| (name, s)))
        .collect()
}

/// `hopbench run-matrix` over the scale campaign in a child process; its wall time.
fn run_matrix(campaign: &Path, results: &Path, threads: usize, limit: usize) -> Result<f64> {
    let exe = std::env::current_exe().context("locating the hopbench binary")?;
    let t = Instant::now();
    let status = std::process::Command::new(exe)
        .args([
            "run-matrix",
            "--quiet",
            "--no-curves",
            "--datasets",
            "all",
            "--legs",
            "all",
        ])
        .arg("--campaign")
        .arg(campaign)
        .arg("--results")
        .arg(results)
        .args([
            "--threads",
            &threads.to_string(),
            "--limit",
            &limit.to_string(),
        ])
        .status()
        .context("starting run-matrix")?;
    let secs = t.elapsed().as_secs_f64();
    if !status.success() {
        bail!("run-matrix over {} failed ({status})", campaign.display());
    }
    Ok(secs)
}

/// One size as a line of text.
pub fn size_line(r: &SizeReport) -> String {
    let mut s = format!(
        "{} chunks, {} questions: prepare {:.2} s, peak {} |",
        r.chunks,
        r.questions,
        r.prepare_secs,
        mib(r.prepare_peak_rss_mib)
    );
    for st in &r.stages {
        s += &format!(" {} {:.2} s ({})", st.name, st.secs, mib(st.peak_rss_mib));
    }
    s += &format!(" | {} queries, one thread:", r.timed_queries);
    for l in &r.legs {
        s += &format!(" {} {:.3} / {:.3} ms", l.leg, l.median_ms, l.p95_ms);
    }
    s
}

fn mib(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |m| format!("{m:.0} MiB"))
}

/// The report as markdown tables (stages, legs, exponents, matrix).
pub fn markdown(r: &ScaleReport) -> String {
    let mut names: Vec<&str> = Vec::new();
    for row in &r.sizes {
        for st in &row.stages {
            if !names.contains(&st.name) {
                names.push(st.name);
            }
        }
    }
    let mut s = format!(
        "Prepare, {} threads: seconds (peak RSS MiB) per stage\n\n| chunks | questions |",
        r.threads
    );
    for n in &names {
        s += &format!(" {n} |");
    }
    s += " total | peak |\n|---|---|";
    s += &"---|".repeat(names.len() + 2);
    s += "\n";
    for row in &r.sizes {
        s += &format!("| {} | {} |", row.chunks, row.questions);
        for n in &names {
            match row.stages.iter().find(|st| st.name == *n) {
                Some(st) => {
                    s += &format!(
                        " {:.2} ({}) |",
                        st.secs,
                        st.peak_rss_mib.map_or("-".into(), |m| format!("{m:.0}"))
                    )
                }
                None => s += " - |",
            }
        }
        s += &format!(
            " {:.2} | {} |\n",
            row.prepare_secs,
            mib(row.prepare_peak_rss_mib)
        );
    }
    s += "\nGrowth exponent (time ∝ chunks^e):";
    for (k, v) in &r.stage_exponents {
        s += &format!(" {k} {v:.2};");
    }
    s += "\n\nPer-query latency, one thread, median / p95 ms\n\n| chunks | queries |";
    let legs: Vec<&str> = r
        .sizes
        .first()
        .map(|row| row.legs.iter().map(|l| l.leg.as_str()).collect())
        .unwrap_or_default();
    for l in &legs {
        s += &format!(" {l} |");
    }
    s += "\n|---|---|";
    s += &"---|".repeat(legs.len());
    s += "\n";
    for row in &r.sizes {
        s += &format!("| {} | {} |", row.chunks, row.timed_queries);
        for l in &row.legs {
            s += &format!(" {:.3} / {:.3} |", l.median_ms, l.p95_ms);
        }
        s += "\n";
    }
    s += "\nGrowth exponent of the median:";
    for (k, v) in &r.leg_exponents {
        s += &format!(" {k} {v:.2};");
    }
    if let (Some(a), Some(b)) = (r.matrix_secs, r.cached_matrix_secs) {
        s += &format!(
            "\n\nrun-matrix, {} cells: {a:.2} s computing, {b:.2} s cached\n",
            r.matrix_cells
        );
    } else {
        s += "\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_count_above_the_bound_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("scale");
        let e = run(
            &[100],
            &default_legs(),
            &results,
            10,
            1,
            100_000,
            false,
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("--threads is 100000"), "{e}");
        assert!(!results.exists());
    }

    #[test]
    fn the_scale_campaign_parses_with_one_dataset_per_size() {
        let yaml = campaign_yaml(
            Path::new("/tmp/x y"),
            &[1000, 20_000],
            7,
            &default_legs(),
            None,
        )
        .unwrap();
        let c = Campaign::parse(&yaml, "scale").unwrap();
        assert_eq!(
            c.datasets.keys().collect::<Vec<_>>(),
            ["scale-1000", "scale-20000"]
        );
        assert_eq!(c.results, "/tmp/x y");
        assert_eq!(c.model, "hashing-384");
        assert!(c.legs.contains_key("graph_rescue"));
        assert_eq!(c.legs.contains_key("dense_qdrant"), served());
    }

    #[test]
    fn the_legs_are_chosen_by_name_and_an_unknown_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("scale");
        let e = run(
            &[100],
            &["lexical".into(), "bm26".into()],
            &results,
            10,
            1,
            1,
            false,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("no leg `bm26`") && e.contains("graph_rescue_qdrant_int8"),
            "{e}"
        );
        assert!(!results.exists(), "refused before anything is written");
        let legs: Vec<String> = vec!["lexical".into(), "dense_qdrant_int8".into()];
        match campaign_yaml(dir.path(), &[100], 7, &legs, None) {
            Ok(yaml) => {
                assert!(served());
                let c = Campaign::parse(&yaml, "scale").unwrap();
                assert_eq!(
                    c.legs.keys().collect::<Vec<_>>(),
                    ["dense_qdrant_int8", "lexical"]
                );
                let dense = &c.legs["dense_qdrant_int8"].params()["dense"];
                assert_eq!(dense["quantization"], "int8", "{dense:?}");
                assert_eq!(dense["on_disk"], true, "{dense:?}");
                // a part size goes to the served legs alone
                let legs: Vec<String> = vec!["lexical".into(), "graph_rescue_qdrant".into()];
                let yaml = campaign_yaml(dir.path(), &[100], 7, &legs, Some(4096)).unwrap();
                let c = Campaign::parse(&yaml, "scale").unwrap();
                let dense = &c.legs["graph_rescue_qdrant"].params()["dense"];
                assert_eq!(dense["part_points"], 4096, "{dense:?}");
                assert!(!c.legs["lexical"].params().contains_key("dense"));
            }
            Err(e) => {
                assert!(!served());
                assert!(e.to_string().contains("lacks"), "{e}");
            }
        }
        assert!(!default_legs().iter().any(|l| l.ends_with("_int8")));
    }

    #[test]
    fn a_small_scale_run_reports_every_stage_and_leg() {
        let tmp = tempfile::tempdir().unwrap();
        let r = run(
            &[400, 800],
            &default_legs(),
            tmp.path(),
            5,
            1,
            1,
            false,
            None,
        )
        .unwrap();
        assert_eq!(r.sizes.len(), 2);
        let names: Vec<&str> = r.sizes[0].stages.iter().map(|s| s.name).collect();
        for want in ["read", "bm25", "kg", "embed", "write"] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        // no scale leg walks the similarity graph: it is not built
        assert!(!names.contains(&"simgraph"), "{names:?}");
        assert_eq!(names.contains(&"dense_shard"), served());
        assert_eq!(r.sizes[1].chunks, 800);
        assert!(r
            .sizes
            .iter()
            .all(|s| s.legs.len() >= 4 && s.timed_queries == 5));
        assert!(r.leg_exponents.contains_key("bm25"));
        let md = markdown(&r);
        assert!(
            md.contains("| 800 |") && md.contains("graph_rescue"),
            "{md}"
        );
    }
}
