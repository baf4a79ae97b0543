//! `hopbench`: a reproducible benchmark harness for retrieval strategies. This file only
//! parses the command line, resolves the settings once, takes the results lock and
//! dispatches; each command is a file of `commands/`.

use std::process::ExitCode;

use hopbench::commands;
use hopbench::pipeline::settings::Settings;
use hopbench::store::lock::ResultsLock;

fn main() -> ExitCode {
    match run(commands::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hopbench: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: commands::Cli) -> anyhow::Result<ExitCode> {
    let command = cli.command;
    let settings = command
        .overrides()
        .map(|o| Settings::resolve(&o))
        .transpose()?;
    // a command that writes the results directory holds its lock until it returns
    let _lock = match (&settings, command.lock()) {
        (Some(s), Some(l)) => Some(ResultsLock::take(&s.results, l.wait, l.mode)?),
        _ => None,
    };
    command.run(settings.as_ref())
}
