//! `etcd-inspector history OBJECT`: every stored revision of one object.

use super::common::chosen_cluster;
use super::output::{lines, or_dash, print_list, text, Column, Layout, Shown};
use super::Status;
use crate::canon::path::{FieldPath, MANAGED_FIELDS};
use crate::cli::{HistoryArgs, ListFormat};
use crate::report::escape::terminal;
use crate::report::left::left;
use crate::store::Store;
use anyhow::{bail, Result};
use std::io::Write;
use std::path::Path;

/// A value for one line: compact JSON, cut when long, control characters
/// escaped.
fn short(v: &serde_json::Value) -> String {
    text(&crate::report::short(v, 80))
}

pub fn run(db: &Path, args: &HistoryArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let cluster = chosen_cluster(&*store, &args.cluster)?;
    let key = super::common::object::target_key(&store, &args.target)?;
    let mut rows = store.history(key.as_bytes(), cluster.as_ref().map(|c| c.row))?;
    if rows.is_empty() {
        match &cluster {
            Some(c) => bail!(
                "no revisions of {key} in cluster {} in {}",
                c.label(),
                store.location().display()
            ),
            None => bail!("no revisions of {key} in {}", store.location().display()),
        }
    }
    if args.diff {
        store.add_diffs(&mut rows)?;
    }
    if let Some(field) = &args.field {
        // A change touches the field when it is the field, inside it, or
        // holds it (`spec` changed holds `spec.replicas`).
        let touches = |p: &FieldPath| p.is_within(field) || field.is_under(p);
        rows.retain(|r| r.changed_paths.iter().any(touches));
        for r in &mut rows {
            r.changed_paths.retain(touches);
            r.changed_by.retain(|p, _| touches(p));
            if let Some(diff) = &mut r.diff {
                diff.retain(|c| touches(&c.path));
            }
        }
        if rows.is_empty() {
            bail!("no stored revision of {key} changed {field}");
        }
    }
    let name = super::common::object::names_for(&store, &args.output)?.printed_name(&key);
    let layout = Layout {
        format: &args.output,
        headers: !args.no_headers,
        clusters: super::common::clusters_listed(&*store, &args.cluster)?,
    };
    print_list(
        &rows,
        &layout,
        &[
            Column("cluster", Shown::Clusters),
            Column("mod rev", Shown::Always),
            Column("create rev", Shown::Wide),
            Column("version", Shown::Always),
            Column("uid", Shown::Wide),
            Column("generation", Shown::Wide),
            Column("encoding", Shown::Wide),
            Column("size", Shown::Wide),
            Column("change", Shown::Always),
            Column("changed fields", Shown::Always),
            Column("written by", Shown::Always),
            Column("written at", Shown::Always),
            Column("error", Shown::Wide),
        ],
        |r| {
            let change = match (&r.change_class, &r.change_cause) {
                _ if r.deleted_after.is_some() => text(&left(r).unwrap_or_default()),
                (Some(c), Some(cause)) => text(&format!("{c} ({cause})")),
                (Some(c), None) => text(c),
                _ => "-".into(),
            };
            vec![
                text(&r.cluster),
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
                lines(&r.changed_paths),
                match (&r.written_by, r.written_by_apiserver) {
                    (Some(w), _) => text(&w.to_string()),
                    (None, Some(apiserver)) => apiserver.into(),
                    (None, None) => "-".into(),
                },
                text(&crate::report::when::when(r)),
                or_dash(r.decode_error.as_deref()),
            ]
        },
        |_| vec![name.clone()],
    )?;
    if args.diff && matches!(args.output, ListFormat::Table | ListFormat::Wide) {
        let mut out = std::io::stdout().lock();
        for r in &rows {
            let Some(diff) = r.diff.as_ref().filter(|d| !d.is_empty()) else {
                continue;
            };
            let by = match (&r.written_by, &r.written_at) {
                (Some(w), Some(at)) => format!(
                    ", {} at {}",
                    text(&w.to_string()),
                    text(&crate::human_time::stored(at))
                ),
                _ => String::new(),
            };
            writeln!(
                out,
                "revision {} in cluster {} ({}{by}):",
                r.mod_revision,
                text(&r.cluster),
                terminal(r.change_class.as_deref().unwrap_or("-"))
            )?;
            for c in diff {
                if c.path.as_str() == MANAGED_FIELDS {
                    writeln!(
                        out,
                        "  {}: entries changed (see -o json)",
                        terminal(c.path.as_str())
                    )?;
                    continue;
                }
                let by = if c.managers.is_empty() {
                    String::new()
                } else {
                    format!("  (by {})", terminal(&c.managers.join(", ")))
                };
                writeln!(
                    out,
                    "  {}: {} → {}{by}",
                    terminal(c.path.as_str()),
                    short(&c.old),
                    short(&c.new)
                )?;
            }
        }
    }
    Ok(0)
}
