//! From a campaign's dataset entry to a loaded export: resolve raw files under the data
//! directory, report missing ones (a missing dataset is a status, not an error for the others),
//! read the raw format, embed with the model (cached by text), index, and write or reuse the
//! export under `<results>/exports/<dataset>/`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use hopbench_datasets::embed::{self, Embedder, EmbeddingCache};
use hopbench_datasets::export::{self, EmbedFn, Export, PrepareConfig, Prepared, Source};
use hopbench_datasets::{formats, synthetic, RawDataset};
use indicatif::{ProgressBar, ProgressStyle};

use crate::campaign::{Campaign, DatasetFormat, DatasetSpec, HeaderMode};

/// Where data, exports, the embedding cache and the model live.
#[derive(Debug, Clone)]
pub struct DataSettings {
    /// Raw data directory (None: only generated datasets are available).
    pub data_dir: Option<PathBuf>,
    /// Exports root (`<results>/exports`).
    pub exports: PathBuf,
    /// Embedding cache directory (`<results>/embeddings`).
    pub embeddings: PathBuf,
    /// Model directory.
    pub model_dir: PathBuf,
    /// Export settings.
    pub prepare: PrepareConfig,
}

/// A dataset ready to run, or why it is not.
pub enum DatasetState {
    /// Loaded export.
    Ready(Arc<Export>),
    /// The raw inputs are absent; the reason names what is missing.
    Missing(String),
}

/// Whether a dataset reads raw files (false for generated ones).
pub fn needs_files(campaign: &Campaign, name: &str) -> bool {
    let spec = &campaign.datasets[name];
    match spec.format {
        DatasetFormat::Synthetic => false,
        DatasetFormat::Pool => spec.pool.iter().any(|m| needs_files(campaign, m)),
        _ => true,
    }
}

/// Raw file paths of a (non-pool) dataset by role, or the reason they are unavailable.
fn resolve_files(
    spec: &DatasetSpec,
    data_dir: Option<&Path>,
) -> Result<BTreeMap<String, Vec<PathBuf>>, String> {
    if spec.files.is_empty() {
        return Ok(BTreeMap::new());
    }
    let Some(dir) = data_dir else {
        return Err("no data directory: give --data-dir DIR or set HOPBENCH_DATA".into());
    };
    let mut out = BTreeMap::new();
    let mut absent = Vec::new();
    for (role, list) in &spec.files {
        let paths: Vec<PathBuf> = list.paths().iter().map(|p| dir.join(p)).collect();
        absent.extend(
            paths
                .iter()
                .filter(|p| !p.is_file())
                .map(|p| p.display().to_string()),
        );
        out.insert(role.clone(), paths);
    }
    if absent.is_empty() {
        Ok(out)
    } else {
        Err(format!("raw files absent: {}", absent.join(", ")))
    }
}

/// One line on whether a dataset can be prepared.
pub fn availability(campaign: &Campaign, name: &str, data_dir: Option<&Path>) -> String {
    let spec = &campaign.datasets[name];
    let members: Vec<&str> = if spec.format == DatasetFormat::Pool {
        spec.pool.iter().map(String::as_str).collect()
    } else {
        vec![name]
    };
    for m in members {
        if let Err(reason) = resolve_files(&campaign.datasets[m], data_dir) {
            return format!("missing: {reason}");
        }
    }
    "available".into()
}

fn one(files: &BTreeMap<String, Vec<PathBuf>>, role: &str, dataset: &str) -> Result<PathBuf> {
    match files.get(role).map(Vec::as_slice) {
        Some([p]) => Ok(p.clone()),
        Some(_) => bail!("datasets.{dataset}: files.{role}: give exactly one file"),
        None => bail!("datasets.{dataset}: files.{role}: required for this format"),
    }
}

fn opt(
    files: &BTreeMap<String, Vec<PathBuf>>,
    role: &str,
    dataset: &str,
) -> Result<Option<PathBuf>> {
    if files.contains_key(role) {
        one(files, role, dataset).map(Some)
    } else {
        Ok(None)
    }
}

