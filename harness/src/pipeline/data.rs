//! From a campaign's dataset entry to a loaded export: resolve raw files under the data
//! directory, report missing ones (a missing dataset is a status, not an error for the others),
//! read the raw format, embed with the model (cached by text), index, and write or reuse the
//! export under `<results>/exports/<dataset>/`. A dataset with a `vectors:` group takes its
//! vectors from those files and needs no model; `--model hashing-384` hashes the texts instead
//! of loading a model directory (see `hopbench_datasets::embed::hashing`).
//!
//! A pool reads its members' files; a dialogues dataset reads its `derive_from` dataset's files
//! (or, when that is a pool, the pool's members' files) exactly as that dataset does, then
//! derives the dialogues. Either way the raw files it reads are its files: a missing one makes it
//! `missing-inputs`, and they are hashed into its export's input key.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use hopbench_datasets::chunk::{ChunkUnit, Chunker, CHUNKER_ID};
use hopbench_datasets::embed::{
    self, Embedder, EmbeddingCache, HashingEmbedder, PromptOverrides, Role,
};
use hopbench_datasets::export::{
    self, EmbedFn, Export, KeepVectors, Parts, PrepareConfig, Prepared, Source,
};
use hopbench_datasets::formats::{self, documents, Files};
use hopbench_datasets::vectors_file::VectorFiles;
use hopbench_datasets::{synthetic, RawDataset, SpannedDataset};

use crate::pipeline::campaign::{Campaign, DatasetFormat, DatasetSpec};
use crate::store::fsx;

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
    /// The campaign's prompts in place of the model's own.
    pub prompts: PromptOverrides,
    /// Export settings.
    pub prepare: PrepareConfig,
    /// The part file of the embedding cache this process writes (`--shard`), or `None` for
    /// the main file (see [`EmbeddingCache::open_part`]).
    pub cache_part: Option<String>,
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
        DatasetFormat::Dialogues => needs_files(campaign, derive_from(spec)),
        DatasetFormat::Raw(_) => true,
    }
}

/// What resolving a dataset's inputs gives: the inputs, or (inner `Err`) the reason they are
/// unavailable, which makes the dataset `missing-inputs`. The outer error is a path that is
/// there but is not a file ([`hopbench_datasets::presence`]): a mistake to stop on.
type Resolved<T> = Result<Result<T, String>>;

/// Raw file paths of a (non-pool) dataset by role, or the reason they are unavailable.
fn resolve_files(
    spec: &DatasetSpec,
    data_dir: Option<&Path>,
) -> Resolved<BTreeMap<String, Vec<PathBuf>>> {
    if spec.files.is_empty() {
        return Ok(Ok(BTreeMap::new()));
    }
    let Some(dir) = data_dir else {
        return Ok(Err(
            "no data directory: give --data-dir DIR or set HOPBENCH_DATA".into(),
        ));
    };
    let mut out = BTreeMap::new();
    let mut absent = Vec::new();
    for (role, list) in &spec.files {
        let paths: Vec<PathBuf> = list.paths().iter().map(|p| dir.join(p)).collect();
        for p in &paths {
            if !hopbench_datasets::presence::file_present(p)
                .with_context(|| format!("field `files.{role}`"))?
            {
                absent.push(p.display().to_string());
            }
        }
        out.insert(role.clone(), paths);
    }
    Ok(if absent.is_empty() {
        Ok(out)
    } else {
        Err(format!("raw files absent: {}", absent.join(", ")))
    })
}

/// The dataset's own vectors files resolved under the data directory (`None` without a
/// `vectors:` group), or the reason they are unavailable (absent files make the dataset
/// `missing-inputs`, like absent raw files).
fn resolve_vectors(spec: &DatasetSpec, data_dir: Option<&Path>) -> Resolved<Option<VectorFiles>> {
    let Some(v) = &spec.vectors else {
        return Ok(Ok(None));
    };
    let Some(dir) = data_dir else {
        return Ok(Err(
            "no data directory for the `vectors:` files: give --data-dir DIR or set HOPBENCH_DATA"
                .into(),
        ));
    };
    let files = VectorFiles {
        model: v.model.clone(),
        passages: dir.join(&v.passages),
        queries: dir.join(&v.queries),
        content: v.content.as_ref().map(|p| dir.join(p)),
        subqueries: v.subqueries.as_ref().map(|p| dir.join(p)),
    };
    let absent: Vec<String> = files
        .absent()
        .context("field `vectors`")?
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    Ok(if absent.is_empty() {
        Ok(Some(files))
    } else {
        Err(format!("vectors files absent: {}", absent.join(", ")))
    })
}

/// The `derive_from` dataset of a dialogues dataset (validated when the campaign is parsed).
fn derive_from(spec: &DatasetSpec) -> &str {
    spec.derive_from
        .as_deref()
        .expect("validated: a dialogues dataset has derive_from")
}

