//! An etcd member's write-ahead log (`DATA_DIR/member/wal/`, or
//! `--wal-dir`): every raft entry since the member's last raft snapshot,
//! each with the whole request, values included, where `member/snap/db`
//! holds only what compaction left.
//!
//! [`Wal::open`] finds the segments ([`segment`] has the format facts and
//! where they come from) and [`Wal::next_entry`] streams the entries in
//! index order, checking the CRC chain, in memory bounded by one record and
//! the uncommitted tail:
//! - **Truncation.** A later record may hold an entry at an index already
//!   seen: a new leader replaced this member's uncommitted tail, and that
//!   entry and all after it are the log (etcd's `ReadAll` truncates so).
//!   Committed entries are never replaced, so entries up to the newest
//!   `HardState`'s commit index are yielded as they come and only the tail
//!   beyond it is held.
//! - **The last commit index** a member wrote can lag its entries (a
//!   member stopped between saving entries and the state that commits
//!   them): entries beyond it come last with [`Entry::committed`] false,
//!   counted in [`Summary::beyond_commit`]. etcd commits them again when it
//!   restarts unless a new leader replaces them; the db's consistent index
//!   says which it applied.
//! - **The end.** A copy of a live member can end in a torn record. The
//!   last segment's records end at the first one torn (a zeroed sector, or
//!   one running past the end), which [`Summary::cut`] reports; anywhere
//!   else a record that does not decode or breaks the CRC chain is an error
//!   naming the segment and offset, unless [`Options::salvage`] is set:
//!   then the reader scans on (8-byte aligned) for the next record that
//!   decodes, restarts the chain from it, and records the skipped bytes as
//!   a [`Gap`].
//! - **Requests.** A normal entry's data is an `InternalRaftRequest`
//!   ([`Request`]); etcd 3.4 and before also log bare v2 requests
//!   (members publishing their attributes), which decode as
//!   [`Request::V2`], as etcd's own apply tries the v3 form first.

mod message;
mod segment;

pub use message::{
    CompactionRequest, Compare, CompareTarget, DeleteRangeRequest, LeaseGrantRequest, LeaseRevokeRequest, Op,
    PutRequest, RangeRequest, RequestOp, TxnRequest,
};
pub use segment::{segments, Segment};

use message::{HardState, InternalRaftRequest, V2Request};
use prost::Message;
use segment::{Next, SegmentReader, CRC, ENTRY, METADATA, SNAPSHOT, STATE};
use std::collections::VecDeque;
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
    /// Auth, cluster version and member attribute requests: not the key
    /// space.
    Other,
}

/// Bytes skipped by salvage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    pub segment: String,
    pub from: u64,
    pub to: u64,
}

/// A torn end: where the last segment's records stop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    pub segment: String,
    pub offset: u64,
    /// Non-zero bytes from there to the end of the file.
    pub bytes: u64,
    pub what: String,
}

/// What a whole read saw, for the run's record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub segments: usize,
    /// The raft snapshot the oldest segment continues from (index, term).
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
    /// Entries a new leader replaced.
    pub replaced: u64,
    pub cut: Option<Cut>,
    pub gaps: Vec<Gap>,
}

