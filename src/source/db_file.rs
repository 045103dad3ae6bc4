//! etcd's schema inside a bbolt file (reference §6.1): every retained
//! revision in the `key` bucket, compaction state in `meta`, members in
//! `members`. Turns the file into the same [`Record`]s the live source gives.

use super::bolt::{BoltDb, BoltError, Bucket};
use super::revision;
use super::{LiveKey, Read, ReadError, Record, Revision, Sink};
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
    /// The last raft entry the db applied (`meta` bucket, `consistent_index`,
    /// 8 bytes big-endian): entries after it in the member's WAL are not in
    /// the db.
    pub consistent_index: Option<u64>,
    /// That entry's raft term (`meta` bucket, `term`, written since etcd
    /// 3.5; `server/storage/schema/cindex.go`).
    pub consistent_term: Option<u64>,
    pub finished_compact: Option<Revision>,
    pub scheduled_compact: Option<Revision>,
    /// Lowest and highest main revision in the `key` bucket.
    pub first_revision: Option<Revision>,
    pub last_revision: Option<Revision>,
    /// Entries in the `key` bucket.
    pub revisions: u64,
    /// etcd's cluster id as the server computes it from its members, hex.
    pub cluster_id: Option<String>,
    /// The members its `members` bucket lists (learners too).
    pub members: usize,
}

impl FileInfo {
    /// The revision the file's store was at: the highest of its newest key
    /// revision and its compaction marks.
    pub fn head(&self) -> Revision {
        [self.last_revision, self.finished_compact, self.scheduled_compact]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or_default()
    }
}

/// Reads the `meta` and `members` buckets and the revision range.
pub fn inspect(db: &BoltDb) -> Result<FileInfo, BoltError> {
    inspect_buckets(db, false).map_err(|e| e.at(db.path()))
}

/// [`inspect`] of a damaged file: what its readable pages tell.
pub fn inspect_salvaging(db: &BoltDb) -> Result<FileInfo, BoltError> {
    inspect_buckets(db, true).map_err(|e| e.at(db.path()))
}

/// Every entry of `bucket`: all or an error, or, salvaging, what can be read.
fn entries<'a>(
    db: &'a BoltDb,
    bucket: Bucket<'a>,
    salvage: bool,
    visit: &mut dyn FnMut(&'a [u8], &'a [u8]),
) -> Result<(), BoltError> {
    if salvage {
        db.salvage_walk(bucket, &mut |k, v, _| visit(k, v));
        Ok(())
    } else {
        db.for_all(bucket, &mut |k, v, _| {
            visit(k, v);
            Ok(())
        })
    }
}

