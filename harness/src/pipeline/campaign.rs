//! `campaign.yaml`, typed. The campaign is the matrix: which datasets (and where their raw files
//! are, relative to the data directory), which legs with which parameters, which k values and
//! budgets. Unknown keys anywhere are errors (serde `deny_unknown_fields`; serde-saphyr also
//! rejects duplicate keys), so a typo can never silently run a default.
//!
//! The repository's `campaign.yaml` is also compiled into the binary, so a fresh clone (or a
//! binary run elsewhere) has the default matrix without any file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use hopbench_datasets::export::{Parts, PrepareConfig};
use hopbench_datasets::formats::{self, Format};
use hopbench_datasets::synthetic::SyntheticConfig;
use hopbench_legs::registry::LegSpec;

use crate::measure::stats_config::StatsConfig;
use crate::pipeline::yaml;
use serde::{Deserialize, Serialize};

/// The default campaign, compiled in from the repository root.
pub const EMBEDDED: &str = include_str!("../../../campaign.yaml");

/// A dataset's `format`: a raw format of the datasets crate's registry
/// ([`formats::FORMATS`]), which reads the roles it declares under `files`, or one of the three
/// formats that make a dataset from settings or from other datasets of this campaign and read
/// no files of their own. Written and read as its name (`musique`, `pool`, ...).
#[derive(Clone, Copy)]
pub enum DatasetFormat {
    /// The embedded generated multi-hop world (no files; settings under `synthetic`).
    Synthetic,
    /// The union of other datasets of this campaign (`pool: [a, b]`).
    Pool,
    /// A derived conversational dataset: another dataset's decompositions as scripted
    /// dialogues, one user turn per hop (`derive_from: a`; see
    /// `hopbench_datasets::formats::dialogues`).
    Dialogues,
    /// A raw format: reads the dataset's `files`.
    Raw(&'static Format),
}

impl DatasetFormat {
    /// Every format, in the order messages list them.
    pub fn all() -> impl Iterator<Item = DatasetFormat> {
        [DatasetFormat::Synthetic]
            .into_iter()
            .chain(formats::FORMATS.iter().map(|&f| DatasetFormat::Raw(f)))
            .chain([DatasetFormat::Pool, DatasetFormat::Dialogues])
    }

    /// Its name in campaign files. It is also the export manifest's `format`, hashed into the
    /// export's input key: these strings must never change.
    pub fn name(self) -> &'static str {
        match self {
            DatasetFormat::Synthetic => "synthetic",
            DatasetFormat::Pool => "pool",
            DatasetFormat::Dialogues => "dialogues",
            DatasetFormat::Raw(f) => f.name(),
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<DatasetFormat> {
        DatasetFormat::all().find(|f| f.name() == name)
    }
}

/// Formats are equal when their names are: a name denotes exactly one format.
impl PartialEq for DatasetFormat {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}
impl Eq for DatasetFormat {}

/// The name, as in campaign files.
impl std::fmt::Debug for DatasetFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
impl std::fmt::Display for DatasetFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for DatasetFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for DatasetFormat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        DatasetFormat::from_name(&name).ok_or_else(|| {
            let names: Vec<_> = DatasetFormat::all().map(DatasetFormat::name).collect();
            serde::de::Error::custom(format!(
                "unknown format `{name}`, expected one of {}",
                names.join(", ")
            ))
        })
    }
}

pub use crate::pipeline::protocol::HeaderMode;

/// One dataset of the campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    /// Raw format.
    pub format: DatasetFormat,
    /// Raw files by role (`questions`, `corpus`, `reference`, `qrels`, ...), relative to the data
    /// directory. Each raw format declares the roles it takes; they are checked when the
    /// campaign loads.
    #[serde(default)]
    pub files: BTreeMap<String, FileList>,
    /// Generator settings (`format: synthetic` only).
    #[serde(default)]
    pub synthetic: Option<SyntheticConfig>,
    /// Member datasets (`format: pool` only).
    #[serde(default)]
    pub pool: Vec<String>,
    /// The dataset whose decompositions become dialogues (`format: dialogues` only, and
    /// required there): another dataset of this campaign, not itself a dialogues dataset. Its
    /// raw files are the derived dataset's files.
    /// (Not serialised when absent: the serialised spec is part of every export's input key,
    /// and the other datasets' keys must not change.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derive_from: Option<String>,
    /// How documents are cut into chunks (`format: documents` only): one setting, or an axis
    /// of settings that [`crate::pipeline::chunking::expand`] turns into one dataset per setting when
    /// the campaign loads. (Not serialised when absent, like `derive_from`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunking: Option<crate::pipeline::chunking::Chunking>,
    /// Context header policy (`None` only before the campaign is loaded: loading fills in the
    /// format's default, so that `--show-settings` prints it and the export key hashes it).
    #[serde(default)]
    pub context_header: Option<HeaderMode>,
    /// Free text shown in reports (e.g. "pool has no distractors").
    #[serde(default)]
    pub note: Option<String>,
    /// The dataset's own vectors, used instead of the embedder's (see
    /// `hopbench_datasets::vectors_file`). (Not serialised when absent, like `derive_from`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<VectorsSpec>,
}

