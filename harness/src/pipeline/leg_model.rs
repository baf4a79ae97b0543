//! The model a leg names (`model: DIR`): resolved once per run, and the export a leg over it
//! reads.
//!
//! A leg's vectors are the campaign model's unless it names another. The other model's vectors
//! of the dataset's texts are a part of the dataset's export
//! ([`hopbench_datasets::export::ModelPart`]), built the first time a leg needs them, through
//! the embedding cache of that model (keyed by its id and the text, as the campaign model's
//! is), and the leg runs over the export loaded with them in place of its own vectors. Every
//! other file (chunks, queries, gold, BM25, the graphs) is the export's, so two legs that
//! differ by their model are scored on the same queries and gold and pair query by query.
//!
//! A leg's model uses its own prompts: the campaign's `query_prompt` and `passage_prompt`
//! replace the campaign model's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use hopbench_datasets::embed::{self, CrossEncoder, PromptOverrides};
use hopbench_datasets::export::{self, Export, KeepVectors, PartBuild};
use hopbench_legs::rerank::{RerankSpec, RerankerKind};

use crate::pipeline::campaign::Campaign;
use crate::pipeline::data::{self, DataSettings};

/// A leg's model, resolved: where it is, its id and dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegModel {
    /// The model directory (or the hashing embedder's name).
    pub dir: PathBuf,
    /// Its id (name and weights hash: [`embed::model_id_with`]).
    pub id: String,
    /// Vector dimension.
    pub dim: usize,
}

impl LegModel {
    /// The data settings that embed with this model: the campaign's, with this model's
    /// directory and its own prompts.
    pub fn data_settings(&self, data: &DataSettings) -> DataSettings {
        DataSettings {
            model_dir: self.dir.clone(),
            prompts: PromptOverrides::default(),
            ..data.clone()
        }
    }
}

/// The models of the legs `legs` that name one: by leg, each directory read for its id and
/// dimension, and apart, the legs whose model is not installed (no such directory), with the
/// reason their cells are `missing-inputs`. A directory that is there and not a model is an
/// error naming the leg and the field.
pub fn resolve(campaign: &Campaign, legs: &[String]) -> Result<LegModels> {
    let mut out = LegModels::default();
    for leg in legs {
        let Some(model) = campaign.legs.get(leg).and_then(|s| s.model()) else {
            continue;
        };
        let dir = PathBuf::from(model);
        if !embed::is_hashing_model(&dir) && !dir.exists() {
            let name = dir
                .file_name()
                .map_or_else(Default::default, |n| n.to_string_lossy());
            out.missing.insert(
                leg.clone(),
                format!(
                    "leg `{leg}` reads the vectors of model {model}, which is not installed \
                     (scripts/setup --model {name} installs a model the registries ship)"
                ),
            );
            continue;
        }
        let (id, dim) = identity_of(&dir).with_context(|| {
            format!(
                "leg `{leg}`: field `model`: `{model}` is not a model directory hopbench can run \
                 (run scripts/setup --model NAME to install one)"
            )
        })?;
        out.ready.insert(leg.clone(), LegModel { dir, id, dim });
    }
    for leg in legs {
        let Some(spec) = campaign.legs.get(leg).and_then(|s| s.rerank()) else {
            continue;
        };
        match reranker_identity(leg, spec).with_context(|| {
            format!("leg `{leg}`: field `rerank.model`: not a model hopbench can rerank with")
        })? {
            Ok(id) => {
                out.rerankers.insert(leg.clone(), id);
            }
            Err(reason) => {
                out.missing.entry(leg.clone()).or_insert(reason);
            }
        }
    }
    Ok(out)
}

/// The selected legs' own models ([`resolve`]).
#[derive(Debug, Clone, Default)]
pub struct LegModels {
    /// The model of each leg that names an installed one.
    pub ready: BTreeMap<String, LegModel>,
    /// Why each leg whose model (or reranker's model) is not installed cannot run (its cells
    /// are `missing-inputs`).
    pub missing: BTreeMap<String, String>,
    /// The identity of each rerank stage's model, by leg ([`reranker_identity`]).
    pub rerankers: BTreeMap<String, Option<String>>,
}

impl LegModels {
    /// The installed model leg `leg` names, `None` for a leg of the campaign's model (or of a
    /// missing one).
    pub fn get(&self, leg: &str) -> Option<&LegModel> {
        self.ready.get(leg)
    }
}

