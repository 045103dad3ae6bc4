//! The history a member's WAL adds to its db (`snapshot --data-dir`,
//! `--wal-dir`): the log is placed against the db's writes once, then read
//! again to store the writes the db no longer holds, at their revisions.

use super::progress::Progress;
use super::signal::stopping;
use crate::source::bolt::BoltDb;
use crate::source::db_file::{self, FileInfo};
use crate::source::wal::revisions::{Facts, Placer};
use crate::source::wal::{self, Recovered, Request, Summary, Wal};
use crate::source::{Read, Sink};
use anyhow::{anyhow, bail, Result};
use indicatif::ProgressBar;
use std::path::Path;

/// A WAL placed against its db, ready to give its writes (the db's writes
/// it was checked against are not kept).
pub(super) struct WalHistory {
    options: wal::Options,
    /// What the run took from it, recorded with the run.
    pub recovered: Recovered,
}

impl WalHistory {
    /// Reads the db's writes and places the log in `dir` against them.
    /// A log that does not start at entry 1 is not placed, and says why in
    /// [`Recovered::not_placed`]; a log and a db that disagree fail. `None`
    /// when a signal stopped the read.
    pub fn check(
        db: &BoltDb,
        info: &FileInfo,
        dir: &Path,
        salvage: bool,
        bar: &ProgressBar,
    ) -> Result<Option<WalHistory>> {
        let where_ = dir.display();
        let Some(applied) = info.consistent_index else {
            bail!(
                "{}: no consistent index in its meta bucket, so which WAL entries it applied is unknown",
                db.path().display()
            );
        };
        bar.set_message(format!("reading every write {} holds", db.path().display()));
        let compacted = info.finished_compact.max(info.scheduled_compact).unwrap_or(0);
        let mut facts = Facts::new(info.head(), compacted);
        let read = db_file::read_revisions(db, b"", 0, info.revisions, &mut facts);
        read.map_err(super::plan::read_error)?;
        let options = wal::Options { salvage };
        let mut log = Wal::open(dir, options)?;
        let mut recovered = Recovered {
            dir: where_.to_string(),
            applied,
            ..Recovered::default()
        };
        let mut placer = Placer::new(&facts);
        while let Some(entry) = log.next_entry()? {
            if stopping() {
                return Ok(None);
            }
            if recovered.first.is_none() && entry.index != 1 {
                recovered.not_placed = Some(
                    "it starts after a raft snapshot, and placing a log that does not start at entry 1 \
                     is not supported yet: history starts at the db's compaction"
                        .into(),
                );
                recovered.first = Some((entry.index, entry.term));
                while log.next_entry()?.is_some() {}
                account(&mut recovered, log.summary());
                tracing::warn!("{where_}: {}", recovered.describe());
                return Ok(Some(WalHistory { options, recovered }));
            }
            recovered.first.get_or_insert((entry.index, entry.term));
            if entry.index > applied {
                recovered.beyond_db += 1;
                continue;
            }
            if recovered.writes.is_multiple_of(10_000) {
                bar.set_message(format!("placing the WAL's writes: entry {}", entry.index));
            }
            if let Request::Compaction(c) = &entry.request {
                recovered.compactions.push(c.revision);
            }
            let writes = placer.apply(&entry).map_err(|e| anyhow!("{where_}: {e}"))?;
            if let Some(r) = writes.first().map(|w| w.mod_revision) {
                recovered.writes += 1;
                if r <= compacted {
                    let (first, _) = recovered.added.unwrap_or((r, r));
                    recovered.added = Some((first, r));
                }
            }
        }
        let summary = log.summary();
        account(&mut recovered, summary);
        match summary.last {
            Some((last, _)) if last >= applied => {}
            _ => bail!(
                "{where_}: the WAL ends at entry {}, before the db's consistent index {applied}: the db is \
                 newer than the log (copy member/snap/db before member/wal, or stop the member first)",
                summary.last.map_or(0, |l| l.0)
            ),
        }
        placer.finish().map_err(|e| anyhow!("{where_}: {e}"))?;
        if recovered.beyond_db > 0 {
            tracing::warn!(
                "{where_}: the last {} entries are not read: they come after the db's consistent index \
                 {applied} (etcd had not yet written them to the db, and would apply them on restart)",
                recovered.beyond_db
            );
        }
        Ok(Some(WalHistory { options, recovered }))
    }

    /// Where the log's history starts: revision 1 when it was placed.
    pub fn starts(&self) -> Option<i64> {
        self.recovered.not_placed.is_none().then_some(1)
    }

    /// Pushes the log's writes under `prefix` from revision `from` into
    /// `sink`, reading the log again: those the db lost, and those it
    /// holds too, which the log gives more of (a delete's record names the
    /// generation it ended; the db's tombstone does not).
    pub fn push(&self, from: i64, prefix: &[u8], sink: &mut Progress<'_, '_>) -> Result<Read<()>> {
        if self.starts().is_none() {
            return Ok(Read::Done(()));
        }
        let dir = Path::new(&self.recovered.dir);
        let mut log = Wal::open(dir, self.options)?;
        // Checked by the first pass.
        let mut placer = Placer::again();
        while let Some(entry) = log.next_entry()? {
            if entry.index > self.recovered.applied {
                break;
            }
            let writes = placer
                .apply(&entry)
                .map_err(|e| anyhow!("{}: {e}", dir.display()))?;
            for w in writes {
                if w.mod_revision >= from && db_file::in_scope(&w.key, prefix) && !sink.record(w)? {
                    return Ok(Read::Stopped);
                }
            }
        }
        Ok(Read::Done(()))
    }
}

/// What the read of the log saw, into the run's account of it.
fn account(recovered: &mut Recovered, summary: &Summary) {
    recovered.segments = summary.segments;
    recovered.last = summary.last;
    recovered.cut = summary.cut.as_ref().map(|c| {
        format!(
            "{} at byte {}: {}; {} bytes after it, last whole entry {}",
            c.segment,
            c.offset,
            c.what,
            c.bytes,
            c.last_entry.map_or("none".into(), |i| i.to_string())
        )
    });
    recovered.gaps = summary
        .gaps
        .iter()
        .map(|g| format!("{} bytes {}-{}: {}", g.segment, g.from, g.to, g.what))
        .collect();
}
