//! `etcd-inspector completion SHELL`: the shell's completion script.

use super::Status;
use crate::cli::{Cli, CompletionArgs};
use anyhow::Result;
use clap::CommandFactory;
use std::io::Write;

pub fn run(args: &CompletionArgs) -> Result<Status> {
    let mut command = Cli::command();
    let name = command.get_name().to_string();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut command, name, &mut out);
    out.flush()?;
    Ok(0)
}