/// The datasets whose raw files `name` reads, in order: a pool's members, a dialogues dataset's
/// source (or, for a pool source, its members), else `name` itself. Validation keeps pools and
/// dialogues out of pools and dialogues out of dialogues, so every member reads its own files.
fn member_names(campaign: &Campaign, name: &str) -> Vec<String> {
    let spec = &campaign.datasets[name];
    match spec.format {
        DatasetFormat::Pool => spec.pool.clone(),
        DatasetFormat::Dialogues => member_names(campaign, derive_from(spec)),
        _ => vec![name.to_string()],
    }
}

/// One line on whether a dataset can be prepared (an error for an input that is not a file).
pub fn availability(campaign: &Campaign, name: &str, data_dir: Option<&Path>) -> Result<String> {
    for m in member_names(campaign, name) {
        if let Err(reason) = resolve_files(&campaign.datasets[&m], data_dir)
            .with_context(|| format!("datasets.{m}"))?
        {
            return Ok(format!("missing: {reason}"));
        }
    }
    if let Err(reason) = resolve_vectors(&campaign.datasets[name], data_dir)
        .with_context(|| format!("datasets.{name}"))?
    {
        return Ok(format!("missing: {reason}"));
    }
    Ok("available".into())
}

/// The model's tokenizer file, which `chunking: {unit: tokens}` sizes chunks with.
fn tokenizer_file(s: &DataSettings) -> PathBuf {
    s.model_dir.join("tokenizer.json")
}

/// Refuses chunks sized in tokens under the hashing model, which has no tokenizer to count
/// them with (before the missing `tokenizer.json` is looked for, so the message names the
/// setting rather than the file).
fn check_tokenizer(name: &str, spec: &DatasetSpec, s: &DataSettings) -> Result<()> {
    if chunks_in_tokens(spec) && embed::is_hashing_model(&s.model_dir) {
        anyhow::bail!(
            "datasets.{name}: field `chunking`: `unit: tokens` counts in the model's \
             tokenizer, and `{}` has none: use `unit: chars`, or a model directory",
            embed::HASHING_MODEL
        );
    }
    Ok(())
}

/// Whether dataset `spec` is chunked in the model's tokens (its export then depends on the
/// tokenizer file, which is hashed as one of its inputs).
fn chunks_in_tokens(spec: &DatasetSpec) -> bool {
    spec.chunking
        .as_ref()
        .and_then(|c| c.one())
        .is_some_and(|c| c.unit == ChunkUnit::Tokens)
}

/// Reads one dataset that is neither a pool nor a dialogues dataset, from its resolved files;
/// a documents dataset is chunked by its `chunking` setting (whole documents without one).
fn read_raw(
    name: &str,
    spec: &DatasetSpec,
    files: &BTreeMap<String, Vec<PathBuf>>,
    s: &DataSettings,
) -> Result<SpannedDataset> {
    let read = match spec.format {
        DatasetFormat::Synthetic => {
            synthetic::try_generate(&spec.synthetic.clone().unwrap_or_default())
                .map_err(|e| anyhow::anyhow!("datasets.{name}.{e}"))?
                .into()
        }
        DatasetFormat::Raw(format) => {
            // the campaign checked the roles when it loaded; this only makes the typed `Files`
            let files = Files::new(format, files.clone())
                .map_err(|e| anyhow::anyhow!("datasets.{name}: {e}"))?;
            if format.name() == documents::FORMAT.name {
                check_tokenizer(name, spec, s)?;
                let chunker = match spec.chunking.as_ref().and_then(|c| c.one()) {
                    None => Chunker::whole(),
                    Some(c) => Chunker::new(
                        c,
                        &tokenizer_file(s),
                        &format!("datasets.{name}: field `chunking`"),
                    )?,
                };
                documents::read_spanned(&files, &chunker)?
            } else {
                format.read(&files)?.into()
            }
        }
        DatasetFormat::Pool | DatasetFormat::Dialogues => {
            unreachable!("pools and dialogues are read member by member")
        }
    };
    Ok(read)
}

fn read_members(
    campaign: &Campaign,
    name: &str,
    members: &[String],
    member_files: &[BTreeMap<String, Vec<PathBuf>>],
    s: &DataSettings,
) -> Result<SpannedDataset> {
    let spec = &campaign.datasets[name];
    if spec.format == DatasetFormat::Dialogues {
        let source = derive_from(spec);
        let read = read_members(campaign, source, members, member_files, s)?;
        // the dialogues keep the source's passages, so its spans still hold
        let derived = formats::dialogues::derive(read.raw, source)
            .with_context(|| format!("datasets.{name}: deriving dialogues from `{source}`"))?;
        return Ok(SpannedDataset {
            raw: derived,
            spans: read.spans,
        });
    }
    if spec.format != DatasetFormat::Pool {
        return read_raw(name, spec, &member_files[0], s);
    }
    let mut parts = Vec::new();
    let mut spans = BTreeMap::new();
    for (m, f) in members.iter().zip(member_files) {
        let read = read_raw(m, &campaign.datasets[m], f, s)?;
        // the pool prefixes every passage id with its part's name (`formats::pool`)
        spans.extend(
            read.spans
                .into_iter()
                .map(|(id, sp)| (format!("{m}:{id}"), sp)),
        );
        parts.push((m.clone(), read.raw));
    }
    Ok(SpannedDataset {
        raw: formats::pool(parts),
        spans,
    })
}

