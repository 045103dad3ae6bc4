//! An etcd member's write-ahead log (`DATA_DIR/member/wal/`, or
//! `--wal-dir`): every raft entry since the member's last raft snapshot,
//! each with the whole request, values included, where `member/snap/db`
//! holds only what compaction left.
//!
//! [`Wal::open`] finds the segments (`segment.rs` has the format facts and
//! where they come from) and [`Wal::next_entry`] (or [`Wal::entries`])
//! streams the entries in index order, checking the CRC chain, in memory
//! bounded by one record and the uncommitted tail; [`Wal::summary`] then
//! says what the read saw. Facts from etcd's `server/storage/wal/wal.go`
//! (`ReadAll`, `cut`, `Save`, `SaveSnapshot`) and go.etcd.io/raft:
//! - **Records.** Each segment starts with a crc record (type 4) carrying
//!   the chain's value and a metadata record (1: the member's node and
//!   cluster id, [`Metadata`], the same in every segment); then the first
//!   segment has the empty snapshot (5: index 0, term 0, `Create`), a later
//!   one the newest `HardState` (3, `cut`). Then entries (2), each batch
//!   followed by the `HardState` (`Save`), and a snapshot record when the
//!   member takes a raft snapshot or receives one (`SaveSnapshot`).
//! - **Truncation.** A later record may hold an entry at an index already
//!   seen: a new leader replaced this member's uncommitted tail, and that
//!   entry and all after it are the log (etcd's `ReadAll` truncates its
//!   slice so). Raft never replaces a committed entry, so entries up to the
//!   newest `HardState`'s commit index are yielded as they come and only
//!   the tail beyond it is held: memory is bounded by what the member had
//!   appended but not yet seen committed. That is small: a follower's
//!   commit index trails its log by what is in flight, and a leader cut
//!   off from its quorum steps down within an election timeout (etcd runs
//!   raft with `CheckQuorum`, `server/etcdserver/bootstrap.go`). An entry
//!   written again at or below the commit index is damage.
//! - **The last commit index** a member wrote can lag its entries (a
//!   member stopped between saving entries and the state that commits
//!   them, or entries not yet acknowledged by a quorum): entries beyond it
//!   are yielded last with [`Entry::committed`] false, counted in
//!   [`Summary::beyond_commit`], rather than dropped: etcd applies them
//!   when it restarts unless a new leader replaces them, and the db may
//!   already have applied some (the leader applies what a quorum has
//!   before its own `HardState` says so), so the db's consistent index
//!   decides which count.
//! - **Snapshots.** A snapshot record at or below the commit index is the
//!   member's own raft snapshot and changes nothing here. One above it was
//!   received from a leader (raft restores a snapshot only when it is ahead
//!   of the commit index, go.etcd.io/raft `raft.restore`): the entries up
//!   to it were never written to this log, so they are counted in
//!   [`Summary::missing`], and the uncommitted entries it covers are
//!   replaced. [`Summary::snapshot`] is the first snapshot record read: the
//!   empty one when the first segment is still there.
//! - **The end.** A copy of a live member can end in a torn record. The
//!   last segment's records end at a zero length field or at a torn
//!   record (a 512-byte sector of its frame zeros, or it runs past the end
//!   of the file: `decoder.go`'s `isTornEntry`, last segment only), as
//!   etcd's do, when no record that verifies follows it (see salvage):
//!   [`Summary::cut`] says where, how many non-zero bytes lie beyond, and
//!   the last whole entry. When whole records do follow, as in a copy that
//!   raced a write (a page copied before it was written, the next after),
//!   or anywhere else a record that does not decode or breaks the CRC
//!   chain, it is an error naming the segment and offset.
//! - **Salvage** ([`Options::salvage`]) reads on past damage, recording a
//!   [`Gap`] for each stretch skipped. Records start at multiples of 8, so
//!   the reader tries every 8-byte offset after the damage for a frame as
//!   etcd's encoder writes one that decodes as a record. It resumes at the
//!   first record whose CRC verifies with the chain seeded by the `crc`
//!   field of the frame right before it (the damaged record itself, when
//!   only its data was hit): so every record read is checked by a 32-bit
//!   CRC as in normal reading, and the seed frame's own data, which
//!   nothing checks, is skipped. With none in the rest of a segment, the
//!   next segment's crc record seeds the chain. A segment whose chain does
//!   not continue from the one before (records missing at the end of that
//!   one: a copy taken while etcd moved to a new segment) is seeded from
//!   its crc record, with a gap at the end of the one before. Entries lost
//!   in a gap show in [`Summary::missing`].
//! - **Requests.** A normal entry's data is an `InternalRaftRequest`
//!   ([`Request`]). etcd before 3.6 also logs bare v2 requests (seen on
//!   3.4.23, 3.4.45, 3.5.1 and 3.5.34: a member publishing its attributes,
//!   `PUT /0/members/<id>/attributes`, and the cluster version, `PUT
//!   /0/version`), which decode as [`Request::V2`], as etcd's own apply
//!   tries the v3 form first (`server/etcdserver/server.go`,
//!   `applyEntryNormal`, v3.5); 3.6 and 3.7 log those as
//!   `cluster_member_attr_set` and `cluster_version_set`
//!   ([`Request::Other`] 1301 and 1300).

