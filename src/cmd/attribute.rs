//! `etcd-inspector attribute --audit-log PATH...`: who wrote each stored
//! revision, from kube-apiserver audit logs.

use super::common::{analysis_summary, audit_logs};
use super::output::print_table;
use super::{Status, UsageError};
use crate::cli::{AttributeArgs, ListFormat};
use crate::lifecycle::{attribute, Attributed};
use crate::report::escape::terminal;
use crate::store::Store;
use anyhow::Result;
use std::path::Path;

pub fn run(db: &Path, args: &AttributeArgs) -> Result<Status> {
    super::output::no_names(&args.output, "attribute")?;
    if args.audit.audit_log.is_empty() {
        return Err(UsageError(
            "attribute needs at least one --audit-log PATH (a file, a folder of rotated logs, or - for standard input)"
                .into(),
        )
        .into());
    }
    let logs = audit_logs(&args.audit)?;
    let store = Store::open_existing_for_writing(db)?;
    let store: &dyn crate::store::Backend = &*store;
    let detectors = (!args.no_analyze).then(|| (&args.detectors).into());
    let found = attribute(store, &logs, args.cluster.as_deref(), detectors.as_ref())?;
    if let Some(analysis) = &found.analysis {
        tracing::info!("{}", terminal(&analysis_summary(analysis)));
    }
    match &args.output {
        ListFormat::Table | ListFormat::Wide => print_summary(&found)?,
        format => super::output::print_document_as(&found, format)?,
    }
    Ok(0)
}

/// What was read and joined, as a table of counts and the first malformed
/// lines.
fn print_summary(found: &Attributed) -> Result<()> {
    let r = &found.read;
    let j = &found.joined;
    let rows = [
        ("files read", r.files),
        ("lines", r.lines),
        ("audit events", r.events),
        ("write requests (completed)", found.writes),
        ("  new to the database", found.staged),
        ("requests of the cluster, all logs so far", j.requests),
        ("  revisions attributed exactly", j.exact),
        ("  revisions attributed by order", j.by_order),
        ("  no-op writes (succeeded, wrote nothing)", j.no_op),
        ("  failed (4xx, 5xx)", j.failed),
        ("  not attributable: the order cannot tell", j.ambiguous),
        (
            "    revisions they could have written, left unattributed",
            j.unattributed_revisions,
        ),
        ("  matched no stored key or revision", j.unmatched),
        ("lines not audit events", r.skipped),
        ("malformed lines", r.malformed),
    ];
    println!("cluster {}", terminal(&found.cluster));
    print_table(
        &["", "count"],
        rows.iter().map(|(what, n)| vec![what.to_string(), n.to_string()]),
    )?;
    for line in &r.first_malformed {
        tracing::warn!("malformed: {}", terminal(line));
    }
    if r.malformed > r.first_malformed.len() as u64 {
        tracing::warn!(
            "malformed: ... and {} more",
            r.malformed - r.first_malformed.len() as u64
        );
    }
    Ok(())
}
