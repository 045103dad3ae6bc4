//! `etcd-inspector report`: a post-mortem report in text, Markdown, JSON or
//! HTML.

use super::common::fail_on_status;
use super::Status;
use crate::cli::{ReportArgs, ReportFormat};
use crate::report::{self, Filter};
use crate::store::{ObjectFilter, Scope, Store};
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::Path;

/// A revision bound from `rev:N` or an RFC 3339 time.
fn bound(store: &Store, text: &str, flag: &str) -> Result<Option<i64>> {
    if let Some(n) = text.strip_prefix("rev:") {
        return Ok(Some(
            n.parse()
                .with_context(|| format!("{flag} {text}: not a revision"))?,
        ));
    }
    let time: jiff::Timestamp = text
        .parse()
        .with_context(|| format!("{flag} {text}: neither rev:N nor an RFC 3339 time"))?;
    Ok(store.revision_at_time(&crate::decode::gotime::rfc3339(time))?)
}

pub fn run(db: &Path, args: &ReportArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let from_revision = match &args.since {
        Some(t) => match bound(&store, t, "--since")? {
            Some(r) if !t.starts_with("rev:") => Some(r + 1),
            r => r,
        },
        None => None,
    };
    let to_revision = match &args.until {
        Some(t) => match bound(&store, t, "--until")? {
            Some(r) => Some(r),
            None => bail!("--until {t}: no complete run started by then"),
        },
        None => None,
    };
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
