//! `etcd-inspector runs`: the runs recorded in the database.

use super::common::chosen_cluster;
use super::output::{or_dash, print_list, text, Column, Layout, Shown};
use super::Status;
use crate::cli::RunsArgs;
use crate::human_time::exact;
use crate::store::{RunInfo, ServedBy, Store};
use anyhow::Result;
use std::path::Path;

pub fn run(db: &Path, args: &RunsArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let mut runs = store.runs()?;
    if let Some(c) = chosen_cluster(&*store, &args.cluster)? {
        runs.retain(|r| r.cluster_id.as_deref() == Some(c.etcd_cluster_id.as_str()));
    }
    let layout = Layout {
        format: &args.output,
        headers: !args.no_headers,
        clusters: super::common::clusters_listed(&*store, &args.cluster)?,
    };
    print_list(
        &runs,
        &layout,
        &[
            Column("run", Shown::Always),
            Column("cluster", Shown::Clusters),
            Column("status", Shown::Always),
            Column("started", Shown::Always),
            Column("source", Shown::Always),
            Column("read", Shown::Wide),
            Column("etcd", Shown::Wide),
            Column("member", Shown::Wide),
            Column("head", Shown::Always),
            Column("compacted", Shown::Wide),
            Column("history from", Shown::Wide),
            Column("keys", Shown::Always),
            Column("added", Shown::Always),
            Column("gaps", Shown::Wide),
            Column("error", Shown::Always),
        ],
        |r| {
            vec![
                r.id.0.to_string(),
                or_dash(r.cluster.as_deref()),
                match (&r.damage, r.salvaged, &r.restored) {
                    (_, _, Some(restore)) => format!("{} (restored: {})", r.status.as_str(), restore.brief()),
                    (Some(d), _, _) if !d.is_none() => {
                        format!("{} (salvaged: {})", r.status.as_str(), d.describe())
                    }
                    (_, true, _) => format!("{} (salvaged, no damage)", r.status.as_str()),
                    _ => r.status.as_str().to_string(),
                },
                text(&exact(r.started_at)),
                text(&r.shown_source()),
                read(r),
                or_dash(r.etcd_version.as_deref()),
                members(&r.members),
                or_dash(r.head_revision),
                or_dash(r.compact_revision),
                or_dash(r.history_from),
                r.keys_seen.to_string(),
                r.revisions_added.to_string(),
                r.gaps
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
                or_dash(r.error.as_deref()),
            ]
        },
        |r| vec![format!("run/{}", r.id.0)],
    )?;
    Ok(0)
}

/// How a run read its history: `watch` or `snapshot` from a live etcd; a
/// data file's `db`, with what a member's WAL added to it.
fn read(r: &RunInfo) -> String {
    match (&r.fetched, &r.wal, &r.file) {
        (Some(how), _, _) => how.clone(),
        (None, Some(wal), _) => wal.describe(),
        (None, None, Some(_)) => "db".into(),
        (None, None, None) => "-".into(),
    }
}

/// The members that served a run: the first, then each move with its time
/// and why (`a (id), at T moved to b (id): why`).
fn members(served: &[ServedBy]) -> String {
    let mut text = String::new();
    for by in served {
        match (&by.moved_because, text.is_empty()) {
            (_, true) => text = by.to_string(),
            (Some(why), false) => text += &format!("; at {} moved to {by}: {why}", exact(by.at)),
            (None, false) => text += &format!("; at {} reconnected to {by}", exact(by.at)),
        }
    }
    match text.is_empty() {
        true => "-".into(),
        false => text,
    }
}