mod message;
mod recovered;
pub mod revisions;
mod segment;

pub use message::{
    CompactionRequest, Compare, CompareTarget, DeleteRangeRequest, LeaseGrantRequest, LeaseRevokeRequest,
    Metadata, Op, PutRequest, RangeRequest, RequestOp, TxnRequest,
};
pub use recovered::Recovered;
pub use segment::{segments, Segment};

use message::{HardState, InternalRaftRequest, Record, V2Request};
use prost::Message;
use segment::{Next, SegmentReader, CRC, ENTRY, METADATA, SNAPSHOT, STATE};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

/// Why a WAL cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum WalError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: not a WAL segment's name (%016x-%016x.wal)", .0.display())]
    BadName(PathBuf),
    #[error("{}: no WAL segments (*.wal) here", .0.display())]
    NoSegments(PathBuf),
    #[error("WAL segments missing between {} and {}", before.display(), after.display())]
    SequenceGap { before: PathBuf, after: PathBuf },
    #[error("{segment} at byte {offset}: {what} (--salvage skips to the next whole record)")]
    Damaged {
        segment: String,
        offset: u64,
        what: String,
    },
    #[error("{segment} at byte {offset}: metadata {found:?} where the first segment has {first:?}: segments of two members")]
    MetadataConflict {
        segment: String,
        offset: u64,
        first: Metadata,
        found: Metadata,
    },
}

/// How to read.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Skip damage in the middle to the next whole record, recording a gap.
    pub salvage: bool,
}

/// One raft entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub index: u64,
    pub term: u64,
    pub request: Request,
    /// At or below the newest commit index the WAL records.
    pub committed: bool,
}

/// What an entry asks etcd to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// A new leader's empty entry.
    Empty,
    Put(PutRequest),
    DeleteRange(DeleteRangeRequest),
    Txn(TxnRequest),
    Compaction(CompactionRequest),
    LeaseGrant(LeaseGrantRequest),
    LeaseRevoke(LeaseRevokeRequest),
    /// A lease's remaining TTL, kept for a new leader: changes no key.
    LeaseCheckpoint,
    /// A linearizable read through raft: changes no key.
    Range,
    /// An alarm raised or cleared (e.g. NOSPACE).
    Alarm,
    /// A v2 store request (method, path): not the v3 key space.
    V2 {
        method: String,
        path: String,
    },
    /// A membership change (`ConfChange`, `ConfChangeV2`).
    ConfChange,
    /// Any other `InternalRaftRequest`, by the field it came in: auth
    /// (1000–1204), cluster version and member attributes (1300–1302),
    /// none of them the key space; 0 when it has no request field at all.
    Other(u32),
}

/// Bytes skipped by salvage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    pub segment: String,
    /// Where the damage starts.
    pub from: u64,
    /// Where reading resumed (or where the segment's data ends).
    pub to: u64,
    pub what: String,
}

impl Gap {
    /// The bytes skipped.
    pub fn skipped(&self) -> u64 {
        self.to - self.from
    }
}

