//! `etcd-inspector diff RUN_A RUN_B`: field-level drift between two points.

use super::common::chosen_cluster;
use super::common::object::{current_at, redacted_note, stored_object};
use super::output::print_table;
use super::{Status, UsageError};
use crate::analyze::drift::{compare, Drift, ObjectDrift};
use crate::canon::path::FieldPath;
use crate::cli::{DiffArgs, ListFormat};
use crate::report::escape::terminal;
use crate::report::json_array::JsonArray;
use crate::source::Revision;
use crate::store::cluster;
use crate::store::{ClusterId, LiveObject, Looked, RunId, Store, ValueReader};
use anyhow::{bail, Result};
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// The cluster and revision one side of the diff is taken at.
fn side(
    store: &Store,
    run: Option<i64>,
    rev: Option<Revision>,
) -> Result<(Option<ClusterId>, Option<Revision>)> {
    match run {
        Some(run) => match store.run_head(RunId(run))? {
            Some((cluster, head)) => Ok((Some(cluster), Some(rev.unwrap_or(head)))),
            None => bail!(
                "run {run} is not in {} or never reached its cluster",
                store.location().display()
            ),
        },
        None => Ok((None, rev)),
    }
}

pub fn run(db: &Path, args: &DiffArgs) -> Result<Status> {
    let side_given = |run: Option<i64>, rev: Option<Revision>| run.is_some() || rev.is_some();
    if !side_given(args.run_a, args.rev_a) || !side_given(args.run_b, args.rev_b) {
        return Err(UsageError(
            "give two runs (diff RUN_A RUN_B) or two revisions (--rev-a N --rev-b M)".into(),
        )
        .into());
    }
    let store = Store::open_for_reading(db)?;
    let (cluster_a, rev_a) = side(&store, args.run_a, args.rev_a)?;
    let (cluster_b, rev_b) = side(&store, args.run_b, args.rev_b)?;
    let (Some(rev_a), Some(rev_b)) = (rev_a, rev_b) else {
        bail!("a side of the diff has no revision")
    };
    let chosen = chosen_cluster(&*store, &args.cluster)?;
    let clusters = store.clusters()?;
    let row = match (cluster_a, cluster_b, chosen.as_ref().map(|c| c.row)) {
        (Some(a), Some(b), _) if a != b => bail!(
            "runs {:?} and {:?} read different clusters",
            args.run_a,
            args.run_b
        ),
        (Some(run), _, Some(chosen)) | (_, Some(run), Some(chosen)) if run != chosen => bail!(
            "the runs given did not read cluster {}",
            args.cluster.cluster.as_deref().unwrap_or_default()
        ),
        (Some(c), _, _) | (None, Some(c), _) | (None, None, Some(c)) => c,
        (None, None, None) => match clusters.as_slice() {
            [only] => only.row,
            [] => bail!("{} holds no runs", store.location().display()),
            several => bail!(
                "{} holds several clusters ({}): name one with --cluster, or a run",
                store.location().display(),
                cluster::listed(several)
            ),
        },
    };
    let cluster = clusters
        .iter()
        .find(|c| c.row == row)
        .map(|c| c.label().to_string())
        .unwrap_or_default();
    let filter = super::common::object::object_filter(&store, &args.objects, Some(row))?;
    if let (true, Some(key)) = (args.unified, &filter.key) {
        return unified(&store, key, row, rev_a, rev_b);
    }
    // A value the database cannot give back fails the command, instead of
    // showing as redacted.
    let mut values = ValueReader::new(&*store);
    let mut value_at = |o: &LiveObject, path: &FieldPath| -> Value {
        match values.at(o.semantic_sha256.as_deref(), path) {
            Looked::Found(v) => v.clone(),
            Looked::Redacted => Value::String("<redacted>".into()),
            Looked::Absent => Value::Null,
        }
    };
    let (a, b) = (store.live_objects(row, rev_a), store.live_objects(row, rev_b));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // Objects are written as they are compared; the counts, known at the
    // end, come last.
    match &args.output {
        ListFormat::Json | ListFormat::JsonPath(_) => {
            // A template needs the whole document: the JSON is written to
            // memory and read back, so it is the document `-o json` prints.
            let mut document = Vec::new();
            let json: &mut dyn Write = match &args.output {
                ListFormat::JsonPath(_) => &mut document,
                _ => &mut out,
            };
            writeln!(json, "{{\n  \"cluster\": {},", serde_json::to_string(&cluster)?)?;
            write!(json, "  \"objects\": ")?;
            let mut objects = JsonArray::open(json, "  ")?;
            let summary = compare(a, b, &filter, &mut value_at, &mut |o| Ok(objects.push(&o)?))?;
            objects.close()?;
            let tail = serde_json::json!({"revision_a": rev_a, "revision_b": rev_b, "summary": summary});
            let tail = serde_json::to_string_pretty(&tail)?;
            // The rest of the document: its fields after `objects`.
            writeln!(json, ",\n{}", tail.trim_start_matches("{\n"))?;
            if let ListFormat::JsonPath(template) = &args.output {
                template.write(&serde_json::from_slice(&document)?, &mut out)?;
            }
        }
        ListFormat::Name => {
            let names = super::common::object::names_for(&store, &args.output)?;
            compare(a, b, &filter, &mut value_at, &mut |o| {
                Ok(writeln!(out, "{}", terminal(&names.printed_name(&o.key)))?)
            })?;
        }
        ListFormat::Yaml => {
            // Written an object at a time, as the JSON is: every object of
            // a cluster may have changed.
            let head = serde_json::json!({"cluster": cluster, "revision_a": rev_a, "revision_b": rev_b});
            serde_yaml_ng::to_writer(&mut out, &head)?;
            writeln!(out, "objects:")?;
            let mut any = false;
            let summary = compare(a, b, &filter, &mut value_at, &mut |o| {
                any = true;
                serde_yaml_ng::to_writer(&mut out, &[o])?;
                Ok(())
            })?;
            if !any {
                writeln!(out, "  []")?;
            }
            serde_yaml_ng::to_writer(&mut out, &serde_json::json!({"summary": summary}))?;
        }
        ListFormat::Table | ListFormat::Wide => {
            writeln!(out, "cluster {}: revision {rev_a} → {rev_b}", terminal(&cluster))?;
            let summary = compare(a, b, &filter, &mut value_at, &mut |o| {
                let left = match o.change == Drift::Removed {
                    true => hidden_delete(&store, &o.key, row, rev_a, rev_b)?,
                    false => None,
                };
                object_lines(&mut out, &o, left.as_deref())
            })?;
            out.flush()?;
            let header = [
                "resource",
                "added",
                "removed",
                "recreated",
                "changed",
                "not comparable",
            ];
            print_table(
                &header,
                summary.iter().map(|(resource, c)| {
                    vec![
                        resource.clone(),
                        c.added.to_string(),
                        c.removed.to_string(),
                        c.recreated.to_string(),
                        c.changed.to_string(),
                        c.not_comparable.to_string(),
                    ]
                }),
            )?;
        }
    }
    values.finish()?;
    out.flush()?;
    Ok(0)
}

