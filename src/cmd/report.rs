//! `etcd-inspector report`: a post-mortem report in text, Markdown, JSON or
//! HTML.

use super::common::{fail_on_status, revision_range};
use super::Status;
use crate::cli::{ReportArgs, ReportFormat};
use crate::report::{self, Filter, ReportData};
use crate::store::{Scope, Store};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

pub fn run(db: &Path, args: &ReportArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let (from_revision, to_revision) = revision_range(&store, &args.range)?;
    let filter = Filter {
        scope: Scope {
            from_revision,
            to_revision,
            objects: super::object::object_filter(&store, &args.objects)?,
        },
        severity: args.severity,
    };
    let data = report::build(&store, &filter)?;
    let write = |out: &mut dyn Write| -> Result<()> {
        match args.format {
            ReportFormat::Text => out.write_all(report::text::render(&data).as_bytes())?,
            ReportFormat::Md => out.write_all(report::markdown::render(&data).as_bytes())?,
            ReportFormat::Json => report::write_json(&store, &filter, &data, out)?,
            ReportFormat::Html => out.write_all(report::html::render(&data).as_bytes())?,
        }
        Ok(out.flush()?)
    };
    match &args.output {
        Some(path) => write_file(path, write)?,
        None => write(&mut std::io::BufWriter::new(std::io::stdout().lock()))?,
    }
    Ok(fail_on_status(args.fail_on, severities(&data)))
}

/// The severities the report's findings have.
fn severities(data: &ReportData) -> impl Iterator<Item = crate::store::finding::Severity> + '_ {
    data.groups.iter().map(|g| g.severity)
}

/// Writes `path` through a temporary file beside it, renamed over it once
/// complete: a report that fails midway leaves no half-written file.
fn write_file(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).with_context(|| format!("cannot write {}", path.display()))?;
    {
        let mut out = std::io::BufWriter::new(tmp.as_file_mut());
        write(&mut out).with_context(|| format!("cannot write {}", path.display()))?;
    }
    // A report holds no secret: readable as any file the user writes.
    #[cfg(unix)]
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