/// `vectors:` of a dataset: vectors made elsewhere (a GPU pipeline, another model), with the
/// model id they were made with. Paths are relative to the data directory, like `files:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorsSpec {
    /// The model id, as the user names it (`my-org/e5-large@v2`): recorded as the export's
    /// model id, in every cell summary and report.
    pub model: String,
    /// Passage vectors, keyed by passage id.
    pub passages: String,
    /// Query vectors, keyed by query id.
    pub queries: String,
    /// Content-only passage vectors (the body without its context header), for
    /// `dense_content_only` on datasets with headers; without it that leg is `missing-inputs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Sub-question vectors keyed `<query id>#<hop>` (hops from 1), for the decomposition task
    /// legs; without it they are `missing-inputs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subqueries: Option<String>,
}

impl VectorsSpec {
    /// Each file by its key, in key order.
    pub fn paths(&self) -> Vec<(&'static str, &str)> {
        let mut out = vec![("passages", self.passages.as_str())];
        out.extend(self.content.as_deref().map(|p| ("content", p)));
        out.push(("queries", self.queries.as_str()));
        out.extend(self.subqueries.as_deref().map(|p| ("subqueries", p)));
        out
    }

    fn validate(&self) -> Result<()> {
        if self.model.trim().is_empty() {
            bail!("field `vectors.model`: name the model the vectors were made with");
        }
        for (key, path) in self.paths() {
            let ok = [".parquet", ".npy"].iter().any(|e| path.ends_with(e));
            if !ok {
                bail!("field `vectors.{key}`: `{path}` is neither a .parquet nor a .npy file");
            }
        }
        Ok(())
    }
}

/// One path or several (qrels files).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FileList {
    /// One file.
    One(String),
    /// Several files.
    Many(Vec<String>),
}

impl FileList {
    /// The paths, in order.
    pub fn paths(&self) -> Vec<&str> {
        match self {
            FileList::One(s) => vec![s.as_str()],
            FileList::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

fn default_k() -> Vec<usize> {
    vec![1, 2, 5, 10, 20]
}
fn default_budgets() -> Vec<u64> {
    vec![2_000, 4_000, 8_000, 10_000, 16_000, 24_000, 32_000]
}
fn default_model() -> String {
    "models/all-MiniLM-L6-v2".into()
}
fn default_results() -> String {
    "results".into()
}

/// The whole campaign file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Campaign {
    /// Default results directory (relative to the working directory).
    #[serde(default = "default_results")]
    pub results: String,
    /// Embedding model directory (relative to the working directory);
    /// `HOPBENCH_MODEL_DIR` and `--model` override it.
    #[serde(default = "default_model")]
    pub model: String,
    /// The prompt queries are embedded after, in place of the model's own (`""`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_prompt: Option<String>,
    /// The prompt passages are embedded after, in place of the model's own (`""`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passage_prompt: Option<String>,
    /// Export settings.
    #[serde(default)]
    pub prepare: PrepareConfig,
    /// k values of recall@k.
    #[serde(default = "default_k")]
    pub recall_k: Vec<usize>,
    /// Measures every cell adds to the default set (any spelling `hopbench eval -m` reads:
    /// `AP`, `P@5`, `nDCG@20`, `map_cut.100`, ...), each a column of the matrix with its CI.
    /// Absent: the default set alone, so no cell key moves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<String>,
    /// Token budgets of the budget curves.
    #[serde(default = "default_budgets")]
    pub budgets: Vec<u64>,
    /// Statistics.
    #[serde(default)]
    pub stats: StatsConfig,
    /// Query labels every cell's metrics are also broken down by (where a dataset has them),
    /// besides the intent conversation legs classify.
    #[serde(default = "default_breakdown_labels")]
    pub breakdown_labels: Vec<String>,
    /// Raw data directory (relative to the working directory); `HOPBENCH_DATA` and
    /// `--data-dir` override it. Absent: only the generated datasets have data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<String>,
    /// `run-matrix` options pinned by the campaign; each flag overrides its key.
    #[serde(default)]
    pub run: RunSection,
    /// What the HTML report shows beyond the matrix.
    #[serde(default, skip_serializing_if = "ReportSection::is_empty")]
    pub report: ReportSection,
    /// Datasets by name, in file order of a `BTreeMap` (sorted by name).
    pub datasets: BTreeMap<String, DatasetSpec>,
    /// Legs by name.
    pub legs: BTreeMap<String, LegSpec>,
}

fn default_breakdown_labels() -> Vec<String> {
    vec!["multi_turn".into()]
}

/// The campaign's `report:` block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportSection {
    /// Leg pairs `[a, b]` to compare (paired statistics, per-query drill-down) on every dataset
    /// that has both.
    #[serde(default)]
    pub compare: Vec<[String; 2]>,
}

impl ReportSection {
    fn is_empty(&self) -> bool {
        self.compare.is_empty()
    }
}

/// The fewest bootstrap resamples or permutations a campaign may ask for.
pub const MIN_DRAWS: usize = 100;

/// The most bootstrap resamples or permutations a campaign may ask for (beyond it the third
/// decimal of a CI no longer moves, and the time and memory grow without bound).
pub const MAX_DRAWS: usize = 1_000_000;

impl DatasetSpec {
    /// The dataset as far as its indexing protocol goes.
    pub fn declared(&self) -> crate::pipeline::protocol::Declared<'_> {
        use crate::pipeline::protocol::DeclaredKind;
        crate::pipeline::protocol::Declared {
            header: self.context_header,
            kind: match self.format {
                DatasetFormat::Raw(f) => DeclaredKind::Raw(f.protocol),
                DatasetFormat::Synthetic => DeclaredKind::Synthetic,
                DatasetFormat::Pool => DeclaredKind::Members(&self.pool),
                // (no members before the campaign's check that it has `derive_from`)
                DatasetFormat::Dialogues => DeclaredKind::Members(self.derive_from.as_slice()),
            },
        }
    }
}

