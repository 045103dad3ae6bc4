//! What a run writes: the rows a backend looks up and inserts for the
//! run's writer (`lifecycle::RevisionWriter`), in batches the writer opens
//! and commits. What to store, in which order and compressed against what
//! is the writer's, prepared by the ingest stage; the backend only keeps it.

use super::tables::Cell;
use super::{RunId, StoreError};
use crate::canon::facts::{ObjectFacts, StoredFact};
use crate::canon::path::FieldPath;
use crate::decode::key::ParsedKey;
use crate::ingest::base::Base;
pub use crate::ingest::prepare::KeyId;
use crate::ingest::revision::Described;
use crate::source::{Record, Revision};
use crate::store::ClusterId;
use std::path::Path;

impl From<KeyId> for Cell {
    fn from(id: KeyId) -> Cell {
        Cell::Int(id.0)
    }
}

impl From<StoredFact<'_>> for Cell {
    fn from(fact: StoredFact<'_>) -> Cell {
        match fact {
            StoredFact::Int(n) => n.map_or(Cell::Null, Cell::Int),
            StoredFact::Text(t) => t.map_or(Cell::Null, |t| Cell::Text(t.to_string())),
            StoredFact::Bytes(b) => b.map_or(Cell::Null, |b| Cell::Bytes(b.to_vec())),
        }
    }
}

/// A value as a cell: NULL for `None`.
fn text(value: Option<&str>) -> Cell {
    value.map_or(Cell::Null, |t| Cell::Text(t.to_string()))
}

fn bytes(value: Option<&[u8]>) -> Cell {
    value.map_or(Cell::Null, |b| Cell::Bytes(b.to_vec()))
}

fn int(value: Option<i64>) -> Cell {
    value.map_or(Cell::Null, Cell::Int)
}

/// A semantic content, stored once per hash.
pub struct ContentRow<'a> {
    pub hash: &'a [u8],
    /// Holds sensitive values: `canonical` is `None`.
    pub keyed: bool,
    pub codec: &'a str,
    /// The content the blobs are compressed against (`None`: in full).
    pub base: Option<i64>,
    pub canonical: Option<&'a [u8]>,
    /// When `keyed`, its redacted form, compressed alone (never against
    /// `base`).
    pub redacted: Option<&'a [u8]>,
    pub fields: &'a [u8],
    pub managed: Option<&'a [u8]>,
}

impl ContentRow<'_> {
    /// The columns a content fills, in the order of [`Self::cells`].
    pub const COLUMNS: [&'static str; 8] = [
        "hash",
        "keyed",
        "codec",
        "base",
        "canonical",
        "fields",
        "managed",
        "redacted",
    ];

    /// Its values, in the order of [`Self::COLUMNS`], appended to `out`.
    pub fn cells(&self, out: &mut Vec<Cell>) {
        out.extend([
            Cell::Bytes(self.hash.to_vec()),
            Cell::Int(self.keyed.into()),
            Cell::Text(self.codec.to_string()),
            int(self.base),
            bytes(self.canonical),
            Cell::Bytes(self.fields.to_vec()),
            bytes(self.managed),
            bytes(self.redacted),
        ]);
    }
}

/// One revision of a key.
pub struct RevisionRow<'a> {
    pub key_id: KeyId,
    /// The key's cluster.
    pub cluster: ClusterId,
    /// Its counters (the value is not kept).
    pub record: &'a Record,
    /// The generation it belongs to (a file's tombstone learns it from the
    /// revision before it).
    pub create_revision: Revision,
    pub value_size: i64,
    /// Hash of the raw value and its kind (`sha256`, `hmac-sha256`).
    pub value_hash: Option<(&'a [u8], &'a str)>,
    pub described: &'a Described,
    pub facts: &'a ObjectFacts,
    /// JSON of duplicate list entries.
    pub duplicates: Option<&'a str>,
    pub run: RunId,
    pub semantic_hash: Option<&'a [u8]>,
    /// The id of the key its keyed hashes are under, when it holds any.
    pub hash_key: Option<&'a str>,
}