/// How `key`, removed between revisions `a` and `b`, left when compaction
/// hid its delete (see [`crate::report::left::left`]).
fn hidden_delete(
    store: &Store,
    key: &str,
    cluster: ClusterId,
    a: Revision,
    b: Revision,
) -> Result<Option<String>> {
    let rows = store.history(key.as_bytes(), Some(cluster))?;
    Ok(rows
        .iter()
        .filter(|r| a < r.mod_revision && r.mod_revision <= b)
        .find_map(crate::report::left::left))
}

/// One differing object as lines of the table output, with how it left
/// when compaction hid its delete.
fn object_lines(out: &mut dyn Write, o: &ObjectDrift, left: Option<&str>) -> Result<()> {
    let what = match (&o.kind, &o.name) {
        (Some(k), Some(n)) => format!(
            "{k} {}{n}",
            o.namespace
                .as_deref()
                .map(|ns| format!("{ns}/"))
                .unwrap_or_default()
        ),
        _ => o.key.clone(),
    };
    let what = terminal(&what);
    match o.change.as_str() {
        "recreated" => writeln!(
            out,
            "recreated {what}: uid {} → {}",
            terminal(o.uid_a.as_deref().unwrap_or("-")),
            terminal(o.uid_b.as_deref().unwrap_or("-"))
        )?,
        "not-comparable" => writeln!(
            out,
            "not comparable {what}: its secrets are hashed under another hash key on each side (--new-hash-key between them)"
        )?,
        change => writeln!(out, "{} {what}", terminal(change))?,
    }
    if let Some(left) = left {
        writeln!(out, "  {}", terminal(left))?;
    }
    if let Some(w) = &o.written_by_b {
        writeln!(
            out,
            "  written by {} at {}",
            terminal(&w.to_string()),
            terminal(&w.time)
        )?;
    }
    for f in &o.fields {
        let by = if f.managers.is_empty() {
            String::new()
        } else {
            format!("  (by {})", terminal(&f.managers.join(", ")))
        };
        writeln!(
            out,
            "  {}: {} → {}{by}",
            terminal(f.path.as_str()),
            terminal(&f.old.to_string()),
            terminal(&f.new.to_string())
        )?;
    }
    Ok(())
}