impl Campaign {
    /// The optional export parts the named legs read ([`LegSpec::reads`]), so a dataset's
    /// export is prepared with what they need and nothing more (names that are not legs read
    /// nothing).
    pub fn parts_read<'a>(&self, legs: impl IntoIterator<Item = &'a str>) -> Parts {
        (legs.into_iter())
            .filter_map(|l| self.legs.get(l))
            .fold(Parts::NONE, |p, leg| p.union(leg.reads()))
    }

    /// The measures `metrics:` adds to every cell, as hopbench names them
    /// ([`crate::measure::metrics::extra_measures`]; checked when the campaign loads).
    pub fn extra_measures(&self) -> Vec<String> {
        crate::measure::metrics::extra_measures(&self.recall_k, &self.metrics).unwrap_or_default()
    }

    /// The protocol dataset `name` is indexed under ([`crate::pipeline::protocol::of`]), or why it has
    /// none; `name` and the datasets it references exist (checked when the campaign loads).
    pub fn protocol(&self, name: &str) -> Result<hopbench_datasets::protocol::Protocol, String> {
        crate::pipeline::protocol::of(name, &|n| self.datasets[n].declared())
    }

    /// Parses a campaign; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Campaign> {
        let mut c: Campaign = serde_saphyr::from_str_with_options(text, yaml::options())
            .with_context(|| format!("{origin}: invalid campaign"))?;
        let typed = serde_json::to_value(&c).context("campaign as JSON")?;
        yaml::refuse_quoted_scalars(text, &typed)
            .map_err(|e| anyhow::anyhow!(e))
            .with_context(|| format!("{origin}: invalid campaign"))?;
        c.datasets = crate::pipeline::chunking::expand(
            std::mem::take(&mut c.datasets),
            |d| d.chunking.as_ref(),
            |d, chunking| DatasetSpec {
                chunking: Some(chunking),
                ..d.clone()
            },
        )
        .with_context(|| format!("{origin}: invalid campaign"))?;
        // each dataset's default protocol is written in, so that --show-settings prints it and
        // the export key hashes it
        for spec in c.datasets.values_mut() {
            let default = crate::pipeline::protocol::default_header(&spec.declared().kind);
            spec.context_header.get_or_insert(default);
        }
        c.validate()
            .with_context(|| format!("{origin}: invalid campaign"))?;
        Ok(c)
    }

    /// Loads `path`, or the embedded default when `path` is `None` and `./campaign.yaml` is absent.
    pub fn load(path: Option<&Path>) -> Result<(Campaign, String)> {
        let path: Option<PathBuf> = match path {
            Some(p) => Some(p.to_path_buf()),
            None => Some(PathBuf::from("campaign.yaml")).filter(|p| p.exists()),
        };
        match path {
            Some(p) => {
                let bytes =
                    std::fs::read(&p).with_context(|| format!("{}: cannot read", p.display()))?;
                let text = String::from_utf8(bytes).map_err(|e| {
                    let (line, column) =
                        hopbench_datasets::error::utf8_error_position(e.as_bytes(), e.utf8_error());
                    anyhow::anyhow!(
                        "{}: not UTF-8: invalid byte at line {line}, column {column}",
                        p.display()
                    )
                })?;
                Ok((
                    Campaign::parse(&text, &p.display().to_string())?,
                    p.display().to_string(),
                ))
            }
            None => Ok((
                Campaign::parse(EMBEDDED, "<embedded campaign.yaml>")?,
                "<embedded campaign.yaml>".into(),
            )),
        }
    }

    fn validate(&self) -> Result<()> {
        if self.recall_k.is_empty() || self.recall_k.contains(&0) {
            bail!("field `recall_k`: needs at least one k, each >= 1");
        }
        if let Err(e) = crate::measure::metrics::extra_measures(&self.recall_k, &self.metrics) {
            bail!("field `metrics`: {e}");
        }
        if self.budgets.is_empty() || self.budgets.contains(&0) {
            bail!("field `budgets`: needs at least one budget, each >= 1");
        }
        for (key, value) in [("results", &self.results), ("model", &self.model)] {
            if value.trim().is_empty() {
                bail!("field `{key}`: must name a directory, got an empty string");
            }
        }
        // a campaign of nothing would exit 0 having run nothing
        for (key, empty) in [
            ("datasets", self.datasets.is_empty()),
            ("legs", self.legs.is_empty()),
        ] {
            if empty {
                bail!("field `{key}`: names none; a campaign needs at least one");
            }
        }
        for (key, value) in [
            ("run.limit", self.run.limit),
            ("run.threads", self.run.threads),
        ] {
            if value == Some(0) {
                bail!("field `{key}`: must be at least 1, got 0");
            }
        }
        let bm25 = &self.prepare.bm25;
        if !(bm25.k1.is_finite() && bm25.k1 > 0.0) {
            bail!(
                "field `prepare.bm25.k1`: must be a finite number > 0, got {}",
                bm25.k1
            );
        }
        if !(bm25.b.is_finite() && (0.0..=1.0).contains(&bm25.b)) {
            bail!(
                "field `prepare.bm25.b`: must be a finite number in [0, 1], got {}",
                bm25.b
            );
        }
        // fewer draws make a CI (or a p-value) that moves with the seed: not a number to report
        for (key, n) in [
            ("stats.resamples", self.stats.resamples),
            ("stats.permutations", self.stats.permutations),
        ] {
            if n < MIN_DRAWS && self.stats.ci.is_on() {
                bail!("field `{key}`: must be at least {MIN_DRAWS}, got {n} (or set `stats.ci: off` for no CIs and p-values)");
            }
            // every draw costs a pass over the queries, and the values are allocated up front
            if n > MAX_DRAWS {
                bail!("field `{key}`: must be at most {MAX_DRAWS}, got {n}");
            }
        }
        for [a, b] in &self.report.compare {
            for leg in [a, b] {
                if !self.legs.contains_key(leg) {
                    bail!("field `report.compare`: no leg `{leg}` in the campaign");
                }
            }
            if a == b {
                bail!("field `report.compare`: `[{a}, {b}]` compares a leg with itself");
            }
        }
        for (name, leg) in &self.legs {
            leg.validate(name)
                .map_err(|e| anyhow::anyhow!("legs.{name}: {e}"))?;
            check_name(name).with_context(|| format!("legs.{name}"))?;
        }
        for (name, d) in &self.datasets {
            self.validate_dataset(name, d)?;
        }
        for name in self.datasets.keys() {
            self.protocol(name)
                .map_err(|e| anyhow::anyhow!("datasets.{name}: field `context_header`: {e}"))?;
        }
        Ok(())
    }

    /// The checks of one dataset entry: its name, which fields its format allows, and what it
    /// references (pool members, the `derive_from` source) exist and may be referenced.
    fn validate_dataset(&self, name: &str, d: &DatasetSpec) -> Result<()> {
        // a variant of a chunking axis is `<dataset>@<variant>`, both parts plain names
        for part in name.splitn(2, crate::pipeline::chunking::VARIANT_SEPARATOR) {
            check_name(part).with_context(|| format!("datasets.{name}"))?;
        }
        if d.chunking.is_some() && d.format.name() != formats::documents::FORMAT.name {
            bail!("datasets.{name}: field `chunking`: only for format documents");
        }
        match d.format {
            DatasetFormat::Synthetic if !d.files.is_empty() => {
                bail!("datasets.{name}: field `files`: a synthetic dataset reads no files")
            }
            DatasetFormat::Pool => {
                if d.pool.len() < 2 {
                    bail!("datasets.{name}: field `pool`: name at least two datasets");
                }
                for m in &d.pool {
                    match self.datasets.get(m) {
                        None => bail!("datasets.{name}: field `pool`: unknown dataset `{m}`"),
                        Some(s) if s.format == DatasetFormat::Pool => {
                            bail!("datasets.{name}: field `pool`: `{m}` is itself a pool")
                        }
                        Some(s) if s.format == DatasetFormat::Dialogues => bail!(
                            "datasets.{name}: field `pool`: `{m}` is a dialogues dataset (pool its `derive_from` dataset, or derive dialogues from this pool)"
                        ),
                        _ => {}
                    }
                }
            }
            DatasetFormat::Dialogues => {
                match d.derive_from.as_deref() {
                    None => bail!(
                        "datasets.{name}: field `derive_from`: required for format dialogues (name the dataset whose decompositions become dialogues)"
                    ),
                    Some(src) => match self.datasets.get(src) {
                        None => bail!(
                            "datasets.{name}: field `derive_from`: unknown dataset `{src}`"
                        ),
                        Some(s) if s.format == DatasetFormat::Dialogues => bail!(
                            "datasets.{name}: field `derive_from`: `{src}` is itself a dialogues dataset"
                        ),
                        _ => {}
                    },
                }
                if !d.files.is_empty() {
                    bail!("datasets.{name}: field `files`: a dialogues dataset reads the files of its `derive_from` dataset, not its own");
                }
            }
            DatasetFormat::Raw(f) => {
                let given = d.files.iter().map(|(r, l)| (r.as_str(), l.paths().len()));
                formats::check_roles(f, given)
                    .map_err(|e| anyhow::anyhow!("datasets.{name}: {e}"))?;
            }
            DatasetFormat::Synthetic => {}
        }
        if d.synthetic.is_some() && d.format != DatasetFormat::Synthetic {
            bail!("datasets.{name}: field `synthetic`: only for format synthetic");
        }
        if let Some(cfg) = &d.synthetic {
            cfg.validate()
                .map_err(|e| anyhow::anyhow!("datasets.{name}.{e}"))?;
        }
        if !d.pool.is_empty() && d.format != DatasetFormat::Pool {
            bail!("datasets.{name}: field `pool`: only for format pool");
        }
        if d.derive_from.is_some() && d.format != DatasetFormat::Dialogues {
            bail!("datasets.{name}: field `derive_from`: only for format dialogues");
        }
        if let Some(v) = &d.vectors {
            v.validate().with_context(|| format!("datasets.{name}"))?;
        }
        Ok(())
    }
}