/// A WAL being read.
pub struct Wal {
    segments: Vec<Segment>,
    /// The next segment to open.
    next_segment: usize,
    reader: Option<SegmentReader>,
    options: Options,
    /// The CRC chain's value so far.
    crc: u32,
    commit: u64,
    /// Entries beyond `commit`, oldest first.
    tail: VecDeque<Entry>,
    /// Committed entries ready to yield.
    ready: VecDeque<Entry>,
    /// The newest index yielded.
    yielded: u64,
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
            commit: 0,
            tail: VecDeque::new(),
            ready: VecDeque::new(),
            yielded: 0,
            done: false,
        })
    }

    /// The next entry, `None` at the end.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, WalError> {
        loop {
            if let Some(entry) = self.ready.pop_front() {
                self.yielded = entry.index;
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
        let (record, offset) = match reader.next()? {
            Next::Record(record, offset) => (record, offset),
            Next::End => {
                self.reader = None;
                return Ok(());
            }
            Next::Broken { offset, torn, what } => return self.broken(offset, torn && last, what),
        };
        if record.r#type == CRC {
            if self.crc != 0 && record.crc != self.crc {
                let what = format!(
                    "a CRC record of {:08x} where the chain so far is {:08x}",
                    record.crc, self.crc
                );
                return self.broken(offset, false, what);
            }
            self.crc = record.crc;
            return Ok(());
        }
        let chained = crc32c::crc32c_append(self.crc, &record.data);
        if chained != record.crc {
            let torn = last && reader.torn_at(offset, &record.data);
            let what = format!("CRC mismatch (record {:08x}, chain {chained:08x})", record.crc);
            return self.broken(offset, torn, what);
        }
        self.crc = chained;
        self.file(record.r#type, &record.data, offset)
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
                self.commit = self.commit.max(state.commit);
                while let Some(mut entry) = self.tail.pop_front() {
                    if entry.index > self.commit {
                        self.tail.push_front(entry);
                        break;
                    }
                    entry.committed = true;
                    self.ready.push_back(entry);
                }
                Ok(())
            }
            SNAPSHOT => {
                let snap = message::Snapshot::decode(data)
                    .map_err(|e| self.damaged(offset, undecodable("snapshot", e)))?;
                self.summary.snapshot.get_or_insert((snap.index, snap.term));
                Ok(())
            }
            METADATA => Ok(()),
            other => Err(self.damaged(offset, format!("a record of unknown type {other}"))),
        }
    }

    /// Adds an entry to the log, replacing an uncommitted tail it
    /// overwrites.
    fn append(&mut self, mut entry: Entry) -> Result<(), String> {
        let newest = self
            .tail
            .back()
            .map_or(self.yielded.max(self.last_ready()), |e| e.index);
        if entry.index <= newest {
            if entry.index <= self.commit || entry.index <= self.yielded {
                return Err(format!(
                    "entry {} written again after index {} was committed",
                    entry.index, self.commit
                ));
            }
            let before = self.tail.len();
            self.tail.retain(|e| e.index < entry.index);
            self.summary.replaced += (before - self.tail.len()) as u64;
        }
        if entry.index <= self.commit {
            entry.committed = true;
            self.ready.push_back(entry);
        } else {
            self.tail.push_back(entry);
        }
        Ok(())
    }

    fn last_ready(&self) -> u64 {
        self.ready.back().map_or(0, |e| e.index)
    }

    fn damaged(&self, offset: u64, what: String) -> WalError {
        let segment = self.reader.as_ref().map(|r| r.segment.name()).unwrap_or_default();
        WalError::Damaged {
            segment,
            offset,
            what,
        }
    }

    /// A record that is not whole at `offset`: the end of the log when
    /// `torn` (the last segment's torn tail), else damage: an error, or a
    /// gap skipped with salvage.
    fn broken(&mut self, offset: u64, torn: bool, what: String) -> Result<(), WalError> {
        if torn {
            let reader = self.reader.as_mut().expect("a segment is open");
            reader.skip_to(offset)?;
            let bytes = reader.unread_bytes()?;
            self.summary.cut = Some(Cut {
                segment: reader.segment.name(),
                offset,
                bytes,
                what,
            });
            self.reader = None;
            return self.finish();
        }
        if !self.options.salvage {
            return Err(self.damaged(offset, what));
        }
        self.salvage(offset)
    }

    /// Scans on from a damaged record at `offset` for the next record that
    /// decodes, of a known type, and (for an entry) newer than the last;
    /// restarts the CRC chain from it.
    fn salvage(&mut self, offset: u64) -> Result<(), WalError> {
        let newest = self.yielded.max(self.last_ready());
        let reader = self.reader.as_mut().expect("a segment is open");
        let mut at = offset + 8;
        let mut found = None;
        while at + 8 <= reader.size() {
            reader.skip_to(at)?;
            if let Next::Record(record, _) = reader.next()? {
                let plausible = match record.r#type {
                    ENTRY => message::Entry::decode(record.data.as_slice()).is_ok_and(|e| e.index > newest),
                    METADATA | STATE | SNAPSHOT | CRC => true,
                    _ => false,
                };
                if plausible {
                    found = Some(record);
                    break;
                }
            }
            at += 8;
        }
        let to = if found.is_some() { at } else { reader.size() };
        self.summary.gaps.push(Gap {
            segment: reader.segment.name(),
            from: offset,
            to,
        });
        match found {
            Some(record) => {
                self.crc = record.crc;
                self.file(record.r#type, &record.data, at)
            }
            None => {
                self.reader = None;
                Ok(())
            }
        }
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
        Request::Other
    })
}

fn v2(r: &V2Request) -> Request {
    Request::V2 {
        method: String::from_utf8_lossy(&r.method).into_owned(),
        path: String::from_utf8_lossy(&r.path).into_owned(),
    }
}

#[cfg(test)]
mod tests;
