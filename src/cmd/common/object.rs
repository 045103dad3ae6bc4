//! Objects named on the command line, kubectl's way or by etcd key, found in
//! the database; and one stored revision of one, as the object it was.
//! Shared by `history`, `show`, `diff`, `findings`, `report` and `stats`.

use super::revision_before;
use crate::canon::manifest::{object_of, redacted_object, RowColumns};
use crate::canon::path::FieldPath;
use crate::canon::redact::placeholder_paths;
use crate::cli::{ListFormat, ObjectArgs, TargetArgs, WhenArgs};
use crate::decode::names::{parse_object, Catalog, NameError, ObjectRef, ObjectSpec, CRDS};
use crate::hex::unhex;
use crate::source::Revision;
use crate::store::ClusterId;
use crate::store::{HistoryRow, ObjectFilter, RunId, Store};
use anyhow::{bail, Result};
use serde_json::Value;

/// Stored names listed when an object is not found, at most.
const LISTED: Option<u32> = Some(5);

/// The object `word`/`name` names in `namespace`: a built-in type by any
/// of its names first (as kubectl's discovery lists built-in groups before
/// custom ones), else a custom resource of a stored CRD.
fn resolve(store: &Store, word: &str, name: &str, namespace: Option<&str>) -> Result<ObjectRef> {
    match Catalog::built_in().object(word, name, namespace) {
        Err(NameError::Unknown { .. }) => Ok(with_crds(store)?.object(word, name, namespace)?),
        found => Ok(found?),
    }
}

/// The built-in resource types and those of every CRD the database holds
/// (its newest stored content, also of a CRD deleted since).
fn with_crds(store: &Store) -> Result<Catalog> {
    let mut catalog = Catalog::built_in();
    for cluster in store.clusters()? {
        for revisions in store.contents_of(cluster.row, CRDS.0, CRDS.1)? {
            if let Some(crd) = revisions.iter().rev().find_map(|(_, c)| c.as_ref()) {
                catalog.add_crd(crd);
            }
        }
    }
    Ok(catalog)
}

/// The types `-o name` names objects by: with the stored CRDs' for that
/// format, the built-in ones alone for any other (which prints no names).
pub fn names_for(store: &Store, format: &ListFormat) -> Result<Catalog> {
    match format {
        ListFormat::Name => with_crds(store),
        _ => Ok(Catalog::built_in()),
    }
}