/// Member datasets of `name` ([`member_names`]) and their resolved raw files.
#[allow(clippy::type_complexity)]
fn members_of(
    campaign: &Campaign,
    name: &str,
    s: &DataSettings,
) -> Resolved<(Vec<String>, Vec<BTreeMap<String, Vec<PathBuf>>>)> {
    let members = member_names(campaign, name);
    let mut files = Vec::new();
    for m in &members {
        match resolve_files(&campaign.datasets[m], s.data_dir.as_deref())
            .with_context(|| format!("datasets.{m}"))?
        {
            Ok(f) => files.push(f),
            Err(reason) => return Ok(Err(reason)),
        }
    }
    if let Err(reason) = resolve_vectors(&campaign.datasets[name], s.data_dir.as_deref())
        .with_context(|| format!("datasets.{name}"))?
    {
        return Ok(Err(reason));
    }
    Ok(Ok((members, files)))
}

/// Reads dataset `name`'s raw files (no export): for benchmarks and checks.
pub fn read_dataset(campaign: &Campaign, name: &str, s: &DataSettings) -> Result<RawDataset> {
    let (members, files) = members_of(campaign, name, s)?
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("dataset {name}"))?;
    Ok(read_members(campaign, name, &members, &files, s)?.raw)
}

/// The `Source::extra` of a dataset. Unchanged for every format but dialogues and chunked
/// documents, so existing exports keep their input keys.
fn extra_identity(campaign: &Campaign, spec: &DatasetSpec, members: &[String]) -> String {
    let member_specs: Vec<&DatasetSpec> = members.iter().map(|m| &campaign.datasets[m]).collect();
    // the chunk boundaries are the splitter's: its identity is part of what a chunked export
    // is made from (the setting itself is in the spec)
    if member_specs.iter().any(|m| m.chunking.is_some()) {
        return serde_json::to_string(&(spec, member_specs, ("chunker", CHUNKER_ID)))
            .expect("spec serialises");
    }
    match spec.format {
        DatasetFormat::Dialogues => serde_json::to_string(&(
            spec,
            member_specs,
            &campaign.datasets[derive_from(spec)],
            ("dialogues", formats::dialogues::VERSION),
        )),
        _ => serde_json::to_string(&(spec, member_specs)),
    }
    .expect("spec serialises")
}

/// What the export of `name` is made from: its name, its format's name, every raw file it reads
/// (the members', in member then role order), [`extra_identity`] and its indexing protocol
/// ([`Campaign::protocol`], which the build applies to the passages read). All of it is hashed
/// into the export's input key, so each piece is a stable serialisation: names as written in
/// the campaign, the spec as JSON.
fn source(
    campaign: &Campaign,
    name: &str,
    members: &[String],
    member_files: &[BTreeMap<String, Vec<PathBuf>>],
    s: &DataSettings,
) -> Result<Source> {
    let spec = &campaign.datasets[name];
    let mut files: Vec<PathBuf> = member_files
        .iter()
        .flat_map(|f| f.values().flatten().cloned())
        .collect();
    // chunks sized in tokens are the tokenizer's as much as the raw files': a changed
    // tokenizer.json (the model id hashes the weights only) re-prepares the export
    for m in members {
        check_tokenizer(m, &campaign.datasets[m], s)?;
    }
    if members
        .iter()
        .any(|m| chunks_in_tokens(&campaign.datasets[m]))
    {
        files.push(tokenizer_file(s));
    }
    let protocol = campaign
        .protocol(name)
        .map_err(|e| anyhow::anyhow!("datasets.{name}: field `context_header`: {e}"))?;
    Ok(Source {
        name: name.to_string(),
        format: spec.format.name().to_string(),
        files,
        // everything about the dataset that is not a file: generator settings, header policy,
        // pool membership and the members' own settings; for dialogues also the source's
        // settings and the derivation's version (its own spec, with `format: dialogues` and
        // `derive_from`, already keeps its key apart from the source's)
        extra: extra_identity(campaign, spec, members),
        protocol,
        vectors: resolve_vectors(spec, s.data_dir.as_deref())?.map_err(anyhow::Error::msg)?,
    })
}

/// The embedder, and the embedding cache opened for writing this process's file of it
/// (`cache_part`), saying what opening the cache had to drop.
fn load_embedder(s: &DataSettings) -> hopbench_datasets::Result<(Embedder, EmbeddingCache)> {
    let e = Embedder::load_with(&s.model_dir, &s.prompts)?;
    let c = open_cache(s, &e)?;
    if let Some(r) = c.repairs() {
        eprintln!("warning: embedding cache {r}");
    }
    Ok((e, c))
}

