//! Migration 0014: field paths stored before [`FieldPath`] were their
//! segments joined with `.` (`data.app.properties`), which a dotted key makes
//! ambiguous; they are rewritten in the printed form
//! (`data.app\.properties`).
//!
//! A field-hash path has at most the database's field depth segments, and
//! every segment but the last is a field of a Kubernetes object (no dots),
//! so splitting at the first `depth - 1` dots recovers it. Lists of repeated
//! entries named a container as `containers[web]`, now `containers[name=web]`.
//! A user's sensitive path could mean any split of its dots (the old
//! matching compared text), so it becomes every one of them: what was keyed
//! stays keyed.

use crate::canon::path::{FieldPath, Segment};
use crate::store::settings::LEGACY_SENSITIVE_PATHS;
use rusqlite::{params, OptionalExtension, Transaction};
use rusqlite_migration::{HookError, HookResult};
use serde_json::Value;
use std::collections::BTreeMap;

fn hook_error(what: impl std::fmt::Display) -> HookError {
    HookError::Hook(format!("rewriting stored field paths: {what}"))
}

/// A field-hash path of a database hashing to `depth`.
pub fn field_path(old: &str, depth: usize) -> FieldPath {
    FieldPath::fields(old.splitn(depth.max(1), '.'))
}

/// A repeated-entries list path (`spec.containers[web].env`).
pub fn list_path(old: &str) -> FieldPath {
    let mut path = FieldPath::root();
    for part in old.split('.') {
        match part.strip_suffix(']').and_then(|p| p.split_once('[')) {
            Some((list, name)) => {
                path.push_field(list);
                path.push(&Segment::Item(vec![("name".into(), name.into())]));
            }
            None => path.push_field(part),
        }
    }
    path
}