/// The id and dimension of the model at `dir` with its own prompts.
pub fn identity_of(dir: &Path) -> Result<(String, usize)> {
    if embed::is_hashing_model(dir) {
        return Ok((embed::HASHING_MODEL_ID.to_string(), embed::HASHING_DIM));
    }
    let id = embed::model_id_with(dir, &PromptOverrides::default())?;
    Ok((id, embed::model_dim_of(dir)?))
}

/// The export a leg over `model` reads: `export` itself when its vectors are the model's
/// already, else `export` loaded with the model's part (built now if the export lacks it, said
/// on stderr), keeping the query vectors `keep` names.
pub fn export_for(
    export: &Arc<Export>,
    model: &LegModel,
    data: &DataSettings,
    progress: bool,
    keep: Option<KeepVectors<'_>>,
) -> Result<Arc<Export>> {
    if export.model_id() == model.id {
        return Ok(export.clone());
    }
    let name = &export.manifest.dataset;
    let settings = model.data_settings(data);
    // the parts of a sharded run may need one model's part at once: one builds it, the others
    // wait and then find it whole
    let _building = data
        .cache_part
        .is_some()
        .then(|| {
            crate::store::lock::PathLock::acquire(
                &data.exports.join(format!(".{name}.models.lock")),
                &format!("adding a model's vectors to {name}"),
            )
        })
        .transpose()?;
    let model_of = (model.id.as_str(), model.dim);
    let (part, how) = data::with_model_embed_fn(&settings, name, progress, model_of, |embed_fn| {
        export::model_part(export, embed_fn)
    })
    .with_context(|| {
        format!(
            "embedding dataset {name} with model {}",
            model.dir.display()
        )
    })?;
    match how {
        PartBuild::Reused => {}
        PartBuild::Built => eprintln!(
            "{name}: added the vectors of {} to the export at {}",
            model.dir.display(),
            part.dir.display()
        ),
        PartBuild::Replaced => eprintln!(
            "warning: {name}: the vectors of {} at {} were damaged or of another export; \
             rebuilt them",
            model.dir.display(),
            part.dir.display()
        ),
    }
    let view = export::load_with_model(&export.dir, keep, &part).with_context(|| {
        format!(
            "loading the export of {name} with the vectors of {}",
            model.dir.display()
        )
    })?;
    Ok(Arc::new(view))
}

/// The export leg `leg` of `campaign` reads over `export` (the export itself, or the export
/// with the leg's model's vectors) and the leg's model: for the commands that run one leg
/// outside the matrix (the benches).
pub fn for_leg(
    campaign: &Campaign,
    leg: &str,
    export: &Arc<Export>,
    data: &DataSettings,
) -> Result<(Arc<Export>, Option<LegModel>)> {
    let models = resolve(campaign, &[leg.to_string()])?;
    if let Some(reason) = models.missing.get(leg) {
        anyhow::bail!("{reason}");
    }
    match models.get(leg) {
        None => Ok((export.clone(), None)),
        Some(m) => Ok((export_for(export, m, data, false, None)?, Some(m.clone()))),
    }
}

/// What a rerank group's reranker is, for a cell key: its model's id (`None` for a bi-encoder
/// over the leg's own vectors, whose id the cell has already). `Ok(Err(reason))`: the model
/// directory is not installed (the leg's cells are `missing-inputs` with that reason).
pub fn reranker_identity(
    leg: &str,
    spec: &RerankSpec,
) -> Result<std::result::Result<Option<String>, String>> {
    let Some(model) = spec.model.as_deref() else {
        return Ok(Ok(None));
    };
    let dir = Path::new(model);
    if spec.reranker == RerankerKind::BiEncoder && hopbench_datasets::embed::is_hashing_model(dir) {
        return Ok(Ok(Some(hopbench_datasets::embed::HASHING_MODEL_ID.into())));
    }
    if !dir.exists() {
        return Ok(Err(format!(
            "leg `{leg}` reranks with {model}, which is not installed"
        )));
    }
    let id = match spec.reranker {
        RerankerKind::BiEncoder => identity_of(dir)?.0,
        RerankerKind::CrossEncoder => CrossEncoder::load(dir, spec.label.as_deref())?
            .model_id()
            .to_string(),
    };
    Ok(Ok(Some(id)))
}
