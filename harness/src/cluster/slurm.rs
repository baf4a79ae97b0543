//! Slurm: a campaign as a chain of three batch jobs, so a cluster runs the same work as one local
//! `hopbench run-matrix` and the results merge to the same bytes.
//!
//! 1. `embed.sh`, a job array: task I runs `hopbench prepare --shard I/N` (the embeddings are
//!    the expensive shared input, so they are computed once, before any cell needs them);
//! 2. `cells.sh`, a job array after (1) succeeded: task I runs `hopbench run-matrix --shard I/N`,
//!    each cell computed and cached by exactly one task;
//! 3. `collect.sh`, one job after (2) succeeded: an unsharded `run-matrix` that finds every cell
//!    cached and writes the matrix, then `hopbench status`, so its log ends with the table.
//!
//! This module only generates command lines and talks to Slurm's client programs (`sbatch`,
//! `squeue`, `scontrol`, `scancel`, named by [`SlurmBins`] so tests can substitute fakes); what
//! a shard computes is the business of `prepare` and `run-matrix`.
//!
//! How a waiting submitter learns the outcome: Slurm's own accounting of a finished job is not
//! always there (`sacct` needs slurmdbd, and `scontrol` forgets a job after `MinJobAge`), so the
//! collect script records its own exit status, with its job id, in `<results>/slurm/collect.status`
//! from an `EXIT` trap, and [`wait_for_collect`] reads that file once the job has left the queue.
//! A missing file means the job never ran to its end (cancelled, killed, a dependency failed);
//! `scontrol`, which still knows a job that ended seconds ago, then tells which step failed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// Everything the three scripts depend on. Paths may be relative to `workdir` (the scripts `cd`
/// there first, so they resolve exactly as they did for the command that generated them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmPlan {
    /// Absolute path of the hopbench executable (`std::env::current_exe()`): the jobs must run
    /// the binary that planned them, whatever `PATH` is on the compute nodes.
    pub exe: PathBuf,
    /// Absolute directory hopbench was invoked in; every script `cd`s here, so relative campaign,
    /// results and data paths mean what they meant on the command line.
    pub workdir: PathBuf,
    /// `--campaign`, if one was given (else each job resolves the default as a local run would).
    pub campaign: Option<PathBuf>,
    /// `--results`: the directory every job writes, and where `slurm/` (scripts, logs, the
    /// collect status) lives.
    pub results: PathBuf,
    /// `--data-dir`, if given.
    pub data_dir: Option<PathBuf>,
    /// `--model`, if given.
    pub model: Option<PathBuf>,
    /// `--datasets` (resolved names, or `all`), joined with commas.
    pub datasets: Vec<String>,
    /// `--legs` (resolved names, or `all`), joined with commas.
    pub legs: Vec<String>,
    /// An explicit (dataset, leg) list: the cell array runs only these (`--only-missing`), and
    /// is clamped to their number so no task starts with nothing to do.
    pub cells: Option<Vec<(String, String)>>,
    /// Tasks per array (at least 1).
    pub array: usize,
    /// `--cpus-per-task` of every job; also the `--threads` of each run.
    pub cpus_per_task: usize,
    /// `--partition`, if any.
    pub partition: Option<String>,
    /// `--time` (Slurm's syntax, e.g. `02:00:00`), if any.
    pub time: Option<String>,
    /// `--mem` (e.g. `32G`), if any.
    pub mem: Option<String>,
    /// Extra `#SBATCH` lines, verbatim (`--account=x` or `#SBATCH --account=x`).
    pub extra: Vec<String>,
    /// Whether to generate the embedding array; false when everything is already embedded, so
    /// the chain does not queue for an allocation that would only find its work done.
    pub embed: bool,
}

impl SlurmPlan {
    /// `<results>/slurm`, absolute: where [`write_scripts`] is meant to write.
    pub fn slurm_dir(&self) -> PathBuf {
        self.workdir.join(&self.results).join("slurm")
    }

    /// `<results>/slurm/logs`, absolute: every job's output file. Slurm does not create it, and
    /// a job whose output directory is missing fails without a word, so [`write_scripts`] does.
    pub fn log_dir(&self) -> PathBuf {
        self.slurm_dir().join("logs")
    }

    /// `<results>/slurm/collect.status`, absolute: `<exit code> <job id>` written by the collect
    /// job when it ends; what [`wait_for_collect`] reads.
    pub fn status_file(&self) -> PathBuf {
        self.slurm_dir().join("collect.status")
    }

    /// The campaign's file stem, restricted to characters a job name keeps readable.
    fn stem(&self) -> String {
        let stem = self
            .campaign
            .as_deref()
            .and_then(Path::file_stem)
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "campaign".into());
        stem.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

/// The three generated scripts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scripts {
    /// `embed.sh`, absent when the plan has no embedding step.
    pub embed: Option<String>,
    /// `cells.sh`.
    pub cells: String,
    /// `collect.sh`.
    pub collect: String,
}

/// The job ids [`submit`] got back from `sbatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The embedding array, if one was submitted.
    pub embed: Option<String>,
    /// The cell array.
    pub cells: String,
    /// The collect job: the one to wait for.
    pub collect: String,
}

/// The Slurm client programs, by name or path: the plain names by default (found on `PATH`),
/// a fake per program in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmBins {
    /// Submits the scripts.
    pub sbatch: String,
    /// Polls the jobs while they are queued.
    pub squeue: String,
    /// Explains a job that ended without a status.
    pub scontrol: String,
    /// Cancels a chain that cannot finish.
    pub scancel: String,
}

impl Default for SlurmBins {
    fn default() -> Self {
        SlurmBins {
            sbatch: "sbatch".into(),
            squeue: "squeue".into(),
            scontrol: "scontrol".into(),
            scancel: "scancel".into(),
        }
    }
}

/// Characters that need no quoting in a shell word (nor in an `#SBATCH` value).
fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_./:=@%+-,".contains(c)
}

/// `s` as one shell word: as it is when it only uses `[A-Za-z0-9_./:=@%+,-]`, else in single
/// quotes (each `'` written as `'\''`), which bash takes literally, newlines included.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(is_plain) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A path as UTF-8, or an error naming the option: quoting a lossy rendering would point the
/// job at a different file.
fn utf8<'a>(path: &'a Path, option: &str) -> Result<&'a str> {
    path.to_str()
        .with_context(|| format!("{option}: {} is not valid UTF-8", path.display()))
}

/// Refuses characters in the results path that no quoting makes safe in `#SBATCH --output`:
/// a newline ends the directive, `%` starts a filename pattern, and a backslash turns the
/// patterns (`%x`, `%A`, `%a`, `%j`) off.
fn check_sbatch_path(path: &str, option: &str) -> Result<()> {
    if let Some(c) = path
        .chars()
        .find(|&c| c.is_control() || c == '%' || c == '\\')
    {
        bail!(
            "{option}: {path:?} contains {c:?}, which cannot be used in an #SBATCH --output path"
        );
    }
    Ok(())
}