/// Every path a dotted sensitive path could have meant.
pub fn sensitive_paths(old: &str) -> Vec<FieldPath> {
    let parts: Vec<&str> = old.split('.').collect();
    let joints = parts.len() - 1;
    let mut out: Vec<FieldPath> = (0u64..1 << joints.min(16))
        .map(|splits| {
            let mut segments: Vec<String> = vec![parts[0].to_string()];
            for (i, part) in parts[1..].iter().enumerate() {
                match splits >> i & 1 {
                    1 => segments.push(part.to_string()),
                    _ => {
                        let last = segments.last_mut().expect("one segment");
                        last.push('.');
                        last.push_str(part);
                    }
                }
            }
            FieldPath::fields(segments.iter().map(String::as_str))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn setting(tx: &Transaction, name: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    tx.query_row("SELECT value FROM settings WHERE name = ?1", [name], |r| r.get(0))
        .optional()
}

/// The migration's hook.
pub fn rewrite(tx: &Transaction) -> HookResult {
    let depth = match setting(tx, "field_depth")? {
        Some(v) => std::str::from_utf8(&v)
            .ok()
            .and_then(|t| t.parse::<usize>().ok())
            .ok_or_else(|| {
                hook_error(format!(
                    "settings.field_depth {:?} is not a number",
                    String::from_utf8_lossy(&v)
                ))
            })?,
        None => crate::canon::semantic::DEFAULT_DEPTH,
    };
    rewrite_interned(tx, depth)?;
    rewrite_revisions(tx, depth)?;
    rewrite_sensitive(tx)?;
    Ok(())
}

fn rewrite_interned(tx: &Transaction, depth: usize) -> HookResult {
    let moved: Vec<(i64, String)> = {
        let mut stmt = tx.prepare("SELECT id, path FROM field_paths")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
        let mut moved = Vec::new();
        for row in rows {
            let (id, old) = row?;
            let new = field_path(&old, depth);
            if new != old.as_str() {
                moved.push((id, new.to_string()));
            }
        }
        moved
    };
    // Two steps: a new text may be another row's old one until that moves.
    for (id, _) in &moved {
        tx.execute(
            "UPDATE field_paths SET path = ?2 WHERE id = ?1",
            params![id, format!("\u{0}{id}")],
        )?;
    }
    for (id, new) in &moved {
        tx.execute("UPDATE field_paths SET path = ?2 WHERE id = ?1", params![id, new])?;
    }
    Ok(())
}

fn rewrite_revisions(tx: &Transaction, depth: usize) -> HookResult {
    let mut read = tx.prepare(
        "SELECT key_id, mod_revision, changed_paths, changed_by, duplicates FROM revisions \
         WHERE changed_paths IS NOT NULL OR changed_by IS NOT NULL OR duplicates IS NOT NULL",
    )?;
    let mut write =
        tx.prepare("UPDATE revisions SET changed_paths = ?3, changed_by = ?4, duplicates = ?5 WHERE key_id = ?1 AND mod_revision = ?2")?;
    let mut rows = read.query([])?;
    while let Some(r) = rows.next()? {
        let (key, revision): (i64, i64) = (r.get(0)?, r.get(1)?);
        let texts: [Option<String>; 3] = [r.get(2)?, r.get(3)?, r.get(4)?];
        let json = |i: usize| -> Result<Option<Value>, HookError> {
            texts[i]
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .map_err(|e| hook_error(format!("revision {revision} of key {key}: {e}")))
        };
        let (mut paths, mut by, mut dups) = (json(0)?, json(1)?, json(2)?);
        let field = |v: &mut Value| {
            if let Value::String(s) = v {
                *s = field_path(s, depth).to_string();
            }
        };
        if let Some(Value::Array(items)) = &mut paths {
            items.iter_mut().for_each(field);
        }
        if let Some(Value::Object(map)) = &mut by {
            let old = std::mem::take(map);
            *map = old
                .into_iter()
                .map(|(k, v)| (field_path(&k, depth).to_string(), v))
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .collect();
        }
        if let Some(Value::Array(items)) = &mut dups {
            for item in items {
                if let Some(Value::String(s)) = item.get_mut("path") {
                    *s = list_path(s).to_string();
                }
            }
        }
        let new: [Option<String>; 3] = [paths, by, dups].map(|v| v.map(|v| v.to_string()));
        if new != texts {
            write.execute(params![key, revision, new[0], new[1], new[2]])?;
        }
    }
    Ok(())
}

fn rewrite_sensitive(tx: &Transaction) -> HookResult {
    let Some(stored) = setting(tx, "sensitive_paths")? else {
        return Ok(());
    };
    let old: Vec<String> =
        serde_json::from_slice(&stored).map_err(|e| hook_error(format!("settings.sensitive_paths: {e}")))?;
    if old.is_empty() {
        return Ok(());
    }
    let mut new: Vec<FieldPath> = old.iter().flat_map(|p| sensitive_paths(p)).collect();
    new.sort();
    new.dedup();
    tx.execute(
        "UPDATE settings SET value = ?1 WHERE name = 'sensitive_paths'",
        [serde_json::to_vec(&new).expect("JSON")],
    )?;
    // The paths as a later run's `--sensitive-path` reads the same text; a
    // text the new form does not read cannot be repeated, so none is kept.
    let given: Result<Vec<FieldPath>, _> = old.iter().map(|p| FieldPath::parse(p)).collect();
    if let Ok(mut given) = given {
        given.sort();
        given.dedup();
        tx.execute(
            "INSERT INTO settings (name, value) VALUES (?1, ?2)",
            params![LEGACY_SENSITIVE_PATHS, serde_json::to_vec(&given).expect("JSON")],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_paths_map_to_their_segments() {
        assert_eq!(field_path("data.app.properties", 2), r"data.app\.properties");
        assert_eq!(field_path("spec.replicas", 2), "spec.replicas");
        assert_eq!(field_path("metadata", 2), "metadata");
        assert_eq!(
            field_path("metadata.labels.app.kubernetes.io/name", 3),
            r"metadata.labels.app\.kubernetes\.io/name"
        );
        assert_eq!(field_path("data.a[0]", 2), r"data.a\[0\]");
        assert_eq!(field_path("data.", 2), r#"data[""]"#);
        assert_eq!(
            list_path("spec.template.spec.containers[web].env"),
            "spec.template.spec.containers[name=web].env"
        );
        assert_eq!(list_path("metadata.ownerReferences"), "metadata.ownerReferences");
    }

    #[test]
    fn a_sensitive_path_becomes_every_reading_of_its_dots() {
        let got: Vec<String> = sensitive_paths("data.app.token")
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(
            got,
            [
                r"data.app.token",
                r"data.app\.token",
                r"data\.app.token",
                r"data\.app\.token"
            ]
        );
        assert_eq!(sensitive_paths("spec"), [FieldPath::field("spec")]);
    }
}
