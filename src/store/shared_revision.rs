//! Revisions that more than one stored key holds. etcd gives every write
//! its own revision; one txn that writes several keys gives them all the
//! same one. kube-apiserver writes one key a txn, so under its prefix a
//! revision shared by keys is either keys deleted together when the lease
//! they share expired (tombstones only) or a txn no apiserver sent.

/// One stored key's row at a shared revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedRow {
    pub key: String,
    pub create_revision: i64,
    pub version: i64,
    pub deleted: bool,
}

/// A revision at which at least two keys and one write that is not a
/// delete are stored, with the rows (in key order) that hold it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedRevision {
    pub revision: i64,
    pub rows: Vec<SharedRow>,
}

/// The shared revisions of a cluster a detector reads: the oldest ones, up
/// to a limit, and how many there are in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedRevisions {
    pub listed: Vec<SharedRevision>,
    pub total: u64,
}

/// Groups rows read in revision order into [`SharedRevision`]s.
pub(crate) fn group(rows: impl IntoIterator<Item = (i64, SharedRow)>) -> Vec<SharedRevision> {
    let mut out: Vec<SharedRevision> = Vec::new();
    for (revision, row) in rows {
        match out.last_mut() {
            Some(last) if last.revision == revision => last.rows.push(row),
            _ => out.push(SharedRevision {
                revision,
                rows: vec![row],
            }),
        }
    }
    out
}
