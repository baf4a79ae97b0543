//! `hopbench slurm`: plan, write, and optionally submit and wait for the job chain.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use super::{resolved, Command, MatrixArgs, Task};
use crate::cluster::slurm;
use crate::pipeline::settings::{Overrides, Settings};

/// Write (and with --submit, submit) the Slurm job scripts that run the matrix as job arrays:
/// embedding parts, then cell parts, then a collect step that writes the matrix.
#[derive(Args, Debug)]
pub struct Slurm {
    #[command(flatten)]
    pub matrix: MatrixArgs,
    /// Tasks per job array.
    #[arg(long, default_value_t = 4)]
    pub array: usize,
    /// CPUs per task; each task runs with this many threads.
    #[arg(long, default_value_t = 1)]
    pub cpus_per_task: usize,
    /// Slurm partition.
    #[arg(long)]
    pub partition: Option<String>,
    /// Time limit per job (Slurm syntax, e.g. 02:00:00).
    #[arg(long)]
    pub time: Option<String>,
    /// Memory per job (e.g. 16G).
    #[arg(long)]
    pub mem: Option<String>,
    /// An extra `#SBATCH` line for every job (repeatable), e.g. `--account=proj`.
    #[arg(long = "extra-sbatch")]
    pub extra: Vec<String>,
    /// No embedding array (everything is embedded already).
    #[arg(long)]
    pub no_embed: bool,
    /// Only the cells `hopbench status` does not call done.
    #[arg(long)]
    pub only_missing: bool,
    /// Print the scripts and exit.
    #[arg(long)]
    pub dry_run: bool,
    /// Submit the scripts with sbatch (each array after the one before it succeeded).
    #[arg(long)]
    pub submit: bool,
    /// With --submit: wait until the collect step ends and exit with its status.
    #[arg(long)]
    pub wait: bool,
}

impl Command for Slurm {
    const TASK: Task = Task::Run;

    fn overrides(&self) -> Option<Overrides> {
        Some(self.matrix.overrides(self.matrix.select.planning(None)))
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        if self.wait && !self.submit {
            anyhow::bail!("--wait needs --submit");
        }
        let Some(plan) = self.plan(s)? else {
            out!("every cell is done: nothing to submit");
            return Ok(ExitCode::SUCCESS);
        };
        if self.dry_run {
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
        if !self.submit {
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
        if !self.wait {
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
}

impl Slurm {
    /// The job chain's plan, with absolute paths (the jobs run elsewhere); `None` when
    /// `--only-missing` finds every cell done.
    fn plan(&self, s: &Settings) -> Result<Option<slurm::SlurmPlan>> {
        let m = s
            .matrix
            .as_ref()
            .expect("slurm resolves the run's settings");
        let cells = if self.only_missing {
            let pending: Vec<(String, String)> = crate::cluster::status::cells(&s.campaign, m)?
                .into_iter()
                .filter(|(_, _, st)| st.pending())
                .map(|(d, l, _)| (d, l))
                .collect();
            if pending.is_empty() {
                return Ok(None);
            }
            Some(pending)
        } else {
            None
        };
        Ok(Some(slurm::SlurmPlan {
            exe: std::env::current_exe().context("cannot find the hopbench executable")?,
            workdir: std::env::current_dir().context("cannot read the working directory")?,
            campaign: self
                .matrix
                .common
                .campaign
                .as_deref()
                .map(absolute)
                .transpose()?,
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
            array: self.array,
            cpus_per_task: self.cpus_per_task,
            partition: self.partition.clone(),
            time: self.time.clone(),
            mem: self.mem.clone(),
            extra: self.extra.clone(),
            embed: !self.no_embed,
        }))
    }
}

/// `p` from the working directory.
fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}
