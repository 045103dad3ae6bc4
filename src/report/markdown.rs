//! The Markdown report: GitHub-flavoured tables that paste cleanly into an
//! incident document.

use super::escape::{markdown_code, markdown_code_cell, markdown_text as text};
use super::{short, ReportData};
use crate::canon::path::MANAGED_FIELDS;
use crate::human_time::{exact, stored};
use crate::source::Revision;
use std::fmt::Write;

/// A field's value for a table cell: inline code, `(absent)` when the field
/// is not there.
fn value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "(absent)".into(),
        v => markdown_code_cell(&short(v, 40)),
    }
}

pub fn render(r: &ReportData) -> String {
    let mut s = String::new();
    writeln!(s, "# etcd-inspector report\n").unwrap();
    body(&mut s, r, "");
    s
}

/// The report's content under its title, each heading below the title's
/// level, with `h` (`#`) more.
fn body(s: &mut String, r: &ReportData, h: &str) {
    writeln!(
        s,
        "Database {}, generated {}.",
        markdown_code(&r.database),
        text(&stored(&r.generated_at))
    )
    .unwrap();
    if r.from_revision.is_some() || r.to_revision.is_some() {
        writeln!(
            s,
            "Revisions {} to {}.",
            r.from_revision.map_or("start".into(), |v| v.to_string()),
            r.to_revision.map_or("end".into(), |v| v.to_string())
        )
        .unwrap();
    }
    if let Some(cluster) = &r.cluster {
        writeln!(s, "Cluster {}.", markdown_code(cluster)).unwrap();
    }
    writeln!(s, "\n**{}**", text(&r.summary.verdict())).unwrap();
    writeln!(s, "\n{h}## Runs\n\n| run | status | source | started | head | compacted | history from | gaps |\n|---|---|---|---|---|---|---|---|").unwrap();
    for run in &r.runs {
        let gaps: Vec<String> = run.gaps.iter().map(ToString::to_string).collect();
        writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            run.id.0,
            run.status.as_str(),
            markdown_code_cell(&run.shown_source()),
            text(&exact(run.started_at)),
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
        "\n{h}## Summary\n\n| detector | severity | findings |\n|---|---|---|"
    )
    .unwrap();
    for (detector, by) in &r.summary.findings {
        for (severity, n) in by {
            writeln!(s, "| {} | {} | {n} |", text(detector), text(severity)).unwrap();
        }
    }
    writeln!(s, "\n| lifecycle | findings | objects |\n|---|---|---|").unwrap();
    for line in &r.summary.lifecycle {
        writeln!(
            s,
            "| {} | {} | {} |",
            line.topic,
            line.findings,
            text(&line.names(usize::MAX))
        )
        .unwrap();
    }
    writeln!(
        s,
        "\n| resource | objects | revisions | bytes live | bytes of all revisions |\n|---|---|---|---|---|"
    )
    .unwrap();
    for u in &r.summary.resources {
        let name = crate::decode::key::qualified(&u.resource, &u.group);
        writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            text(&name),
            u.objects,
            u.revisions,
            u.bytes_live,
            u.bytes_all_revisions
        )
        .unwrap();
    }
    writeln!(s, "\n| change class | writes |\n|---|---|").unwrap();
    for (c, n) in &r.summary.writes_by_class {
        writeln!(s, "| {} | {n} |", text(c)).unwrap();
    }
    writeln!(s, "\n| resource | writes |\n|---|---|").unwrap();
    for (c, n) in &r.summary.writes_by_resource {
        writeln!(s, "| {} | {n} |", text(c)).unwrap();
    }
    writeln!(s, "\n| busiest key | revisions |\n|---|---|").unwrap();
    for (k, n) in &r.summary.busiest_keys {
        writeln!(s, "| {} | {n} |", markdown_code_cell(k)).unwrap();
    }
    writeln!(
        s,
        "\n{h}## Findings\n\n| severity | group | findings | revisions |\n|---|---|---|---|"
    )
    .unwrap();
    for g in &r.groups {
        let span = match (g.first_revision, g.last_revision) {
            (Some(a), Some(b)) if a == b => a.to_string(),
            (Some(a), Some(b)) => format!("{a}–{b}"),
            _ => "-".into(),
        };
        writeln!(
            s,
            "| {} | {} | {} | {span} |",
            g.severity.as_str(),
            text(&g.title()),
            g.count
        )
        .unwrap();
    }
    writeln!(
        s,
        "\n| severity | detector | summary | revisions |\n|---|---|---|---|"
    )
    .unwrap();
    for g in &r.groups {
        for f in &g.sample {
            let revs: Vec<String> = f.revisions.iter().map(Revision::to_string).collect();
            writeln!(
                s,
                "| {} | {} | {} | {} |",
                f.severity.as_str(),
                text(&f.detector),
                text(&f.summary),
                revs.join(", ")
            )
            .unwrap();
        }
        if g.more() > 0 {
            writeln!(
                s,
                "| | {} | and {} more: {} | |",
                text(&g.detector),
                g.more(),
                markdown_code_cell(&g.command)
            )
            .unwrap();
        }
    }
    writeln!(s, "\n{h}## Timelines").unwrap();
    for t in &r.timelines {
        writeln!(
            s,
            "\n{h}### {}\n\n| revision | written | change | fields (old → new, by) |\n|---|---|---|---|",
            markdown_code(&t.key)
        )
        .unwrap();
        if t.omitted > 0 {
            writeln!(s, "| … | | {} more revisions not shown | |", t.omitted).unwrap();
        }
        for row in &t.revisions {
            let class = match (&row.change_class, &row.change_cause) {
                _ if t.left.contains_key(&row.mod_revision) => t.left[&row.mod_revision].clone(),
                (Some(c), Some(cause)) => format!("{c} ({cause})"),
                (Some(c), None) => c.clone(),
                _ => "-".into(),
            };
            let fields: Vec<String> = row
                .diff
                .iter()
                .flatten()
                .filter(|c| c.path.as_str() != MANAGED_FIELDS)
                .map(|c| {
                    let by = if c.managers.is_empty() {
                        String::new()
                    } else {
                        let managers: Vec<String> = c.managers.iter().map(|m| text(m)).collect();
                        format!(" by {}", managers.join(", "))
                    };
                    format!(
                        "{}: {} → {}{by}",
                        markdown_code_cell(c.path.as_str()),
                        value(&c.old),
                        value(&c.new)
                    )
                })
                .collect();
            let when = crate::report::when::when(row);
            let written = match &row.written_by {
                Some(w) => format!("{} at {}", text(&w.to_string()), text(&when)),
                None => text(&when),
            };
            writeln!(
                s,
                "| {} | {} | {} | {} |",
                row.mod_revision,
                written,
                text(&class),
                fields.join("<br>")
            )
            .unwrap();
        }
    }
}

