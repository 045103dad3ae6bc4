//! The cluster's clock as the store keeps it: anchors (what one source says
//! about when one revision was written) folded into an envelope that bounds
//! every revision with one lookup each way.

use jiff::{SignedDuration, Timestamp};

/// Where a cluster's clock places a time ([`crate::store::HistoryReader::revision_by_clock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByClock {
    /// No clock to ask: several clusters and none chosen, or never analyzed.
    NoClock,
    /// Nothing bounds that side: any revision may have been written there.
    Unbounded,
    Revision(i64),
}

impl ByClock {
    /// From the anchor probe: the last revision written before the time
    /// (`after`), or the first written after it; the revision beside it is
    /// the answer.
    pub(in crate::store) fn beside(anchor: Option<i64>, after: bool) -> ByClock {
        match (anchor, after) {
            (None, _) => ByClock::Unbounded,
            (Some(r), true) => ByClock::Revision(r + 1),
            (Some(r), false) => ByClock::Revision(r - 1),
        }
    }
}

/// How long after a Lease's renewTime its renewal reaches etcd, at most:
/// the holder sets the time, then sends the update.
pub const RENEWAL_SLACK: SignedDuration = SignedDuration::from_secs(1);

/// How long after a timestamp the apiserver writes in whole seconds
/// (creationTimestamp, managedFields times, deletionTimestamp) the write
/// reaches etcd, at most: a second of truncation and one of latency.
pub const TIMESTAMP_SLACK: SignedDuration = SignedDuration::from_secs(2);

/// What one source says about when `revision` (and so every revision
/// after it, for `earliest`, and before it, for `latest`) was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    pub revision: i64,
    /// Written no earlier than this.
    pub earliest: Option<Timestamp>,
    /// Written no later than this.
    pub latest: Option<Timestamp>,
}

impl Anchor {
    /// What a stored time says: a Lease renewal (`mark`) was sent at its
    /// time; a request attributed to the revision was answered after it.
    pub(in crate::store) fn stored(revision: i64, at: Timestamp, mark: bool) -> Anchor {
        match mark {
            true => Anchor {
                revision,
                earliest: Some(at),
                latest: Some(at + RENEWAL_SLACK),
            },
            false => Anchor {
                revision,
                earliest: None,
                latest: Some(at),
            },
        }
    }
}

/// When a revision was written, as far as the clock tells: either side
/// open when nothing bounds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Interval {
    pub earliest: Option<Timestamp>,
    pub latest: Option<Timestamp>,
}

/// Bounds that contradict the others are left out before the anchors are
/// folded into the envelope. Two bounds contradict when a revision is said
/// to be written no earlier than a time a later (or the same) revision is
/// said to be written by: an object written around the apiserver with an
/// old `creationTimestamp`, a clock that jumped. Every contradicting pair
/// lies inside one run of revisions where the running earliest passes the
/// running latest (a region); in each region the side with fewer offending
/// bounds is left out (both on a tie), which removes every contradiction
/// there and keeps the bounds the rest agree on.
///
/// This query (SQLite's and PostgreSQL's alike, on the temporary table
/// `anchors`) gives each revision of a region with its running bounds and
/// the side its region leaves out.
pub(in crate::store) const CONTRADICTIONS: &str = "\
    WITH g AS (SELECT revision, max(earliest) AS e, min(latest) AS l FROM anchors GROUP BY revision), \
    w AS (SELECT revision, max(e) OVER (ORDER BY revision ROWS UNBOUNDED PRECEDING) AS pe, \
        min(l) OVER (ORDER BY revision DESC ROWS UNBOUNDED PRECEDING) AS sl, \
        row_number() OVER (ORDER BY revision) AS n FROM g), \
    bad AS (SELECT revision, pe, sl, n - row_number() OVER (ORDER BY revision) AS region FROM w WHERE pe > sl), \
    counts AS (SELECT b.region, sum(CASE WHEN a.earliest > b.sl THEN 1 ELSE 0 END) AS early, \
        sum(CASE WHEN a.latest < b.pe THEN 1 ELSE 0 END) AS late \
        FROM bad b JOIN anchors a ON a.revision = b.revision GROUP BY b.region) \
    SELECT b.revision, b.pe, b.sl, c.early <= c.late AS drop_early, c.late <= c.early AS drop_late \
    FROM bad b JOIN counts c ON c.region = b.region";

/// The statement that leaves out the offending `earliest` (or, with
/// `late`, `latest`) bounds of the regions [`CONTRADICTIONS`] put in the
/// temporary table `clock_regions`.
pub(in crate::store) fn leave_out(late: bool) -> &'static str {
    match late {
        false => {
            "UPDATE anchors AS a SET earliest = NULL FROM clock_regions c \
                  WHERE c.revision = a.revision AND c.drop_early AND a.earliest > c.sl"
        }
        true => {
            "UPDATE anchors AS a SET latest = NULL FROM clock_regions c \
                 WHERE c.revision = a.revision AND c.drop_late AND a.latest < c.pe"
        }
    }
}

/// Where `analyze` sends the anchors it reads from the stored objects.
pub type AnchorSink<'a> = dyn FnMut(Anchor) -> Result<(), crate::store::StoreError> + 'a;

/// The clock's write side.
pub trait ClockRecorder {
    /// Rebuilds the clock of `cluster` from the anchors `gather` sends to
    /// its sink, with the stored marks (Lease renewals) and the times of
    /// the audit requests attributed to revisions; returns how many bounds
    /// it left out as contradicting the others (see [`CONTRADICTIONS`]).
    fn rebuild_clock(
        &self,
        cluster: i64,
        gather: &mut dyn FnMut(&mut AnchorSink<'_>) -> Result<(), crate::store::StoreError>,
    ) -> Result<u64, crate::store::StoreError>;
}