fn inspect_buckets(db: &BoltDb, salvage: bool) -> Result<FileInfo, BoltError> {
    // Hash the mapped file: reading it into memory would cost its size in RAM.
    let sha256 = crate::hex::hex(&db.file_sha256());
    let mut info = FileInfo {
        size: db.file_bytes().len() as u64,
        sha256,
        had_trailer: db.had_trailer,
        consistent_index: None,
        consistent_term: None,
        finished_compact: None,
        scheduled_compact: None,
        first_revision: None,
        last_revision: None,
        revisions: 0,
        cluster_id: None,
        members: 0,
    };
    // Salvaging, a bucket that cannot be found tells nothing.
    let found = |name: &str| match db.top_bucket(name) {
        Ok(b) => Ok(Some(b)),
        Err(_) if salvage => Ok(None),
        Err(e) => Err(e),
    };
    if let Some(meta) = found("meta")? {
        entries(db, meta, salvage, &mut |k, v| match k {
            b"consistent_index" if v.len() == 8 => {
                info.consistent_index = Some(u64::from_be_bytes(v.try_into().expect("8 bytes")))
            }
            b"term" if v.len() == 8 => {
                info.consistent_term = Some(u64::from_be_bytes(v.try_into().expect("8 bytes")))
            }
            b"finishedCompactRev" => {
                info.finished_compact = revision::parse(v).map(|r| Revision(r.revision.main))
            }
            b"scheduledCompactRev" => {
                info.scheduled_compact = revision::parse(v).map(|r| Revision(r.revision.main))
            }
            _ => {}
        })?;
    }
    let keys = db.top_bucket("key")?;
    let mut walked = 0i64;
    entries(db, keys, salvage, &mut |k, _| {
        if let Some(r) = revision::parse(k) {
            let main = Revision(r.revision.main);
            info.first_revision = Some(info.first_revision.map_or(main, |f| f.min(main)));
            info.last_revision = Some(info.last_revision.map_or(main, |l| l.max(main)));
        }
        walked += 1;
        if walked % RELEASE_EVERY == 0 {
            db.release_resident();
        }
    })?;
    info.revisions = walked as u64;
    db.release_resident();
    let members = match db.bucket(db.root(), b"members") {
        Ok(m) => m,
        Err(_) if salvage => None,
        Err(e) => return Err(e),
    };
    if let Some(members) = members {
        let mut ids = Vec::new();
        entries(db, members, salvage, &mut |k, _| {
            if let Some(id) = std::str::from_utf8(k)
                .ok()
                .and_then(|s| u64::from_str_radix(s, 16).ok())
            {
                ids.push(id);
            }
        })?;
        info.cluster_id = cluster_id(&ids);
        info.members = ids.len();
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
const RELEASE_EVERY: i64 = 1024;

/// Revisions gathered before they are sorted by key and pushed: bounds the
/// index of them (an [`Entry`] of 32 bytes each).
const ORDER_WINDOW: usize = 500_000;

/// Pushes every revision under `prefix` (and of `compact_rev_key`) from
/// `from` on; returns how many it pushed. Empty entries (`etcdutl snapshot
/// restore --bump-revision` markers) are skipped.
///
/// The file holds revisions in revision order, every key's interleaved
/// with all others'; they are pushed grouped by key (each key's in revision
/// order) within windows of `ORDER_WINDOW` revisions, so a sink meets a
/// key's consecutive revisions, which repeat most of their bytes, one after
/// the other. `entries`, how many entries the read expects (0 when unknown),
/// sizes the window once.
pub fn read_revisions<S: Sink>(
    db: &BoltDb,
    prefix: &[u8],
    from: Revision,
    entries: u64,
    sink: &mut S,
) -> Result<Read<i64>, ReadError<S::Error>>
where
    S::Error: std::error::Error + 'static,
{
    let path = db.path().display().to_string();
    let keys = db.top_bucket("key")?;
    let mut window: Vec<Entry> = Vec::with_capacity(entries.min(ORDER_WINDOW as u64) as usize);
    let mut pushed = 0;
    let mut outcome: Result<bool, ReadError<S::Error>> = Ok(true);
    let walked = db.for_each(keys, &mut |k, v, _| {
        let Some(rev) = revision::parse(k) else {
            return Err(BoltError::Content(format!(
                "{path}: key bucket entry {k:02x?} is not a revision"
            )));
        };
        if Revision(rev.revision.main) < from || v.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        // What the quick read cannot place (a group field, say), prost
        // decodes or rejects.
        let key = match key_of(v) {
            Some(key) => std::borrow::Cow::Borrowed(key),
            None => std::borrow::Cow::Owned(
                KeyValue::decode(v)
                    .map_err(|_| not_a_key_value(&path, rev.revision.main, v))?
                    .key,
            ),
        };
        if !in_scope(&key, prefix) {
            return Ok(ControlFlow::Continue(()));
        }
        window.push(Entry::new(key_hash(&key), rev, db.offset_of(v), v.len()));
        if window.len() as i64 % RELEASE_EVERY == 0 {
            db.release_resident();
        }
        if window.len() < ORDER_WINDOW {
            return Ok(ControlFlow::Continue(()));
        }
        outcome = push_window(db, &path, &mut window, &mut pushed, sink);
        match outcome {
            Ok(true) => Ok(ControlFlow::Continue(())),
            _ => Ok(ControlFlow::Break(())),
        }
    });
    let walked = walked.map_err(|e| e.at(db.path()))?;
    if outcome.as_ref().is_ok_and(|&go_on| go_on) {
        outcome = push_window(db, &path, &mut window, &mut pushed, sink);
    }
    match (walked, outcome?) {
        (ControlFlow::Continue(()), true) => Ok(Read::Done(pushed)),
        _ => Ok(Read::Stopped),
    }
}

/// The leases the file holds (its `lease` bucket: each granted lease not
/// yet revoked, keyed by its id as 8 bytes big-endian); none when it has
/// no such bucket.
pub fn lease_ids(db: &BoltDb) -> Result<Vec<i64>, BoltError> {
    let Some(leases) = db.bucket(db.root(), b"lease").map_err(|e| e.at(db.path()))? else {
        return Ok(Vec::new());
    };
    let mut ids = Vec::new();
    db.for_all(leases, &mut |k, _, _| {
        let id = <[u8; 8]>::try_from(k).map_err(|_| {
            BoltError::Content(format!(
                "{}: a key of {} bytes in the lease bucket, not a lease id",
                db.path().display(),
                k.len()
            ))
        })?;
        ids.push(i64::from_be_bytes(id));
        Ok(())
    })?;
    Ok(ids)
}

/// The keys under `prefix` whose newest entry before revision `before` is
/// not a tombstone: what the file holds live from history a run does not
/// read again.
pub fn live_keys_before(db: &BoltDb, prefix: &[u8], before: Revision) -> Result<Vec<Vec<u8>>, BoltError> {
    Ok(live_keys_at(db, prefix, before.prev())?
        .into_iter()
        .map(|k| k.key)
        .collect())
}

/// The keys under `prefix` live at revision `at`, with their counters, in
/// key order: the state the file gives at `at` (etcd's at `at` when the
/// file's compaction revision is at or below it).
pub fn live_keys_at(db: &BoltDb, prefix: &[u8], at: Revision) -> Result<Vec<LiveKey>, BoltError> {
    let path = db.path().display().to_string();
    let keys = db.top_bucket("key")?;
    let mut newest: std::collections::HashMap<Vec<u8>, Option<LiveKey>> = std::collections::HashMap::new();
    let walked = db.for_each(keys, &mut |k, v, _| {
        let Some(rev) = revision::parse(k) else {
            return Err(BoltError::Content(format!(
                "{path}: key bucket entry {k:02x?} is not a revision"
            )));
        };
        if Revision(rev.revision.main) > at {
            return Ok(ControlFlow::Break(()));
        }
        if v.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        let kv = KeyValue::decode(v).map_err(|_| not_a_key_value(&path, rev.revision.main, v))?;
        if kv.key.starts_with(prefix) && !kv.key.is_empty() {
            let live = (!rev.tombstone).then(|| LiveKey {
                key: kv.key.clone(),
                create_revision: Revision(kv.create_revision),
                mod_revision: Revision(rev.revision.main),
                version: kv.version,
            });
            newest.insert(kv.key, live);
        }
        Ok(ControlFlow::Continue(()))
    });
    let _: ControlFlow<()> = walked.map_err(|e| e.at(db.path()))?;
    let mut live: Vec<LiveKey> = newest.into_values().flatten().collect();
    live.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    Ok(live)
}

/// A `key` bucket entry to push, in 32 bytes: a hash of its etcd key, its
/// revision, and where its value lies in the file. Sorting compares only
/// what is here: reading keys from the map in sorted order would fault in
/// the whole file.
struct Entry {
    key: u64,
    main: i64,
    /// The value's offset in the map.
    at: u64,
    /// The value's length (bbolt bounds values below 2^31 bytes).
    len: u32,
    /// The sub-revision (saturated: it only orders a key's entries within
    /// one main revision, which etcd never writes), shifted left once, with
    /// the tombstone flag in the low bit.
    sub: u32,
}

impl Entry {
    fn new(key: u64, rev: revision::RevisionKey, at: usize, len: usize) -> Entry {
        let sub = u32::try_from(rev.revision.sub).unwrap_or(u32::MAX) >> 1;
        Entry {
            key,
            main: rev.revision.main,
            at: at as u64,
            len: len as u32,
            sub: sub << 1 | u32::from(rev.tombstone),
        }
    }

    fn tombstone(&self) -> bool {
        self.sub & 1 == 1
    }
}

/// A hash of an etcd key that orders a window: keys whose hashes collide
/// (about one pair in 10^9 windows) have their revisions interleaved, which
/// only costs the reuse this order is for.
fn key_hash(key: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// Pushes the window's entries in key order and empties it; whether the
/// sink wants more.
fn push_window<S: Sink>(
    db: &BoltDb,
    path: &str,
    window: &mut Vec<Entry>,
    pushed: &mut i64,
    sink: &mut S,
) -> Result<bool, ReadError<S::Error>>
where
    S::Error: std::error::Error + 'static,
{
    window.sort_unstable_by_key(|e| (e.key, e.main, e.sub));
    db.release_resident();
    let mut bytes = Vec::new();
    for e in window.drain(..) {
        let value = &db.file_bytes()[e.at as usize..][..e.len as usize];
        db.read_copy(value, &mut bytes).map_err(|source| {
            ReadError::File(BoltError::Io {
                path: db.path().to_path_buf(),
                source,
            })
        })?;
        let kv = KeyValue::decode(&bytes[..])
            .map_err(|_| ReadError::File(not_a_key_value(path, e.main, &bytes)))?;
        if !sink
            .record(record(e.main, e.tombstone(), kv))
            .map_err(ReadError::Sink)?
        {
            return Ok(false);
        }
        *pushed += 1;
    }
    Ok(true)
}

/// The error for a `key` bucket value that is not an `mvccpb.KeyValue`.
fn not_a_key_value(path: &str, main: i64, value: &[u8]) -> BoltError {
    let why = KeyValue::decode(value)
        .err()
        .map_or("it changed while being read".to_string(), |e| e.to_string());
    BoltError::Content(format!(
        "{path}: revision {main}: value is not an mvccpb.KeyValue ({why})"
    ))
}

/// The `key` field of an encoded `mvccpb.KeyValue` (its last occurrence, as
/// protobuf decoding takes), read without copying; `None` when the message
/// does not parse.
fn key_of(mut bytes: &[u8]) -> Option<&[u8]> {
    use prost::encoding::{decode_key, decode_varint, WireType};
    let mut key = None;
    while !bytes.is_empty() {
        let (field, wire) = decode_key(&mut bytes).ok()?;
        let skip = match wire {
            WireType::Varint => {
                decode_varint(&mut bytes).ok()?;
                0
            }
            WireType::LengthDelimited => {
                let len = usize::try_from(decode_varint(&mut bytes).ok()?).ok()?;
                let (value, rest) = (bytes.get(..len)?, &bytes[len..]);
                if field == 1 {
                    key = Some(value);
                }
                bytes = rest;
                0
            }
            WireType::SixtyFourBit => 8,
            WireType::ThirtyTwoBit => 4,
            WireType::StartGroup | WireType::EndGroup => return None,
        };
        bytes = bytes.get(skip..)?;
    }
    Some(key.unwrap_or_default())
}

/// Whether a stored key is one a run reads: under `prefix`, or
/// `compact_rev_key`.
pub fn in_scope(key: &[u8], prefix: &[u8]) -> bool {
    !key.is_empty() && (key.starts_with(prefix) || key == COMPACT_REV_KEY.as_bytes())
}

/// The record of a `key` bucket entry at main revision `main`.
fn record(main: i64, tombstone: bool, kv: KeyValue) -> Record {
    if tombstone {
        Record {
            key: kv.key,
            mod_revision: Revision(main),
            create_revision: Revision::default(),
            version: 0,
            lease: 0,
            value: Vec::new(),
            deleted: true,
        }
    } else {
        Record {
            key: kv.key,
            mod_revision: Revision(main),
            create_revision: Revision(kv.create_revision),
            version: kv.version,
            lease: kv.lease,
            value: kv.value,
            deleted: false,
        }
    }
}

/// The damage a salvaging read found and worked around.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Damage {
    /// Pages (or subtrees) of the `key` bucket that could not be read, with why.
    pub pages_unreadable: Vec<String>,
    /// Entries that did not parse whole, or disagreed with their revision,
    /// or held another value for a revision already read.
    pub records_skipped: u64,
    /// Revisions recovered from leaf pages the broken tree no longer reached.
    pub records_recovered: u64,
    /// Main revision ranges (inclusive) that may have lost revisions.
    pub ranges: Vec<(Revision, Revision)>,
}

impl Damage {
    /// One line: `2 pages unreadable, 3 records skipped, 120 recovered from
    /// unreached pages; revisions 200-350 may be incomplete`.
    pub fn describe(&self) -> String {
        let ranges: Vec<String> = self.ranges.iter().map(|(a, b)| format!("{a}-{b}")).collect();
        format!(
            "{} pages unreadable, {} records skipped, {} recovered from unreached pages; revisions {} may be incomplete",
            self.pages_unreadable.len(),
            self.records_skipped,
            self.records_recovered,
            if ranges.is_empty() { "none".to_string() } else { ranges.join(", ") }
        )
    }

    /// Whether the file read whole.
    pub fn is_none(&self) -> bool {
        self.pages_unreadable.is_empty() && self.records_skipped == 0 && self.ranges.is_empty()
    }
}

/// Entries salvaging accepted: (main, sub) revision → key and value bytes,
/// slices of the mapped file.
type Found<'a> = std::collections::BTreeMap<(i64, i64), (&'a [u8], &'a [u8])>;

/// A `key` bucket entry as salvaging accepts it: a revision key and an
/// `mvccpb.KeyValue` that parses whole and agrees with it.
fn accepted(k: &[u8], v: &[u8]) -> Option<(revision::RevisionKey, KeyValue)> {
    let rev = revision::parse(k)?;
    let kv = KeyValue::decode(v).ok()?;
    let agrees = match rev.tombstone {
        true => !kv.key.is_empty(),
        false => {
            !kv.key.is_empty()
                && kv.mod_revision == rev.revision.main
                && (1..=rev.revision.main).contains(&kv.create_revision)
                && kv.version >= 1
        }
    };
    agrees.then_some((rev, kv))
}

/// [`read_revisions`] of a damaged file: every revision the readable part
/// of the `key` bucket's tree holds, plus those in leaf pages the broken
/// tree no longer reaches that fall in the damaged ranges, each stored only
/// if it parses whole and agrees with its revision, and never two values
/// for one revision. Returns what it pushed and the damage.
pub fn salvage_revisions<S: Sink>(
    db: &BoltDb,
    prefix: &[u8],
    from: Revision,
    sink: &mut S,
) -> Result<(Read<i64>, Damage), ReadError<S::Error>>
where
    S::Error: std::error::Error + 'static,
{
    use std::collections::btree_map::{BTreeMap, Entry};
    let keys = db.top_bucket("key")?;
    let mut damage = Damage::default();
    let mut found: Found = BTreeMap::new();
    let mut conflicts = std::collections::BTreeSet::new();
    /// Adds an entry: `None` when it is not accepted, else whether it was new.
    fn take<'a>(
        found: &mut Found<'a>,
        conflicts: &mut std::collections::BTreeSet<(i64, i64)>,
        k: &'a [u8],
        v: &'a [u8],
    ) -> Option<bool> {
        let (rev, _) = accepted(k, v)?;
        let at = (rev.revision.main, rev.revision.sub);
        Some(match found.entry(at) {
            Entry::Vacant(e) => {
                e.insert((k, v));
                true
            }
            Entry::Occupied(e) => {
                if *e.get() != (k, v) {
                    conflicts.insert(at);
                }
                false
            }
        })
    }
    let mut walked_entries: Vec<(&[u8], &[u8])> = Vec::new();
    let walked = db.salvage_walk(keys, &mut |k, v, _| walked_entries.push((k, v)));
    for (k, v) in walked_entries {
        if take(&mut found, &mut conflicts, k, v).is_none() {
            damage.records_skipped += 1;
        }
    }
    damage.records_skipped += walked.skipped.len() as u64;
    // A subtree's range runs from its own first key to the next one's; an
    // unknown end is open until the orphan scan and clamped after it.
    for u in &walked.unreadable {
        let from_rev = u
            .from_key
            .and_then(revision::parse)
            .map_or(0, |r| r.revision.main);
        let to_rev = u
            .to_key
            .and_then(revision::parse)
            .map_or(i64::MAX, |r| r.revision.main - 1);
        damage
            .pages_unreadable
            .push(format!("page {}: {}", u.page, u.problem));
        damage
            .ranges
            .push((Revision(from_rev), Revision(to_rev.max(from_rev))));
    }
    // Leaves the tree no longer reaches may hold what the damaged ranges lost.
    if !damage.ranges.is_empty() {
        let mut orphans: Vec<(&[u8], &[u8])> = Vec::new();
        db.leaf_pages(&walked.leaves, &mut |_, k, v, _| {
            let hit = revision::parse(k).is_some_and(|r| {
                damage
                    .ranges
                    .iter()
                    .any(|(lo, hi)| (*lo..=*hi).contains(&Revision(r.revision.main)))
            });
            if hit {
                orphans.push((k, v));
            }
        });
        for (k, v) in orphans {
            if take(&mut found, &mut conflicts, k, v) == Some(true) {
                damage.records_recovered += 1;
            }
        }
    }
    for at in &conflicts {
        found.remove(at);
        damage.records_skipped += 1;
        damage.ranges.push((Revision(at.0), Revision(at.0)));
    }
    let newest = found.keys().next_back().map_or(Revision(0), |r| Revision(r.0));
    for range in &mut damage.ranges {
        range.1 = range.1.min(newest.max(range.0));
    }
    damage.ranges.sort_unstable();
    damage.ranges.dedup();
    let mut pushed = 0;
    for ((main, _), (k, v)) in found {
        if Revision(main) < from {
            continue;
        }
        let (rev, kv) = accepted(k, v).expect("accepted before");
        if !in_scope(&kv.key, prefix) {
            continue;
        }
        match sink.record(record(rev.revision.main, rev.tombstone, kv)) {
            Ok(true) => pushed += 1,
            Ok(false) => return Ok((Read::Stopped, damage)),
            Err(e) => return Err(ReadError::Sink(e)),
        }
        if pushed % RELEASE_EVERY == 0 {
            db.release_resident();
        }
    }
    Ok((Read::Done(pushed), damage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_of_reads_the_key_prost_decodes() {
        let kv = |key: &[u8], value: &[u8]| KeyValue {
            key: key.to_vec(),
            create_revision: 2,
            mod_revision: 300,
            version: 1,
            value: value.to_vec(),
            lease: 7,
        };
        let one = kv(b"/registry/pods/a/b", b"x").encode_to_vec();
        assert_eq!(key_of(&one), Some(&b"/registry/pods/a/b"[..]));
        // A repeated field: the last occurrence wins, as in prost.
        let mut twice = one.clone();
        twice.extend(kv(b"/registry/pods/a/c", b"").encode_to_vec());
        assert_eq!(
            key_of(&twice),
            Some(&KeyValue::decode(&twice[..]).unwrap().key[..])
        );
        assert_eq!(key_of(&[]), Some(&b""[..]));
        // Cut inside the key, or a group wire type: not a KeyValue.
        assert_eq!(key_of(&one[..5]), None);
        assert_eq!(key_of(&[0x0b]), None);
    }

    #[test]
    fn cluster_id_ignores_member_order() {
        assert_eq!(cluster_id(&[2, 1]), cluster_id(&[1, 2]));
        assert_eq!(cluster_id(&[]), None);
    }
}