/// The embedding cache of `e`'s model in `s.embeddings`. A cache file that is not a file (a
/// directory or a FIFO where one goes) is in the way as a damaged cache file is: it is set
/// aside with a warning naming it ([`fsx::set_aside_unless`]) and its vectors are embedded
/// again, rather than the run failing on it.
fn open_cache(s: &DataSettings, e: &Embedder) -> hopbench_datasets::Result<EmbeddingCache> {
    let part = s.cache_part.as_deref();
    loop {
        let err = match EmbeddingCache::open_part(&s.embeddings, e.model_id(), e.dim(), part) {
            Ok(c) => return Ok(c),
            Err(err) => err,
        };
        let hopbench_datasets::Error::Io { path, .. } = &err else {
            return Err(err);
        };
        if path.parent() != Some(s.embeddings.as_path()) {
            return Err(err);
        }
        match fsx::set_aside_unless(path, fsx::Kind::File) {
            Ok(Some((what, aside))) => eprintln!(
                "warning: embedding cache {}: {what}, not a cache file: set aside as {}; its \
                 vectors are embedded again",
                path.display(),
                aside.display()
            ),
            // nothing was in the way: the error is the cache's own
            Ok(None) => return Err(err),
            Err(io) => return Err(hopbench_datasets::Error::io(path.clone(), io)),
        }
    }
}

/// Sets aside what is at export directory `dir` of dataset `name` when it is not a directory (a
/// plain file where the export goes), with a warning naming it, so the export is rebuilt there
/// as a damaged one is, rather than the run failing on it.
fn clear_export_dir(name: &str, dir: &Path) -> Result<()> {
    let aside = fsx::set_aside_unless(dir, fsx::Kind::Dir)
        .with_context(|| format!("{}: cannot set aside what is in the way", dir.display()))?;
    if let Some((what, aside)) = aside {
        eprintln!(
            "warning: the export of {name} at {}: {what}, not an export directory: set aside as \
             {}; the export is rebuilt",
            dir.display(),
            aside.display()
        );
    }
    Ok(())
}

/// The embedder and its cache, loaded at the first texts a build asks for: a build that finds
/// every vector cached, or reuses its export, never loads the model.
struct LazyEmbedder<'a> {
    settings: &'a DataSettings,
    slot: RefCell<Option<(Embedder, EmbeddingCache)>>,
}

impl<'a> LazyEmbedder<'a> {
    fn new(settings: &'a DataSettings) -> Self {
        LazyEmbedder {
            settings,
            slot: RefCell::new(None),
        }
    }

    /// Runs `f` on the embedder and its cache, loading them first if this is the first call.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Embedder, &mut EmbeddingCache) -> hopbench_datasets::Result<T>,
    ) -> hopbench_datasets::Result<T> {
        let mut slot = self.slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(load_embedder(self.settings)?);
        }
        let (e, c) = slot.as_mut().expect("loaded above");
        f(e, c)
    }
}

/// The build's error for dataset `name` whose raw files failed to read. The build carries only
/// a message, so the error itself (with its chain of context) is kept in `kept`, for the caller
/// to return instead of the build's.
fn read_failed(
    name: &str,
    e: anyhow::Error,
    kept: &mut Option<anyhow::Error>,
) -> hopbench_datasets::Error {
    let message = format!("{e:#}");
    *kept = Some(e);
    hopbench_datasets::Error::Config {
        context: format!("dataset {name}"),
        message,
    }
}

/// The identity and dimension of the model `s` names: the built-in hashing embedder for
/// `hashing-384` (no model directory), else the model directory's (hashing its weights only).
pub fn model_identity(s: &DataSettings) -> Result<(String, usize)> {
    if embed::is_hashing_model(&s.model_dir) {
        return Ok((embed::HASHING_MODEL_ID.to_string(), embed::HASHING_DIM));
    }
    let id = embed::model_id_with(&s.model_dir, &s.prompts).with_context(|| {
        format!(
            "embedding model not found at {}: run scripts/setup, point --model / \
             HOPBENCH_MODEL_DIR at a model directory, or use --model {} (non-semantic)",
            s.model_dir.display(),
            embed::HASHING_MODEL
        )
    })?;
    Ok((id, embed::model_dim_of(&s.model_dir)?))
}

/// What [`embed_part`] did for one dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartOutcome {
    /// The export exists already: its vectors are in it.
    ExportReady,
    /// Embedded this many of the part's texts (the rest of the part was cached).
    Embedded { part_texts: usize, embedded: usize },
    /// The dataset lacks inputs.
    Missing(String),
}

