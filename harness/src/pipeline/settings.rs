//! The settings of one invocation, resolved once: the campaign, then the environment, then the
//! command line (each overriding the one before), into one [`Settings`] that every command reads
//! by reference.
//!
//! The resolved values are written back into the settings' campaign, so printing that campaign
//! (`run-matrix --show-settings`) gives a campaign file that resolves to exactly these settings
//! when fed back with `--campaign` and no flags: the directories are the campaign's `results`,
//! `model` and `data_dir`, and the `run-matrix` options live in its `run` section.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::measure::contract::{self, ThreadSource};
use crate::pipeline::campaign::{select, Campaign, RunSection};
use crate::pipeline::data::{self, DataSettings};

/// Resolved settings of one `run-matrix` invocation.
#[derive(Debug, Clone)]
pub struct MatrixSettings {
    /// Results directory.
    pub results: PathBuf,
    /// Datasets to run, in order.
    pub datasets: Vec<String>,
    /// Legs to run, in order.
    pub legs: Vec<String>,
    /// Evaluate only the first N queries of each dataset.
    pub limit: Option<usize>,
    /// Recompute cells whose key matches.
    pub force: bool,
    /// Pinned thread count.
    pub threads: usize,
    /// Where it was pinned.
    pub thread_source: ThreadSource,
    /// Where raw datasets are read from.
    pub data: crate::pipeline::data::DataSettings,
    /// Show progress bars.
    pub progress: bool,
    /// Skip budget curves.
    pub no_curves: bool,
    /// `--shard I/N`: run only this part of the cells (no `matrix.md`).
    pub shard: Option<crate::pipeline::shard::Shard>,
    /// `--cells`: run only these (dataset, leg) cells of the selection.
    pub cells: Option<Vec<(String, String)>>,
    /// The models of the selected legs that name one (`model:`), by leg.
    pub leg_models: crate::pipeline::leg_model::LegModels,
}

/// What the command line says, before resolution: `None` (or `false`) where a flag was not
/// given, so the campaign's value stands.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--campaign`.
    pub campaign: Option<PathBuf>,
    /// `--results`.
    pub results: Option<PathBuf>,
    /// `--data-dir` / `HOPBENCH_DATA`.
    pub data_dir: Option<PathBuf>,
    /// `--model` / `HOPBENCH_MODEL_DIR`.
    pub model: Option<PathBuf>,
    /// `--allow-outside-data-dir`.
    pub allow_outside_data_dir: bool,
    /// `run-matrix`'s flags (`None` for the other commands).
    pub run: Option<RunFlags>,
}

/// `run-matrix`'s own flags.
#[derive(Debug, Clone, Default)]
pub struct RunFlags {
    /// `--datasets`: `all` or a comma list.
    pub datasets: Option<String>,
    /// `--legs`: `all` or a comma list.
    pub legs: Option<String>,
    /// `--limit`.
    pub limit: Option<usize>,
    /// `--threads`.
    pub threads: Option<usize>,
    /// `--force`.
    pub force: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// `--no-curves`.
    pub no_curves: bool,
    /// `--shard I/N`.
    pub shard: Option<crate::pipeline::shard::Shard>,
    /// `--cells D/L,...`.
    pub cells: Option<String>,
}

/// The resolved settings of one invocation.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The campaign with every resolved value written back (see the module note).
    pub campaign: Campaign,
    /// Where the campaign came from (a path, or the embedded default).
    pub origin: String,
    /// Results directory.
    pub results: PathBuf,
    /// Where raw data, exports, the embedding cache and the model live.
    pub data: DataSettings,
    /// `run-matrix`'s resolved options (`None` for the other commands).
    pub matrix: Option<MatrixSettings>,
}

