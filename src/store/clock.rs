//! The cluster's clock as the store keeps it: anchors (what one source says
//! about when one revision was written) folded into an envelope that bounds
//! every revision with one lookup each way.

use super::reader::{ClockReads, ClusterReads};
use super::sql::{one_row, Cursor, Sql};
use super::tables::Cell;
use super::StoreError;
use crate::source::Revision;
use crate::store::ClusterId;
use jiff::{SignedDuration, Timestamp};

/// Where a cluster's clock places a time ([`crate::store::HistoryReader::revision_by_clock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByClock {
    /// No clock to ask: several clusters and none chosen, or never analyzed.
    NoClock,
    /// Nothing bounds that side: any revision may have been written there.
    Unbounded,
    Revision(Revision),
}

impl ByClock {
    /// From the anchor probe: the last revision written before the time
    /// (`after`), or the first written after it; the revision beside it is
    /// the answer.
    pub(in crate::store) fn beside(anchor: Option<Revision>, after: bool) -> ByClock {
        match (anchor, after) {
            (None, _) => ByClock::Unbounded,
            (Some(r), true) => ByClock::Revision(r.next()),
            (Some(r), false) => ByClock::Revision(r.prev()),
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
    pub revision: Revision,
    /// Written no earlier than this.
    pub earliest: Option<Timestamp>,
    /// Written no later than this.
    pub latest: Option<Timestamp>,
}

impl Anchor {
    /// What a stored time says: a Lease renewal (`mark`) was sent at its
    /// time; a request attributed to the revision was answered after it.
    pub(in crate::store) fn stored(revision: Revision, at: Timestamp, mark: bool) -> Anchor {
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
        cluster: ClusterId,
        gather: &mut dyn FnMut(&mut AnchorSink<'_>) -> Result<(), crate::store::StoreError>,
    ) -> Result<u64, crate::store::StoreError>;
}

/// Anchors written to the temporary table at a time.
const ANCHOR_BATCH: usize = 10_000;

/// Two columns, `earliest` and `latest` in microseconds, of when revision
/// `revision` of cluster `cluster` (SQL expressions) was written, as far as
/// the clock tells: for every row of a query at once. [`interval`] reads
/// them.
pub(in crate::store) fn interval_columns(cluster: &str, revision: &str) -> String {
    format!(
        "(SELECT e.earliest FROM clock_envelope e WHERE e.cluster_id = {cluster} AND e.revision <= {revision} \
           ORDER BY e.revision DESC LIMIT 1), \
         (SELECT e.latest FROM clock_envelope e WHERE e.cluster_id = {cluster} AND e.revision >= {revision} \
           ORDER BY e.revision LIMIT 1)"
    )
}

/// The interval [`interval_columns`] gives.
pub(in crate::store) fn interval(earliest: Option<i64>, latest: Option<i64>) -> Interval {
    let at = |us: i64| Timestamp::from_microsecond(us).ok();
    Interval {
        earliest: earliest.and_then(at),
        latest: latest.and_then(at),
    }
}

/// Writes `anchors` to the temporary table `anchors` and empties it.
fn add_anchors(db: &(impl Sql + ?Sized), anchors: &mut Vec<Anchor>) -> Result<(), StoreError> {
    let micros = |t: Option<Timestamp>| t.map_or(Cell::Null, |t| Cell::Int(t.as_microsecond()));
    let cells: Vec<Cell> = anchors
        .drain(..)
        .flat_map(|a| [a.revision.into(), micros(a.earliest), micros(a.latest)])
        .collect();
    match cells.is_empty() {
        true => Ok(()),
        false => db.insert_rows("anchors", &["revision", "earliest", "latest"], &cells),
    }
}

/// The anchors the store holds itself: Lease renewals (marks) and the
/// successful requests attributed to revisions (answered after the write;
/// one answered 504 may have written after its answer).
fn stored_anchors(
    db: &(impl Sql + ?Sized),
    cluster: ClusterId,
    pending: &mut Vec<Anchor>,
) -> Result<(), StoreError> {
    db.each(
        "clock_marks",
        "SELECT revision, at, 1 FROM clock_marks WHERE cluster_id = $1 \
         UNION ALL SELECT w.mod_revision, a.time, 0 FROM revision_writers w \
           JOIN audit_requests a ON a.id = w.request_id WHERE a.cluster_id = $1 AND a.code BETWEEN 200 AND 299",
        &[Cell::from(cluster)],
        &mut |row| {
            let mut c = Cursor::new(db, "clock_marks", row);
            let (revision, at, mark) = (c.revision("revision")?, c.text("at")?, c.flag("mark")?);
            let Ok(t) = at.parse::<Timestamp>() else {
                let column = if mark { "clock_marks.at" } else { "audit_requests.time" };
                return Err(c.damage(column, format!("{at:?} is not an RFC 3339 time")));
            };
            pending.push(Anchor::stored(revision, t, mark));
            match pending.len() >= ANCHOR_BATCH {
                true => add_anchors(db, pending),
                false => Ok(()),
            }
        },
    )?;
    add_anchors(db, pending)
}

/// Folds the anchors into the envelope: each revision's earliest is the
/// latest earliest at or before it, its latest the earliest latest at or
/// after it. Bounds that contradict the others are left out first.
fn rebuild(
    db: &(impl Sql + ?Sized),
    cluster: ClusterId,
    gather: &mut dyn FnMut(&mut AnchorSink<'_>) -> Result<(), StoreError>,
) -> Result<u64, StoreError> {
    let int = db.dialect().int;
    db.temp_table(
        "anchors",
        &format!("(revision {int} NOT NULL, earliest {int}, latest {int})"),
    )?;
    let mut pending = Vec::with_capacity(ANCHOR_BATCH);
    gather(&mut |a| {
        pending.push(a);
        match pending.len() >= ANCHOR_BATCH {
            true => add_anchors(db, &mut pending),
            false => Ok(()),
        }
    })?;
    add_anchors(db, &mut pending)?;
    stored_anchors(db, cluster, &mut pending)?;
    db.temp_table_as("clock_regions", CONTRADICTIONS, &[])?;
    db.execute(
        "CREATE INDEX clock_regions_revision ON clock_regions (revision)",
        &[],
    )?;
    let mut left_out = 0;
    for late in [false, true] {
        left_out += db.execute(leave_out(late), &[])?;
    }
    db.drop_temp("clock_regions");
    db.execute(
        "DELETE FROM clock_envelope WHERE cluster_id = $1",
        &[Cell::from(cluster)],
    )?;
    db.execute(
        "INSERT INTO clock_envelope (cluster_id, revision, earliest, latest) \
         SELECT CAST($1 AS bigint), revision, max(e) OVER (ORDER BY revision ROWS UNBOUNDED PRECEDING), \
           min(l) OVER (ORDER BY revision DESC ROWS UNBOUNDED PRECEDING) \
         FROM (SELECT revision, max(earliest) AS e, min(latest) AS l FROM anchors GROUP BY revision) g",
        &[Cell::from(cluster)],
    )?;
    db.drop_temp("anchors");
    Ok(left_out)
}

impl<T: Sql + ?Sized> ClockRecorder for T {
    /// Inside the caller's transaction when it has one (analyze writes
    /// findings in one), else in its own: all of the clock or none.
    fn rebuild_clock(
        &self,
        cluster: ClusterId,
        gather: &mut dyn FnMut(&mut AnchorSink<'_>) -> Result<(), StoreError>,
    ) -> Result<u64, StoreError> {
        let mut left_out = 0;
        self.atomically(&mut || {
            left_out = rebuild(self, cluster, gather)?;
            Ok(())
        })?;
        Ok(left_out)
    }
}

impl<T: Sql + ClusterReads + ?Sized> ClockReads for T {
    fn revision_by_clock(
        &self,
        cluster: Option<ClusterId>,
        time: Timestamp,
        after: bool,
    ) -> Result<ByClock, StoreError> {
        let cluster = match cluster {
            Some(c) => c,
            None => match self.clusters()?.as_slice() {
                [only] => only.row,
                _ => return Ok(ByClock::NoClock),
            },
        };
        let params = [Cell::from(cluster), Cell::Int(time.as_microsecond())];
        let sql = match after {
            // Every revision up to the last anchor written no later than
            // before `time` was written before it.
            true => {
                "SELECT count(*), max(CASE WHEN latest < $2 THEN revision END) FROM clock_envelope \
                     WHERE cluster_id = $1"
            }
            // Every revision from the first anchor written no earlier than
            // after `time` was written after it.
            false => {
                "SELECT count(*), min(CASE WHEN earliest > $2 THEN revision END) FROM clock_envelope \
                      WHERE cluster_id = $1"
            }
        };
        one_row(self, "clock_envelope", sql, &params, |c| {
            if c.int("count")? == 0 {
                return Ok(ByClock::NoClock);
            }
            Ok(ByClock::beside(c.opt_revision("revision")?, after))
        })
    }
}
