//! The fleet report, for a database of several clusters: a table of
//! clusters × detectors (finding counts, counted by the backend, each
//! cluster linking to its section) and a section per cluster, that
//! cluster's own report.

use super::{Filter, ReportData};
use crate::store::cluster::Cluster;
use crate::store::{HistoryReader, StoreError};
use serde::Serialize;
use std::collections::BTreeMap;

/// One cluster's row of the fleet table.
#[derive(Clone, Debug, Serialize)]
pub struct FleetRow {
    /// Its name, or etcd's cluster id when it has none.
    pub cluster: String,
    pub etcd_cluster_id: String,
    /// Its section's anchor in the Markdown and HTML reports.
    pub anchor: String,
    /// Detector → findings (those with none left out).
    pub findings: BTreeMap<String, i64>,
    pub total: i64,
}

/// The table of clusters × detectors.
#[derive(Clone, Debug, Serialize)]
pub struct Fleet {
    /// The detectors with findings in any cluster, in registry order.
    pub detectors: Vec<String>,
    pub clusters: Vec<FleetRow>,
}

/// A fleet report: the table, then each cluster's section.
#[derive(Clone, Debug, Serialize)]
pub struct FleetReport {
    pub generated_at: String,
    pub database: String,
    pub fleet: Fleet,
    /// Each cluster's filter and report, in the table's order.
    #[serde(skip)]
    pub sections: Vec<(Filter, ReportData)>,
}

/// The anchor of a cluster's section: names and ids are letters, digits,
/// `-`, `_` and `.`, which a URL fragment and an HTML id take as they are.
pub fn anchor(cluster: &str) -> String {
    format!("cluster-{cluster}")
}

/// Builds the fleet report of `sections`: each cluster with the filter of
/// its section (its own revision range: a time resolves by its clock).
pub fn build(store: &dyn HistoryReader, sections: Vec<(Cluster, Filter)>) -> Result<FleetReport, StoreError> {
    let mut rows = Vec::new();
    let mut built = Vec::new();
    let mut found: Vec<String> = Vec::new();
    for (cluster, filter) in sections {
        let mut findings = BTreeMap::new();
        for c in store.finding_counts(&filter.scope, filter.severity)? {
            if c.cluster == cluster.row {
                findings.insert(c.detector.clone(), c.count);
                if !found.contains(&c.detector) {
                    found.push(c.detector);
                }
            }
        }
        rows.push(FleetRow {
            cluster: cluster.label().to_string(),
            etcd_cluster_id: cluster.etcd_cluster_id.clone(),
            anchor: anchor(cluster.label()),
            total: findings.values().sum(),
            findings,
        });
        let data = super::build(store, &filter)?;
        built.push((filter, data));
    }
    let mut detectors: Vec<String> = crate::analyze::names()
        .filter(|d| found.iter().any(|f| f == d))
        .map(str::to_string)
        .collect();
    // A stored detector this version no longer has still counts.
    let gone: Vec<String> = found.into_iter().filter(|f| !detectors.contains(f)).collect();
    detectors.extend(gone);
    Ok(FleetReport {
        generated_at: crate::decode::gotime::now(),
        database: store.location().display().to_string(),
        fleet: Fleet {
            detectors,
            clusters: rows,
        },
        sections: built,
    })
}

/// Writes the JSON fleet report: the table, then `clusters`, each
/// cluster's JSON report (findings included) as [`super::write_json`]
/// writes it.
pub fn write_json(
    store: &dyn HistoryReader,
    report: &FleetReport,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<()> {
    super::open_object(report, "clusters", out)?;
    out.write_all(b"[\n")?;
    for (i, (filter, data)) in report.sections.iter().enumerate() {
        if i > 0 {
            out.write_all(b",\n")?;
        }
        super::write_json(store, filter, data, out)?;
    }
    out.write_all(b"]\n}\n")?;
    Ok(())
}

impl Fleet {
    /// The table's header, as every format shows it: `cluster`, each
    /// detector, `total`.
    pub fn header(&self) -> Vec<&str> {
        let mut header = vec!["cluster"];
        header.extend(self.detectors.iter().map(String::as_str));
        header.push("total");
        header
    }

    /// A row's cells after its cluster: each detector's count (`0` for
    /// none), then the total.
    pub fn counts(&self, row: &FleetRow) -> Vec<String> {
        let mut counts: Vec<String> = self
            .detectors
            .iter()
            .map(|d| row.findings.get(d).copied().unwrap_or(0).to_string())
            .collect();
        counts.push(row.total.to_string());
        counts
    }
}
