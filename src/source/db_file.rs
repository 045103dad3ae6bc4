//! etcd's schema inside a bbolt file (reference §6.1): every retained
//! revision in the `key` bucket, compaction state in `meta`, members in
//! `members`. Turns the file into the same [`Record`]s the live source gives.

use super::bolt::{BoltDb, BoltError};
use super::revision;
use super::{Read, ReadError, Record, Sink};
use crate::decode::key::COMPACT_REV_KEY;
use prost::Message;
use sha1::Sha1;
use sha2::Digest;
use std::ops::ControlFlow;

/// `mvccpb.KeyValue` (etcd `api/mvccpb/kv.proto`).
#[derive(Clone, PartialEq, Message)]
struct KeyValue {
    #[prost(bytes = "vec", tag = "1")]
    key: Vec<u8>,
    #[prost(int64, tag = "2")]
    create_revision: i64,
    #[prost(int64, tag = "3")]
    mod_revision: i64,
    #[prost(int64, tag = "4")]
    version: i64,
    #[prost(bytes = "vec", tag = "5")]
    value: Vec<u8>,
    #[prost(int64, tag = "6")]
    lease: i64,
}

/// What a file says about itself.
#[derive(Clone, Debug)]
pub struct FileInfo {
    pub size: u64,
    /// SHA-256 of the whole file, hex.
    pub sha256: String,
    pub had_trailer: bool,
    pub consistent_index: Option<u64>,
    pub finished_compact: Option<i64>,
    pub scheduled_compact: Option<i64>,
    /// Lowest and highest main revision in the `key` bucket.
    pub first_revision: Option<i64>,
    pub last_revision: Option<i64>,
    /// etcd's cluster id as the server computes it from its members, hex.
    pub cluster_id: Option<String>,
}

impl FileInfo {
    /// The revision the file's store was at: the highest of its newest key
    /// revision and its compaction marks.
    pub fn head(&self) -> i64 {
        [self.last_revision, self.finished_compact, self.scheduled_compact]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(0)
    }
}

/// Reads the `meta` and `members` buckets and the revision range.
pub fn inspect(db: &BoltDb) -> Result<FileInfo, BoltError> {
    inspect_buckets(db).map_err(|e| e.at(db.path()))
}

fn inspect_buckets(db: &BoltDb) -> Result<FileInfo, BoltError> {
    // Hash the mapped file: reading it into memory would cost its size in RAM.
    let sha256 = crate::hex::hex(&db.file_sha256());
    let mut info = FileInfo {
        size: db.file_bytes().len() as u64,
        sha256,
        had_trailer: db.had_trailer,
        consistent_index: None,
        finished_compact: None,
        scheduled_compact: None,
        first_revision: None,
        last_revision: None,
        cluster_id: None,
    };
    let meta = db.top_bucket("meta")?;
    db.for_all(meta, &mut |k, v, _| {
        match k {
            b"consistent_index" if v.len() == 8 => {
                info.consistent_index = Some(u64::from_be_bytes(v.try_into().expect("8 bytes")))
            }
            b"finishedCompactRev" => info.finished_compact = revision::parse(v).map(|r| r.revision.main),
            b"scheduledCompactRev" => info.scheduled_compact = revision::parse(v).map(|r| r.revision.main),
            _ => {}
        }
        Ok(())
    })?;
    let keys = db.top_bucket("key")?;
    let mut walked = 0i64;
    db.for_all(keys, &mut |k, _, _| {
        if let Some(r) = revision::parse(k) {
            info.first_revision.get_or_insert(r.revision.main);
            info.last_revision = Some(r.revision.main);
        }
        walked += 1;
        if walked % RELEASE_EVERY == 0 {
            db.release_resident();
        }
        Ok(())
    })?;
    db.release_resident();
    if let Some(members) = db.bucket(db.root(), b"members")? {
        let mut ids = Vec::new();
        db.for_all(members, &mut |k, _, _| {
            if let Some(id) = std::str::from_utf8(k)
                .ok()
                .and_then(|s| u64::from_str_radix(s, 16).ok())
            {
                ids.push(id);
            }
            Ok(())
        })?;
        info.cluster_id = cluster_id(&ids);
    }
    Ok(info)
}

/// etcd's cluster id: the first 8 bytes of SHA-1 over the sorted member ids,
/// big-endian (as the server derives it when the cluster forms).
fn cluster_id(members: &[u64]) -> Option<String> {
    if members.is_empty() {
        return None;
    }
    let mut ids = members.to_vec();
    ids.sort_unstable();
    let mut bytes = Vec::with_capacity(ids.len() * 8);
    for id in ids {
        bytes.extend(id.to_be_bytes());
    }
    let hash = Sha1::digest(&bytes);
    Some(format!(
        "{:x}",
        u64::from_be_bytes(hash[..8].try_into().expect("8 bytes"))
    ))
}

/// Records read between releases of the file's resident pages.
const RELEASE_EVERY: i64 = 8192;

/// Pushes every revision under `prefix` (and of `compact_rev_key`) from
/// `from` on, in revision order; returns how many it pushed. Empty entries
/// (`etcdutl snapshot restore --bump-revision` markers) are skipped.
pub fn read_revisions<S: Sink>(
    db: &BoltDb,
    prefix: &[u8],
    from: i64,
    sink: &mut S,
) -> Result<Read<i64>, ReadError<S::Error>>
where
    S::Error: std::error::Error + 'static,
{
    let path = db.path().display().to_string();
    let keys = db.top_bucket("key")?;
    let mut pushed = 0;
    let mut sink_error = None;
    let walked = db.for_each(keys, &mut |k, v, _| {
        let Some(rev) = revision::parse(k) else {
            return Err(BoltError::Content(format!(
                "{path}: key bucket entry {k:02x?} is not a revision"
            )));
        };
        if rev.revision.main < from || v.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        let kv = KeyValue::decode(v).map_err(|e| {
            BoltError::Content(format!(
                "{path}: revision {}: value is not an mvccpb.KeyValue ({e})",
                rev.revision.main
            ))
        })?;
        if kv.key.is_empty() || !(kv.key.starts_with(prefix) || kv.key == COMPACT_REV_KEY.as_bytes()) {
            return Ok(ControlFlow::Continue(()));
        }
        let record = if rev.tombstone {
            Record {
                key: kv.key,
                mod_revision: rev.revision.main,
                create_revision: 0,
                version: 0,
                lease: 0,
                value: Vec::new(),
                deleted: true,
            }
        } else {
            Record {
                key: kv.key,
                mod_revision: rev.revision.main,
                create_revision: kv.create_revision,
                version: kv.version,
                lease: kv.lease,
                value: kv.value,
                deleted: false,
            }
        };
        match sink.record(record) {
            Ok(true) => {}
            Ok(false) => return Ok(ControlFlow::Break(())),
            Err(e) => {
                sink_error = Some(e);
                return Ok(ControlFlow::Break(()));
            }
        }
        pushed += 1;
        if pushed % RELEASE_EVERY == 0 {
            db.release_resident();
        }
        Ok(ControlFlow::Continue(()))
    });
    if let Some(e) = sink_error {
        return Err(ReadError::Sink(e));
    }
    match walked.map_err(|e| e.at(db.path()))? {
        ControlFlow::Break(()) => Ok(Read::Stopped),
        ControlFlow::Continue(()) => Ok(Read::Done(pushed)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_id_ignores_member_order() {
        assert_eq!(cluster_id(&[2, 1]), cluster_id(&[1, 2]));
        assert_eq!(cluster_id(&[]), None);
    }
}