impl RevisionRow<'_> {
    /// The columns a revision row fills besides its facts
    /// ([`ObjectFacts::COLUMNS`]), in the order both backends bind them.
    pub const COLUMNS: [&'static str; 23] = [
        "key_id",
        "mod_revision",
        "create_revision",
        "version",
        "lease",
        "deleted",
        "value_size",
        "value_sha256",
        "value_hash",
        "encoding",
        "encryption",
        "api_version",
        "kind",
        "namespace",
        "name",
        "uid",
        "generation",
        "decode_error",
        "run_id",
        "semantic_sha256",
        "duplicates",
        "hash_key",
        "cluster_id",
    ];

    /// Its values, those of [`Self::COLUMNS`] and then its facts', appended
    /// to `out`.
    pub fn cells(&self, out: &mut Vec<Cell>) {
        let (r, d) = (self.record, self.described);
        out.extend([
            self.key_id.into(),
            r.mod_revision.into(),
            self.create_revision.into(),
            Cell::Int(r.version),
            Cell::Int(r.lease),
            Cell::Int(r.deleted.into()),
            Cell::Int(self.value_size),
            bytes(self.value_hash.map(|h| h.0)),
            text(self.value_hash.map(|h| h.1)),
            text(d.encoding.as_deref()),
            text(d.encryption.as_deref()),
            text(d.api_version.as_deref()),
            text(d.kind.as_deref()),
            text(d.namespace.as_deref()),
            text(d.name.as_deref()),
            text(d.uid.as_deref()),
            int(d.generation),
            text(d.error.as_deref()),
            Cell::Int(self.run.0),
            bytes(self.semantic_hash),
            text(self.duplicates),
            text(self.hash_key),
            self.cluster.into(),
        ]);
        out.extend(self.facts.stored().map(Cell::from));
    }
}

/// The row-level writes of one run.
pub trait RevisionRows {
    /// Where the rows go, for errors that name it.
    fn location(&self) -> &Path;

    /// Opens a batch: what follows is kept by [`RevisionRows::commit`] or
    /// dropped by [`RevisionRows::rollback`], all of it or none.
    fn begin(&mut self) -> Result<(), StoreError>;
    fn commit(&mut self) -> Result<(), StoreError>;
    /// Drops the open batch, if any.
    fn rollback(&mut self);

    /// The key's row id in `cluster`, inserted with what its name tells
    /// when new.
    fn key_id(
        &mut self,
        cluster: ClusterId,
        key: &[u8],
        names: Option<&ParsedKey>,
    ) -> Result<KeyId, StoreError>;
    /// The field path's row id, inserted when new.
    fn path_id(&mut self, path: &FieldPath) -> Result<i64, StoreError>;
    /// Which of `revisions` (key id, mod_revision) are stored: asked for a
    /// window of records at once, one round trip for a server backend.
    fn stored_revisions(&mut self, revisions: &[(KeyId, Revision)]) -> Result<Vec<bool>, StoreError>;
    /// The generation of the key's newest stored revision before
    /// `mod_revision`.
    fn generation_before(
        &mut self,
        key_id: KeyId,
        mod_revision: Revision,
    ) -> Result<Option<Revision>, StoreError>;
    /// For each key, the base of its newest stored content: the content
    /// stored in full that it is compressed against, or itself.
    fn latest_bases(&mut self, key_ids: &[KeyId]) -> Result<Vec<Option<Base>>, StoreError>;
    /// Inserts a content unless one with its hash is stored. Nothing is
    /// answered, so a backend may hold it until the batch commits or a
    /// read needs it.
    fn insert_content(&mut self, content: &ContentRow<'_>) -> Result<(), StoreError>;
    /// Inserts contents in order, each unless one with its hash is stored
    /// (or comes earlier): each one's new row id, `None` for one left out.
    /// A backend a round trip away inserts them in one.
    fn insert_contents(&mut self, contents: &[ContentRow<'_>]) -> Result<Vec<Option<i64>>, StoreError>;
    fn insert_revision(&mut self, revision: &RevisionRow<'_>) -> Result<(), StoreError>;
    /// Keeps a time the cluster wrote at `revision` of `cluster` (a Lease
    /// renewal) as a mark of its clock; once however often it is read.
    fn insert_clock_mark(
        &mut self,
        cluster: ClusterId,
        revision: Revision,
        at: &str,
    ) -> Result<(), StoreError>;
}
