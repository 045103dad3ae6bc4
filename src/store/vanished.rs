//! Deletes compaction hid: a key an earlier run stored live that a later
//! run no longer finds (or finds in a newer generation), whose tombstone
//! fell in revisions compaction removed before the later run could read
//! them. The later run stores a tombstone at the latest revision the
//! delete can have had, marked with the revision it came after.

/// One stored revision's generation facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredRevision {
    pub mod_revision: i64,
    /// For a tombstone, the generation it ended.
    pub create_revision: i64,
    pub deleted: bool,
}

/// A stored key as a run's head sees it: its newest stored revision at or
/// before the head, and the newest before that revision's generation began
/// (what the generation followed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredKey {
    pub key_id: i64,
    pub key: Vec<u8>,
    pub newest: StoredRevision,
    pub before: Option<StoredRevision>,
}

/// A delete a run inferred: the tombstone it stores for the generation
/// `create_revision` of `key_id`, at `mod_revision`, the latest revision the
/// delete can have had; it came after revision `after` (the head of the last
/// run that saw the object, or its last stored revision).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InferredDelete {
    pub key_id: i64,
    pub create_revision: i64,
    pub mod_revision: i64,
    pub after: i64,
}

/// The head of an earlier run and the prefix it read under: the run saw
/// every key under the prefix as stored at its head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunHead {
    pub head: i64,
    pub prefix: Vec<u8>,
}
