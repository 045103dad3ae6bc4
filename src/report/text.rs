//! The concise text report, for a terminal.

use super::escape::terminal;
use super::ReportData;
use std::fmt::Write;

pub fn render(r: &ReportData) -> String {
    let mut s = String::new();
    let range = match (r.from_revision, r.to_revision) {
        (None, None) => "all stored revisions".to_string(),
        (f, t) => format!(
            "revisions {}–{}",
            f.map_or("start".into(), |v| v.to_string()),
            t.map_or("end".into(), |v| v.to_string())
        ),
    };
    let cluster = r
        .cluster
        .as_deref()
        .map(|c| format!(", cluster {}", terminal(c)))
        .unwrap_or_default();
    writeln!(
        s,
        "etcd-inspector report: {}{cluster} ({range})\n{}",
        terminal(&r.database),
        terminal(&r.summary.verdict())
    )
    .unwrap();
    for run in &r.runs {
        let gaps: Vec<String> = run.gaps.iter().map(ToString::to_string).collect();
        writeln!(
            s,
            "  run {} {} {} head {} history from {}{}",
            run.id.0,
            run.status.as_str(),
            terminal(&crate::human_time::exact(run.started_at)),
            run.head_revision.map_or("-".into(), |v| v.to_string()),
            run.history_from.map_or("-".into(), |v| v.to_string()),
            if gaps.is_empty() {
                String::new()
            } else {
                format!(", gap {}", gaps.join(" "))
            }
        )
        .unwrap();
    }
    let classes: Vec<String> = r
        .summary
        .writes_by_class
        .iter()
        .map(|(c, n)| format!("{} {n}", terminal(c)))
        .collect();
    writeln!(s, "writes: {}", classes.join(", ")).unwrap();
    for line in &r.summary.lifecycle {
        writeln!(s, "{}: {}", line.topic, terminal(&line.text(5))).unwrap();
    }
    let total: usize = r.groups.iter().map(|g| g.count).sum();
    writeln!(s, "{total} findings in {} groups", r.groups.len()).unwrap();
    for g in &r.groups {
        writeln!(
            s,
            "  [{}] {}: {}{}",
            g.severity.as_str(),
            terminal(&g.title()),
            g.count,
            super::span(g)
        )
        .unwrap();
        for f in &g.sample {
            writeln!(s, "      {}", terminal(&f.summary)).unwrap();
        }
        if g.more() > 0 {
            writeln!(s, "      and {} more: {}", g.more(), terminal(&g.command)).unwrap();
        }
    }
    s
}

/// The fleet report: the table of clusters × detectors, then each
/// cluster's report.
pub fn render_fleet(r: &super::fleet::FleetReport) -> String {
    let mut s = String::new();
    let fleet = &r.fleet;
    writeln!(
        s,
        "etcd-inspector fleet report: {} ({} clusters)",
        terminal(&r.database),
        fleet.clusters.len()
    )
    .unwrap();
    let mut rows = vec![fleet
        .header()
        .into_iter()
        .map(|h| terminal(h).into_owned())
        .collect::<Vec<_>>()];
    for row in &fleet.clusters {
        let mut cells = vec![terminal(&row.cluster).into_owned()];
        cells.extend(fleet.counts(row));
        rows.push(cells);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for cells in &rows {
        let line: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        writeln!(s, "  {}", line.join("  ").trim_end()).unwrap();
    }
    for (_, section) in &r.sections {
        writeln!(
            s,
            "\n== cluster {} ==",
            terminal(section.cluster.as_deref().unwrap_or("-"))
        )
        .unwrap();
        s += &render(section);
    }
    s
}
