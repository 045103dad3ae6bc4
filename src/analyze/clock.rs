//! What the stored history tells about time, since etcd keeps none: when
//! the cluster was last observed ("now"), and by when a revision had been
//! written. Lifecycle detectors measure "for how long" with it.
//!
//! - **Now** is when the newest complete run read etcd (its start), or, for
//!   a run that read a data file, which has no clock, the newest time
//!   written in the stored objects (managedFields times, creation times).
//! - **By when revision R was written**: a create stores its
//!   creationTimestamp at its own revision, and a run that read etcd up to
//!   head H finished after every revision up to H; the earliest such time
//!   at or after R bounds R from above.

use crate::source::Revision;
use crate::store::clock::{Anchor, AnchorSink, TIMESTAMP_SLACK};
use crate::store::object::ObjectRevision;
use crate::store::{RunTime, StoreError};
use jiff::Timestamp;

/// The cluster's clock, as far as the history tells it.
#[derive(Debug, Default)]
pub struct Clock {
    /// (revision, time it was written by), any order until [`Clock::finish`].
    anchors: Vec<(Revision, Timestamp)>,
    /// The newest time seen in objects.
    newest: Option<Timestamp>,
    /// The newest run's start, unless it read a file.
    observed: Option<Timestamp>,
    finished: bool,
}

fn parse(t: Option<&str>) -> Option<Timestamp> {
    t?.parse().ok()
}

impl Clock {
    /// A clock with the runs' anchors; objects add theirs with
    /// [`Clock::observe`].
    pub fn new(runs: &[RunTime]) -> Clock {
        let mut clock = Clock::default();
        for run in runs.iter().filter(|r| r.kind.reads_etcd_now()) {
            if let Some(at) = run.finished_at {
                clock.anchors.push((run.head, at));
            }
        }
        clock.observed = runs
            .last()
            .filter(|r| r.kind.reads_etcd_now())
            .map(|r| r.started_at);
        clock
    }

    /// Takes the anchors one key's history (oldest first) holds.
    pub fn observe(&mut self, history: &[ObjectRevision]) {
        for r in history {
            if r.is_create() {
                if let Some(at) = parse(r.facts.creation_timestamp.as_deref()) {
                    self.anchors.push((r.mod_revision, at));
                }
            }
            if let Some(at) = parse(r.facts.written_at.as_deref()) {
                self.newest = self.newest.max(Some(at));
            }
        }
    }

    /// Orders the anchors so that [`Clock::written_by`] can answer.
    pub fn finish(&mut self) {
        self.anchors.sort();
        // Each anchor's time becomes the earliest at or after its revision.
        let mut earliest: Option<Timestamp> = None;
        for (_, at) in self.anchors.iter_mut().rev() {
            earliest = Some(earliest.map_or(*at, |e| e.min(*at)));
            *at = earliest.expect("set");
        }
        self.finished = true;
    }

    /// When the cluster was last observed.
    pub fn now(&self) -> Option<Timestamp> {
        self.observed.or(self.newest)
    }

    /// A time by which `revision` had been written, when the history holds one.
    pub fn written_by(&self, revision: Revision) -> Option<Timestamp> {
        debug_assert!(self.finished, "Clock::finish first");
        let i = self.anchors.partition_point(|(r, _)| *r < revision);
        self.anchors.get(i).map(|(_, at)| *at)
    }
}

/// What one key's history (oldest first) says about when its revisions
/// were written: a create no earlier than its creationTimestamp and soon
/// after; a revision no earlier than the newest managedFields time it
/// carries, and soon after when that time is newer than the revision
/// before's (this write set it); an Event no earlier than its newest
/// occurrence; the revision that starts a deletion no later than soon after
/// its deletionTimestamp (now plus the grace period).
pub fn anchors_of(history: &[ObjectRevision], out: &mut AnchorSink<'_>) -> Result<(), StoreError> {
    let mut before: Option<&ObjectRevision> = None;
    for r in history {
        if r.deleted {
            before = None;
            continue;
        }
        let same = before.filter(|b| b.create_revision == r.create_revision);
        // What each fact says, folded into one anchor for the revision.
        let mut earliest: Option<Timestamp> = None;
        let mut latest: Option<Timestamp> = None;
        let mut bound = |e: Option<Timestamp>, l: Option<Timestamp>| {
            earliest = earliest.max(e);
            latest = match (latest, l) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        };
        if r.is_create() {
            if let Some(ct) = parse(r.facts.creation_timestamp.as_deref()) {
                bound(Some(ct), Some(ct + TIMESTAMP_SLACK));
            }
        }
        if let Some(at) = parse(r.facts.written_at.as_deref()) {
            match same.and_then(|b| parse(b.facts.written_at.as_deref())) {
                // The revision before carried it already: it says nothing
                // the earlier anchor does not.
                Some(b) if at <= b => {}
                _ => bound(Some(at), Some(at + TIMESTAMP_SLACK)),
            }
        }
        // An Event is written after what it records happened.
        if let Some(at) = parse(r.facts.event_time.as_deref()) {
            bound(Some(at), None);
        }
        let deletion_starts = same.is_some_and(|b| b.facts.deletion_timestamp.is_none());
        if let Some(dt) = parse(r.facts.deletion_timestamp.as_deref()).filter(|_| deletion_starts) {
            bound(None, Some(dt + TIMESTAMP_SLACK));
        }
        if earliest.is_some() || latest.is_some() {
            out(Anchor {
                revision: r.mod_revision,
                earliest,
                latest,
            })?;
        }
        before = Some(r);
    }
    Ok(())
}

