//! `etcd-inspector report`: a post-mortem report in text, Markdown, JSON or
//! HTML.

use super::common::{fail_on_status, revision_range};
use super::Status;
use crate::cli::{ReportArgs, ReportFormat};
use crate::report::{self, Filter};
use crate::store::{ObjectFilter, Scope, Store};
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
            objects: ObjectFilter::from(&args.objects),
        },
        severity: args.severity,
    };
    let data = report::build(&store, &filter)?;
    let text = match args.format {
        ReportFormat::Text => report::text::render(&data),
        ReportFormat::Md => report::markdown::render(&data),
        ReportFormat::Json => serde_json::to_string_pretty(&data)? + "\n",
        ReportFormat::Html => report::html::render(&data),
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(fail_on_status(
        args.fail_on,
        data.findings.iter().map(|f| f.severity),
    ))
}
