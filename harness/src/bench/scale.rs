//! `hopbench bench scale`: what a prepare and a query cost as the corpus grows to millions of
//! chunks, measured on generated worlds with the non-semantic `hashing-384` embedder (so the
//! benchmark measures the harness, not a model).
//!
//! The legs come from a committed campaign fragment, `scale-legs.yaml` beside this file, read
//! as data through the leg and engine registries: the benchmark names no leg kind and no
//! engine, and a leg whose engine this build lacks is left out of the default. For each size
//! the world of [`crate::bench::generate::config_for`] is prepared through the ordinary path
//! into `<results>/exports/scale-<n>/` (each stage timed with its own peak resident set:
//! [`hopbench_datasets::stages`]), with the optional parts its legs read (none: no scale leg
//! walks the similarity graph); the index of every leg whose engine keeps one over the export
//! is built in a stage of its own (`dense_shard`: a served HNSW shard); then every leg is timed
//! one query at a time on one thread over the first `--queries` questions. Finally the whole
//! scale matrix runs as `hopbench run-matrix` twice in a child process (the same binary): once
//! to compute every cell, once more to show what a cached rerun costs. Growth exponents are
//! least-squares slopes of log(time) on log(chunks).
//!
//! The scale campaign is written to `<results>/scale-campaign.yaml`, so any row can be rerun
//! or inspected with the ordinary commands.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use hopbench_datasets::stages::{self, Stage};
use hopbench_legs::engine::{ExportRef, SideKind};
use hopbench_legs::registry::LegSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bench::generate::{config_for, log_log_slope};
use crate::pipeline::campaign::Campaign;
use crate::pipeline::data::DataSettings;

/// The legs the benchmark can time, and which it times by default: a committed campaign
/// fragment, read as data.
const LEGS_FILE: &str = include_str!("scale-legs.yaml");

/// [`LEGS_FILE`], typed: each leg kept as written until it is chosen, so a leg whose engine this
/// build lacks does not stop the others from being read.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScaleLegs {
    default: Vec<String>,
    legs: BTreeMap<String, Value>,
}

fn scale_legs() -> ScaleLegs {
    let legs: ScaleLegs = serde_saphyr::from_str(LEGS_FILE)
        .unwrap_or_else(|e| panic!("bench/scale-legs.yaml is invalid: {e}"));
    debug_assert!(legs.default.iter().all(|l| legs.legs.contains_key(l)));
    legs
}

/// Leg `name` of [`LEGS_FILE`] read through the registry; `Ok(Err(why))` when its engine is
/// not in this build (`why` says how to get it).
fn read_leg(name: &str, written: &Value) -> Result<std::result::Result<LegSpec, String>> {
    let Value::Object(map) = written else {
        bail!("bench/scale-legs.yaml: leg `{name}` is not a map");
    };
    match LegSpec::from_flat(map.clone()) {
        Ok(spec) => Ok(Ok(spec)),
        Err(e) if e.not_built().is_some() => Ok(Err(e.to_string())),
        Err(e) => bail!("bench/scale-legs.yaml: leg `{name}`: {e}"),
    }
}

/// The key of a dense engine's group that says how many points one graph holds.
const PART_POINTS: &str = "part_points";

/// `spec` with `part_points: n` in its dense group, where its dense engine takes that key (the
/// registry reads the group with it); `None` where it does not, or the leg has no dense side.
fn with_part_points(spec: &LegSpec, n: usize) -> Option<LegSpec> {
    let mut map = spec.params();
    match map.get_mut(SideKind::Dense.key()) {
        Some(Value::Object(group)) => {
            group.insert(PART_POINTS.into(), n.into());
        }
        _ => return None,
    }
    map.insert("kind".into(), spec.kind().into());
    LegSpec::from_flat(map).ok()
}

/// Timed unless `--legs` says otherwise: the file's `default` legs this build can run.
pub fn default_legs() -> Vec<String> {
    let file = scale_legs();
    file.default
        .iter()
        .filter(|name| matches!(read_leg(name, &file.legs[name.as_str()]), Ok(Ok(_))))
        .cloned()
        .collect()
}