/// A value for an `#SBATCH` line, which sbatch parses itself, not a shell: plain when it can be,
/// else in double quotes with `"` escaped (sbatch strips the quotes, and takes `'`, spaces and
/// `#` inside them literally).
fn sbatch_value(value: &str) -> String {
    if value.chars().all(is_plain) {
        value.to_string()
    } else {
        format!("\"{}\"", value.replace('"', "\\\""))
    }
}

/// A short `#SBATCH` option value (`--partition`, `--time`, `--mem`): one word, no quoting.
fn check_word(value: &str, option: &str) -> Result<()> {
    if value.is_empty()
        || value
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "\"'\\#".contains(c))
    {
        bail!("{option}: {value:?} must be one non-empty word without quotes, '\\' or '#'");
    }
    Ok(())
}

/// An extra `#SBATCH` line: one line, an sbatch option, with or without the `#SBATCH` prefix.
fn extra_line(line: &str) -> Result<String> {
    if line.contains(['\n', '\r']) {
        bail!("--extra-sbatch: {line:?} must be a single line");
    }
    let option = line
        .trim()
        .strip_prefix("#SBATCH")
        .unwrap_or(line.trim())
        .trim();
    if !option.starts_with('-') {
        bail!("--extra-sbatch: {line:?} is not an sbatch option (such as `--account=NAME`)");
    }
    Ok(format!("#SBATCH {option}"))
}

/// Dataset and leg names as they appear in campaigns (`[A-Za-z0-9._-]`, and `@` between a
/// dataset and its chunking variant), so that the comma lists and the `dataset/leg` cell list
/// are unambiguous.
fn check_names(names: &[String], option: &str) -> Result<()> {
    if names.is_empty() {
        bail!("{option}: no names");
    }
    for name in names {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c))
        {
            bail!("{option}: `{name}` is not a dataset or leg name");
        }
    }
    Ok(())
}