/// Names become directory and file names: keep them to `[A-Za-z0-9._-]`.
fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        bail!("the name `{name}` must be non-empty, not start with '.', and use only letters, digits, '.', '_' and '-'");
    }
    Ok(())
}

/// Resolves `all` or a comma list against the campaign's names, keeping campaign order.
pub fn select<'a>(
    arg: &str,
    names: impl Iterator<Item = &'a String>,
    what: &str,
) -> Result<Vec<String>> {
    let names: Vec<String> = names.cloned().collect();
    if arg.trim() == "all" {
        return Ok(names);
    }
    let mut out = Vec::new();
    for want in arg.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // a dataset's name also selects its chunking variants (`docs` -> `docs@small`, ...)
        let hits: Vec<&String> = names
            .iter()
            .filter(|n| crate::pipeline::chunking::selects(want, n))
            .collect();
        if hits.is_empty() {
            bail!(
                "unknown {what} `{want}` (the campaign has: {})",
                names.join(", ")
            );
        }
        for n in hits {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    if out.is_empty() {
        bail!("no {what} selected");
    }
    Ok(out)
}

/// `run-matrix` options a campaign may pin (`run:`); a flag overrides its key. Absent keys take
/// the flags' defaults (every dataset with data, every leg, no limit, progress bars, curves).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Datasets to run (`--datasets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datasets: Option<Vec<String>>,
    /// Legs to run (`--legs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legs: Option<Vec<String>>,
    /// Evaluate only the first N queries of each dataset (`--limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The pinned thread count (`--threads`; `RAYON_NUM_THREADS` also overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// Recompute cells whose key matches (`--force`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Progress bars (`--quiet` turns them off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<bool>,
    /// Budget curves for selecting legs (`--no-curves` turns them off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curves: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_in_place_of_the_models_are_strings_and_absent_by_default() {
        let base = "datasets: {w: {format: synthetic}}\nlegs: {bm25: {kind: bm25}}\n";
        let c = Campaign::parse(base, "c").unwrap();
        assert_eq!((c.query_prompt, c.passage_prompt), (None, None));
        let c = Campaign::parse(
            &format!("query_prompt: 'query: '\npassage_prompt: ''\n{base}"),
            "c",
        )
        .unwrap();
        assert_eq!(c.query_prompt.as_deref(), Some("query: "));
        assert_eq!(c.passage_prompt.as_deref(), Some(""));
        let e = Campaign::parse(&format!("query_prompt: [a]\n{base}"), "c").unwrap_err();
        assert!(format!("{e:#}").contains("query_prompt"), "{e:#}");
    }

    #[test]
    fn embedded_campaign_parses() {
        let c = Campaign::parse(EMBEDDED, "embedded").unwrap();
        assert!(c.datasets.contains_key("synthetic"));
        assert!(c.legs.contains_key("bm25"));
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_field() {
        let text = "datasets: {s: {format: synthetic}}\nlegs: {b: {kind: bm25}}\nbudgetz: [1]\n";
        let e = format!("{:#}", Campaign::parse(text, "c.yaml").unwrap_err());
        assert!(e.contains("c.yaml") && e.contains("budgetz"), "{e}");
        let text = "datasets: {s: {format: synthetic}}\nlegs: {d: {kind: dense, pool: 3}}\n";
        let e = format!("{:#}", Campaign::parse(text, "c.yaml").unwrap_err());
        assert!(e.contains("pool"), "{e}");
    }

    #[test]
    fn pools_and_names_are_checked() {
        let text = "datasets: {p: {format: pool, pool: [a, b]}}\nlegs: {b: {kind: bm25}}\n";
        assert!(format!("{:#}", Campaign::parse(text, "c").unwrap_err())
            .contains("unknown dataset `a`"));
        let text = "datasets: {'a b': {format: synthetic}}\nlegs: {b: {kind: bm25}}\n";
        assert!(Campaign::parse(text, "c").is_err());
    }

    fn parse_err(text: &str) -> String {
        format!("{:#}", Campaign::parse(text, "c.yaml").unwrap_err())
    }

    #[test]
    fn synthetic_values_are_range_checked_at_load_never_a_panic() {
        for (cfg, says) in [
            ("entities: 3", "entities = 3 is below the minimum"),
            ("questions: 0", "questions = 0 must be in"),
            ("hop_mix: [0, 0, 0]", "hop_mix must have a non-zero weight"),
            (
                "confusable_percent: 200",
                "confusable_percent = 200 must be at most 90",
            ),
            ("entities: 18446744073709551615", "passages exceeds"),
            ("questions: 18446744073709551615", "must be in 1..="),
            (
                "distractors_per_entity: 18446744073709551615",
                "passages exceeds",
            ),
        ] {
            let e = parse_err(&format!(
                "datasets: {{s: {{format: synthetic, synthetic: {{{cfg}}}}}}}\nlegs: {{b: {{kind: bm25}}}}\n"
            ));
            assert!(
                e.contains(&format!(
                    "datasets.s.synthetic.{}: ",
                    cfg.split(':').next().unwrap()
                )) && e.contains(says),
                "{cfg}: {e}"
            );
        }
    }

    #[test]
    fn prepare_and_stats_values_are_range_checked_at_load() {
        let with = |extra: &str| {
            parse_err(&format!(
                "{extra}\ndatasets: {{s: {{format: synthetic}}}}\nlegs: {{b: {{kind: bm25}}}}\n"
            ))
        };
        for (extra, key, got) in [
            (
                "prepare: {bm25: {k1: -1, b: 0.4}}",
                "prepare.bm25.k1",
                "got -1",
            ),
            (
                "prepare: {bm25: {k1: 0, b: 0.4}}",
                "prepare.bm25.k1",
                "got 0",
            ),
            (
                "prepare: {bm25: {k1: .nan, b: 0.4}}",
                "prepare.bm25.k1",
                "got NaN",
            ),
            (
                "prepare: {bm25: {k1: 0.9, b: 2}}",
                "prepare.bm25.b",
                "got 2",
            ),
            (
                "prepare: {bm25: {k1: 0.9, b: .nan}}",
                "prepare.bm25.b",
                "got NaN",
            ),
            (
                "stats: {resamples: 0, permutations: 500, seed: 1}",
                "stats.resamples",
                "got 0",
            ),
            (
                "stats: {resamples: 200, permutations: 99, seed: 1}",
                "stats.permutations",
                "got 99",
            ),
        ] {
            let e = with(extra);
            assert!(e.starts_with("c.yaml: invalid campaign"), "{e}");
            assert!(
                e.contains(&format!("field `{key}`")) && e.contains(got),
                "{extra}: {e}"
            );
        }
        // the boundaries themselves are allowed
        let ok = "prepare: {bm25: {k1: 0.1, b: 0}}\nstats: {resamples: 100, permutations: 100, seed: 1}\ndatasets: {s: {format: synthetic}}\nlegs: {b: {kind: bm25}}\n";
        Campaign::parse(ok, "c.yaml").unwrap();
    }

    #[test]
    fn embedded_dialogues_datasets() {
        let c = Campaign::parse(EMBEDDED, "embedded").unwrap();
        for (name, source) in [
            ("synthetic-dialogues", "synthetic"),
            ("musique-dialogues", "musique-train100"),
        ] {
            let d = &c.datasets[name];
            assert_eq!(d.format, DatasetFormat::Dialogues);
            assert_eq!(d.derive_from.as_deref(), Some(source));
            assert!(d.files.is_empty());
        }
    }

    #[test]
    fn dialogues_parse_and_are_checked() {
        let ok = "datasets:\n  s: {format: synthetic}\n  m: {format: musique, files: {questions: q.json}}\n  p: {format: pool, pool: [s, m], context_header: title}\n  sd: {format: dialogues, derive_from: s}\n  pd: {format: dialogues, derive_from: p}\nlegs: {b: {kind: bm25}}\n";
        let c = Campaign::parse(ok, "c.yaml").unwrap();
        assert_eq!(c.datasets["sd"].derive_from.as_deref(), Some("s"));
        assert_eq!(c.datasets["pd"].format, DatasetFormat::Dialogues);
        assert_eq!(c.datasets["s"].derive_from, None);

        let head =
            "datasets:\n  s: {format: synthetic}\n  sd: {format: dialogues, derive_from: s}\n";
        let cases = [
            (
                "  d: {format: dialogues}\n",
                "datasets.d: field `derive_from`: required for format dialogues",
            ),
            (
                "  d: {format: dialogues, derive_from: nope}\n",
                "datasets.d: field `derive_from`: unknown dataset `nope`",
            ),
            (
                "  d: {format: dialogues, derive_from: sd}\n",
                "datasets.d: field `derive_from`: `sd` is itself a dialogues dataset",
            ),
            (
                "  d: {format: dialogues, derive_from: d}\n",
                "datasets.d: field `derive_from`: `d` is itself a dialogues dataset",
            ),
            (
                "  d: {format: dialogues, derive_from: s, files: {questions: q.json}}\n",
                "datasets.d: field `files`: a dialogues dataset reads the files of its `derive_from` dataset",
            ),
            (
                "  d: {format: synthetic, derive_from: s}\n",
                "datasets.d: field `derive_from`: only for format dialogues",
            ),
            (
                "  d: {format: musique, files: {questions: q.json}, derive_from: s}\n",
                "datasets.d: field `derive_from`: only for format dialogues",
            ),
            (
                "  d: {format: pool, pool: [s, sd]}\n",
                "datasets.d: field `pool`: `sd` is a dialogues dataset",
            ),
            (
                "  d: {format: dialogues, derive_from: s, derive_form: s}\n",
                "derive_form",
            ),
        ];
        for (entry, want) in cases {
            let e = parse_err(&format!("{head}{entry}legs: {{b: {{kind: bm25}}}}\n"));
            assert!(e.contains("c.yaml") && e.contains(want), "{entry}: {e}");
        }
    }

    #[test]
    fn absent_derive_from_is_not_serialised() {
        // the serialised spec is part of every export's input key: datasets without
        // `derive_from` must serialise exactly as before the field existed
        let c = Campaign::parse(EMBEDDED, "embedded").unwrap();
        let json = serde_json::to_string(&c.datasets["musique-train100"]).unwrap();
        assert!(!json.contains("derive_from"), "{json}");
        let json = serde_json::to_string(&c.datasets["musique-dialogues"]).unwrap();
        assert!(
            json.contains(r#""derive_from":"musique-train100""#),
            "{json}"
        );
    }

    #[test]
    fn file_roles_are_checked_when_the_campaign_loads() {
        let cases = [
            (
                "m: {format: musique, files: {questions: q.json, corpuz: c.json}}",
                "datasets.m: files.corpuz: unknown role (format musique takes: questions, corpus (optional))",
            ),
            (
                "m: {format: musique, files: {corpus: c.json}}",
                "datasets.m: files.questions: required by format musique",
            ),
            (
                "m: {format: hotpotqa}",
                "datasets.m: files.questions: required by format hotpotqa",
            ),
            (
                "b: {format: beir, files: {corpus: c.jsonl, queries: q.jsonl}}",
                "datasets.b: files.qrels: required by format beir",
            ),
            (
                "b: {format: beir, files: {corpus: c.jsonl, queries: q.jsonl, qrels: [a.tsv, b.tsv]}}",
                "datasets.b: files.qrels: give exactly one file (found 2)",
            ),
            (
                "t: {format: mtrag, files: {reference: r.jsonl, qrels: []}}",
                "datasets.t: files.qrels: give at least one file",
            ),
            (
                "t: {format: mtrag, files: {qrels: [a.tsv]}}",
                "datasets.t: files.reference: required by format mtrag",
            ),
        ];
        for (entry, want) in cases {
            let e = parse_err(&format!(
                "datasets:\n  {entry}\nlegs: {{b: {{kind: bm25}}}}\n"
            ));
            assert!(e.contains("c.yaml") && e.contains(want), "{entry}: {e}");
        }
        // every shape the formats accept
        let ok = "datasets:
  m: {format: musique, files: {questions: q.json}}
  t: {format: twowiki, files: {questions: q.json, corpus: c.json}}
  r: {format: mtrag, files: {reference: r.jsonl, qrels: a.tsv}}
  s: {format: mtrag, files: {reference: r.jsonl, qrels: [a.tsv, b.tsv]}}
  b: {format: beir, files: {corpus: c.jsonl, queries: q.jsonl, qrels: t.tsv}}
legs: {b: {kind: bm25}}
";
        Campaign::parse(ok, "c.yaml").unwrap();
    }

    #[test]
    fn formats_are_written_and_read_by_name() {
        let names: Vec<_> = DatasetFormat::all().map(DatasetFormat::name).collect();
        // these strings are hashed into export keys (the manifest's `format`)
        assert_eq!(
            names,
            [
                "synthetic",
                "musique",
                "hotpotqa",
                "twowiki",
                "mtrag",
                "beir",
                "documents",
                "pool",
                "dialogues"
            ]
        );
        for f in DatasetFormat::all() {
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(json, format!("\"{}\"", f.name()));
            assert_eq!(serde_json::from_str::<DatasetFormat>(&json).unwrap(), f);
            assert_eq!(DatasetFormat::from_name(f.name()), Some(f));
            assert_eq!(format!("{f:?}"), f.name());
            assert_eq!(f.to_string(), f.name());
        }
        let e = parse_err("datasets: {x: {format: hotpot}}\nlegs: {b: {kind: bm25}}\n");
        assert!(
            e.contains("unknown format `hotpot`") && e.contains("hotpotqa, twowiki"),
            "{e}"
        );
    }

    const DOCS: &str = "files: {documents: d.jsonl, queries: q.jsonl, spans: s.jsonl}";

    #[test]
    fn a_chunking_axis_becomes_one_dataset_per_setting() {
        let text = format!(
            "datasets:\n  docs: {{format: documents, {DOCS}, chunking: {{size: [256, 512], overlap: [0, 64]}}}}\n  named: {{format: documents, {DOCS}, chunking: {{small: {{size: 128, unit: chars}}, large: {{size: 512}}}}}}\n  whole: {{format: documents, {DOCS}}}\n  s: {{format: synthetic}}\nlegs: {{b: {{kind: bm25}}}}\n"
        );
        let c = Campaign::parse(&text, "c.yaml").unwrap();
        let names: Vec<&str> = c.datasets.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "docs@size256-overlap0",
                "docs@size256-overlap64",
                "docs@size512-overlap0",
                "docs@size512-overlap64",
                "named@large",
                "named@small",
                "s",
                "whole"
            ]
        );
        let one = |n: &str| {
            c.datasets[n]
                .chunking
                .as_ref()
                .and_then(|c| c.one())
                .copied()
        };
        assert_eq!(
            one("named@small"),
            Some(hopbench_datasets::chunk::ChunkSettings {
                size: 128,
                overlap: 0,
                unit: hopbench_datasets::chunk::ChunkUnit::Chars
            })
        );
        assert_eq!(one("whole"), None);
        // the base name selects every variant, a variant's name itself alone
        let sel = |arg: &str| select(arg, c.datasets.keys(), "dataset");
        assert_eq!(
            sel("docs").unwrap(),
            [
                "docs@size256-overlap0",
                "docs@size256-overlap64",
                "docs@size512-overlap0",
                "docs@size512-overlap64"
            ]
        );
        assert_eq!(
            sel("named@small,docs@size512-overlap0,named").unwrap(),
            ["named@small", "docs@size512-overlap0", "named@large"]
        );
        let e = format!("{:#}", sel("docs@size1-overlap0").unwrap_err());
        assert!(e.contains("unknown dataset `docs@size1-overlap0`"), "{e}");
        assert!(sel("doc").is_err() && sel("named@").is_err());
        // the resolved campaign, written out, loads back to the same datasets
        let yaml = serde_saphyr::to_string(&c).unwrap();
        assert_eq!(Campaign::parse(&yaml, "shown.yaml").unwrap(), c);
        // an unchunked spec serialises as before the field existed (its export key is unchanged)
        let json = serde_json::to_string(&c.datasets["whole"]).unwrap();
        assert!(!json.contains("chunking"), "{json}");
        let json = serde_json::to_string(&c.datasets["docs@size256-overlap64"]).unwrap();
        assert!(
            json.contains(r#""chunking":{"size":256,"overlap":64,"unit":"tokens"}"#),
            "{json}"
        );
    }

    #[test]
    fn chunking_is_checked_when_the_campaign_loads() {
        for (entry, want) in [
            (
                "m: {format: musique, files: {questions: q.json}, chunking: {size: 10}}".to_string(),
                "datasets.m: field `chunking`: only for format documents",
            ),
            (
                format!("d: {{format: documents, {DOCS}, chunking: {{size: 10, overlap: 10}}}}"),
                "datasets.d: field `chunking`: `overlap` (10) must be below `size` (10)",
            ),
            (
                format!("d: {{format: documents, {DOCS}, chunking: {{size: [10, 20], overlap: 15}}}}"),
                "datasets.d: field `chunking`: variant `size10-overlap15`",
            ),
            (
                format!("d: {{format: documents, {DOCS}, chunking: {{size: 10, overlapp: 1}}}}"),
                "unknown key `overlapp`",
            ),
            (
                format!("'d@x': {{format: documents, {DOCS}, chunking: {{a: {{size: 5}}, b: {{size: 6}}}}}}"),
                "must not have '@'",
            ),
            (
                "'a@b@c': {format: synthetic}".to_string(),
                "datasets.a@b@c",
            ),
            (
                "d: {format: documents, files: {documents: d.jsonl}}".to_string(),
                "datasets.d: files.queries: required by format documents",
            ),
        ] {
            let e = parse_err(&format!("datasets:\n  {entry}\nlegs: {{b: {{kind: bm25}}}}\n"));
            assert!(e.contains("c.yaml") && e.contains(want), "{entry}: {e}");
        }
    }

    #[test]
    fn select_all_or_list() {
        let names = vec!["a".to_string(), "b".to_string()];
        assert_eq!(select("all", names.iter(), "leg").unwrap(), names);
        assert_eq!(
            select("b, a,b", names.iter(), "leg").unwrap(),
            vec!["b", "a"]
        );
        assert!(select("c", names.iter(), "leg").is_err());
    }
}