/// The fleet report: a table of clusters × detectors, each cluster linking
/// to its section, then each cluster's report.
pub fn render_fleet(r: &super::fleet::FleetReport) -> String {
    let mut s = String::new();
    let fleet = &r.fleet;
    writeln!(s, "# etcd-inspector fleet report\n").unwrap();
    writeln!(
        s,
        "Database {}, generated {}: {} clusters.\n",
        markdown_code(&r.database),
        text(&stored(&r.generated_at)),
        fleet.clusters.len()
    )
    .unwrap();
    let header: Vec<String> = fleet.header().into_iter().map(text).collect();
    writeln!(s, "| {} |\n|{}", header.join(" | "), "---|".repeat(header.len())).unwrap();
    for row in &fleet.clusters {
        let mut cells = vec![format!("[{}](#{})", text(&row.cluster), row.anchor)];
        cells.extend(fleet.counts(row));
        writeln!(s, "| {} |", cells.join(" | ")).unwrap();
    }
    for (_, section) in &r.sections {
        let cluster = section.cluster.as_deref().unwrap_or("-");
        writeln!(
            s,
            "\n<a id=\"{}\"></a>\n\n## Cluster {}\n",
            super::fleet::anchor(cluster),
            text(cluster)
        )
        .unwrap();
        body(&mut s, section, "#");
    }
    s
}
