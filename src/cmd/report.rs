//! `etcd-inspector report`: a post-mortem report in text, Markdown, JSON or
//! HTML.

use super::common::{chosen_cluster, fail_on_status, revision_range};
use super::Status;
use crate::cli::{ReportArgs, ReportFormat};
use crate::report::{self, Filter, ReportData};
use crate::store::{Scope, Store};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

pub fn run(db: &Path, args: &ReportArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let chosen = chosen_cluster(&*store, &args.cluster)?;
    let filter_of = |cluster: Option<i64>| -> Result<Filter> {
        let (from_revision, to_revision) = revision_range(&*store, &args.range, cluster)?;
        Ok(Filter {
            scope: Scope {
                from_revision,
                to_revision,
                objects: super::common::object::object_filter(&store, &args.objects, cluster)?,
            },
            severity: args.severity,
        })
    };
    let clusters = store.clusters()?;
    // Several clusters and none chosen: the fleet report, a section each.
    if chosen.is_none() && clusters.len() > 1 {
        let sections = clusters
            .into_iter()
            .map(|c| {
                let filter = filter_of(Some(c.row))?;
                Ok((c, filter))
            })
            .collect::<Result<Vec<_>>>()?;
        let fleet = report::fleet::build(&*store, sections)?;
        let write = |out: &mut dyn Write| -> Result<()> {
            match args.format {
                ReportFormat::Text => out.write_all(report::text::render_fleet(&fleet).as_bytes())?,
                ReportFormat::Md => out.write_all(report::markdown::render_fleet(&fleet).as_bytes())?,
                ReportFormat::Json => report::fleet::write_json(&*store, &fleet, out)?,
                ReportFormat::Html => out.write_all(report::html::render_fleet(&fleet).as_bytes())?,
            }
            Ok(out.flush()?)
        };
        output(args, write)?;
        let found = fleet.sections.iter().flat_map(|(_, data)| severities(data));
        return Ok(fail_on_status(args.fail_on, found));
    }
    let filter = filter_of(chosen.map(|c| c.row))?;
    let data = report::build(&*store, &filter)?;
    let write = |out: &mut dyn Write| -> Result<()> {
        match args.format {
            ReportFormat::Text => out.write_all(report::text::render(&data).as_bytes())?,
            ReportFormat::Md => out.write_all(report::markdown::render(&data).as_bytes())?,
            ReportFormat::Json => report::write_json(&*store, &filter, &data, out)?,
            ReportFormat::Html => out.write_all(report::html::render(&data).as_bytes())?,
        }
        Ok(out.flush()?)
    };
    output(args, write)?;
    Ok(fail_on_status(args.fail_on, severities(&data)))
}

/// Writes the report to `-o FILE` or standard output.
fn output(args: &ReportArgs, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    match &args.output {
        Some(path) => write_file(path, write),
        None => write(&mut std::io::BufWriter::new(std::io::stdout().lock())),
    }
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
