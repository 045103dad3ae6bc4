//! The history a member's WAL adds to its db (`snapshot --data-dir`,
//! `--wal-dir`): the log is placed against the db's writes once, then read
//! again to store the writes the db no longer holds, at their revisions,
//! and those it does not hold yet: the committed entries after its
//! consistent index, applied on the state it holds.

use super::progress::Progress;
use super::signal::stopping;
use crate::source::bolt::BoltDb;
use crate::source::db_file::{self, FileInfo};
use crate::source::wal::revisions::{place, Facts, Placer, Start, Steps};
use crate::source::wal::{self, Recovered, Request, Summary, Wal};
use crate::source::Revision;
use crate::source::{Read, Sink};
use anyhow::{anyhow, bail, Result};
use indicatif::ProgressBar;
use std::path::Path;

/// A WAL placed against its db, ready to give its writes (the db's writes
/// it was checked against are not kept).
pub(super) struct WalHistory {
    options: wal::Options,
    /// Whether the db's cluster has one member.
    sole_member: bool,
    /// For a log not placed, the db's state at its head, on which the
    /// committed entries after its consistent index are applied again when
    /// their writes are pushed (the db is not read a second time).
    at_head: Option<Placer<'static>>,
    /// For a log placed that starts after a raft snapshot, where it was
    /// found to start, to apply it again from there.
    purged: Option<(Revision, Placer<'static>)>,
    /// What the run took from it, recorded with the run.
    pub recovered: Recovered,
}

/// Which entries after the db's consistent index are committed: those the
/// log's last commit index covers, and in a cluster of one member every
/// entry it persisted (a quorum of one), until a membership change. The
/// commit index the log records lags: etcd saves a `HardState` that only
/// moves the commit without syncing it (go.etcd.io/raft `MustSync`), so
/// the newest one waits in the WAL's buffer for the next write, and a copy
/// of a quiet member's log ends with entries it calls uncommitted.
struct Committed {
    sole_member: bool,
}

impl Committed {
    fn covers(&mut self, entry: &wal::Entry) -> bool {
        let covered = entry.committed || self.sole_member;
        if entry.request == Request::ConfChange {
            self.sole_member = false;
        }
        covered
    }
}

/// Every write the db holds, its leases and its counters, to place a log
/// against.
fn db_facts(db: &BoltDb, info: &FileInfo) -> Result<Facts> {
    let compacted = info
        .finished_compact
        .max(info.scheduled_compact)
        .unwrap_or_default();
    let mut facts = Facts::new(info.head(), compacted);
    let read = db_file::read_revisions(db, b"", Revision(0), info.revisions, &mut facts);
    read.map_err(super::plan::read_error)?;
    facts.leases = db_file::lease_ids(db)?;
    Ok(facts)
}

impl WalHistory {
    /// Reads the db's writes and places the log in `dir` against them.
    /// A log that does not start at entry 1 (etcd removed its first
    /// segments after a raft snapshot) is placed where [`place`] finds one
    /// start that fits, from the first entry every start that fits agrees
    /// on; else it is not placed below the db's consistent index, and says
    /// why in [`Recovered::not_placed`]. A log and a db that disagree fail.
    /// The committed entries after the consistent index are placed on the
    /// db's state either way. `None` when a signal stopped the read.
    pub fn check(
        db: &BoltDb,
        info: &FileInfo,
        dir: &Path,
        salvage: bool,
        bar: &ProgressBar,
    ) -> Result<Option<WalHistory>> {
        let Some(applied) = info.consistent_index else {
            bail!(
                "{}: no consistent index in its meta bucket, so which WAL entries it applied is unknown",
                db.path().display()
            );
        };
        bar.set_message(format!("reading every write {} holds", db.path().display()));
        let facts = db_facts(db, info)?;
        let options = wal::Options { salvage };
        let read = |start| Self::read(&facts, info, applied, dir, options, start, bar);
        let Some((mut history, steps)) = read(None)? else {
            return Ok(None);
        };
        if let Some(steps) = steps {
            bar.set_message(format!("finding where {} starts", dir.display()));
            let placed = match place(&facts, &steps) {
                Ok(start) => read(Some(&start)).map_err(|e| format!("the start found does not hold: {e:#}")),
                Err(why) => Err(why),
            };
            match placed {
                Ok(Some((placed, _))) => history = placed,
                Ok(None) => return Ok(None),
                Err(why) => {
                    history.recovered.not_placed = Some(format!(
                        "it starts after a raft snapshot, and {why}: history starts at the db's compaction"
                    ))
                }
            }
        }
        if history.recovered.not_placed.is_some() || history.recovered.uncommitted > 0 {
            tracing::warn!("{}: {}", dir.display(), history.recovered.describe());
        }
        Ok(Some(history))
    }

