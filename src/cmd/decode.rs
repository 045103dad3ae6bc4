//! `etcd-inspector decode`: one raw stored value → the object it holds.

use super::common::show;
use super::Status;
use crate::cli::DecodeArgs;
use anyhow::{Context, Result};
use std::io::Read;

pub fn run(args: &DecodeArgs) -> Result<Status> {
    let (label, value) = read_input(args.input.as_deref())?;
    show(&label, &value, args.key.as_deref(), None, &args.view)
}

fn read_input(path: Option<&std::path::Path>) -> Result<(String, Vec<u8>)> {
    match path {
        None => read_stdin(),
        Some(p) if p.as_os_str() == "-" => read_stdin(),
        Some(p) => {
            let label = p.display().to_string();
            let value = std::fs::read(p).with_context(|| format!("cannot read {label}"))?;
            Ok((label, value))
        }
    }
}

fn read_stdin() -> Result<(String, Vec<u8>)> {
    let mut value = Vec::new();
    std::io::stdin()
        .read_to_end(&mut value)
        .context("cannot read standard input")?;
    Ok(("<stdin>".into(), value))
}