impl Settings {
    /// Loads the campaign and applies the environment and the command line to it.
    pub fn resolve(o: &Overrides) -> Result<Settings> {
        let (mut campaign, origin) = Campaign::load(o.campaign.as_deref())?;
        let results = o
            .results
            .clone()
            .unwrap_or_else(|| PathBuf::from(&campaign.results));
        let model = o
            .model
            .clone()
            .unwrap_or_else(|| PathBuf::from(&campaign.model));
        if hopbench_datasets::embed::is_hashing_model(&model) && model.exists() {
            // the name selects the built-in hashing embedder: a directory of that name in the
            // working directory must not silently stop being the model, nor silently become it
            anyhow::bail!(
                "model `{}` names the built-in non-semantic hashing embedder, but a directory of \
                 that name exists here: write `./{}` for the directory, or move it",
                hopbench_datasets::embed::HASHING_MODEL,
                hopbench_datasets::embed::HASHING_MODEL
            );
        }
        let data_dir = o
            .data_dir
            .clone()
            .or_else(|| campaign.data_dir.as_ref().map(PathBuf::from));
        if let Some(dir) = data_dir.as_deref().filter(|d| !d.is_dir()) {
            // a mistyped path would otherwise run with every real dataset `missing-inputs`
            let from = if o.data_dir.is_some() {
                "--data-dir or HOPBENCH_DATA".to_string()
            } else {
                format!("field `data_dir` of {origin}")
            };
            anyhow::bail!(
                "data directory {} ({from}) is not a directory",
                dir.display()
            );
        }
        if !o.allow_outside_data_dir {
            confine_files(&campaign, data_dir.as_deref())
                .with_context(|| format!("{origin}: invalid campaign"))?;
        }
        // a leg that reads a file (`run`) names it relative to the campaign file; the path is
        // made absolute and the file's content hash written into the leg's parameters, so the
        // cell key changes when the file does and printed settings name the same file
        let base = o
            .campaign
            .as_deref()
            .and_then(Path::parent)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        for (name, spec) in campaign.legs.iter_mut() {
            *spec = spec
                .pin_inputs(name, base)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("{origin}: invalid campaign"))?;
        }
        campaign.results = path_text(&results);
        campaign.model = path_text(&model);
        campaign.data_dir = data_dir.as_deref().map(path_text);
        let data = DataSettings {
            data_dir,
            exports: results.join("exports"),
            embeddings: results.join("embeddings"),
            model_dir: model,
            prompts: hopbench_datasets::embed::PromptOverrides {
                query: campaign.query_prompt.clone(),
                passage: campaign.passage_prompt.clone(),
            },
            prepare: campaign.prepare.clone(),
            cache_part: None,
        };
        let mut settings = Settings {
            campaign,
            origin,
            results,
            data,
            matrix: None,
        };
        if let Some(flags) = &o.run {
            let (run, matrix) = resolve_run(&settings, flags)?;
            settings.campaign.run = run;
            settings.matrix = Some(matrix);
        }
        Ok(settings)
    }

    /// Whether a raw data directory is known (without one, `all` means the generated datasets).
    pub fn have_data(&self) -> bool {
        self.data.data_dir.is_some()
    }

    /// The settings as a campaign file: fed back with `--campaign`, it resolves to these
    /// settings again.
    pub fn to_yaml(&self) -> String {
        let body = serde_saphyr::to_string(&self.campaign).expect("a campaign serialises");
        format!(
            "# hopbench settings resolved from {}, the environment and the command line.\n\
             # `hopbench run-matrix --campaign THIS_FILE` runs with exactly these settings.\n{body}",
            self.origin
        )
    }
}

/// `run-matrix`'s options: each flag, else the campaign's `run` key, else the default; returned
/// both as the fully filled `run` section and as the matrix runner's settings.
fn resolve_run(s: &Settings, flags: &RunFlags) -> Result<(RunSection, MatrixSettings)> {
    let pinned = &s.campaign.run;
    let datasets = match (&flags.datasets, &pinned.datasets) {
        (Some(arg), _) => default_datasets(arg, &s.campaign, s.have_data())?,
        (None, Some(list)) => select(&list.join(","), s.campaign.datasets.keys(), "dataset")?,
        (None, None) => default_datasets("all", &s.campaign, s.have_data())?,
    };
    let legs = match (&flags.legs, &pinned.legs) {
        (Some(arg), _) => select(arg, s.campaign.legs.keys(), "leg")?,
        (None, Some(list)) => select(&list.join(","), s.campaign.legs.keys(), "leg")?,
        (None, None) => select("all", s.campaign.legs.keys(), "leg")?,
    };
    let (threads, thread_source) = contract::pinned_threads(flags.threads, pinned.threads)
        .map_err(|e| anyhow::anyhow!("{}: {e}", s.origin))?;
    let limit = flags.limit.or(pinned.limit);
    let force = flags.force || pinned.force.unwrap_or(false);
    let progress = !flags.quiet && pinned.progress.unwrap_or(true);
    let curves = !flags.no_curves && pinned.curves.unwrap_or(true);
    let run = RunSection {
        datasets: Some(datasets.clone()),
        legs: Some(legs.clone()),
        limit,
        threads: Some(threads),
        force: Some(force),
        progress: Some(progress),
        curves: Some(curves),
    };
    let leg_models = crate::pipeline::leg_model::resolve(&s.campaign, &legs)
        .with_context(|| format!("{}: invalid campaign", s.origin))?;
    let matrix = MatrixSettings {
        results: s.results.clone(),
        datasets,
        legs,
        leg_models,
        limit,
        force,
        threads,
        thread_source,
        data: crate::pipeline::data::DataSettings {
            // a part embeds into its own part file of the cache
            cache_part: flags.shard.map(|sh| format!("cells-{}", sh.label())),
            ..s.data.clone()
        },
        progress,
        no_curves: !curves,
        shard: flags.shard,
        cells: flags
            .cells
            .as_deref()
            .map(|c| parse_cells(c, &s.campaign))
            .transpose()?,
    };
    refuse_cells_outside(&matrix)?;
    Ok((run, matrix))
}