/// The legs named (each a leg of [`LEGS_FILE`]), read through the registry, the part size set on
/// every dense engine that takes one. Refused: an unknown name, a leg whose engine this build
/// lacks, a part size no chosen leg takes.
pub fn chosen_legs(
    legs: &[String],
    part_points: Option<usize>,
) -> Result<BTreeMap<String, LegSpec>> {
    let file = scale_legs();
    let mut out = BTreeMap::new();
    let mut parted = false;
    for name in legs {
        let Some(written) = file.legs.get(name) else {
            let known: Vec<&str> = file.legs.keys().map(String::as_str).collect();
            bail!(
                "--legs: no leg `{name}`; bench scale times {}",
                known.join(", ")
            );
        };
        let mut spec = match read_leg(name, written)? {
            Ok(spec) => spec,
            Err(why) => bail!("--legs: `{name}` cannot run in this build: {why}"),
        };
        if let Some(n) = part_points {
            if let Some(s) = with_part_points(&spec, n) {
                (spec, parted) = (s, true);
            }
        }
        out.insert(name.clone(), spec);
    }
    if out.is_empty() {
        bail!("--legs: name at least one leg");
    }
    if let (Some(n), false) = (part_points, parted) {
        bail!("--part-points {n}: no chosen leg's dense engine takes `{PART_POINTS}`");
    }
    Ok(out)
}

/// The scale campaign for `sizes` (passages) and `legs`, writing into `results`, as YAML.
pub fn campaign_yaml(
    results: &Path,
    sizes: &[usize],
    seed: u64,
    legs: &BTreeMap<String, LegSpec>,
) -> Result<String> {
    let mut datasets = serde_json::Map::new();
    for &n in sizes {
        datasets.insert(
            format!("scale-{n}"),
            serde_json::json!({"format": "synthetic", "synthetic": config_for(n, 1, seed)}),
        );
    }
    let campaign = serde_json::json!({
        "results": results.display().to_string(),
        "model": hopbench_datasets::embed::HASHING_MODEL,
        "datasets": datasets,
        "legs": legs,
    });
    let body = serde_saphyr::to_string(&campaign).context("writing the scale campaign")?;
    Ok(format!("# written by `hopbench bench scale`\n{body}"))
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

/// What the benchmark measures.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Passage counts, one generated world each.
    pub sizes: Vec<usize>,
    /// Leg names of [`LEGS_FILE`].
    pub legs: Vec<String>,
    /// Questions each leg is timed on (and the matrix's `--limit`).
    pub queries: usize,
    /// Timed passes per leg.
    pub repeat: usize,
    /// The prepare's and the matrix's thread count; latencies are one query at a time on the
    /// calling thread.
    pub threads: usize,
    /// Whether the two `run-matrix` runs are timed.
    pub matrix: bool,
    /// The most points one graph holds, on every dense engine that takes it.
    pub part_points: Option<usize>,
}

