//! `etcd-inspector history KEY`: every stored revision of one key.

use super::output::{or_dash, print_list};
use super::Status;
use crate::cli::HistoryArgs;
use crate::store::Store;
use anyhow::{bail, Result};
use std::path::Path;

pub fn run(db: &Path, args: &HistoryArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let rows = store.history(args.etcd_key.as_bytes())?;
    if rows.is_empty() {
        bail!("no revisions of {} in {}", args.etcd_key, db.display());
    }
    print_list(
        &rows,
        args.output,
        &[
            "mod rev",
            "create rev",
            "version",
            "deleted",
            "uid",
            "generation",
            "encoding",
            "size",
            "sha256",
            "error",
        ],
        |r| {
            vec![
                r.mod_revision.to_string(),
                r.create_revision.to_string(),
                r.version.to_string(),
                if r.deleted {
                    "deleted".into()
                } else {
                    String::new()
                },
                or_dash(r.uid.as_deref()),
                or_dash(r.generation),
                or_dash(r.encoding.as_deref()),
                r.value_size.to_string(),
                r.value_sha256
                    .as_deref()
                    .map(|s| s[..12].to_string())
                    .unwrap_or_else(|| "-".into()),
                or_dash(r.decode_error.as_deref()),
            ]
        },
    )?;
    Ok(0)
}