/// The `--cells` argument for an explicit cell list: `dataset/leg` pairs (the layout of
/// `<results>/cells/<dataset>/<leg>`), comma-separated. `run-matrix --cells` parses this.
pub fn cells_arg(cells: &[(String, String)]) -> String {
    cells
        .iter()
        .map(|(d, l)| format!("{d}/{l}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Tasks in the cell array: `array`, but never more than the explicit cells (at least 1).
fn cell_tasks(plan: &SlurmPlan) -> usize {
    match &plan.cells {
        Some(cells) => plan.array.min(cells.len()).max(1),
        None => plan.array,
    }
}

/// The `#SBATCH` block, `set -euo pipefail`, and any lines that must precede the `cd`.
struct Header<'a> {
    plan: &'a SlurmPlan,
    /// The validated extra lines, `#SBATCH ` prefixed.
    extra: &'a [String],
    step: &'a str,
    array: Option<usize>,
    about: String,
}

impl Header<'_> {
    fn render(&self, results_abs: &str, pre_cd: &[String], workdir: &str) -> String {
        let plan = self.plan;
        let mut s = String::from("#!/bin/bash\n");
        s += &format!(
            "#SBATCH --job-name=hopbench-{}-{}\n",
            plan.stem(),
            self.step
        );
        let pattern = if self.array.is_some() {
            "%x-%A_%a.out"
        } else {
            "%x-%j.out"
        };
        let output = format!("{results_abs}/slurm/logs/{pattern}");
        s += &format!("#SBATCH --output={}\n", sbatch_value(&output));
        if let Some(n) = self.array {
            s += &format!("#SBATCH --array=0-{}\n", n - 1);
        }
        s += &format!("#SBATCH --cpus-per-task={}\n", plan.cpus_per_task);
        for (option, value) in [
            ("partition", &plan.partition),
            ("time", &plan.time),
            ("mem", &plan.mem),
        ] {
            if let Some(v) = value {
                s += &format!("#SBATCH --{option}={v}\n");
            }
        }
        for line in self.extra {
            s += line;
            s += "\n";
        }
        s += &format!(
            "# Generated by hopbench: {}. Regenerate rather than edit.\n",
            self.about
        );
        s += "set -euo pipefail\n";
        for line in pre_cd {
            s += line;
            s += "\n";
        }
        s += &format!("cd {workdir}\n");
        s += "export RAYON_NUM_THREADS=\"${SLURM_CPUS_PER_TASK:-1}\"\n";
        s
    }
}

/// Checks what `plan` takes from the command line before anything of it is written into a
/// script, and returns its extra lines, validated and `#SBATCH ` prefixed.
fn check_plan(plan: &SlurmPlan) -> Result<Vec<String>> {
    if plan.array == 0 {
        bail!("--array: must be at least 1");
    }
    if plan.cpus_per_task == 0 {
        bail!("--cpus-per-task: must be at least 1");
    }
    let extra = plan
        .extra
        .iter()
        .map(|l| extra_line(l))
        .collect::<Result<Vec<_>>>()?;
    for (option, value) in [
        ("--partition", &plan.partition),
        ("--time", &plan.time),
        ("--mem", &plan.mem),
    ] {
        if let Some(v) = value {
            check_word(v, option)?;
        }
    }
    if !plan.exe.is_absolute() {
        bail!(
            "the hopbench executable path {} is not absolute",
            plan.exe.display()
        );
    }
    if !plan.workdir.is_absolute() {
        bail!(
            "the working directory {} is not absolute",
            plan.workdir.display()
        );
    }
    check_names(&plan.datasets, "--datasets")?;
    check_names(&plan.legs, "--legs")?;
    if let Some(cells) = &plan.cells {
        if cells.is_empty() {
            bail!("--only-missing: no cells to run");
        }
        for (d, l) in cells {
            check_names(&[d.clone(), l.clone()], "--only-missing")?;
        }
    }
    Ok(extra)
}

/// The options every step passes to hopbench, shell-quoted: the campaign, the results, the
/// datasets, the data and the model directories, as the plan names them.
fn common_options(plan: &SlurmPlan) -> Result<String> {
    let mut common = Vec::new();
    if let Some(c) = &plan.campaign {
        common.push(format!(
            "--campaign {}",
            shell_quote(utf8(c, "--campaign")?)
        ));
    }
    common.push(format!(
        "--results {}",
        shell_quote(utf8(&plan.results, "--results")?)
    ));
    common.push(format!(
        "--datasets {}",
        shell_quote(&plan.datasets.join(","))
    ));
    if let Some(d) = &plan.data_dir {
        common.push(format!(
            "--data-dir {}",
            shell_quote(utf8(d, "--data-dir")?)
        ));
    }
    if let Some(m) = &plan.model {
        common.push(format!("--model {}", shell_quote(utf8(m, "--model")?)));
    }
    Ok(common.join(" "))
}

/// The three scripts for `plan`. Errors name the option at fault (`--array`, `--cpus-per-task`,
/// `--extra-sbatch`, `--partition`, ...), since the plan comes straight from the command line.
pub fn scripts(plan: &SlurmPlan) -> Result<Scripts> {
    let extra = check_plan(plan)?;
    let exe = shell_quote(utf8(&plan.exe, "the hopbench executable")?);
    let workdir = shell_quote(utf8(&plan.workdir, "the working directory")?);
    let results_abs = utf8(&plan.workdir.join(&plan.results), "--results")?.to_string();
    let results_abs = results_abs.trim_end_matches('/');
    check_sbatch_path(results_abs, "--results")?;
    let status = utf8(&plan.status_file(), "--results")?.to_string();

    let common = common_options(plan)?;
    let legs = format!("--legs {}", shell_quote(&plan.legs.join(",")));
    let threads = "--threads \"${SLURM_CPUS_PER_TASK:-1}\"";
    let shard = |n: usize| format!("--shard \"${{SLURM_ARRAY_TASK_ID}}/{n}\"");

    let embed = plan.embed.then(|| {
        let n = plan.array;
        let header = Header {
            plan,
            extra: &extra,
            step: "embed",
            array: Some(n),
            about: format!("embedding shard $SLURM_ARRAY_TASK_ID of {n}"),
        };
        format!(
            "{}exec {exe} prepare {} --quiet {common}\n",
            header.render(results_abs, &[], &workdir),
            shard(n)
        )
    });

    let n = cell_tasks(plan);
    let cells_opt = match &plan.cells {
        Some(cells) => format!(" --cells {}", shell_quote(&cells_arg(cells))),
        None => String::new(),
    };
    let header = Header {
        plan,
        extra: &extra,
        step: "cells",
        array: Some(n),
        about: format!("cell shard $SLURM_ARRAY_TASK_ID of {n}"),
    };
    let cells = format!(
        "{}exec {exe} run-matrix {} {threads} {common} {legs}{cells_opt}\n",
        header.render(results_abs, &[], &workdir),
        shard(n)
    );

    let header = Header {
        plan,
        extra: &extra,
        step: "collect",
        array: None,
        about: "the matrix from the cached cells, then the status table".into(),
    };
    // The trap comes before the `cd`, so even a failing `cd` leaves a status; the job id in the
    // file tells the waiter it is not a leftover of an earlier run.
    let pre_cd = [
        format!("HOPBENCH_STATUS={}", shell_quote(&status)),
        "trap 'echo \"$? ${SLURM_JOB_ID:-}\" > \"$HOPBENCH_STATUS\"' EXIT".to_string(),
    ];
    let collect = format!(
        "{}{exe} run-matrix {threads} {common} {legs}\n{exe} status {common} {legs}\n",
        header.render(results_abs, &pre_cd, &workdir),
    );

    Ok(Scripts {
        embed,
        cells,
        collect,
    })
}

/// Writes `embed.sh` (when the plan has one), `cells.sh` and `collect.sh` into `dir` (normally
/// [`SlurmPlan::slurm_dir`]), executable (0755) and atomically (temp file beside, then rename,
/// so a job submitted meanwhile never reads half a script); creates the log directory the jobs
/// write to. A stale `embed.sh` from an earlier plan is removed, so the directory never offers a
/// step this plan does not have. Returns the paths in chain order, as [`submit`] takes them.
pub fn write_scripts(plan: &SlurmPlan, dir: &Path) -> Result<Vec<PathBuf>> {
    let scripts = scripts(plan)?;
    let logs = plan.log_dir();
    std::fs::create_dir_all(&logs)
        .with_context(|| format!("{}: cannot create the log directory", logs.display()))?;
    let embed_path = dir.join("embed.sh");
    if scripts.embed.is_none() && embed_path.exists() {
        std::fs::remove_file(&embed_path)
            .with_context(|| format!("{}: cannot remove", embed_path.display()))?;
    }
    let mut files = Vec::new();
    if let Some(embed) = &scripts.embed {
        files.push(("embed.sh", embed));
    }
    files.push(("cells.sh", &scripts.cells));
    files.push(("collect.sh", &scripts.collect));
    let mut paths = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        crate::store::fsx::write_with(&path, |tmp| {
            std::fs::write(tmp, text)
                .with_context(|| format!("{}: cannot write", tmp.display()))?;
            make_executable(tmp)
        })?;
        paths.push(path);
    }
    Ok(paths)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("{}: cannot make executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<()> {
    Ok(())
}

/// The job id in `sbatch --parsable` output: `123`, or `123;cluster` on a multi-cluster setup.
fn parse_job_id(stdout: &str) -> Option<String> {
    let id = stdout.trim().split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then(|| id.to_string())
}

/// Submits one script, after `after` when given. `--kill-on-invalid-dep=yes` makes Slurm cancel
/// a job whose dependency failed, instead of leaving it pending forever
/// (`DependencyNeverSatisfied`) when nobody waits for the chain.
fn sbatch(bins: &SlurmBins, script: &Path, after: Option<&str>) -> Result<String> {
    let mut cmd = Command::new(&bins.sbatch);
    cmd.arg("--parsable");
    if let Some(id) = after {
        cmd.arg(format!("--dependency=afterok:{id}"))
            .arg("--kill-on-invalid-dep=yes");
    }
    cmd.arg(script);
    let out = cmd
        .output()
        .with_context(|| format!("{}: cannot run `{}`", script.display(), bins.sbatch))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "{}: `{}` failed ({}): {}",
            script.display(),
            bins.sbatch,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    parse_job_id(&stdout).with_context(|| {
        format!(
            "{}: `{} --parsable` printed no job id: {:?}",
            script.display(),
            bins.sbatch,
            stdout.trim()
        )
    })
}

/// Submits the scripts [`write_scripts`] returned (`[embed, cells, collect]` or
/// `[cells, collect]`) as a chain: each job starts only after the previous one succeeded
/// (`afterok`; for an array, every task). If a submission fails, the jobs already submitted are
/// cancelled (a half chain would run work nobody collects) and the error carries sbatch's stderr
/// and the script.
pub fn submit(paths: &[PathBuf], bins: &SlurmBins) -> Result<Submitted> {
    let (embed, cells, collect) = match paths {
        [e, c, k] => (Some(e), c, k),
        [c, k] => (None, c, k),
        _ => bail!(
            "submit: expected [embed.sh,] cells.sh, collect.sh, got {} paths",
            paths.len()
        ),
    };
    let mut done: Vec<String> = Vec::new();
    let result = (|| -> Result<Submitted> {
        let embed = match embed {
            Some(p) => {
                let id = sbatch(bins, p, None)?;
                done.push(id.clone());
                Some(id)
            }
            None => None,
        };
        let cells = sbatch(bins, cells, embed.as_deref())?;
        done.push(cells.clone());
        let collect = sbatch(bins, collect, Some(&cells))?;
        Ok(Submitted {
            embed,
            cells,
            collect,
        })
    })();
    result.map_err(|e| {
        if done.is_empty() {
            return e;
        }
        match scancel(bins, &done) {
            Ok(()) => e.context(format!(
                "cancelled the jobs already submitted: {}",
                done.join(", ")
            )),
            Err(c) => e.context(format!(
                "could not cancel the jobs already submitted ({}): {c:#}",
                done.join(", ")
            )),
        }
    })
}

fn scancel(bins: &SlurmBins, ids: &[String]) -> Result<()> {
    let out = Command::new(&bins.scancel)
        .args(ids)
        .output()
        .with_context(|| format!("cannot run `{}`", bins.scancel))?;
    if !out.status.success() {
        bail!(
            "`{} {}` failed ({}): {}",
            bins.scancel,
            ids.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// A step of the chain, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Embed,
    Cells,
    Collect,
}

impl Step {
    /// The script's name without `.sh`, also the last part of the job name.
    pub fn name(self) -> &'static str {
        match self {
            Step::Embed => "embed",
            Step::Cells => "cells",
            Step::Collect => "collect",
        }
    }
}

/// How a submitted chain ended, as [`wait_for_collect`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collected {
    /// The collect job ran to its end and exited 0: the matrix is written.
    Succeeded { job: String },
    /// The collect job ran to its end and exited non-zero.
    Failed { job: String, exit: i32 },
    /// `failed` (job `job`) did not succeed, so the next job could never start (Slurm's
    /// `DependencyNeverSatisfied`); the jobs after it (`cancelled`) were cancelled, by the
    /// waiter or by Slurm itself (`--kill-on-invalid-dep=yes`).
    DependencyFailed {
        failed: Step,
        job: String,
        cancelled: Vec<String>,
    },
    /// The collect job left the queue without recording an exit status: it was cancelled or
    /// killed (time limit, node failure), or cancelled by Slurm because a dependency failed.
    /// `state` is what `scontrol` still knew (`JobState=... Reason=...`), if anything.
    NoStatus { job: String, state: Option<String> },
}

impl Collected {
    /// Whether the whole chain succeeded.
    pub fn ok(&self) -> bool {
        matches!(self, Collected::Succeeded { .. })
    }
}

impl std::fmt::Display for Collected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Collected::Succeeded { job } => write!(f, "the collect job {job} succeeded"),
            Collected::Failed { job, exit } => write!(
                f,
                "the collect job {job} failed with exit code {exit} (see its log in <results>/slurm/logs)"
            ),
            Collected::DependencyFailed {
                failed,
                job,
                cancelled,
            } => {
                write!(
                    f,
                    "the {} job {job} failed (see its logs in <results>/slurm/logs), so the jobs after it could never start",
                    failed.name()
                )?;
                if !cancelled.is_empty() {
                    write!(f, "; cancelled the jobs after it: {}", cancelled.join(", "))?;
                }
                Ok(())
            }
            Collected::NoStatus { job, state } => {
                write!(
                    f,
                    "the collect job {job} ended without recording an exit status (cancelled, killed, or a job before it failed)"
                )?;
                if let Some(state) = state {
                    write!(f, ": {state}")?;
                }
                Ok(())
            }
        }
    }
}