    /// One read of the log against the db's `facts`, from entry 1 or from
    /// where a log that starts after a raft snapshot was found to `start`;
    /// with the steps to search for that start when it was not given and
    /// the log needs one.
    fn read(
        facts: &Facts,
        info: &FileInfo,
        applied: u64,
        dir: &Path,
        options: wal::Options,
        start: Option<&Start>,
        bar: &ProgressBar,
    ) -> Result<Option<(WalHistory, Option<Steps>)>> {
        let where_ = dir.display();
        let mut log = Wal::open(dir, options)?;
        let mut recovered = Recovered {
            dir: where_.to_string(),
            applied,
            skipped: start.map_or(0, |s| s.skipped),
            unsearched: start.and_then(|s| s.unsearched.clone()),
            ..Recovered::default()
        };
        let mut placer: Option<Placer<'_>> = None;
        let mut at_head = None;
        let mut purged = None;
        let mut steps: Option<Steps> = None;
        let sole_member = info.members == 1;
        let mut committed = Committed { sole_member };
        while let Some(entry) = log.next_entry()? {
            if stopping() {
                return Ok(None);
            }
            if recovered.first.is_none() && entry.index != 1 && start.is_none() {
                recovered.not_placed = Some(
                    "it starts after a raft snapshot, and placing a log that does not start at entry 1 \
                     is not supported yet: history starts at the db's compaction"
                        .into(),
                );
                steps = Some(Steps::new(entry.index));
            }
            recovered.first.get_or_insert((entry.index, entry.term));
            let past_db = entry.index > applied;
            if past_db {
                recovered.beyond_db += 1;
                if !committed.covers(&entry) {
                    recovered.uncommitted += 1;
                    continue;
                }
            } else if recovered.not_placed.is_some() {
                if let Some(steps) = &mut steps {
                    steps.push(&entry);
                }
                continue;
            } else if start.is_some_and(|s| entry.index < s.first) {
                // Where more than one start fits.
                continue;
            }
            let expects = match &placer {
                Some(p) => Some(p.expects()),
                None if past_db && recovered.not_placed.is_some() => Some(applied + 1),
                None => start.map(|s| s.first),
            };
            if let Some(expects) = expects.filter(|&e| e != entry.index) {
                // Entries lost in damage --salvage skipped.
                let lost = format!("entries {expects}-{}", entry.index - 1);
                if past_db {
                    recovered.past_db_lost = Some(lost);
                    break;
                }
                recovered.not_placed = Some(format!(
                    "{lost} were lost in damage --salvage skipped, and placing a log across lost entries \
                     is not supported yet: history starts at the db's compaction"
                ));
                (recovered.writes, recovered.added) = (0, None);
                recovered.compactions.clear();
                placer = None;
                steps = None;
                continue;
            }
            let placer = placer.get_or_insert_with(|| match (start, &recovered.not_placed) {
                (_, Some(_)) => {
                    let head = Placer::at_head(facts, applied);
                    at_head = Some(head.detached());
                    head
                }
                (Some(start), None) => {
                    let from = Placer::purged(facts, start);
                    purged = Some((start.revision.next(), from.detached()));
                    from
                }
                (None, None) => Placer::new(facts),
            });
            if past_db {
                placer.finish().map_err(|e| anyhow!("{where_}: {e}"))?;
            }
            if recovered.writes.is_multiple_of(10_000) {
                bar.set_message(format!("placing the WAL's writes: entry {}", entry.index));
            }
            if let Request::Compaction(c) = &entry.request {
                recovered.compactions.push(Revision(c.revision));
            }
            let writes = placer.apply(&entry).map_err(|e| anyhow!("{where_}: {e}"))?;
            let Some(r) = writes.first().map(|w| w.mod_revision) else {
                continue;
            };
            recovered.writes += 1;
            if past_db {
                let (first, _) = recovered.past_db.unwrap_or((r, r));
                recovered.past_db = Some((first, r));
            } else if r <= facts.compacted {
                let (first, _) = recovered.added.unwrap_or((r, r));
                recovered.added = Some((first, r));
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
        if let Some(placer) = &mut placer {
            placer.finish().map_err(|e| anyhow!("{where_}: {e}"))?;
            recovered.counters_unknown = placer.counters_unknown();
        }
        let history = WalHistory {
            options,
            sole_member,
            at_head: at_head.filter(|_| recovered.past_db.is_some()),
            purged: purged.filter(|_| recovered.not_placed.is_none()),
            recovered,
        };
        Ok(Some((history, steps)))
    }

    /// Where the log's history starts when it was placed: revision 1, or
    /// for a log that starts after a raft snapshot, where it was found to.
    pub fn starts(&self) -> Option<Revision> {
        match &self.purged {
            Some((from, _)) => Some(*from),
            None => self.recovered.not_placed.is_none().then_some(Revision(1)),
        }
    }

    /// Whether the log was placed from entry 1: it then gives every write
    /// the db holds.
    pub fn whole(&self) -> bool {
        self.recovered.not_placed.is_none() && self.purged.is_none()
    }

    /// Pushes a placed log's writes under `prefix` from revision `from`
    /// into `sink`, reading the log again: those the db lost, those it
    /// holds too, which the log gives more of (a delete's record names the
    /// generation it ended; the db's tombstone does not), and those of the
    /// committed entries after its consistent index.
    pub fn push(&self, from: Revision, prefix: &[u8], sink: &mut Progress<'_, '_>) -> Result<Read<()>> {
        match (&self.purged, self.starts()) {
            (Some((_, placer)), _) => self.replay(placer.detached(), from, prefix, sink),
            (None, Some(_)) => self.replay(Placer::again(), from, prefix, sink),
            (None, None) => Ok(Read::Done(())),
        }
    }

    /// For a log not placed, pushes the writes of its committed entries
    /// after the db's consistent index, applied on the state the db holds
    /// at `db_head`, into `sink` (after the db's own records).
    pub fn push_past_db(
        &self,
        db_head: Revision,
        prefix: &[u8],
        sink: &mut Progress<'_, '_>,
    ) -> Result<Read<()>> {
        match &self.at_head {
            Some(placer) if self.starts().is_none() => {
                self.replay(placer.detached(), db_head.next(), prefix, sink)
            }
            _ => Ok(Read::Done(())),
        }
    }

    /// Reads the log again into `placer` (checked by the first pass),
    /// pushing the writes under `prefix` from revision `from`.
    fn replay(
        &self,
        mut placer: Placer<'_>,
        from: Revision,
        prefix: &[u8],
        sink: &mut Progress<'_, '_>,
    ) -> Result<Read<()>> {
        let dir = Path::new(&self.recovered.dir);
        let mut log = Wal::open(dir, self.options)?;
        let applied = self.recovered.applied;
        let placed = self.starts().is_some();
        let mut committed = Committed {
            sole_member: self.sole_member,
        };
        while let Some(entry) = log.next_entry()? {
            let past_db = entry.index > applied;
            if (past_db && !committed.covers(&entry)) || (!past_db && !placed) {
                continue;
            }
            if entry.index < placer.expects() && !past_db {
                // Before where a log after a raft snapshot was placed from.
                continue;
            }
            if past_db && entry.index != placer.expects() {
                // Lost in a gap: the first pass stopped here too.
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
