//! `etcd-inspector history KEY`: every stored revision of one key.

use super::output::{or_dash, print_list};
use super::Status;
use crate::cli::{HistoryArgs, ListFormat};
use crate::store::Store;
use anyhow::{bail, Result};
use std::io::Write;
use std::path::Path;

/// A value for one line: compact JSON, cut when long.
fn short(v: &serde_json::Value) -> String {
    let text = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "(absent)".into(),
        other => other.to_string(),
    };
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(79).collect::<String>())
    } else {
        text
    }
}

pub fn run(db: &Path, args: &HistoryArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let mut rows = store.history(args.etcd_key.as_bytes())?;
    if rows.is_empty() {
        bail!("no revisions of {} in {}", args.etcd_key, db.display());
    }
    if args.diff {
        store.add_diffs(&mut rows)?;
    }
    print_list(
        &rows,
        args.output,
        &[
            "mod rev",
            "create rev",
            "version",
            "uid",
            "generation",
            "encoding",
            "size",
            "change",
            "changed fields",
            "error",
        ],
        |r| {
            let change = match (&r.change_class, &r.change_cause) {
                (Some(c), Some(cause)) => format!("{c} ({cause})"),
                (Some(c), None) => c.clone(),
                _ => "-".into(),
            };
            vec![
                r.mod_revision.to_string(),
                r.create_revision.to_string(),
                r.version.to_string(),
                if r.deleted {
                    "(deleted)".into()
                } else {
                    or_dash(r.uid.as_deref())
                },
                or_dash(r.generation),
                or_dash(r.encoding.as_deref()),
                r.value_size.to_string(),
                change,
                r.changed_paths.join("\n"),
                or_dash(r.decode_error.as_deref()),
            ]
        },
    )?;
    if args.diff && matches!(args.output, ListFormat::Table) {
        let mut out = std::io::stdout().lock();
        for r in &rows {
            let Some(diff) = r.diff.as_ref().filter(|d| !d.is_empty()) else {
                continue;
            };
            writeln!(
                out,
                "revision {} ({}):",
                r.mod_revision,
                r.change_class.as_deref().unwrap_or("-")
            )?;
            for c in diff {
                if c.path == "metadata.managedFields" {
                    writeln!(out, "  {}: entries changed (see -o json)", c.path)?;
                    continue;
                }
                let by = if c.managers.is_empty() {
                    String::new()
                } else {
                    format!("  (by {})", c.managers.join(", "))
                };
                writeln!(out, "  {}: {} → {}{by}", c.path, short(&c.old), short(&c.new))?;
            }
        }
    }
    Ok(0)
}
