//! `cargo xtask gen-proto [--check]`: regenerates `proto/`, or with
//! `--check` fails when the checked-in files differ from a fresh run.

use anyhow::{bail, Context, Result};
use std::path::Path;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cmd, check) = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["gen-proto"] => ("gen-proto", false),
        ["gen-proto", "--check"] => ("gen-proto", true),
        _ => bail!("usage: cargo xtask gen-proto [--check]"),
    };
    debug_assert_eq!(cmd, "gen-proto");
    let proto_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto");
    let report = xtask::generate(&xtask::locate_sources()?)?;
    eprint!("{}", report.summary);
    let current = xtask::read_tree(&proto_dir)?;
    if check {
        if current != report.files {
            bail!("proto/ is stale: run `cargo xtask gen-proto` and commit the result");
        }
        eprintln!("proto/ is up to date");
        return Ok(());
    }
    if proto_dir.exists() {
        std::fs::remove_dir_all(&proto_dir).context("clearing proto/")?;
    }
    for (rel, text) in &report.files {
        let path = proto_dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("file has a parent"))?;
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!("wrote {} files to proto/", report.files.len());
    Ok(())
}