/// A `--cells` cell outside the selected datasets and legs would be left out silently (a run
/// of nothing that exits 0): it is an error naming the cell and the selection.
fn refuse_cells_outside(m: &MatrixSettings) -> Result<()> {
    let Some(cells) = &m.cells else {
        return Ok(());
    };
    for (d, l) in cells {
        if !m.datasets.contains(d) {
            anyhow::bail!(
                "--cells: `{d}/{l}`: dataset `{d}` is not among the selected datasets ({}); \
                 add it to --datasets",
                m.datasets.join(", ")
            );
        }
        if !m.legs.contains(l) {
            anyhow::bail!(
                "--cells: `{d}/{l}`: leg `{l}` is not among the selected legs ({}); add it to \
                 --legs",
                m.legs.join(", ")
            );
        }
    }
    Ok(())
}

/// `--cells D/L,D/L`: cells by dataset and leg name (as under `cells/`), each of the campaign.
pub fn parse_cells(text: &str, campaign: &Campaign) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (d, l) = item
            .split_once('/')
            .ok_or_else(|| anyhow::anyhow!("--cells: `{item}`: expected DATASET/LEG"))?;
        if !campaign.datasets.contains_key(d) {
            anyhow::bail!("--cells: `{item}`: no dataset `{d}` in the campaign");
        }
        if !campaign.legs.contains_key(l) {
            anyhow::bail!("--cells: `{item}`: no leg `{l}` in the campaign");
        }
        out.push((d.to_string(), l.to_string()));
    }
    if out.is_empty() {
        anyhow::bail!("--cells: no cell named");
    }
    Ok(out)
}

/// `all` without a data directory means the datasets that need no files (the embedded default):
/// a fresh clone runs the whole matrix with no download. With a data directory, `all` is all.
pub fn default_datasets(arg: &str, campaign: &Campaign, have_data: bool) -> Result<Vec<String>> {
    let all = select(arg, campaign.datasets.keys(), "dataset")?;
    if arg.trim() == "all" && !have_data {
        let generated: Vec<String> = all
            .into_iter()
            .filter(|n| !data::needs_files(campaign, n))
            .collect();
        eprintln!(
            "no data directory (--data-dir or HOPBENCH_DATA): running the generated datasets only ({})",
            generated.join(", ")
        );
        return Ok(generated);
    }
    Ok(all)
}

/// Every dataset's `files` must stay inside the data directory: relative, without `..`, and
/// (where the file exists) not a link that leads out of it. A campaign is a file people share,
/// and reading `../../etc/passwd` as a corpus is never what a benchmark means.
fn confine_files(campaign: &Campaign, data_dir: Option<&Path>) -> Result<()> {
    let root = data_dir.and_then(|d| d.canonicalize().ok());
    for (name, spec) in &campaign.datasets {
        let vectors = spec.vectors.iter().flat_map(|v| {
            v.paths()
                .into_iter()
                .map(|(key, p)| (format!("vectors.{key}"), vec![p]))
        });
        let files = spec
            .files
            .iter()
            .map(|(role, list)| (format!("files.{role}"), list.paths()))
            .chain(vectors);
        for (role, paths) in files {
            for file in paths {
                let p = Path::new(file);
                let escapes = p.is_absolute() || climbs_out(p);
                let through_link = || match (&root, data_dir) {
                    (Some(root), Some(dir)) => dir
                        .join(p)
                        .canonicalize()
                        .is_ok_and(|real| !real.starts_with(root)),
                    _ => false,
                };
                if escapes || through_link() {
                    anyhow::bail!(
                        "datasets.{name}: {role}: `{file}` leads outside the data \
                         directory (paths are relative to it; --allow-outside-data-dir permits \
                         this)"
                    );
                }
            }
        }
    }
    Ok(())
}

/// Whether relative path `p`, read component by component, ever climbs above where it starts
/// (`../x`, `m/../../x`); `./m/../m/q.json` stays inside. A root or a drive prefix leaves too.
fn climbs_out(p: &Path) -> bool {
    use std::path::Component;
    let mut depth = 0usize;
    for c in p.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return true,
            },
            Component::RootDir | Component::Prefix(_) => return true,
        }
    }
    false
}