/// Runs the benchmark of `plan`, writing its campaign, exports, shards and cells to `results`.
pub fn run(plan: &Plan, results: &Path) -> Result<ScaleReport> {
    if plan.sizes.is_empty() {
        bail!("--passages: give at least one size");
    }
    // the same bound as a run's thread count (the flag is this command's `--threads`)
    crate::measure::contract::pinned_threads(Some(plan.threads), None)
        .map_err(anyhow::Error::msg)?;
    let legs = chosen_legs(&plan.legs, plan.part_points)?;
    let seed = hopbench_datasets::synthetic::SyntheticConfig::default().seed;
    let yaml = campaign_yaml(results, &plan.sizes, seed, &legs)?;
    std::fs::create_dir_all(results).with_context(|| format!("creating {}", results.display()))?;
    let campaign_path = results.join("scale-campaign.yaml");
    crate::store::fsx::write_atomic(&campaign_path, yaml.as_bytes())?;
    let campaign = Campaign::parse(&yaml, &campaign_path.display().to_string())?;
    let data = DataSettings {
        data_dir: None,
        exports: results.join("exports"),
        embeddings: results.join("embeddings"),
        model_dir: PathBuf::from(hopbench_datasets::embed::HASHING_MODEL),
        prompts: Default::default(),
        prepare: campaign.prepare.clone(),
        cache_part: None,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(plan.threads)
        .build()
        .context("building the thread pool")?;
    let mut out = Vec::new();
    for &n in &plan.sizes {
        let row = measure_size(&campaign, &data, &pool, n, plan)?;
        eprintln!("{}", size_line(&row));
        out.push(row);
    }
    let (mut matrix_secs, mut cached_matrix_secs) = (None, None);
    if plan.matrix {
        let (threads, limit) = (plan.threads, plan.queries);
        matrix_secs = Some(run_matrix(&campaign_path, results, threads, limit)?);
        cached_matrix_secs = Some(run_matrix(&campaign_path, results, threads, limit)?);
    }
    Ok(ScaleReport {
        threads: plan.threads,
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
        matrix_cells: plan.sizes.len() * campaign.legs.len(),
        sizes: out,
        matrix_secs,
        cached_matrix_secs,
    })
}

/// One size: the world prepared through the ordinary path (each stage timed), the legs' indexes
/// built, then every leg timed.
fn measure_size(
    campaign: &Campaign,
    data: &DataSettings,
    pool: &rayon::ThreadPool,
    n: usize,
    plan: &Plan,
) -> Result<SizeReport> {
    let name = format!("scale-{n}");
    let legs: Vec<String> = campaign.legs.keys().cloned().collect();
    stages::take();
    let t = Instant::now();
    let parts = campaign.parts_read(legs.iter().map(String::as_str));
    // the legs are timed on the first `queries` questions: only their vectors are held
    let timed =
        |all: &[hopbench_datasets::export::QueryRecord]| (0..plan.queries.min(all.len())).collect();
    let export =
        pool.install(|| crate::bench::open_keeping(campaign, &name, data, parts, Some(&timed)))?;
    pool.install(|| build_indexes(campaign, &export, data))?;
    let prepare_secs = t.elapsed().as_secs_f64();
    let stage_log = stages::take();
    let prepare_peak_rss_mib = stage_log
        .iter()
        .filter_map(|s| s.peak_rss_mib)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let timed = crate::bench::latency(
        campaign,
        &name,
        &export,
        None,
        &legs,
        plan.repeat,
        0,
        Some(plan.queries),
        data,
    )?;
    Ok(SizeReport {
        passages: n,
        chunks: export.chunks.len(),
        questions: export.queries.len(),
        timed_queries: plan.queries.min(export.queries.len()),
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
    })
}

/// The stage that builds (or opens) the index of every leg whose engine keeps one over the
/// export (its cache inputs name an index: a served dense shard), so that cost is a stage of
/// its own and not the first timed query's. Built as the timing builds the legs, so each index
/// is the one the timing opens.
fn build_indexes(
    campaign: &Campaign,
    export: &std::sync::Arc<hopbench_datasets::export::Export>,
    data: &DataSettings,
) -> Result<()> {
    let at = ExportRef::of(export);
    let indexed: Vec<(&String, &LegSpec)> = (campaign.legs.iter())
        .filter(|(_, spec)| !spec.cache_inputs(Some(at)).indexes.is_empty())
        .collect();
    if indexed.is_empty() {
        return Ok(());
    }
    stages::timed(INDEX_STAGE, || {
        indexed.iter().try_for_each(|&(name, spec)| {
            crate::pipeline::leg_build::build(spec, name, export, data, None)?
                .map(drop)
                .with_context(|| format!("leg {name} on {}", export.manifest.dataset))
        })
    })
}

/// The name of the stage that builds the legs' indexes.
const INDEX_STAGE: &str = "dense_shard";

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

    /// Whether this build has the served engine the file's `_qdrant` legs name.
    fn served() -> bool {
        hopbench_legs::engine::ENGINES
            .iter()
            .any(|e| e.name == "qdrant" && e.built.is_ok())
    }

    fn plan(sizes: &[usize], legs: Vec<String>, threads: usize) -> Plan {
        Plan {
            sizes: sizes.to_vec(),
            legs,
            queries: 10,
            repeat: 1,
            threads,
            matrix: false,
            part_points: None,
        }
    }

    #[test]
    fn the_legs_file_reads_and_its_default_names_its_legs() {
        let file = scale_legs();
        for name in &file.default {
            assert!(file.legs.contains_key(name), "{name}");
        }
        assert!(
            file.legs.len() > file.default.len(),
            "some legs are timed on request only"
        );
        let default = default_legs();
        assert!(default.iter().any(|l| l == "graph_rescue"), "{default:?}");
        assert_eq!(default.iter().any(|l| l == "dense_qdrant"), served());
        assert!(!default.iter().any(|l| l.ends_with("_int8")));
    }

    #[test]
    fn a_thread_count_above_the_bound_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("scale");
        let e = run(&plan(&[100], default_legs(), 100_000), &results).unwrap_err();
        assert!(e.to_string().contains("--threads is 100000"), "{e}");
        assert!(!results.exists());
    }

    #[test]
    fn the_scale_campaign_parses_with_one_dataset_per_size() {
        let legs = chosen_legs(&default_legs(), None).unwrap();
        let yaml = campaign_yaml(Path::new("/tmp/x y"), &[1000, 20_000], 7, &legs).unwrap();
        let c = Campaign::parse(&yaml, "scale").unwrap();
        assert_eq!(
            c.datasets.keys().collect::<Vec<_>>(),
            ["scale-1000", "scale-20000"]
        );
        assert_eq!(c.results, "/tmp/x y");
        assert_eq!(c.model, "hashing-384");
        assert!(c.legs.contains_key("graph_rescue"));
        assert_eq!(c.legs.contains_key("dense_qdrant"), served());
        // each leg is the file's, read through the registry: the same resolved parameters
        for (name, spec) in &c.legs {
            assert_eq!(spec, &legs[name], "{name}");
        }
    }

    #[test]
    fn the_legs_are_chosen_by_name_and_an_unknown_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("scale");
        let e = run(
            &plan(&[100], vec!["lexical".into(), "bm26".into()], 1),
            &results,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("no leg `bm26`") && e.contains("graph_rescue_qdrant_int8"),
            "{e}"
        );
        assert!(!results.exists(), "refused before anything is written");
        let legs: Vec<String> = vec!["lexical".into(), "dense_qdrant_int8".into()];
        match chosen_legs(&legs, None) {
            Ok(c) => {
                assert!(served());
                assert_eq!(
                    c.keys().collect::<Vec<_>>(),
                    ["dense_qdrant_int8", "lexical"]
                );
                let dense = &c["dense_qdrant_int8"].params()["dense"];
                assert_eq!(dense["quantization"], "int8", "{dense:?}");
                assert_eq!(dense["on_disk"], true, "{dense:?}");
                // a part size goes to the legs whose dense engine takes one, as data
                let legs: Vec<String> = vec!["lexical".into(), "graph_rescue_qdrant".into()];
                let c = chosen_legs(&legs, Some(4096)).unwrap();
                let dense = &c["graph_rescue_qdrant"].params()["dense"];
                assert_eq!(dense["part_points"], 4096, "{dense:?}");
                assert_eq!(c["lexical"], chosen_legs(&legs, None).unwrap()["lexical"]);
            }
            Err(e) => {
                assert!(!served());
                assert!(e.to_string().contains("cannot run in this build"), "{e}");
            }
        }
        let e = chosen_legs(&["lexical".into(), "bm25".into()], Some(4096)).unwrap_err();
        assert!(
            e.to_string().contains("no chosen leg's dense engine takes"),
            "{e}"
        );
        assert!(chosen_legs(&[], None).is_err());
    }

    #[test]
    fn a_small_scale_run_reports_every_stage_and_leg() {
        let tmp = tempfile::tempdir().unwrap();
        let mut p = plan(&[400, 800], default_legs(), 1);
        p.queries = 5;
        let r = run(&p, tmp.path()).unwrap();
        assert_eq!(r.sizes.len(), 2);
        let names: Vec<&str> = r.sizes[0].stages.iter().map(|s| s.name).collect();
        for want in ["read", "bm25", "kg", "embed", "write"] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        // no scale leg walks the similarity graph: it is not built
        assert!(!names.contains(&"simgraph"), "{names:?}");
        assert_eq!(names.contains(&INDEX_STAGE), served());
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