/// What the live runs say: every revision up to a run's head was written
/// before it finished, every later one after it began.
pub fn run_anchors(runs: &[RunTime]) -> Vec<Anchor> {
    let mut out = Vec::new();
    for run in runs.iter().filter(|r| r.kind.reads_etcd_now()) {
        if let Some(finished) = run.finished_at {
            out.push(Anchor {
                revision: run.head,
                earliest: None,
                latest: Some(finished),
            });
        }
        out.push(Anchor {
            revision: run.head.next(),
            earliest: Some(run.started_at),
            latest: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(revision: i64, at: &str) -> ObjectRevision {
        let mut r = ObjectRevision {
            mod_revision: Revision(revision),
            create_revision: Revision(revision),
            ..Default::default()
        };
        r.facts.creation_timestamp = Some(at.into());
        r.facts.written_at = Some(at.into());
        r
    }

    #[test]
    fn a_revision_was_written_by_the_earliest_anchor_after_it() {
        let runs = [RunTime {
            head: Revision(50),
            started_at: "2026-12-01T10:00:00Z".parse().unwrap(),
            finished_at: Some("2026-12-01T10:00:05Z".parse().unwrap()),
            kind: crate::store::RunKind::Live,
        }];
        let mut clock = Clock::new(&runs);
        clock.observe(&[created(10, "2026-12-01T09:00:00Z")]);
        clock.observe(&[created(20, "2026-12-01T08:00:00Z")]);
        clock.finish();
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        assert_eq!(clock.written_by(Revision(5)), Some(at("2026-12-01T08:00:00Z")));
        assert_eq!(clock.written_by(Revision(15)), Some(at("2026-12-01T08:00:00Z")));
        assert_eq!(clock.written_by(Revision(21)), Some(at("2026-12-01T10:00:05Z")));
        assert_eq!(clock.written_by(Revision(51)), None);
        assert_eq!(clock.now(), Some(at("2026-12-01T10:00:00Z")));
    }

    #[test]
    fn a_managed_time_bounds_a_write_from_above_only_where_it_set_it() {
        let create = created(10, "2026-12-01T09:00:00Z");
        let mut same_time = create.clone();
        same_time.mod_revision = Revision(11);
        let mut newer = create.clone();
        newer.mod_revision = Revision(12);
        newer.facts.written_at = Some("2026-12-01T09:05:00Z".into());
        newer.facts.deletion_timestamp = Some("2026-12-01T09:05:01Z".into());
        let mut anchors = Vec::new();
        // 12 also starts a deletion (deletionTimestamp 09:05:01): no later
        // than 09:05:03, looser than its managedFields time's 09:05:02.
        anchors_of(&[create, same_time, newer], &mut |a| {
            anchors.push(a);
            Ok(())
        })
        .unwrap();
        let at = |t: &str| Some(t.parse::<Timestamp>().unwrap());
        let anchor = |revision, earliest, latest| Anchor {
            revision: Revision(revision),
            earliest,
            latest,
        };
        // Revision 11 carries 10's time: nothing new, no anchor.
        assert_eq!(
            anchors,
            [
                anchor(10, at("2026-12-01T09:00:00Z"), at("2026-12-01T09:00:02Z")),
                anchor(12, at("2026-12-01T09:05:00Z"), at("2026-12-01T09:05:02Z")),
            ]
        );
    }

    #[test]
    fn a_file_run_is_as_late_as_its_newest_object() {
        let runs = [RunTime {
            head: Revision(50),
            started_at: "2030-01-01T00:00:00Z".parse().unwrap(),
            finished_at: Some("2030-01-01T00:00:01Z".parse().unwrap()),
            kind: crate::store::RunKind::File,
        }];
        let mut clock = Clock::new(&runs);
        clock.observe(&[created(10, "2026-12-01T09:00:00Z")]);
        clock.finish();
        assert_eq!(clock.now(), Some("2026-12-01T09:00:00Z".parse().unwrap()));
        assert_eq!(clock.written_by(Revision(11)), None, "a file run is no anchor");
    }
}