/// `prepare --shard`: embeds `shard`'s part of the texts dataset `name`'s export would embed
/// ([`Shard::owns_text`](crate::pipeline::shard::Shard::owns_text)) into the embedding cache's part file
/// `s.cache_part` (the caller names it after the shard), and writes no export. The build runs for its embedding calls only (the
/// other texts get placeholder vectors that are thrown away with it), so the texts are exactly
/// those a later unsharded prepare embeds, found in the cache then.
pub fn embed_part(
    campaign: &Campaign,
    name: &str,
    s: &DataSettings,
    shard: crate::pipeline::shard::Shard,
    progress: bool,
) -> Result<PartOutcome> {
    let (members, member_files) = match members_of(campaign, name, s)? {
        Ok(x) => x,
        Err(reason) => return Ok(PartOutcome::Missing(reason)),
    };
    let source = source(campaign, name, &members, &member_files, s)?;
    if source.vectors.is_some() || embed::is_hashing_model(&s.model_dir) {
        // vectors from the dataset's files, or hashed when the export is built: no part of
        // the embedding cache to fill
        return Ok(PartOutcome::Embedded {
            part_texts: 0,
            embedded: 0,
        });
    }
    let (model_id, dim) = model_identity(s)?;
    let embedder = LazyEmbedder::new(s);
    let counts = RefCell::new((0usize, 0usize));
    let mut embed_fn = EmbedFn {
        model_id,
        dim,
        embed: Box::new(|texts: &[&str], role: Role, label: &str| {
            embedder.with(|e, c| {
                let mut mine: Vec<&str> = texts
                    .iter()
                    .copied()
                    .filter(|t| shard.owns_text(t))
                    .collect();
                mine.sort_unstable();
                mine.dedup();
                let new = mine
                    .iter()
                    .filter(|t| !c.contains_as(e.prompt(role), t))
                    .count();
                let bar = crate::pipeline::progress::Progress::new(
                    progress,
                    &format!("embed {name} {label} (part {shard})"),
                    "texts",
                    mine.len() as u64,
                );
                embed::embed_cached(e, c, role, &mine, &mut |n| bar.inc(n as u64))?;
                bar.finish();
                let mut n = counts.borrow_mut();
                n.0 += mine.len();
                n.1 += new;
                Ok(vec![vec![0.0; dim]; texts.len()])
            })
        }),
    };
    let read_all = || read_members(campaign, name, &members, &member_files, s);
    let mut read_error: Option<anyhow::Error> = None;
    clear_export_dir(name, &s.exports.join(name))?;
    let ran = export::embed_only_spanned(
        &source,
        || read_all().map_err(|e| read_failed(name, e, &mut read_error)),
        &s.prepare,
        &mut embed_fn,
        &s.exports.join(name),
    );
    match ran {
        Ok(false) => Ok(PartOutcome::ExportReady),
        Ok(true) => {
            drop(embed_fn);
            let (part_texts, embedded) = *counts.borrow();
            Ok(PartOutcome::Embedded {
                part_texts,
                embedded,
            })
        }
        Err(e) => Err(read_error.unwrap_or_else(|| e.into()))
            .with_context(|| format!("embedding part {shard} of dataset {name}")),
    }
}

/// Prepares (or reuses) and loads dataset `name`, its export with the optional `parts` the legs
/// to be run read ([`Campaign::parts_read`]); an export that lacks one gets it added. Its
/// queries' vectors are those `keep` names, every one when `None` ([`export::load_keeping`]).
pub fn open(
    campaign: &Campaign,
    name: &str,
    s: &DataSettings,
    progress: bool,
    parts: Parts,
    keep: Option<KeepVectors<'_>>,
) -> Result<DatasetState> {
    let (members, member_files) = match members_of(campaign, name, s)? {
        Ok(x) => x,
        Err(reason) => return Ok(DatasetState::Missing(reason)),
    };
    let source = source(campaign, name, &members, &member_files, s)?;
    let read_all = || read_members(campaign, name, &members, &member_files, s);

    let dir = s.exports.join(name);
    let embedder = LazyEmbedder::new(s);
    let mut embed_fn = embed_fn(&source, name, s, progress, &embedder)?;
    // the parts of a sharded run (which write a part of the cache and hold the results lock
    // shared) may need one export at once: one prepares it, the others wait and then find it
    // ready; an unsharded writer holds the results directory alone already
    let _preparing = s
        .cache_part
        .is_some()
        .then(|| {
            crate::store::lock::PathLock::acquire(
                &s.exports.join(format!(".{name}.lock")),
                &format!("preparing {name}"),
            )
        })
        .transpose()?;
    clear_export_dir(name, &dir)?;
    let (export, how) = prepare_and_load(
        &source,
        name,
        s,
        &mut embed_fn,
        &read_all,
        &dir,
        parts,
        keep,
    )?;
    if let Prepared::Extended(added) = how {
        eprintln!(
            "{name}: added the {added} to the export at {}",
            dir.display()
        );
    }
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

/// What embeds the texts of dataset `name`'s build: nothing when the dataset brings its own
/// vectors, the hashing embedder for `hashing-384`, else the model (loaded at the first texts
/// the build asks for), its progress shown when `progress`.
fn embed_fn<'a>(
    source: &Source,
    name: &'a str,
    s: &DataSettings,
    progress: bool,
    embedder: &'a LazyEmbedder<'a>,
) -> Result<EmbedFn<'a>> {
    Ok(if source.vectors.is_some() {
        // the dataset brings every vector the build reads (passages and queries are required
        // in its `vectors:` group): no model is loaded, or needed
        EmbedFn {
            model_id: String::new(),
            dim: 0,
            embed: Box::new(move |_: &[&str], _: Role, label: &str| {
                Err(hopbench_datasets::Error::Config {
                    context: format!("dataset {name}"),
                    message: format!("its {label} would be embedded, but its vectors come from its `vectors:` files"),
                })
            }),
        }
    } else if embed::is_hashing_model(&s.model_dir) {
        let hashing = HashingEmbedder::new();
        EmbedFn {
            model_id: embed::HASHING_MODEL_ID.to_string(),
            dim: embed::HASHING_DIM,
            embed: Box::new(move |texts: &[&str], _: Role, _: &str| Ok(hashing.embed_texts(texts))),
        }
    } else {
        let (model_id, dim) = model_identity(s)?;
        EmbedFn {
            model_id,
            dim,
            embed: Box::new(move |texts: &[&str], role: Role, label: &str| {
                embedder.with(|e, c| {
                    let bar = crate::pipeline::progress::Progress::new(
                        progress,
                        &format!("embed {name} {label}"),
                        "texts",
                        texts.len() as u64,
                    );
                    let out = embed::embed_cached(e, c, role, texts, &mut |n| bar.inc(n as u64));
                    bar.finish();
                    out
                })
            }),
        }
    })
}