/// A torn end: where the last segment's records stop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    pub segment: String,
    pub offset: u64,
    /// Non-zero bytes from there to the end of the file: 0 when only the
    /// preallocated zeros follow.
    pub bytes: u64,
    /// The index of the last whole entry before it.
    pub last_entry: Option<u64>,
    pub what: String,
}

/// What a whole read saw, for the run's record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub segments: usize,
    /// The member's node and cluster id.
    pub metadata: Option<Metadata>,
    /// The first snapshot record (index, term): `(0, 0)` when the log
    /// still starts at the member's first entry.
    pub snapshot: Option<(u64, u64)>,
    /// The newest `HardState`: (term, vote, commit).
    pub hard_state: Option<(u64, u64, u64)>,
    /// The first and last entry yielded (index, term).
    pub first: Option<(u64, u64)>,
    pub last: Option<(u64, u64)>,
    pub entries: u64,
    /// Entries beyond the last commit index the WAL records: (count,
    /// first index).
    pub beyond_commit: Option<(u64, u64)>,
    /// Entries a new leader or a received snapshot replaced.
    pub replaced: u64,
    /// Index ranges (first, last) the log skips: covered by a snapshot
    /// received from a leader, or lost in a salvage gap.
    pub missing: Vec<(u64, u64)>,
    pub cut: Option<Cut>,
    pub gaps: Vec<Gap>,
}

/// Where the previous segment's records ended: (name, offset, non-zero
/// bytes after).
type SegmentEnd = (String, u64, u64);

/// A WAL being read.
pub struct Wal {
    segments: Vec<Segment>,
    /// The next segment to open.
    next_segment: usize,
    reader: Option<SegmentReader>,
    options: Options,
    /// The CRC chain's value so far.
    crc: u32,
    /// Whether `crc` is the chain's value: not at the start, nor after
    /// salvage skipped to a segment's end.
    chain_known: bool,
    /// How the previous segment ended, for a chain that does not continue.
    previous_end: Option<SegmentEnd>,
    /// The raw metadata record first read.
    metadata: Option<Vec<u8>>,
    commit: u64,
    /// The newest index of the log so far (entry or received snapshot).
    newest: Option<u64>,
    /// The newest index known committed (yielded or ready).
    committed_to: u64,
    /// Entries beyond `commit`, oldest first.
    tail: VecDeque<Entry>,
    /// Committed entries ready to yield.
    ready: VecDeque<Entry>,
    summary: Summary,
    done: bool,
}

impl Wal {
    /// Opens the WAL in `dir`.
    pub fn open(dir: &Path, options: Options) -> Result<Wal, WalError> {
        let segments = segments(dir)?;
        Ok(Wal {
            summary: Summary {
                segments: segments.len(),
                ..Summary::default()
            },
            segments,
            next_segment: 0,
            reader: None,
            options,
            crc: 0,
            chain_known: false,
            previous_end: None,
            metadata: None,
            commit: 0,
            newest: None,
            committed_to: 0,
            tail: VecDeque::new(),
            ready: VecDeque::new(),
            done: false,
        })
    }

