//! `etcd-inspector report`: a post-mortem report in text, Markdown, JSON or
//! HTML.

use super::common::{chosen_cluster, fail_on_status, revision_range};
use super::Status;
use crate::cli::{ReportArgs, ReportFormat};
use crate::report::{self, Filter, ReportData};
use crate::store::ClusterId;
use crate::store::{Scope, Store};
use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use std::io::Write;
use std::path::{Path, PathBuf};

pub fn run(db: &Path, args: &ReportArgs) -> Result<Status> {
    let (format, file) = destination(args)?;
    let store = Store::open_for_reading(db)?;
    let chosen = chosen_cluster(&*store, &args.cluster)?;
    let filter_of = |cluster: Option<ClusterId>| -> Result<Filter> {
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
            match format {
                ReportFormat::Text => out.write_all(report::text::render_fleet(&fleet).as_bytes())?,
                ReportFormat::Md => out.write_all(report::markdown::render_fleet(&fleet).as_bytes())?,
                ReportFormat::Json => report::fleet::write_json(&*store, &fleet, out)?,
                ReportFormat::Html => out.write_all(report::html::render_fleet(&fleet).as_bytes())?,
            }
            Ok(out.flush()?)
        };
        output(file.as_deref(), write)?;
        let found = fleet.sections.iter().flat_map(|(_, data)| severities(data));
        return Ok(fail_on_status(args.fail_on, found));
    }
    let filter = filter_of(chosen.map(|c| c.row))?;
    let data = report::build(&*store, &filter)?;
    let write = |out: &mut dyn Write| -> Result<()> {
        match format {
            ReportFormat::Text => out.write_all(report::text::render(&data).as_bytes())?,
            ReportFormat::Md => out.write_all(report::markdown::render(&data).as_bytes())?,
            ReportFormat::Json => report::write_json(&*store, &filter, &data, out)?,
            ReportFormat::Html => out.write_all(report::html::render(&data).as_bytes())?,
        }
        Ok(out.flush()?)
    };
    output(file.as_deref(), write)?;
    Ok(fail_on_status(args.fail_on, severities(&data)))
}

/// The report's format and file, from `--format` or `-o FORMAT`, and
/// `--output FILE` (or `-o FILE`, the old spelling, with a warning); without
/// a format, the file's extension says, else text.
fn destination(args: &ReportArgs) -> Result<(ReportFormat, Option<PathBuf>)> {
    let mut format = args.format;
    let mut file = args.output.clone();
    if let Some(o) = &args.short_o {
        match ReportFormat::from_str(o, true) {
            Ok(f) if format.is_some_and(|named| named != f) => {
                bail!("report -o {o} and --format name two formats")
            }
            Ok(f) => format = Some(f),
            Err(_) if file.is_none() => {
                tracing::warn!("report -o {o}: -o names the format now, as in every command; writing {o} as --output {o} would");
                file = Some(PathBuf::from(o));
            }
            Err(_) => bail!("report -o {o}: not a format (text, md, json, html); the file is --output"),
        }
    }
    let by_extension = || {
        let extension = file.as_ref()?.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "md" | "markdown" => Some(ReportFormat::Md),
            "json" => Some(ReportFormat::Json),
            "html" | "htm" => Some(ReportFormat::Html),
            _ => None,
        }
    };
    let format = format.or_else(by_extension).unwrap_or(ReportFormat::Text);
    Ok((format, file))
}

/// Writes the report to `file` or standard output.
fn output(file: Option<&Path>, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    match file {
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