/// How [`wait_for_collect`] polls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitOptions {
    /// Between two rounds of `squeue`.
    pub poll: Duration,
    /// Extra polls to wait for the status file after the collect job left the queue: it was
    /// written on a compute node, and a shared filesystem may show it to this host late.
    pub status_grace: u32,
    /// Consecutive failed `squeue` runs tolerated (a restarting or busy controller) before the
    /// wait gives up with squeue's error.
    pub max_query_failures: u32,
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            poll: Duration::from_secs(2),
            status_grace: 5,
            max_query_failures: 30,
        }
    }
}

/// What `squeue` says about one job.
#[derive(Debug, PartialEq, Eq)]
enum Queued {
    /// Not in the queue any more (or only in a final state, kept for `MinJobAge`).
    Gone,
    /// Pending, running or finishing; `stuck` if pending on a dependency that failed.
    Active { stuck: bool },
}

/// Slurm job states after which a job will not run again.
const FINAL_STATES: [&str; 11] = [
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "REVOKED",
    "SPECIAL_EXIT",
];

/// One `squeue -h -j <id> -o '%T %r'`: a line per record (an array has one for its pending
/// tasks and one per running task). An error is a failure to ask, not an answer.
fn query(bins: &SlurmBins, job: &str) -> Result<Queued, QueryError> {
    let out = Command::new(&bins.squeue)
        .args(["-h", "-j", job, "-o", "%T %r"])
        .output()
        .map_err(|e| QueryError::Fatal(anyhow::anyhow!("cannot run `{}`: {e}", bins.squeue)))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // A job the controller has already forgotten.
        if stderr.contains("Invalid job id") {
            return Ok(Queued::Gone);
        }
        return Err(QueryError::Transient(format!(
            "`{} -h -j {job}` failed ({}): {}",
            bins.squeue,
            out.status,
            stderr.trim()
        )));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut active = false;
    let mut stuck = false;
    for line in stdout.lines() {
        let mut words = line.split_whitespace();
        let Some(state) = words.next() else { continue };
        let reason = words.next().unwrap_or("");
        let state = state.trim_end_matches('+');
        if !FINAL_STATES.contains(&state) {
            active = true;
        }
        if state == "PENDING" && reason == "DependencyNeverSatisfied" {
            stuck = true;
        }
    }
    Ok(if active {
        Queued::Active { stuck }
    } else {
        Queued::Gone
    })
}

enum QueryError {
    /// squeue cannot run at all: waiting longer will not help.
    Fatal(anyhow::Error),
    /// squeue ran and failed: the controller may come back.
    Transient(String),
}

/// `scontrol show job <id>`, if it still knows the job (it forgets it `MinJobAge` after the
/// end; the waiter asks within seconds).
fn scontrol_show(bins: &SlurmBins, job: &str) -> Option<String> {
    let out = Command::new(&bins.scontrol)
        .args(["show", "job", job])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).to_string())
}

/// `JobState=... Reason=... ExitCode=...` of the first record in `scontrol show job` output.
fn state_summary(text: &str) -> Option<String> {
    let mut fields: Vec<&str> = Vec::new();
    for key in ["JobState=", "Reason=", "ExitCode="] {
        if let Some(w) = text.split_whitespace().find(|w| w.starts_with(key)) {
            fields.push(w);
        }
    }
    (!fields.is_empty()).then(|| fields.join(" "))
}

/// The exit code in the status file, if it was written by job `job` (a file from an earlier run
/// would report someone else's outcome).
fn read_status(path: &Path, job: &str) -> Option<i32> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut words = text.split_whitespace();
    let code = words.next()?.parse().ok()?;
    (words.next()? == job).then_some(code)
}

