//! The Markdown report: GitHub-flavoured tables that paste cleanly into an
//! incident document.

use super::{short, ReportData};
use std::fmt::Write;

/// A table cell: no pipes or newlines.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn render(r: &ReportData) -> String {
    let mut s = String::new();
    writeln!(s, "# etcd-inspector report\n").unwrap();
    writeln!(s, "Database `{}`, generated {}.", r.database, r.generated_at).unwrap();
    if r.from_revision.is_some() || r.to_revision.is_some() {
        writeln!(
            s,
            "Revisions {} to {}.",
            r.from_revision.map_or("start".into(), |v| v.to_string()),
            r.to_revision.map_or("end".into(), |v| v.to_string())
        )
        .unwrap();
    }
    writeln!(s, "\n## Runs\n\n| run | status | source | started | head | compacted | history from | gaps |\n|---|---|---|---|---|---|---|---|").unwrap();
    for run in &r.runs {
        let gaps: Vec<String> = run
            .gaps
            .iter()
            .map(|g| format!("{}–{}", g.from_revision, g.to_revision))
            .collect();
        writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            run.id.0,
            run.status.as_str(),
            cell(&run.source),
            run.started_at,
            run.head_revision.map_or("-".into(), |v| v.to_string()),
            run.compact_revision.map_or("-".into(), |v| v.to_string()),
            run.history_from.map_or("-".into(), |v| v.to_string()),
            if gaps.is_empty() {
                "none".into()
            } else {
                gaps.join(", ")
            }
        )
        .unwrap();
    }
    writeln!(
        s,
        "\n## Summary\n\n| detector | severity | findings |\n|---|---|---|"
    )
    .unwrap();
    for (detector, by) in &r.summary.findings {
        for (severity, n) in by {
            writeln!(s, "| {detector} | {severity} | {n} |").unwrap();
        }
    }
    writeln!(s, "\n| change class | writes |\n|---|---|").unwrap();
    for (c, n) in &r.summary.writes_by_class {
        writeln!(s, "| {c} | {n} |").unwrap();
    }
    writeln!(s, "\n| resource | writes |\n|---|---|").unwrap();
    for (c, n) in &r.summary.writes_by_resource {
        writeln!(s, "| {c} | {n} |").unwrap();
    }
    writeln!(s, "\n| busiest key | revisions |\n|---|---|").unwrap();
    for (k, n) in &r.summary.busiest_keys {
        writeln!(s, "| `{}` | {n} |", cell(k)).unwrap();
    }
    writeln!(
        s,
        "\n## Findings\n\n| severity | detector | summary | revisions |\n|---|---|---|---|"
    )
    .unwrap();
    for f in &r.findings {
        let revs: Vec<String> = f.revisions.iter().map(i64::to_string).collect();
        writeln!(
            s,
            "| {} | {} | {} | {} |",
            f.severity.as_str(),
            f.detector,
            cell(&f.summary),
            revs.join(", ")
        )
        .unwrap();
    }
    writeln!(s, "\n## Timelines").unwrap();
    for t in &r.timelines {
        writeln!(
            s,
            "\n### `{}`\n\n| revision | change | fields (old → new, by) |\n|---|---|---|",
            cell(&t.key)
        )
        .unwrap();
        for row in &t.revisions {
            let class = match (&row.change_class, &row.change_cause) {
                (Some(c), Some(cause)) => format!("{c} ({cause})"),
                (Some(c), None) => c.clone(),
                _ => "-".into(),
            };
            let fields: Vec<String> = row
                .diff
                .iter()
                .flatten()
                .filter(|c| c.path != "metadata.managedFields")
                .map(|c| {
                    let by = if c.managers.is_empty() {
                        String::new()
                    } else {
                        format!(" by {}", c.managers.join(", "))
                    };
                    format!(
                        "`{}`: {} → {}{by}",
                        c.path,
                        cell(&short(&c.old, 40)),
                        cell(&short(&c.new, 40))
                    )
                })
                .collect();
            writeln!(s, "| {} | {class} | {} |", row.mod_revision, fields.join("<br>")).unwrap();
        }
    }
    s
}