    /// The next entry, `None` at the end.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, WalError> {
        loop {
            if let Some(entry) = self.ready.pop_front() {
                self.summary.entries += 1;
                self.summary.first.get_or_insert((entry.index, entry.term));
                self.summary.last = Some((entry.index, entry.term));
                return Ok(Some(entry));
            }
            if self.done {
                return Ok(None);
            }
            self.read_record()?;
        }
    }

    /// The entries as an iterator; it ends after an error.
    pub fn entries(&mut self) -> Entries<'_> {
        Entries {
            wal: self,
            failed: false,
        }
    }

    /// What the read saw; complete once [`Wal::next_entry`] gave `None`.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Reads one record (or reaches the end) and files what it holds.
    fn read_record(&mut self) -> Result<(), WalError> {
        let Some(reader) = self.reader.as_mut() else {
            if self.next_segment == self.segments.len() {
                return self.finish();
            }
            self.reader = Some(SegmentReader::open(&self.segments[self.next_segment])?);
            self.next_segment += 1;
            return Ok(());
        };
        let last = self.next_segment == self.segments.len();
        let (record, offset, torn) = match reader.next()? {
            Next::Record(record, offset, torn) => (record, offset, torn),
            Next::End(offset) => return self.segment_end(offset, last),
            Next::Broken { offset, torn, what } => return self.broken(offset, torn && last, what),
        };
        if record.r#type == CRC {
            if self.chain_known && record.crc != self.crc {
                let lost = match &self.previous_end {
                    Some((name, end, bytes)) if *bytes > 0 => format!(
                        ": records are missing from the end of {name} ({bytes} bytes after its last record at byte {end})"
                    ),
                    Some((name, ..)) => format!(": records are missing from the end of {name}"),
                    None => String::new(),
                };
                let what = format!(
                    "a CRC record of {:08x} where the chain so far is {:08x}{lost}",
                    record.crc, self.crc
                );
                if !self.options.salvage {
                    return Err(self.damaged(offset, what));
                }
                // The crc record is the chain's value as the writer had
                // it: read on from it, the loss is before it.
                let (segment, from, bytes) = self.previous_end.clone().unwrap_or_default();
                self.summary.gaps.push(Gap {
                    segment,
                    from,
                    to: from + bytes,
                    what,
                });
            }
            self.crc = record.crc;
            self.chain_known = true;
            return Ok(());
        }
        let chained = crc32c::crc32c_append(self.crc, &record.data);
        if chained != record.crc {
            let torn = torn && last;
            let what = format!("CRC mismatch (record {:08x}, chain {chained:08x})", record.crc);
            return self.broken(offset, torn, what);
        }
        self.crc = chained;
        self.file(record.r#type, &record.data, offset)
    }

    /// A segment's records end at `offset`. Only the last segment may have
    /// non-zero bytes after (a torn write): a cut, or with salvage a gap
    /// when a whole record follows.
    fn segment_end(&mut self, offset: u64, last: bool) -> Result<(), WalError> {
        let mut reader = self.reader.take().expect("a segment is open");
        reader.skip_to(offset)?;
        let bytes = reader.unread_bytes()?;
        if last && bytes > 0 {
            self.reader = Some(reader);
            let what = format!("a zero length field, then {bytes} bytes that are not zeros");
            return self.broken(offset, true, what);
        }
        self.previous_end = Some((reader.segment.name(), offset, bytes));
        Ok(())
    }

    /// Files one valid record's contents.
    fn file(&mut self, kind: i64, data: &[u8], offset: u64) -> Result<(), WalError> {
        let undecodable =
            |what: &str, e: prost::DecodeError| format!("a {what} record that does not decode ({e})");
        match kind {
            ENTRY => {
                let entry = message::Entry::decode(data)
                    .map_err(|e| self.damaged(offset, undecodable("entry", e)))?;
                let request = request(&entry).map_err(|what| self.damaged(offset, what))?;
                self.append(Entry {
                    index: entry.index,
                    term: entry.term,
                    request,
                    committed: false,
                })
                .map_err(|what| self.damaged(offset, what))
            }
            STATE => {
                let state =
                    HardState::decode(data).map_err(|e| self.damaged(offset, undecodable("state", e)))?;
                self.summary.hard_state = Some((state.term, state.vote, state.commit));
                self.commit_to(state.commit);
                Ok(())
            }
            SNAPSHOT => {
                let snap = message::Snapshot::decode(data)
                    .map_err(|e| self.damaged(offset, undecodable("snapshot", e)))?;
                self.summary.snapshot.get_or_insert((snap.index, snap.term));
                self.snapshot(snap.index);
                Ok(())
            }
            METADATA => {
                let found =
                    Metadata::decode(data).map_err(|e| self.damaged(offset, undecodable("metadata", e)))?;
                match &self.metadata {
                    None => {
                        self.metadata = Some(data.to_vec());
                        self.summary.metadata = Some(found);
                        Ok(())
                    }
                    Some(first) if first == data => Ok(()),
                    Some(_) => Err(WalError::MetadataConflict {
                        segment: self.segment_name(),
                        offset,
                        first: self.summary.metadata.clone().unwrap_or_default(),
                        found,
                    }),
                }
            }
            other => Err(self.damaged(offset, format!("a record of unknown type {other}"))),
        }
    }

    /// Raises the commit index, readying the entries it covers.
    fn commit_to(&mut self, commit: u64) {
        self.commit = self.commit.max(commit);
        while let Some(mut entry) = self.tail.pop_front() {
            if entry.index > self.commit {
                self.tail.push_front(entry);
                break;
            }
            entry.committed = true;
            self.committed_to = entry.index;
            self.ready.push_back(entry);
        }
    }

    /// A snapshot record at `index`: above the commit index, one received
    /// from a leader, which this member's log continues from.
    fn snapshot(&mut self, index: u64) {
        if index <= self.commit {
            return;
        }
        let before = self.tail.len();
        self.tail.retain(|e| e.index > index);
        self.summary.replaced += (before - self.tail.len()) as u64;
        // The log's committed part ends at the newest committed entry, or
        // at the commit index when the log starts past it (a purged WAL).
        let committed_end = self.committed_to.max(self.commit.min(self.newest.unwrap_or(0)));
        if self.newest.is_some() && committed_end < index {
            self.summary.missing.push((committed_end + 1, index));
        }
        self.commit = index;
        self.committed_to = index;
        self.newest = Some(self.newest.map_or(index, |n| n.max(index)));
    }

    /// Adds an entry to the log, replacing an uncommitted tail it
    /// overwrites.
    fn append(&mut self, mut entry: Entry) -> Result<(), String> {
        match self.newest {
            Some(newest) if entry.index <= newest => {
                if entry.index <= self.commit || entry.index <= self.committed_to {
                    return Err(format!(
                        "entry {} written again after index {} was committed",
                        entry.index, self.commit
                    ));
                }
                let before = self.tail.len();
                self.tail.retain(|e| e.index < entry.index);
                self.summary.replaced += (before - self.tail.len()) as u64;
            }
            Some(newest) if entry.index > newest + 1 => {
                self.summary.missing.push((newest + 1, entry.index - 1));
            }
            _ => {}
        }
        self.newest = Some(entry.index);
        if entry.index <= self.commit {
            entry.committed = true;
            self.committed_to = entry.index;
            self.ready.push_back(entry);
        } else {
            self.tail.push_back(entry);
        }
        Ok(())
    }

    fn segment_name(&self) -> String {
        self.reader.as_ref().map(|r| r.segment.name()).unwrap_or_default()
    }

    fn damaged(&self, offset: u64, what: String) -> WalError {
        WalError::Damaged {
            segment: self.segment_name(),
            offset,
            what,
        }
    }

    /// A record that is not whole at `offset`. When `torn` (in the last
    /// segment, a zeroed sector or the end of the file) and no record that
    /// verifies follows, the log ends there: a cut. Else damage: an error,
    /// or with salvage a gap up to the record that verifies (or the
    /// segment's end).
    fn broken(&mut self, offset: u64, torn: bool, what: String) -> Result<(), WalError> {
        let found = self.find_verified(offset)?;
        let segment = self.segment_name();
        match found {
            Verified::At { at, end, record } => {
                if !self.options.salvage {
                    let what = format!("{what}, and a whole record follows at byte {at}");
                    return Err(self.damaged(offset, what));
                }
                self.summary.gaps.push(Gap {
                    segment,
                    from: offset,
                    to: at,
                    what,
                });
                let reader = self.reader.as_mut().expect("a segment is open");
                reader.skip_to(end)?;
                self.crc = record.crc;
                self.chain_known = true;
                self.file(record.r#type, &record.data, at)
            }
            Verified::NothingUpTo(data_end) if torn => {
                self.reader = None;
                self.summary.cut = Some(Cut {
                    segment,
                    offset,
                    bytes: data_end - offset,
                    last_entry: self.newest,
                    what,
                });
                self.finish()
            }
            Verified::NothingUpTo(_) if !self.options.salvage => Err(self.damaged(offset, what)),
            Verified::NothingUpTo(data_end) => {
                // Skip the rest of the segment; the next one's crc record
                // seeds the chain.
                self.reader = None;
                self.summary.gaps.push(Gap {
                    segment,
                    from: offset,
                    to: data_end,
                    what: format!("{what}; no record verifies after it in this segment"),
                });
                self.chain_known = false;
                self.previous_end = None;
                Ok(())
            }
        }
    }

    /// Looks past damage at `offset` for the first record whose CRC
    /// verifies with the chain seeded by the frame right before it (see the
    /// module's docs).
    fn find_verified(&mut self, offset: u64) -> Result<Verified, WalError> {
        let reader = self.reader.as_mut().expect("a segment is open");
        reader.skip_to(offset)?;
        let data_end = offset + reader.unread_bytes()?;
        // Frames that decode, by where they end: the seed for a record
        // starting there.
        let mut seeds: HashMap<u64, u32> = HashMap::new();
        let mut at = offset;
        while at < data_end {
            if let Some((record, end)) = reader.record_at(at)? {
                let verifies = record.r#type != CRC
                    && seeds
                        .get(&at)
                        .is_some_and(|&seed| crc32c::crc32c_append(seed, &record.data) == record.crc);
                if verifies {
                    return Ok(Verified::At { at, end, record });
                }
                seeds.insert(end, record.crc);
            }
            seeds.remove(&at);
            at += 8;
        }
        Ok(Verified::NothingUpTo(data_end))
    }

    /// The end of the log: what stays beyond the commit index comes
    /// last, not marked committed.
    fn finish(&mut self) -> Result<(), WalError> {
        if let Some(first) = self.tail.front() {
            self.summary.beyond_commit = Some((self.tail.len() as u64, first.index));
        }
        self.ready.append(&mut self.tail);
        self.done = true;
        Ok(())
    }
}