/// The stored key `object` (`deploy/web`, `deploy` with `name`, or an etcd
/// key) names in `namespace`; an error listing what is stored when it is
/// not.
pub fn stored_key(
    store: &Store,
    object: &str,
    name: Option<&str>,
    namespace: Option<&str>,
) -> Result<String> {
    let (word, name) = match parse_object(object, name)? {
        ObjectSpec::Key(key) => return Ok(key),
        ObjectSpec::Named { word, name } => (word, name),
    };
    let wanted = resolve(store, &word, &name, namespace)?;
    let (group, resource) = (&wanted.resource.group, &wanted.resource.resource);
    let ns = wanted.namespace.as_deref();
    match &store.keys_named(group, resource, ns, Some(&name), LISTED)?[..] {
        [] => not_found(store, &wanted),
        [one] => Ok(one.key.clone()),
        several => bail!(
            "{wanted} is stored under several keys (storage prefixes): {}; give the key",
            several
                .iter()
                .map(|k| k.key.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Why `wanted` is not stored: the namespaces that hold its name, or the
/// names its namespace holds.
fn not_found(store: &Store, wanted: &ObjectRef) -> Result<String> {
    let (group, resource) = (&wanted.resource.group, &wanted.resource.resource);
    let elsewhere: Vec<String> = store
        .keys_named(group, resource, None, Some(&wanted.name), LISTED)?
        .into_iter()
        .filter_map(|k| k.namespace)
        .collect();
    if !elsewhere.is_empty() {
        bail!(
            "no stored {wanted}; stored in namespace {} (give -n)",
            elsewhere.join(", ")
        );
    }
    let names: Vec<String> = store
        .keys_named(group, resource, wanted.namespace.as_deref(), None, LISTED)?
        .into_iter()
        .filter_map(|k| k.name)
        .collect();
    if names.is_empty() {
        bail!("no stored {wanted}, nor any other of its type there");
    }
    bail!("no stored {wanted}; stored there: {}", names.join(", "))
}

/// The key a command's OBJECT names.
pub fn target_key(store: &Store, target: &TargetArgs) -> Result<String> {
    stored_key(
        store,
        &target.object,
        target.name.as_deref(),
        target.namespace.as_deref(),
    )
}

/// The object filter `--object`, `--namespace`, `--resource` and
/// `--key-prefix` give.
pub fn object_filter(store: &Store, args: &ObjectArgs, cluster: Option<ClusterId>) -> Result<ObjectFilter> {
    let key = match &args.object {
        Some(object) => Some(stored_key(store, object, None, args.namespace.as_deref())?),
        None => None,
    };
    Ok(ObjectFilter {
        cluster,
        // The object's own namespace is in its key.
        namespace: args.namespace.clone().filter(|_| key.is_none()),
        resource: args.resource.clone(),
        key_prefix: args.key_prefix.clone(),
        key,
    })
}

/// The revision `--rev`, `--at` (by `cluster`'s clock) or `--run` names;
/// `None`: the newest.
pub fn revision_of(store: &Store, cluster: Option<ClusterId>, when: &WhenArgs) -> Result<Option<Revision>> {
    Ok(match (when.rev, &when.at, when.run) {
        (Some(rev), ..) => Some(rev),
        (_, Some(time), _) => Some(revision_before(&**store, cluster, *time, "--at")?),
        (.., Some(run)) => match store.run_head(RunId(run))? {
            Some((_, head)) => Some(head),
            None => bail!(
                "run {run} is not in {} or never reached its cluster",
                store.location().display()
            ),
        },
        _ => None,
    })
}

/// Of one key's stored revisions, oldest first, the one current at
/// `revision`: the newest at or before it (`None`: the newest of all).
pub fn current_at(rows: &[HistoryRow], revision: Option<Revision>) -> Option<&HistoryRow> {
    rows.iter()
        .rev()
        .find(|r| revision.is_none_or(|at| r.mod_revision <= at))
}

/// The stored revision of `key` in `cluster` (`None`: any) current at
/// `revision` ([`current_at`]); an error when the object did not exist then
/// or was deleted.
pub fn revision_at(
    store: &Store,
    key: &str,
    cluster: Option<ClusterId>,
    revision: Option<Revision>,
) -> Result<HistoryRow> {
    let rows = store.history(key.as_bytes(), cluster)?;
    let Some(first) = rows.first() else {
        bail!("no revisions of {key} in {}", store.location().display());
    };
    let Some(row) = current_at(&rows, revision) else {
        bail!(
            "{key} did not exist yet at revision {}: its first stored revision is {}",
            revision.unwrap_or_default(),
            first.mod_revision
        );
    };
    if row.deleted {
        let before = rows
            .iter()
            .rev()
            .find(|r| r.mod_revision < row.mod_revision && !r.deleted)
            .map(|r| {
                format!(
                    "; its last stored content is at revision {} (--rev {0})",
                    r.mod_revision
                )
            })
            .unwrap_or_default();
        match crate::report::left::left(row) {
            Some(left) => bail!("{key} was {left}{before}"),
            None => bail!("{key} was deleted at revision {}{before}", row.mod_revision),
        }
    }
    if let Some(e) = &row.decode_error {
        bail!(
            "{key} at revision {}: its value did not decode: {e}",
            row.mod_revision
        );
    }
    Ok(row.clone())
}

/// How much of a stored revision's content an object shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// All of it: its canonical form.
    Whole,
    /// Its redacted form: each sensitive value a placeholder with its keyed
    /// hash, everything else as it was.
    Redacted,
    /// Only its field hashes (content holding sensitive values with no
    /// redacted form: every value of a resource encrypted at rest, or one
    /// stored before redacted forms were).
    Hashes,
}

/// One stored revision as the object it was.
pub struct StoredObject {
    pub object: Value,
    pub form: Form,
}

/// The object `row` (of `key`) stored.
pub fn stored_object(
    store: &Store,
    key: &str,
    row: &HistoryRow,
    managed_fields: bool,
) -> Result<StoredObject> {
    let Some(hash) = row.semantic_sha256.as_deref().and_then(unhex) else {
        bail!(
            "{key} at revision {}: no decoded content is stored",
            row.mod_revision
        );
    };
    let api_version = row.api_version.as_deref().unwrap_or_default();
    // canon is a leaf stage, below source's Revision: it takes the number.
    let served = |form| object_of(form, api_version, row.mod_revision.0, managed_fields);
    if let Some(form) = store.canonical_value(&hash)? {
        return Ok(StoredObject {
            object: served(form),
            form: Form::Whole,
        });
    }
    if let Some(form) = store.redacted_form(&hash)? {
        return Ok(StoredObject {
            object: served(form),
            form: Form::Redacted,
        });
    }
    let described = RowColumns {
        api_version,
        kind: row.kind.as_deref().unwrap_or_default(),
        namespace: row.namespace.as_deref(),
        name: row.name.as_deref(),
        uid: row.uid.as_deref(),
        generation: row.generation,
        mod_revision: row.mod_revision.0,
    };
    Ok(StoredObject {
        object: redacted_object(&described, &store.semantic_fields(&hash)?),
        form: Form::Hashes,
    })
}

/// The note `shown`, `row`'s object (of `key`), is printed with when it
/// does not show all of its content.
pub fn redacted_note(key: &str, row: &HistoryRow, shown: &StoredObject) -> Option<String> {
    let holds = format!(
        "note: {key} at revision {} holds sensitive values (a Secret's data, or a --sensitive-path)",
        row.mod_revision
    );
    match shown.form {
        Form::Whole => None,
        Form::Redacted => Some(format!(
            "{holds}, never stored: each shows as its keyed hash ({})",
            listed(&placeholder_paths(&shown.object))
        )),
        Form::Hashes => Some(format!(
            "{holds}: its content is never stored, only keyed hashes, so each value shows as its hash"
        )),
    }
}

/// `paths` joined for a note.
pub fn listed(paths: &[FieldPath]) -> String {
    paths.iter().map(FieldPath::as_str).collect::<Vec<_>>().join(", ")
}