/// Waits until the chain in `jobs` has finished and says how it ended: polls `squeue` for each
/// job still queued (every `opts.poll`); a job pending with reason `DependencyNeverSatisfied`
/// means the job before it failed, and it and the jobs after it are cancelled with `scancel`
/// (they could never run); once the collect job has left the queue, the outcome is its
/// `status` file ([`SlurmPlan::status_file`]), which it writes when it ends, and without one,
/// what `scontrol` says (a job Slurm cancelled for a failed dependency names the failed step).
/// `Ok` whatever the jobs did ([`Collected::ok`] tells); `Err` only when Slurm cannot be asked.
pub fn wait_for_collect(
    bins: &SlurmBins,
    jobs: &Submitted,
    status: &Path,
    opts: &WaitOptions,
) -> Result<Collected> {
    let mut chain: Vec<(Step, &str)> = Vec::new();
    if let Some(e) = &jobs.embed {
        chain.push((Step::Embed, e));
    }
    chain.push((Step::Cells, &jobs.cells));
    chain.push((Step::Collect, &jobs.collect));
    let mut gone = vec![false; chain.len()];
    let mut failures = 0u32;
    let collect = jobs.collect.clone();
    while !gone[chain.len() - 1] {
        for i in 0..chain.len() {
            if gone[i] {
                continue;
            }
            match query(bins, chain[i].1) {
                Ok(Queued::Gone) => {
                    failures = 0;
                    gone[i] = true;
                }
                Ok(Queued::Active { stuck }) => {
                    failures = 0;
                    if stuck {
                        let cancelled: Vec<String> = (i..chain.len())
                            .filter(|&j| !gone[j])
                            .map(|j| chain[j].1.to_string())
                            .collect();
                        scancel(bins, &cancelled)?;
                        let (failed, job) = chain[i.saturating_sub(1)];
                        return Ok(Collected::DependencyFailed {
                            failed,
                            job: job.to_string(),
                            cancelled,
                        });
                    }
                }
                Err(QueryError::Fatal(e)) => return Err(e),
                Err(QueryError::Transient(msg)) => {
                    failures += 1;
                    if failures > opts.max_query_failures {
                        bail!("waiting for job {collect}: {msg}");
                    }
                }
            }
        }
        if !gone[chain.len() - 1] {
            std::thread::sleep(opts.poll);
        }
    }
    for round in 0..=opts.status_grace {
        if let Some(exit) = read_status(status, &collect) {
            return Ok(if exit == 0 {
                Collected::Succeeded { job: collect }
            } else {
                Collected::Failed { job: collect, exit }
            });
        }
        if round < opts.status_grace {
            std::thread::sleep(opts.poll);
        }
    }
    // Without a status, ask scontrol. A job Slurm cancelled because its dependency failed
    // (`--kill-on-invalid-dep=yes`, see `submit`) says `Reason=DependencyNeverSatisfied`: the
    // first such job in the chain names the one before it as the failure.
    let shown: Vec<Option<String>> = chain
        .iter()
        .map(|(_, id)| scontrol_show(bins, id))
        .collect();
    let never = |t: &Option<String>| {
        t.as_deref().is_some_and(|t| {
            t.split_whitespace()
                .any(|w| w == "Reason=DependencyNeverSatisfied")
        })
    };
    if let Some(i) = (1..chain.len()).find(|&i| never(&shown[i])) {
        return Ok(Collected::DependencyFailed {
            failed: chain[i - 1].0,
            job: chain[i - 1].1.to_string(),
            cancelled: chain[i..].iter().map(|(_, id)| id.to_string()).collect(),
        });
    }
    Ok(Collected::NoStatus {
        job: collect,
        state: shown[chain.len() - 1].as_deref().and_then(state_summary),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> SlurmPlan {
        SlurmPlan {
            exe: "/opt/hopbench/bin/hopbench".into(),
            workdir: "/home/u/bench".into(),
            campaign: Some("campaign.yaml".into()),
            results: "results".into(),
            data_dir: None,
            model: None,
            datasets: vec!["scifact".into(), "hotpot".into()],
            legs: vec!["dense".into(), "hybrid".into()],
            cells: None,
            array: 4,
            cpus_per_task: 8,
            partition: None,
            time: None,
            mem: None,
            extra: vec![],
            embed: true,
        }
    }

    const EMBED: &str = r#"#!/bin/bash
#SBATCH --job-name=hopbench-campaign-embed
#SBATCH --output=/home/u/bench/results/slurm/logs/%x-%A_%a.out
#SBATCH --array=0-3
#SBATCH --cpus-per-task=8
# Generated by hopbench: embedding shard $SLURM_ARRAY_TASK_ID of 4. Regenerate rather than edit.
set -euo pipefail
cd /home/u/bench
export RAYON_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"
exec /opt/hopbench/bin/hopbench prepare --shard "${SLURM_ARRAY_TASK_ID}/4" --quiet --campaign campaign.yaml --results results --datasets scifact,hotpot
"#;

    const CELLS: &str = r#"#!/bin/bash
#SBATCH --job-name=hopbench-campaign-cells
#SBATCH --output=/home/u/bench/results/slurm/logs/%x-%A_%a.out
#SBATCH --array=0-3
#SBATCH --cpus-per-task=8
# Generated by hopbench: cell shard $SLURM_ARRAY_TASK_ID of 4. Regenerate rather than edit.
set -euo pipefail
cd /home/u/bench
export RAYON_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"
exec /opt/hopbench/bin/hopbench run-matrix --shard "${SLURM_ARRAY_TASK_ID}/4" --threads "${SLURM_CPUS_PER_TASK:-1}" --campaign campaign.yaml --results results --datasets scifact,hotpot --legs dense,hybrid
"#;

    const COLLECT: &str = r#"#!/bin/bash
#SBATCH --job-name=hopbench-campaign-collect
#SBATCH --output=/home/u/bench/results/slurm/logs/%x-%j.out
#SBATCH --cpus-per-task=8
# Generated by hopbench: the matrix from the cached cells, then the status table. Regenerate rather than edit.
set -euo pipefail
HOPBENCH_STATUS=/home/u/bench/results/slurm/collect.status
trap 'echo "$? ${SLURM_JOB_ID:-}" > "$HOPBENCH_STATUS"' EXIT
cd /home/u/bench
export RAYON_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"
/opt/hopbench/bin/hopbench run-matrix --threads "${SLURM_CPUS_PER_TASK:-1}" --campaign campaign.yaml --results results --datasets scifact,hotpot --legs dense,hybrid
/opt/hopbench/bin/hopbench status --campaign campaign.yaml --results results --datasets scifact,hotpot --legs dense,hybrid
"#;

    #[test]
    fn scripts_of_a_small_plan() {
        let s = scripts(&plan()).unwrap();
        assert_eq!(s.embed.as_deref(), Some(EMBED));
        assert_eq!(s.cells, CELLS);
        assert_eq!(s.collect, COLLECT);
    }

    #[test]
    fn no_embed_array() {
        let s = scripts(&SlurmPlan {
            embed: false,
            ..plan()
        })
        .unwrap();
        assert_eq!(s.embed, None);
        assert_eq!(s.cells, CELLS);
    }

    #[test]
    fn explicit_cells_clamp_the_array() {
        let cells = vec![
            ("scifact".to_string(), "dense".to_string()),
            ("hotpot".to_string(), "hybrid".to_string()),
        ];
        let s = scripts(&SlurmPlan {
            cells: Some(cells.clone()),
            ..plan()
        })
        .unwrap();
        assert!(s.cells.contains("#SBATCH --array=0-1\n"), "{}", s.cells);
        assert!(s.cells.contains(
            "--shard \"${SLURM_ARRAY_TASK_ID}/2\" --threads \"${SLURM_CPUS_PER_TASK:-1}\""
        ));
        assert!(s
            .cells
            .ends_with(" --legs dense,hybrid --cells scifact/dense,hotpot/hybrid\n"));
        // The embedding array and the collect step are not restricted.
        assert!(s.embed.unwrap().contains("#SBATCH --array=0-3\n"));
        assert!(!s.collect.contains("--cells"));
        // Fewer tasks than cells: the array stays as asked.
        let s = scripts(&SlurmPlan {
            cells: Some(cells),
            array: 1,
            ..plan()
        })
        .unwrap();
        assert!(s.cells.contains("#SBATCH --array=0-0\n"));
        assert!(s.cells.contains("\"${SLURM_ARRAY_TASK_ID}/1\""));
    }

    #[test]
    fn options_and_extra_lines() {
        let s = scripts(&SlurmPlan {
            partition: Some("gpu".into()),
            time: Some("1-02:00:00".into()),
            mem: Some("32G".into()),
            extra: vec!["--account=proj".into(), "#SBATCH   --qos=long ".into()],
            data_dir: Some("/data/raw".into()),
            model: Some("models/bge".into()),
            ..plan()
        })
        .unwrap();
        for script in [s.embed.as_deref().unwrap(), &s.cells, &s.collect] {
            assert!(script.contains(
                "#SBATCH --cpus-per-task=8\n#SBATCH --partition=gpu\n#SBATCH --time=1-02:00:00\n\
                 #SBATCH --mem=32G\n#SBATCH --account=proj\n#SBATCH --qos=long\n# Generated"
            ));
            assert!(script
                .contains("--datasets scifact,hotpot --data-dir /data/raw --model models/bge"));
        }
    }

    #[test]
    fn quoting_of_awkward_paths() {
        let s = scripts(&SlurmPlan {
            exe: "/opt/my tools/hopbench".into(),
            workdir: "/home/u/o'brien bench".into(),
            campaign: Some("my campaign's.yaml".into()),
            results: "res dir".into(),
            ..plan()
        })
        .unwrap();
        let c = &s.cells;
        assert!(c.contains("\ncd '/home/u/o'\\''brien bench'\n"), "{c}");
        assert!(
            c.contains("\nexec '/opt/my tools/hopbench' run-matrix "),
            "{c}"
        );
        assert!(
            c.contains(" --campaign 'my campaign'\\''s.yaml' --results 'res dir' "),
            "{c}"
        );
        // sbatch parses #SBATCH values itself: double quotes there.
        assert!(c.contains(
            "#SBATCH --output=\"/home/u/o'brien bench/res dir/slurm/logs/%x-%A_%a.out\"\n"
        ));
        // The campaign stem is tamed for the job name.
        assert!(c.contains("#SBATCH --job-name=hopbench-my_campaign_s-cells\n"));
        assert!(s.collect.contains(
            "HOPBENCH_STATUS='/home/u/o'\\''brien bench/res dir/slurm/collect.status'\n"
        ));
        // What bash makes of the quoted words.
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "printf '%s\\n' {} {}",
                shell_quote("a b'c\"$HOME\n"),
                shell_quote("")
            ))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "a b'c\"$HOME\n\n\n");
        assert_eq!(shell_quote("results/x-1_2.yaml"), "results/x-1_2.yaml");
    }

    #[test]
    fn validation_names_the_option() {
        let err = |p: SlurmPlan| format!("{:#}", scripts(&p).unwrap_err());
        assert!(err(SlurmPlan { array: 0, ..plan() }).starts_with("--array:"));
        assert!(err(SlurmPlan {
            cpus_per_task: 0,
            ..plan()
        })
        .starts_with("--cpus-per-task:"));
        assert!(err(SlurmPlan {
            extra: vec!["--account=a\n#SBATCH --qos=b".into()],
            ..plan()
        })
        .starts_with("--extra-sbatch:"));
        assert!(err(SlurmPlan {
            extra: vec!["account=a".into()],
            ..plan()
        })
        .starts_with("--extra-sbatch:"));
        assert!(err(SlurmPlan {
            time: Some("1 day".into()),
            ..plan()
        })
        .starts_with("--time:"));
        assert!(err(SlurmPlan {
            results: "res%j".into(),
            ..plan()
        })
        .starts_with("--results:"));
        assert!(err(SlurmPlan {
            cells: Some(vec![]),
            ..plan()
        })
        .starts_with("--only-missing:"));
    }

    /// A fake program in `dir`: a bash script.
    fn fake(dir: &Path, name: &str, body: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/bash\n{body}")).unwrap();
        make_executable(&path).unwrap();
        path.to_str().unwrap().to_string()
    }

    /// [`plan`] run by a fake hopbench, the script `name` in `dir` running `body`, with `dir`
    /// as its working directory.
    fn fake_plan(dir: &Path, name: &str, body: &str) -> SlurmPlan {
        SlurmPlan {
            exe: fake(dir, name, body).into(),
            workdir: dir.to_path_buf(),
            ..plan()
        }
    }

    /// A fake `sbatch` that records its arguments and prints ids 101, 102, ... (with a cluster
    /// suffix, as multi-cluster setups do), failing on call `fail_on` if given.
    fn fake_sbatch(dir: &Path, fail_on: Option<u32>) -> String {
        let fail = fail_on.unwrap_or(0);
        let d = dir.display();
        fake(
            dir,
            "sbatch",
            &format!(
                r#"n=$(( $(cat {d}/count 2>/dev/null || echo 0) + 1 ))
echo $n > {d}/count
echo "$*" >> {d}/sbatch.args
if [ $n -eq {fail} ]; then echo "sbatch: error: Batch job submission failed: Invalid partition" >&2; exit 1; fi
echo "$((100 + n));cluster"
"#
            ),
        )
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn writes_executable_scripts() {
        let tmp = tempfile::tempdir().unwrap();
        let p = SlurmPlan {
            workdir: tmp.path().to_path_buf(),
            ..plan()
        };
        let dir = p.slurm_dir();
        let paths = write_scripts(&p, &dir).unwrap();
        assert_eq!(
            paths,
            ["embed.sh", "cells.sh", "collect.sh"].map(|n| dir.join(n))
        );
        assert!(p.log_dir().is_dir());
        for path in &paths {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o755);
        }
        assert_eq!(
            std::fs::read_to_string(&paths[1]).unwrap(),
            scripts(&p).unwrap().cells
        );
        // Without an embedding step, the old embed.sh goes.
        let paths = write_scripts(&SlurmPlan { embed: false, ..p }, &dir).unwrap();
        assert_eq!(paths, ["cells.sh", "collect.sh"].map(|n| dir.join(n)));
        assert!(!dir.join("embed.sh").exists());
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["cells.sh", "collect.sh", "logs"]);
    }

    #[test]
    fn scripts_run_under_bash() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let dd = d.display();
        // A fake hopbench that records its arguments, one line per argument, and fails `status`
        // when asked to.
        let p = SlurmPlan {
            campaign: Some("it's a campaign.yaml".into()),
            ..fake_plan(
                d,
                "hop bench",
                &format!(
                    "printf '[%s]' \"$@\" >> {dd}/calls\necho \"  pwd=$PWD threads=$RAYON_NUM_THREADS\" >> {dd}/calls\n\
                     if [ \"$1\" = status ] && [ -e {dd}/fail ]; then exit 5; fi\n"
                ),
            )
        };
        let paths = write_scripts(&p, &p.slurm_dir()).unwrap();
        let run = |script: &Path, env: &[(&str, &str)]| {
            std::fs::remove_file(d.join("calls")).ok();
            let out = Command::new(script)
                .env_remove("SLURM_CPUS_PER_TASK")
                .env_remove("SLURM_ARRAY_TASK_ID")
                .env_remove("SLURM_JOB_ID")
                .envs(env.iter().copied())
                .current_dir("/")
                .output()
                .unwrap();
            (
                out.status.code(),
                std::fs::read_to_string(d.join("calls")).unwrap_or_default(),
            )
        };
        let (code, calls) = run(&paths[0], &[("SLURM_ARRAY_TASK_ID", "2")]);
        assert_eq!(code, Some(0));
        assert_eq!(
            calls,
            format!(
                "[prepare][--shard][2/4][--quiet][--campaign][it's a campaign.yaml][--results][results]\
                 [--datasets][scifact,hotpot]  pwd={dd} threads=1\n"
            )
        );
        // Outside an array, the task id is unset and the task fails rather than guess.
        let (code, _) = run(&paths[1], &[("SLURM_CPUS_PER_TASK", "3")]);
        assert_ne!(code, Some(0));
        let env = [("SLURM_ARRAY_TASK_ID", "0"), ("SLURM_CPUS_PER_TASK", "3")];
        let (code, calls) = run(&paths[1], &env);
        assert_eq!(code, Some(0));
        assert!(calls.starts_with("[run-matrix][--shard][0/4][--threads][3][--campaign]"));
        assert!(calls.ends_with(&format!("[--legs][dense,hybrid]  pwd={dd} threads=3\n")));
        // The collect job records its exit status and job id.
        let env = [("SLURM_JOB_ID", "77")];
        let (code, calls) = run(&paths[2], &env);
        assert_eq!(code, Some(0));
        assert_eq!(calls.lines().count(), 2);
        assert!(calls
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("[status][--campaign]"));
        assert_eq!(std::fs::read_to_string(p.status_file()).unwrap(), "0 77\n");
        std::fs::write(d.join("fail"), "").unwrap();
        let (code, _) = run(&paths[2], &env);
        assert_eq!(code, Some(5));
        assert_eq!(std::fs::read_to_string(p.status_file()).unwrap(), "5 77\n");
    }

    /// The whole chain on a real Slurm (`scripts/slurm-local start`, then
    /// `eval "$(scripts/slurm-local env)"`), with a fake hopbench and a results path that needs
    /// quoting both in the shell and in `#SBATCH --output`:
    /// `cargo nextest run -p hopbench --lib slurm --run-ignored all`.
    #[test]
    #[ignore = "needs a running Slurm (scripts/slurm-local)"]
    fn real_slurm_chain() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let dd = d.display();
        let p = SlurmPlan {
            results: "it's results".into(),
            array: 2,
            cpus_per_task: 1,
            extra: vec!["#SBATCH --comment=\"hopbench test\"".into()],
            ..fake_plan(
                d,
                "hopbench",
                &format!(
                    "echo \"$*\" >> {dd}/calls-${{SLURM_JOB_ID}}\n\
                     if [ \"$1 $3\" = 'run-matrix 1/2' ] && [ -e {dd}/fail ]; then exit 4; fi\n"
                ),
            )
        };
        let bins = SlurmBins::default();
        let opts = WaitOptions {
            poll: Duration::from_millis(500),
            ..WaitOptions::default()
        };
        let paths = write_scripts(&p, &p.slurm_dir()).unwrap();
        let jobs = submit(&paths, &bins).unwrap();
        let got = wait_for_collect(&bins, &jobs, &p.status_file(), &opts).unwrap();
        assert_eq!(
            got,
            Collected::Succeeded {
                job: jobs.collect.clone()
            }
        );
        let mut logs: Vec<String> = std::fs::read_dir(p.log_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        logs.sort();
        let (e, c, k) = (jobs.embed.as_ref().unwrap(), &jobs.cells, &jobs.collect);
        assert_eq!(
            logs,
            [
                format!("hopbench-campaign-cells-{c}_0.out"),
                format!("hopbench-campaign-cells-{c}_1.out"),
                format!("hopbench-campaign-collect-{k}.out"),
                format!("hopbench-campaign-embed-{e}_0.out"),
                format!("hopbench-campaign-embed-{e}_1.out"),
            ]
        );
        // A failing cell task: the collect job never runs.
        std::fs::write(d.join("fail"), "").unwrap();
        let jobs = submit(&paths, &bins).unwrap();
        let got = wait_for_collect(&bins, &jobs, &p.status_file(), &opts).unwrap();
        assert!(!got.ok(), "{got}");
        eprintln!("{got}");
    }

    #[test]
    fn submit_chains_the_jobs() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let bins = SlurmBins {
            sbatch: fake_sbatch(d, None),
            ..SlurmBins::default()
        };
        let paths: Vec<PathBuf> = ["embed.sh", "cells.sh", "collect.sh"]
            .iter()
            .map(|n| d.join(n))
            .collect();
        let got = submit(&paths, &bins).unwrap();
        assert_eq!(
            got,
            Submitted {
                embed: Some("101".into()),
                cells: "102".into(),
                collect: "103".into(),
            }
        );
        let dd = d.display();
        assert_eq!(
            lines(&d.join("sbatch.args")),
            [
                format!("--parsable {dd}/embed.sh"),
                format!(
                    "--parsable --dependency=afterok:101 --kill-on-invalid-dep=yes {dd}/cells.sh"
                ),
                format!(
                    "--parsable --dependency=afterok:102 --kill-on-invalid-dep=yes {dd}/collect.sh"
                ),
            ]
        );
    }

    #[test]
    fn submit_without_embed() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let bins = SlurmBins {
            sbatch: fake_sbatch(d, None),
            ..SlurmBins::default()
        };
        let got = submit(&[d.join("cells.sh"), d.join("collect.sh")], &bins).unwrap();
        assert_eq!(got.embed, None);
        let dd = d.display();
        assert_eq!(
            lines(&d.join("sbatch.args")),
            [
                format!("--parsable {dd}/cells.sh"),
                format!(
                    "--parsable --dependency=afterok:101 --kill-on-invalid-dep=yes {dd}/collect.sh"
                ),
            ]
        );
        assert!(submit(&[d.join("collect.sh")], &bins).is_err());
    }

    #[test]
    fn a_failed_submission_cancels_the_chain() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let dd = d.display();
        let bins = SlurmBins {
            sbatch: fake_sbatch(d, Some(3)),
            scancel: fake(d, "scancel", &format!("echo \"$*\" >> {dd}/scancel.args\n")),
            ..SlurmBins::default()
        };
        let paths: Vec<PathBuf> = ["embed.sh", "cells.sh", "collect.sh"]
            .iter()
            .map(|n| d.join(n))
            .collect();
        let err = format!("{:#}", submit(&paths, &bins).unwrap_err());
        assert!(
            err.contains("cancelled the jobs already submitted: 101, 102"),
            "{err}"
        );
        assert!(err.contains(&format!("{dd}/collect.sh")), "{err}");
        assert!(err.contains("Invalid partition"), "{err}");
        assert_eq!(lines(&d.join("scancel.args")), ["101 102"]);
        // Output that is not a job id is an error too.
        let bins = SlurmBins {
            sbatch: fake(d, "sbatch2", "echo 'Submitted batch job 7'\n"),
            ..SlurmBins::default()
        };
        let err = format!("{:#}", submit(&paths[1..], &bins).unwrap_err());
        assert!(err.contains("printed no job id"), "{err}");
    }

    /// Fakes for the wait: squeue reports each job as RUNNING for its first `polls` queries
    /// (counted per job), then as gone; `stuck` jobs stay PENDING on a failed dependency.
    fn wait_bins(d: &Path, polls: u32, stuck: &str, gone_how: &str) -> SlurmBins {
        let dd = d.display();
        SlurmBins {
            squeue: fake(
                d,
                "squeue",
                &format!(
                    r#"job=$3
echo "$*" >> {dd}/squeue.args
if [ "$job" = "{stuck}" ]; then echo "PENDING DependencyNeverSatisfied"; exit 0; fi
n=$(( $(cat {dd}/q-$job 2>/dev/null || echo 0) + 1 ))
echo $n > {dd}/q-$job
if [ $n -le {polls} ]; then echo "RUNNING None"; exit 0; fi
{gone_how}
"#
                ),
            ),
            scontrol: fake(
                d,
                "scontrol",
                "echo \"JobId=$3 JobName=x\"\necho \"   JobState=CANCELLED Reason=None Dependency=(null)\"\necho \"   ExitCode=0:15\"\n",
            ),
            scancel: fake(d, "scancel", &format!("echo \"$*\" >> {dd}/scancel.args\n")),
            sbatch: "unused".into(),
        }
    }

    fn fast() -> WaitOptions {
        WaitOptions {
            poll: Duration::from_millis(1),
            status_grace: 1,
            max_query_failures: 2,
        }
    }

    fn chain() -> Submitted {
        Submitted {
            embed: Some("11".into()),
            cells: "12".into(),
            collect: "13".into(),
        }
    }

    #[test]
    fn wait_reads_the_status_once_the_job_left() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let bins = wait_bins(d, 2, "none", "exit 0");
        let status = d.join("collect.status");
        std::fs::write(&status, "0 13\n").unwrap();
        let got = wait_for_collect(&bins, &chain(), &status, &fast()).unwrap();
        assert_eq!(got, Collected::Succeeded { job: "13".into() });
        assert!(got.ok());
        // Each job polled until it left (2 RUNNING answers, then gone), and no more.
        let args = lines(&d.join("squeue.args"));
        for job in ["11", "12", "13"] {
            let n = args
                .iter()
                .filter(|a| **a == format!("-h -j {job} -o %T %r"))
                .count();
            assert_eq!(n, 3, "{job}: {args:?}");
        }
    }

    #[test]
    fn wait_reports_a_failed_collect() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        // The controller forgot the jobs: squeue says so with an error.
        let bins = wait_bins(
            d,
            1,
            "none",
            "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1",
        );
        let status = d.join("collect.status");
        std::fs::write(&status, "3 13\n").unwrap();
        let got = wait_for_collect(&bins, &chain(), &status, &fast()).unwrap();
        assert_eq!(
            got,
            Collected::Failed {
                job: "13".into(),
                exit: 3
            }
        );
        assert!(!got.ok());
    }

    #[test]
    fn wait_without_status_asks_scontrol() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        // Finished jobs that squeue still lists in their final state.
        let bins = wait_bins(d, 1, "none", "echo 'CANCELLED None'");
        let status = d.join("collect.status");
        // A leftover of an earlier run (job 9) does not count.
        std::fs::write(&status, "0 9\n").unwrap();
        let got = wait_for_collect(&bins, &chain(), &status, &fast()).unwrap();
        assert_eq!(
            got,
            Collected::NoStatus {
                job: "13".into(),
                state: Some("JobState=CANCELLED Reason=None ExitCode=0:15".into())
            }
        );
        assert!(!got.ok());
        assert!(got.to_string().contains("without recording an exit status"));
    }

    #[test]
    fn wait_cancels_a_chain_whose_dependency_failed() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        // The embedding array ran and left; the cells array failed, so collect can never start.
        let bins = wait_bins(d, 0, "13", "exit 0");
        let jobs = Submitted {
            embed: Some("11".into()),
            cells: "12".into(),
            collect: "13".into(),
        };
        let got = wait_for_collect(&bins, &jobs, &d.join("collect.status"), &fast()).unwrap();
        assert_eq!(
            got,
            Collected::DependencyFailed {
                failed: Step::Cells,
                job: "12".into(),
                cancelled: vec!["13".into()],
            }
        );
        assert!(!got.ok());
        assert_eq!(lines(&d.join("scancel.args")), ["13"]);
        assert!(got.to_string().starts_with("the cells job 12 failed"));
    }

    #[test]
    fn wait_blames_the_job_before_one_slurm_cancelled() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        // What Slurm 22.05 says after `--kill-on-invalid-dep=yes` cancelled the collect job.
        let bins = SlurmBins {
            scontrol: fake(
                d,
                "scontrol2",
                r#"case $3 in
  13) echo "JobId=13 JobName=x JobState=CANCELLED Reason=DependencyNeverSatisfied Dependency=afterok:12_*(failed)" ;;
  12) echo "JobId=12 ArrayJobId=12 ArrayTaskId=1 JobState=FAILED Reason=NonZeroExitCode ExitCode=4:0" ;;
  *) echo "JobId=$3 JobState=COMPLETED Reason=None ExitCode=0:0" ;;
esac
"#,
            ),
            ..wait_bins(d, 1, "none", "exit 0")
        };
        let got = wait_for_collect(&bins, &chain(), &d.join("collect.status"), &fast()).unwrap();
        assert_eq!(
            got,
            Collected::DependencyFailed {
                failed: Step::Cells,
                job: "12".into(),
                cancelled: vec!["13".into()],
            }
        );
        // Nothing was left to cancel.
        assert!(!d.join("scancel.args").exists());
    }

    #[test]
    fn wait_gives_up_when_squeue_keeps_failing() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let bins = SlurmBins {
            squeue: fake(
                d,
                "squeue",
                "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1\n",
            ),
            ..SlurmBins::default()
        };
        let err = wait_for_collect(&bins, &chain(), &d.join("s"), &fast()).unwrap_err();
        assert!(format!("{err:#}").contains("Unable to contact"), "{err:#}");
        let bins = SlurmBins {
            squeue: d.join("no-such-squeue").display().to_string(),
            ..SlurmBins::default()
        };
        assert!(wait_for_collect(&bins, &chain(), &d.join("s"), &fast()).is_err());
    }
}