fn check_roles(
    files: &BTreeMap<String, Vec<PathBuf>>,
    allowed: &[&str],
    dataset: &str,
) -> Result<()> {
    for role in files.keys() {
        if !allowed.contains(&role.as_str()) {
            bail!(
                "datasets.{dataset}: files.{role}: unknown role (this format takes: {})",
                allowed.join(", ")
            );
        }
    }
    Ok(())
}

/// Reads one non-pool dataset's raw files.
fn read_raw(
    name: &str,
    spec: &DatasetSpec,
    files: &BTreeMap<String, Vec<PathBuf>>,
) -> Result<RawDataset> {
    let mut raw = match spec.format {
        DatasetFormat::Synthetic => {
            synthetic::generate(&spec.synthetic.clone().unwrap_or_default())
        }
        DatasetFormat::Musique => {
            check_roles(files, &["questions", "corpus"], name)?;
            formats::musique::read(
                &one(files, "questions", name)?,
                opt(files, "corpus", name)?.as_deref(),
            )?
        }
        DatasetFormat::Hotpotqa => {
            check_roles(files, &["questions", "corpus"], name)?;
            formats::hotpotqa::read(
                &one(files, "questions", name)?,
                opt(files, "corpus", name)?.as_deref(),
            )?
        }
        DatasetFormat::Twowiki => {
            check_roles(files, &["questions", "corpus"], name)?;
            formats::twowiki::read(
                &one(files, "questions", name)?,
                opt(files, "corpus", name)?.as_deref(),
            )?
        }
        DatasetFormat::Mtrag => {
            check_roles(files, &["reference", "qrels"], name)?;
            let qrels = files.get("qrels").cloned().unwrap_or_default();
            if qrels.is_empty() {
                bail!("datasets.{name}: files.qrels: required for this format");
            }
            formats::mtrag::read(&one(files, "reference", name)?, &qrels)?
        }
        DatasetFormat::Beir => {
            check_roles(files, &["corpus", "queries", "qrels"], name)?;
            formats::beir::read(
                &one(files, "corpus", name)?,
                &one(files, "queries", name)?,
                &one(files, "qrels", name)?,
            )?
        }
        DatasetFormat::Pool => unreachable!("pools are read member by member"),
    };
    if spec.context_header == HeaderMode::Title {
        for p in &mut raw.passages {
            p.header = Some(p.title.clone());
        }
    }
    Ok(raw)
}

fn read_members(
    campaign: &Campaign,
    name: &str,
    members: &[String],
    member_files: &[BTreeMap<String, Vec<PathBuf>>],
) -> Result<RawDataset> {
    let spec = &campaign.datasets[name];
    if spec.format != DatasetFormat::Pool {
        return read_raw(name, spec, &member_files[0]);
    }
    let mut parts = Vec::new();
    for (m, f) in members.iter().zip(member_files) {
        parts.push((m.clone(), read_raw(m, &campaign.datasets[m], f)?));
    }
    let mut pooled = formats::pool(parts);
    if spec.context_header == HeaderMode::Title {
        for p in &mut pooled.passages {
            p.header = Some(p.title.clone());
        }
    }
    Ok(pooled)
}

/// Member datasets of `name` (itself unless it is a pool) and their resolved raw files.
#[allow(clippy::type_complexity)]
fn members_of(
    campaign: &Campaign,
    name: &str,
    s: &DataSettings,
) -> Result<(Vec<String>, Vec<BTreeMap<String, Vec<PathBuf>>>), String> {
    let spec = &campaign.datasets[name];
    let members: Vec<String> = if spec.format == DatasetFormat::Pool {
        spec.pool.clone()
    } else {
        vec![name.to_string()]
    };
    let files = members
        .iter()
        .map(|m| resolve_files(&campaign.datasets[m], s.data_dir.as_deref()))
        .collect::<Result<Vec<_>, String>>()?;
    Ok((members, files))
}