/// The YAML of `key` as stored at each revision, as a unified diff (an
/// absent or deleted object is empty, as `diff -N` shows it). The header
/// names both revisions; `resourceVersion`, which always differs, is left
/// out.
fn unified(store: &Store, key: &str, cluster: ClusterId, rev_a: Revision, rev_b: Revision) -> Result<Status> {
    let rows = store.history(key.as_bytes(), Some(cluster))?;
    let mut name = key.to_string();
    let mut noted = false;
    let mut side = |rev: Revision| -> Result<String> {
        let current = current_at(&rows, Some(rev));
        // Where a delete compaction hid happened, or may already have, say so.
        let hidden = current.filter(|r| r.deleted_after.is_some()).or_else(|| {
            rows.iter().find(|r| {
                r.deleted_after
                    .is_some_and(|after| after < rev && rev <= r.mod_revision)
            })
        });
        if let Some(left) = hidden.and_then(crate::report::left::left) {
            tracing::info!(
                "note: at revision {rev}, {}",
                terminal(&format!("{key} was {left}"))
            );
        }
        let Some(row) = current.filter(|r| !r.deleted) else {
            return Ok(String::new());
        };
        let mut shown = stored_object(store, key, row, false)?;
        if let Some(note) = redacted_note(key, row, &shown) {
            if !std::mem::replace(&mut noted, true) {
                tracing::info!("{}", terminal(&note));
            }
        }
        if let Some(meta) = shown.object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.shift_remove("resourceVersion");
        }
        name = file_name(&shown.object).unwrap_or_else(|| name.clone());
        Ok(serde_yaml_ng::to_string(&shown.object)?)
    };
    let (a, b) = (side(rev_a)?, side(rev_b)?);
    let diff = similar::TextDiff::from_lines(&a, &b);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    write!(
        out,
        "{}",
        diff.unified_diff().context_radius(3).header(
            &format!("revision-{rev_a}/{name}"),
            &format!("revision-{rev_b}/{name}")
        )
    )?;
    out.flush()?;
    Ok(0)
}

/// `apps.v1.Deployment.shop.web`, as `kubectl diff` names an object's file.
fn file_name(object: &Value) -> Option<String> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let api_version = text(object.get("apiVersion"))?.replace('/', ".");
    let kind = text(object.get("kind"))?;
    let meta = object.get("metadata");
    let name = text(meta.and_then(|m| m.get("name")))?;
    Some(match text(meta.and_then(|m| m.get("namespace"))) {
        Some(ns) => format!("{api_version}.{kind}.{ns}.{name}"),
        None => format!("{api_version}.{kind}.{name}"),
    })
}