/// Runs `f` with the embedder of the model `settings` names (the campaign's settings with a
/// leg's model directory and prompts), whose id and dimension are `(model_id, dim)`: the
/// hashing embedder for `hashing-384`, else the model through its embedding cache, loaded at
/// the first text the cache lacks. `name` names the dataset in the progress bars.
pub fn with_model_embed_fn<T>(
    settings: &DataSettings,
    name: &str,
    progress: bool,
    (model_id, dim): (&str, usize),
    f: impl FnOnce(&mut EmbedFn<'_>) -> hopbench_datasets::Result<T>,
) -> hopbench_datasets::Result<T> {
    let dir = &settings.model_dir;
    if embed::is_hashing_model(dir) {
        let hashing = HashingEmbedder::new();
        return f(&mut EmbedFn {
            model_id: model_id.to_string(),
            dim,
            embed: Box::new(move |texts: &[&str], _: Role, _: &str| Ok(hashing.embed_texts(texts))),
        });
    }
    let embedder = LazyEmbedder::new(settings);
    let mut embed_fn = EmbedFn {
        model_id: model_id.to_string(),
        dim,
        embed: Box::new(|texts: &[&str], role: Role, label: &str| {
            embedder.with(|e, c| {
                let bar = crate::pipeline::progress::Progress::new(
                    progress,
                    &format!("embed {name} {label} ({})", dir.display()),
                    "texts",
                    texts.len() as u64,
                );
                let out = embed::embed_cached(e, c, role, texts, &mut |n| bar.inc(n as u64));
                bar.finish();
                out
            })
        }),
    };
    f(&mut embed_fn)
}

/// Prepares (or reuses) the export of dataset `name` in `dir` and loads it (keeping the query
/// vectors `keep` names). An export whose
/// manifest and file hashes check out can still fail to load (written by a build with a bug,
/// or with values the loader refuses): it is rebuilt once, and a rebuild that does not load
/// either is the error.
#[allow(clippy::too_many_arguments)]
fn prepare_and_load(
    source: &Source,
    name: &str,
    s: &DataSettings,
    embed_fn: &mut EmbedFn<'_>,
    read_all: &dyn Fn() -> Result<SpannedDataset>,
    dir: &Path,
    parts: Parts,
    keep: Option<KeepVectors<'_>>,
) -> Result<(Export, Prepared)> {
    let mut healed = false;
    loop {
        let mut read_error: Option<anyhow::Error> = None;
        let result = export::prepare_spanned(
            source,
            || read_all().map_err(|e| read_failed(name, e, &mut read_error)),
            &s.prepare,
            embed_fn,
            dir,
            parts,
        );
        let (_, how) = match result {
            Ok(x) => x,
            Err(e) => {
                return Err(read_error.unwrap_or_else(|| e.into()))
                    .with_context(|| format!("preparing dataset {name}"))
            }
        };
        match export::load_keeping(dir, keep) {
            Ok(export) => return Ok((export, how)),
            Err(e) if how == Prepared::Reused && !healed => {
                eprintln!(
                    "warning: the export of {name} at {} does not load ({e}); rebuilding it",
                    dir.display()
                );
                crate::store::fsx::remove_dir_atomically(dir)
                    .with_context(|| format!("removing the broken export {}", dir.display()))?;
                healed = true;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("loading the export of {name}"));
            }
        }
    }
}