/// What follows damage.
enum Verified {
    /// The first record that verifies, at `at`, the next one at `end`.
    At { at: u64, end: u64, record: Record },
    /// None before the segment's data ends here.
    NothingUpTo(u64),
}

/// [`Wal::entries`].
pub struct Entries<'a> {
    wal: &'a mut Wal,
    failed: bool,
}

impl Iterator for Entries<'_> {
    type Item = Result<Entry, WalError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.wal.next_entry();
        self.failed = next.is_err();
        next.transpose()
    }
}

/// The request a raft entry carries.
fn request(entry: &message::Entry) -> Result<Request, String> {
    if entry.r#type != 0 {
        return Ok(Request::ConfChange);
    }
    if entry.data.is_empty() {
        return Ok(Request::Empty);
    }
    let req = match InternalRaftRequest::decode(entry.data.as_slice()) {
        Ok(req) => req,
        Err(v3) => {
            return V2Request::decode(entry.data.as_slice())
                .map(|r| v2(&r))
                .map_err(|_| format!("entry {} holds neither a v3 nor a v2 request ({v3})", entry.index));
        }
    };
    Ok(if let Some(put) = req.put {
        Request::Put(put)
    } else if let Some(delete) = req.delete_range {
        Request::DeleteRange(delete)
    } else if let Some(txn) = req.txn {
        Request::Txn(txn)
    } else if let Some(compaction) = req.compaction {
        Request::Compaction(compaction)
    } else if let Some(grant) = req.lease_grant {
        Request::LeaseGrant(grant)
    } else if let Some(revoke) = req.lease_revoke {
        Request::LeaseRevoke(revoke)
    } else if req.lease_checkpoint.is_some() {
        Request::LeaseCheckpoint
    } else if req.range.is_some() {
        Request::Range
    } else if req.alarm.is_some() {
        Request::Alarm
    } else if let Some(r) = req.v2 {
        v2(&r)
    } else {
        Request::Other(request_field(&entry.data))
    })
}

/// The first field of an `InternalRaftRequest` other than its id (1) and
/// header (100): which request it carries; 0 for none.
fn request_field(mut data: &[u8]) -> u32 {
    use prost::encoding::{decode_key, skip_field, DecodeContext};
    while !data.is_empty() {
        let Ok((tag, wire_type)) = decode_key(&mut data) else {
            return 0;
        };
        if tag != 1 && tag != 100 {
            return tag;
        }
        if skip_field(wire_type, tag, &mut data, DecodeContext::default()).is_err() {
            return 0;
        }
    }
    0
}

fn v2(r: &V2Request) -> Request {
    Request::V2 {
        method: String::from_utf8_lossy(&r.method).into_owned(),
        path: String::from_utf8_lossy(&r.path).into_owned(),
    }
}

#[cfg(test)]
mod tests;
