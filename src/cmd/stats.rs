//! `etcd-inspector stats`: what the database holds of each resource, key,
//! field manager and namespace, and what it costs.

use super::common::{chosen_cluster, revision_range};
use super::output::{print_table, text};
use super::Status;
use crate::cli::{ListFormat, StatsArgs};
use crate::store::{RunId, Scope, Store, Usage};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::Path;

pub fn run(db: &Path, args: &StatsArgs) -> Result<Status> {
    super::output::no_names(&args.output, "stats")?;
    let store = Store::open_for_reading(db)?;
    let (from_revision, to_revision, cluster) = match args.run {
        Some(run) => match store.run_head(RunId(run))? {
            Some((c, head)) => (None, Some(head), Some(c)),
            None => bail!(
                "run {run} is not in {} or never reached its head",
                store.location().display()
            ),
        },
        None => {
            let cluster = chosen_cluster(&*store, &args.cluster)?.map(|c| c.row);
            let (from, to) = revision_range(&*store, &args.range, cluster)?;
            (from, to, cluster)
        }
    };
    let scope = Scope {
        from_revision,
        to_revision,
        objects: super::common::object::object_filter(&store, &args.objects, cluster)?,
    };
    let usage = store.usage(&scope, args.top)?;
    match &args.output {
        ListFormat::Table | ListFormat::Wide => tables(&usage)?,
        format => super::output::print_document_as(&usage, format)?,
    }
    Ok(0)
}

/// `{"protobuf": 3, "json": 1}` as `protobuf 3, json 1`, most first.
fn counts(map: &BTreeMap<String, i64>) -> String {
    let mut items: Vec<(&String, &i64)> = map.iter().collect();
    items.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    items
        .iter()
        .map(|(k, n)| format!("{} {n}", text(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Bytes for people: `12.3 MiB`.
fn bytes(n: i64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{n} B"),
        _ => format!("{v:.1} {}", UNITS[unit]),
    }
}

/// A table whose first column is the cluster's, shown only when the
/// figures span several clusters.
fn table(several: bool, header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Result<()> {
    let skip = usize::from(!several);
    print_table(&header[skip..], rows.map(|row| row[skip..].to_vec()))
}

fn tables(u: &Usage) -> Result<()> {
    let clusters: std::collections::BTreeSet<&str> = u.resources.iter().map(|r| r.cluster.as_str()).collect();
    let several = clusters.len() > 1;
    let resource = |group: &str, resource: &str| text(&crate::decode::key::qualified(resource, group));
    println!("Resources");
    table(
        several,
        &[
            "cluster",
            "resource",
            "objects",
            "revisions",
            "live",
            "all revisions",
            "encodings",
            "encryption",
            "writes",
        ],
        u.resources.iter().map(|r| {
            vec![
                text(&r.cluster),
                resource(&r.group, &r.resource),
                r.objects.to_string(),
                r.revisions.to_string(),
                bytes(r.bytes_live),
                bytes(r.bytes_all_revisions),
                counts(&r.encodings),
                counts(&r.encryption),
                counts(&r.writes),
            ]
        }),
    )?;
    println!("\nLargest keys (bytes of every stored revision)");
    table(
        several,
        &["cluster", "key", "all revisions", "revisions", "latest"],
        u.largest.iter().map(|k| {
            vec![
                text(&k.cluster),
                text(&k.key),
                bytes(k.bytes_all_revisions),
                k.revisions.to_string(),
                bytes(k.latest_size),
            ]
        }),
    )?;
    println!("\nBusiest keys (stored revisions; writes that changed nothing: rewrites and encoding-only)");
    table(
        several,
        &["cluster", "key", "revisions", "changed nothing"],
        u.busiest.iter().map(|k| {
            vec![
                text(&k.cluster),
                text(&k.key),
                k.revisions.to_string(),
                format!("{} ({:.0}%)", k.changed_nothing, 100.0 * k.changed_nothing_share),
            ]
        }),
    )?;
    println!("\nField managers (writes in which their managedFields entry changed)");
    table(
        several,
        &[
            "cluster",
            "manager",
            "resource",
            "writes",
            "metadata only",
            "timestamps only",
        ],
        u.managers.iter().map(|m| {
            vec![
                text(&m.cluster),
                text(&m.manager),
                resource(&m.group, &m.resource),
                m.writes.to_string(),
                m.metadata_only.to_string(),
                m.timestamps_only.to_string(),
            ]
        }),
    )?;
    println!("\nNamespaces");
    table(
        several,
        &[
            "cluster",
            "namespace",
            "objects",
            "revisions",
            "live",
            "all revisions",
        ],
        u.namespaces.iter().map(|n| {
            vec![
                text(&n.cluster),
                text(&n.namespace),
                n.objects.to_string(),
                n.revisions.to_string(),
                bytes(n.bytes_live),
                bytes(n.bytes_all_revisions),
            ]
        }),
    )?;
    for (title, list) in [("Users", &u.users), ("User agents", &u.user_agents)] {
        if list.is_empty() {
            continue;
        }
        println!("\n{title} (from the audit logs `attribute` read)");
        table(
            several,
            &[
                "cluster",
                title,
                "writes",
                "no-op writes",
                "failed",
                "of them conflicts",
            ],
            list.iter().map(|r| {
                vec![
                    text(&r.cluster),
                    text(&r.name),
                    r.writes.to_string(),
                    r.no_op_writes.to_string(),
                    r.failed.to_string(),
                    r.conflicts.to_string(),
                ]
            }),
        )?;
    }
    Ok(())
}
