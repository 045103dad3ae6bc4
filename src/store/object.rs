//! One stored revision with the object facts detectors compare.

use crate::canon::change::{ChangeCause, ChangeClass};
use crate::canon::facts::ObjectFacts;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use crate::source::Revision;
use std::collections::BTreeMap;

/// A revision of one key, with its object's facts (empty for tombstones).
#[derive(Clone, Debug, Default)]
pub struct ObjectRevision {
    pub key: String,
    pub resource: Option<String>,
    /// The resource's API group ("" for the core group).
    pub group: Option<String>,
    pub mod_revision: Revision,
    pub create_revision: Revision,
    /// etcd's count of writes to the key since its create (1 for the
    /// create; 0 for a tombstone).
    pub version: i64,
    pub deleted: bool,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub uid: Option<String>,
    /// The object's owner, timestamps, phase, node, desired count, managers.
    pub facts: ObjectFacts,
    /// JSON array of repeated list entries in this revision.
    pub duplicates: Option<String>,
    pub semantic_sha256: Option<Vec<u8>>,
    pub generation: Option<i64>,
    pub encoding: Option<String>,
    pub api_version: Option<String>,
    pub encryption: Option<String>,
    /// Change class against the previous revision of the generation.
    pub class: Option<ChangeClass>,
    pub cause: Option<ChangeCause>,
    pub changed_paths: Vec<FieldPath>,
    /// Changed path → field managers.
    pub changed_by: BTreeMap<FieldPath, Vec<String>>,
    /// Field path → hash of its value (empty when the value did not decode).
    pub fields: BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>,
}

impl ObjectRevision {
    /// `Kind namespace/name`, or the key.
    pub fn object(&self) -> String {
        match (&self.kind, &self.name) {
            (Some(kind), Some(name)) => match &self.namespace {
                Some(ns) => format!("{kind} {ns}/{name}"),
                None => format!("{kind} {name}"),
            },
            _ => self.key.clone(),
        }
    }

    /// Whether this revision starts its key generation.
    pub fn is_create(&self) -> bool {
        !self.deleted && self.mod_revision == self.create_revision
    }
}

/// Seconds between two RFC 3339 times, when both parse.
pub fn seconds_between(from: Option<&str>, to: Option<&str>) -> Option<i64> {
    let from: jiff::Timestamp = from?.parse().ok()?;
    let to: jiff::Timestamp = to?.parse().ok()?;
    Some(to.as_second() - from.as_second())
}
