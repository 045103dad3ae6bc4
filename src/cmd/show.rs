//! `etcd-inspector show OBJECT`: one object as it was stored at a revision,
//! a time or a run, or as a manifest to recreate it.

use super::common::chosen_cluster;
use super::common::object::{
    listed, redacted_note, revision_at, revision_of, stored_object, target_key, Form,
};
use super::output::print_document;
use super::Status;
use crate::canon::convert::to_served;
use crate::canon::manifest::{for_apply, ApplyOptions};
use crate::canon::redact::placeholder_paths;
use crate::cli::{Format, ShowArgs};
use crate::decode::names::newer_api_version;
use crate::report::escape::terminal;
use crate::store::Store;
use anyhow::{bail, Result};
use std::path::Path;

pub fn run(db: &Path, args: &ShowArgs) -> Result<Status> {
    let store = Store::open_for_reading(db)?;
    let cluster = chosen_cluster(&*store, &args.cluster)?.map(|c| c.row);
    let key = target_key(&store, &args.target)?;
    let row = revision_at(&store, &key, cluster, revision_of(&store, cluster, &args.when)?)?;
    let mut shown = stored_object(&store, &key, &row, args.show_managed_fields)?;
    if args.for_apply && shown.form == Form::Hashes {
        bail!(
            "{key} at revision {}: its values are never stored (only keyed hashes), so it cannot be recreated from the database",
            row.mod_revision
        );
    }
    // A manifest's note says what to fill in instead (below).
    if let (Some(note), false) = (redacted_note(&key, &row, &shown), args.for_apply) {
        tracing::info!("{}", terminal(&note));
    }
    if args.for_apply {
        let options = ApplyOptions {
            keep_owner_references: args.keep_owner_references,
            keep_last_applied: args.keep_last_applied,
        };
        let mut failure = None;
        let mut live = |uid: &str| match store.uid_live(uid) {
            Ok(live) => live,
            Err(e) => {
                failure.get_or_insert(e);
                true
            }
        };
        let dropped = for_apply(&mut shown.object, options, &mut live);
        if let Some(e) = failure {
            return Err(e.into());
        }
        for line in dropped {
            tracing::info!("note: {}", terminal(&line));
        }
        let redacted = placeholder_paths(&shown.object);
        if !redacted.is_empty() {
            tracing::info!(
                "note: {} value(s) are never stored and show as their keyed hash ({}): fill them in before applying",
                redacted.len(),
                terminal(&listed(&redacted))
            );
        }
        let (api_version, kind) = (row.api_version.as_deref(), row.kind.as_deref());
        if let Some(converted) = to_served(&mut shown.object) {
            tracing::info!("note: {}", terminal(&converted.to_string()));
        } else if let Some(newer) = api_version.zip(kind).and_then(|(v, k)| newer_api_version(v, k)) {
            tracing::info!(
                "note: stored as {}; a cluster that no longer serves it takes {} {newer} (convert the manifest, e.g. with kubectl convert)",
                terminal(api_version.unwrap_or_default()),
                terminal(kind.unwrap_or_default())
            );
        }
    }
    print_document(&shown.object, matches!(args.output, Format::Yaml))?;
    Ok(0)
}
