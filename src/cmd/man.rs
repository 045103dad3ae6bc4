//! `etcd-inspector man`: the manual page, in roff.

use super::Status;
use crate::cli::Cli;
use anyhow::Result;
use clap::CommandFactory;
use std::io::Write;

pub fn run() -> Result<Status> {
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    out.flush()?;
    Ok(0)
}