/// Reads dataset `name`'s raw files (no export): for benchmarks and checks.
pub fn read_dataset(campaign: &Campaign, name: &str, s: &DataSettings) -> Result<RawDataset> {
    let (members, files) = members_of(campaign, name, s)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("dataset {name}"))?;
    read_members(campaign, name, &members, &files)
}

/// Prepares (or reuses) and loads dataset `name`.
pub fn open(
    campaign: &Campaign,
    name: &str,
    s: &DataSettings,
    progress: bool,
) -> Result<DatasetState> {
    let spec = &campaign.datasets[name];
    let (members, member_files) = match members_of(campaign, name, s) {
        Ok(x) => x,
        Err(reason) => return Ok(DatasetState::Missing(reason)),
    };
    let files: Vec<PathBuf> = member_files
        .iter()
        .flat_map(|f| f.values().flatten().cloned())
        .collect();
    let source = Source {
        name: name.to_string(),
        format: format!("{:?}", spec.format).to_lowercase(),
        files,
        // everything about the dataset that is not a file: generator settings, header policy,
        // pool membership and the members' own settings
        extra: serde_json::to_string(&(
            spec,
            members
                .iter()
                .map(|m| &campaign.datasets[m])
                .collect::<Vec<_>>(),
        ))
        .expect("spec serialises"),
    };
    let read_all = || read_members(campaign, name, &members, &member_files);

    let model_id = embed::model_id_of(&s.model_dir).with_context(|| {
        format!(
            "embedding model not found at {}: run scripts/setup, or point --model / HOPBENCH_MODEL_DIR at a model directory",
            s.model_dir.display()
        )
    })?;
    let dim = embed::model_dim_of(&s.model_dir)?;
    let dir = s.exports.join(name);
    let embedder: RefCell<Option<(Embedder, EmbeddingCache)>> = RefCell::new(None);
    let mut embed_fn = EmbedFn {
        model_id: model_id.clone(),
        dim,
        embed: Box::new(|texts: &[&str], label: &str| {
            let mut slot = embedder.borrow_mut();
            if slot.is_none() {
                let e = Embedder::load(&s.model_dir)?;
                let c = EmbeddingCache::open(&s.embeddings, e.model_id(), e.dim())?;
                *slot = Some((e, c));
            }
            let (e, c) = slot.as_mut().expect("loaded above");
            let bar = if progress {
                ProgressBar::new(texts.len() as u64)
            } else {
                ProgressBar::hidden()
            };
            bar.set_style(
                ProgressStyle::with_template("{prefix:>32} [{bar:30}] {pos}/{len} {per_sec} {eta}")
                    .expect("template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(format!("embed {name} {label}"));
            let out = embed::embed_cached(e, c, texts, &mut |n| bar.inc(n as u64));
            bar.finish_and_clear();
            out
        }),
    };
    let mut read_error: Option<anyhow::Error> = None;
    let result = export::prepare(
        &source,
        || match read_all() {
            Ok(r) => Ok(r),
            Err(e) => {
                let msg = format!("{e:#}");
                read_error = Some(e);
                Err(hopbench_datasets::Error::Config {
                    context: format!("dataset {name}"),
                    message: msg,
                })
            }
        },
        &s.prepare,
        &mut embed_fn,
        &dir,
    );
    let (_, how) = match result {
        Ok(x) => x,
        Err(e) => {
            return Err(read_error.unwrap_or_else(|| e.into()))
                .with_context(|| format!("preparing dataset {name}"))
        }
    };
    let export = export::load(&dir).with_context(|| format!("loading the export of {name}"))?;
    if how == Prepared::Written {
        let st = &export.manifest.stats;
        eprintln!(
            "{name}: prepared {} chunks, {} queries, {} gold chunks -> {}",
            st.chunks,
            st.queries,
            st.gold_chunks,
            dir.display()
        );
    }
    Ok(DatasetState::Ready(Arc::new(export)))
}