/// A path as campaign text (campaign paths are strings; a non-UTF-8 path is shown lossily).
fn path_text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::campaign::EMBEDDED;

    fn flags() -> RunFlags {
        RunFlags {
            threads: Some(2),
            ..RunFlags::default()
        }
    }

    fn resolve_text(text: &str, o: &Overrides) -> Settings {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.yaml");
        std::fs::write(&path, text).unwrap();
        Settings::resolve(&Overrides {
            campaign: Some(path),
            ..o.clone()
        })
        .unwrap()
    }

    /// The printed settings parse back to the identical campaign (every dataset format and leg
    /// kind of the embedded campaign, with every run key filled).
    #[test]
    fn printed_settings_parse_back_to_the_same_campaign() {
        let o = Overrides {
            // data directories must exist: tests run in the package root, where `src` and `tests` do
            data_dir: Some("src".into()),
            results: Some("r1".into()),
            run: Some(RunFlags {
                limit: Some(7),
                no_curves: true,
                ..flags()
            }),
            ..Overrides::default()
        };
        let s = resolve_text(EMBEDDED, &o);
        let yaml = s.to_yaml();
        let back = Campaign::parse(&yaml, "printed").unwrap();
        assert_eq!(back, s.campaign, "{yaml}");
        assert_eq!(back.results, "r1");
        assert_eq!(back.data_dir.as_deref(), Some("src"));
        assert_eq!(back.run.limit, Some(7));
        assert_eq!(back.run.curves, Some(false));
        assert_eq!(back.run.legs.as_ref().unwrap().len(), back.legs.len());
        // and fed back with no flags, it resolves to the same settings
        let again = resolve_text(
            &yaml,
            &Overrides {
                run: Some(RunFlags::default()),
                ..Overrides::default()
            },
        );
        assert_eq!(again.campaign, s.campaign);
        let (m, n) = (s.matrix.unwrap(), again.matrix.unwrap());
        assert_eq!(
            (
                &m.datasets,
                &m.legs,
                m.limit,
                m.threads,
                m.force,
                m.progress,
                m.no_curves
            ),
            (
                &n.datasets,
                &n.legs,
                n.limit,
                n.threads,
                n.force,
                n.progress,
                n.no_curves
            )
        );
        assert_eq!((m.results, m.data.data_dir), (n.results, n.data.data_dir));
    }

    #[test]
    fn flags_override_the_campaign_and_the_campaign_overrides_defaults() {
        let text = "results: out\nmodel: m\ndata_dir: tests\nrun: {legs: [b], limit: 3, progress: false}\n\
                    datasets: {s: {format: synthetic}}\nlegs: {a: {kind: dense}, b: {kind: bm25}}\n";
        let pinned = resolve_text(
            text,
            &Overrides {
                run: Some(flags()),
                ..Overrides::default()
            },
        );
        let m = pinned.matrix.as_ref().unwrap();
        assert_eq!(m.legs, vec!["b"]);
        assert_eq!((m.limit, m.progress, m.no_curves), (Some(3), false, false));
        assert_eq!(m.results, PathBuf::from("out"));
        assert_eq!(m.data.data_dir, Some(PathBuf::from("tests")));
        assert_eq!(m.data.model_dir, PathBuf::from("m"));
        let flagged = resolve_text(
            text,
            &Overrides {
                results: Some("elsewhere".into()),
                model: Some("m2".into()),
                run: Some(RunFlags {
                    legs: Some("all".into()),
                    limit: Some(5),
                    ..flags()
                }),
                ..Overrides::default()
            },
        );
        let m = flagged.matrix.as_ref().unwrap();
        assert_eq!(m.legs, vec!["a", "b"]);
        assert_eq!(m.limit, Some(5));
        assert_eq!(m.data.exports, PathBuf::from("elsewhere/exports"));
        assert_eq!(flagged.campaign.model, "m2");
        assert_eq!(
            flagged.campaign.run.legs,
            Some(vec!["a".into(), "b".into()])
        );
    }

    #[test]
    fn unknown_pinned_names_and_keys_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.yaml");
        let text =
            "run: {legs: [nope]}\ndatasets: {s: {format: synthetic}}\nlegs: {a: {kind: dense}}\n";
        std::fs::write(&path, text).unwrap();
        let e = Settings::resolve(&Overrides {
            campaign: Some(path.clone()),
            run: Some(flags()),
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(format!("{e:#}").contains("unknown leg `nope`"), "{e:#}");
        std::fs::write(
            &path,
            "run: {thread: 2}\ndatasets: {s: {format: synthetic}}\nlegs: {b: {kind: bm25}}\n",
        )
        .unwrap();
        let e = Settings::resolve(&Overrides {
            campaign: Some(path),
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(format!("{e:#}").contains("thread"), "{e:#}");
    }
}
