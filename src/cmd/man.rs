//! `etcd-inspector man [COMMAND]`: the manual page, in roff.

use super::Status;
use crate::cli::{Cli, ManArgs};
use anyhow::{bail, Result};
use clap::CommandFactory;
use std::io::Write;

pub fn run(args: &ManArgs) -> Result<Status> {
    let top = Cli::command();
    let page = match &args.command {
        None => top,
        Some(name) => match top.find_subcommand(name) {
            // Its page is named as man pages of git's commands are.
            Some(sub) => sub.clone().name(format!("{}-{name}", top.get_name())),
            None => bail!(
                "no command {name:?}; the commands are {}",
                top.get_subcommands()
                    .map(|c| c.get_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    };
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(page).render(&mut out)?;
    out.flush()?;
    Ok(0)
}