/// The head of dataset `name`'s export ([`export::read_head`]: its manifest and queries, not
/// its corpus) when the export on disk is the one [`open`] would use as it is: current for the
/// dataset's inputs, configuration and model, every file matching its hash. `None` when
/// [`open`] has the deciding to do: the dataset lacks inputs, brings its own vectors (whose
/// files are read to know the key), or its export would be prepared.
pub fn open_head(
    campaign: &Campaign,
    name: &str,
    s: &DataSettings,
) -> Result<Option<export::ExportHead>> {
    let Ok((members, member_files)) = members_of(campaign, name, s)? else {
        return Ok(None);
    };
    let source = source(campaign, name, &members, &member_files, s)?;
    if source.vectors.is_some() {
        return Ok(None);
    }
    let (model_id, dim) = model_identity(s)?;
    let planned = export::planned_manifest(&source, &s.prepare, &model_id, dim)
        .with_context(|| format!("dataset {name}"))?;
    export::read_head(&s.exports.join(name), &planned.input_key)
        .with_context(|| format!("reading the export of {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn campaign() -> Campaign {
        Campaign::parse(
            "datasets:
  s: {format: synthetic}
  m: {format: musique, files: {questions: m/q.json, corpus: m/c.json}}
  h: {format: hotpotqa, files: {questions: h/q.json}}
  p: {format: pool, pool: [m, h]}
  sd: {format: dialogues, derive_from: s}
  md: {format: dialogues, derive_from: m}
  pd: {format: dialogues, derive_from: p}
legs: {b: {kind: bm25}}
",
            "test",
        )
        .unwrap()
    }

    fn settings(data_dir: Option<PathBuf>) -> DataSettings {
        DataSettings {
            data_dir,
            exports: PathBuf::from("unused"),
            embeddings: PathBuf::from("unused"),
            model_dir: PathBuf::from("unused"),
            prompts: PromptOverrides::default(),
            prepare: PrepareConfig::default(),
            cache_part: None,
        }
    }

    #[test]
    fn dialogues_read_their_sources_files() {
        let c = campaign();
        assert_eq!(member_names(&c, "sd"), ["s"]);
        assert_eq!(member_names(&c, "md"), ["m"]);
        assert_eq!(member_names(&c, "pd"), ["m", "h"]);
        assert!(!needs_files(&c, "sd"));
        assert!(needs_files(&c, "md") && needs_files(&c, "pd"));

        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("m")).unwrap();
        std::fs::write(dir.path().join("m/q.json"), "[]").unwrap();
        let data = Some(dir.path());
        // a missing source file makes the derived dataset missing, naming the file
        let status = availability(&c, "md", data).unwrap();
        assert!(
            status.starts_with("missing:") && status.contains("c.json"),
            "{status}"
        );
        assert!(availability(&c, "md", None)
            .unwrap()
            .starts_with("missing:"));
        assert_eq!(availability(&c, "sd", None).unwrap(), "available");
        std::fs::write(dir.path().join("m/c.json"), "[]").unwrap();
        assert_eq!(availability(&c, "md", data).unwrap(), "available");
        assert!(availability(&c, "pd", data).unwrap().contains("h/q.json"));
        // the derived dataset's files are the source's files
        let s = settings(data.map(Path::to_path_buf));
        let (members, files) = members_of(&c, "md", &s).unwrap().unwrap();
        assert_eq!(members, ["m"]);
        assert_eq!(files, members_of(&c, "m", &s).unwrap().unwrap().1);
        // an empty musique set is refused, naming its files, before anything is derived
        let e = format!("{:#}", read_dataset(&c, "md", &s).unwrap_err());
        assert!(e.contains("c.json") && e.contains("no passages"), "{e}");
    }

    #[test]
    fn synthetic_dialogues_are_derived_and_labelled() {
        let c = campaign();
        let s = settings(None);
        let src = read_dataset(&c, "s", &s).unwrap();
        let d = read_dataset(&c, "sd", &s).unwrap();
        assert_eq!(d.passages, src.passages);
        let hops: usize = src
            .questions
            .iter()
            .map(|q| q.decomposition.as_ref().map_or(0, Vec::len))
            .sum();
        assert_eq!(d.questions.len(), hops);
        assert!(d
            .questions
            .iter()
            .all(|q| q.labels["derived"] == "s-decomposition" && q.conversation.is_some()));
    }

    #[test]
    fn the_export_identity_is_pinned() {
        // these bytes are hashed into the exports' input keys: a change here re-prepares every
        // export of that kind, so it must be deliberate
        let c = campaign();
        let dir = tempfile::tempdir().unwrap();
        for f in ["m/q.json", "m/c.json", "h/q.json"] {
            std::fs::create_dir_all(dir.path().join(f).parent().unwrap()).unwrap();
            std::fs::write(dir.path().join(f), "[]").unwrap();
        }
        let s = settings(Some(dir.path().to_path_buf()));
        let source_of = |name: &str| {
            let (members, files) = members_of(&c, name, &s).unwrap().unwrap();
            source(&c, name, &members, &files, &s).unwrap()
        };
        let m = source_of("m");
        assert_eq!(m.format, "musique");
        assert_eq!(
            m.files,
            [dir.path().join("m/c.json"), dir.path().join("m/q.json")]
        );
        // the format's protocol is filled in when the campaign loads, and applied by the build
        assert_eq!(
            m.protocol,
            hopbench_datasets::protocol::Protocol::TITLE_NEWLINE
        );
        let spec = r#"{"format":"musique","files":{"corpus":"m/c.json","questions":"m/q.json"},"synthetic":null,"pool":[],"context_header":"title","note":null}"#;
        assert_eq!(m.extra, format!("[{spec},[{spec}]]"));
        let sd = source_of("sd");
        assert_eq!(sd.format, "dialogues");
        assert_eq!(
            sd.protocol,
            hopbench_datasets::protocol::Protocol::PUBLISHED
        );
        let synthetic = r#"{"format":"synthetic","files":{},"synthetic":null,"pool":[],"context_header":"as_published","note":null}"#;
        assert_eq!(
            sd.extra,
            format!(
                r#"[{{"format":"dialogues","files":{{}},"synthetic":null,"pool":[],"derive_from":"s","context_header":"as_published","note":null}},[{synthetic}],{synthetic},["dialogues",{}]]"#,
                formats::dialogues::VERSION
            )
        );
        assert_eq!(source_of("p").format, "pool");
        assert_eq!(source_of("s").format, "synthetic");
    }

    #[test]
    fn chunk_settings_are_part_of_the_export_identity() {
        let c = Campaign::parse(
            "datasets:
  docs: {format: documents, files: {documents: d.jsonl, queries: q.jsonl, qrels: r.txt}, chunking: {size: [64, 128], unit: tokens}}
  chars: {format: documents, files: {documents: d.jsonl, queries: q.jsonl, qrels: r.txt}, chunking: {size: 64, unit: chars}}
  whole: {format: documents, files: {documents: d.jsonl, queries: q.jsonl, qrels: r.txt}}
legs: {b: {kind: bm25}}
",
            "test",
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        for f in ["d.jsonl", "q.jsonl", "r.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let mut s = settings(Some(dir.path().to_path_buf()));
        s.model_dir = dir.path().join("model");
        let source_of = |name: &str| {
            let (members, files) = members_of(&c, name, &s).unwrap().unwrap();
            source(&c, name, &members, &files, &s).unwrap()
        };
        let (a, b) = (
            source_of("docs@size64-overlap0"),
            source_of("docs@size128-overlap0"),
        );
        assert_ne!(a.extra, b.extra, "another size is another export");
        for src in [&a, &b, &source_of("chars")] {
            assert!(src.extra.contains(CHUNKER_ID), "{}", src.extra);
        }
        assert!(a
            .extra
            .contains(r#""chunking":{"size":64,"overlap":0,"unit":"tokens"}"#));
        // chunks in tokens depend on the tokenizer file: it is hashed as an input
        let tok = dir.path().join("model/tokenizer.json");
        assert_eq!(a.files.last(), Some(&tok));
        assert!(!source_of("chars").files.contains(&tok));
        let whole = source_of("whole");
        assert!(!whole.files.contains(&tok) && !whole.extra.contains("chunker"));
        // the planned keys differ too (the key hashes the tokenizer, which must exist)
        std::fs::create_dir_all(tok.parent().unwrap()).unwrap();
        std::fs::write(&tok, "{}").unwrap();
        let key = |src: &Source| {
            export::planned_manifest(src, &PrepareConfig::default(), "m@1", 8)
                .unwrap()
                .input_key
        };
        assert_ne!(key(&a), key(&b));
        let before = key(&a);
        std::fs::write(&tok, "{\"changed\": 1}").unwrap();
        assert_ne!(key(&a), before, "a changed tokenizer is another export");
    }

    #[test]
    fn derived_exports_are_keyed_apart_and_others_unchanged() {
        let c = campaign();
        let extra = |name: &str| extra_identity(&c, &c.datasets[name], &member_names(&c, name));
        // the pre-existing shape for every non-derived dataset
        let spec = &c.datasets["m"];
        assert_eq!(
            extra("m"),
            serde_json::to_string(&(spec, vec![spec])).unwrap()
        );
        assert_ne!(extra("md"), extra("m"));
        assert_ne!(extra("sd"), extra("s"));
        assert_ne!(extra("pd"), extra("p"));
        assert!(extra("md").contains(r#""derive_from":"m""#));
        assert!(extra("md").contains(&format!(r#"["dialogues",{}]"#, formats::dialogues::VERSION)));
    }
}
