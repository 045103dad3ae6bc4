//! The clock's tables: marks the runs keep, the envelope `analyze`
//! rebuilds, and the interval each revision reads from it.

use super::Store;
use crate::store::clock::{Anchor, AnchorSink, ByClock, ClockRecorder, Interval};
use crate::store::reader::ClusterReads;
use crate::store::StoreError;
use jiff::Timestamp;

/// Anchors written to the temporary table per statement.
const ANCHOR_BATCH: usize = 10_000;

/// Two columns, `earliest` and `latest` in microseconds, of when revision
/// `revision` of cluster `cluster` (SQL expressions) was written, as far as
/// the clock tells: for every row of a query at once. [`interval`] reads
/// them.
pub(super) fn interval_columns(cluster: &str, revision: &str) -> String {
    format!(
        "(SELECT e.earliest FROM clock_envelope e WHERE e.cluster_id = {cluster} AND e.revision <= {revision} \
           ORDER BY e.revision DESC LIMIT 1), \
         (SELECT e.latest FROM clock_envelope e WHERE e.cluster_id = {cluster} AND e.revision >= {revision} \
           ORDER BY e.revision LIMIT 1)"
    )
}

/// The interval [`interval_columns`] gives.
pub(super) fn interval(earliest: Option<i64>, latest: Option<i64>) -> Interval {
    let at = |us: i64| Timestamp::from_microsecond(us).ok();
    Interval {
        earliest: earliest.and_then(at),
        latest: latest.and_then(at),
    }
}

impl Store {
    /// Writes `anchors` to the temporary table and empties it.
    fn add_anchors(&self, anchors: &mut Vec<Anchor>) -> Result<(), StoreError> {
        if anchors.is_empty() {
            return Ok(());
        }
        let micros = |t: Option<Timestamp>| t.map(|t| t.as_microsecond());
        let revisions: Vec<i64> = anchors.iter().map(|a| a.revision).collect();
        let earliest: Vec<Option<i64>> = anchors.iter().map(|a| micros(a.earliest)).collect();
        let latest: Vec<Option<i64>> = anchors.iter().map(|a| micros(a.latest)).collect();
        self.execute(
            "INSERT INTO pg_temp.anchors (revision, earliest, latest) \
             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[])",
            &[&revisions, &earliest, &latest],
        )?;
        anchors.clear();
        Ok(())
    }

    /// The anchors the store holds itself: Lease renewals (marks) and the
    /// successful requests attributed to revisions (answered after the
    /// write; one answered 504 may have written after its answer).
    fn stored_anchors(&self, cluster: i64, pending: &mut Vec<Anchor>) -> Result<(), StoreError> {
        self.each_page(
            "SELECT revision, at, true FROM clock_marks WHERE cluster_id = $1 \
             UNION ALL SELECT w.mod_revision, a.time, false FROM revision_writers w \
               JOIN audit_requests a ON a.id = w.request_id WHERE a.cluster_id = $1 AND a.code BETWEEN 200 AND 299",
            &[&cluster],
            &mut |rows| {
                for r in rows {
                    let (revision, at, mark): (i64, String, bool) = (r.get(0), r.get(1), r.get(2));
                    let Ok(t) = at.parse::<Timestamp>() else {
                        return Err(self.damaged(
                            if mark {
                                "clock_marks.at"
                            } else {
                                "audit_requests.time"
                            },
                            format!("{at:?} is not an RFC 3339 time"),
                        ));
                    };
                    pending.push(Anchor::stored(revision, t, mark));
                }
                self.add_anchors(pending)
            },
        )
    }

    /// Folds the anchors into the envelope: each revision's earliest is the
    /// latest earliest at or before it, its latest the earliest latest at
    /// or after it.
    fn rebuild(
        &self,
        cluster: i64,
        gather: &mut dyn FnMut(&mut AnchorSink<'_>) -> Result<(), StoreError>,
    ) -> Result<u64, StoreError> {
        // The anchors' table, emptied when an earlier rebuild of the same
        // transaction made it (asked first: `IF NOT EXISTS` would send the
        // client a notice).
        let made = self
            .query_opt("SELECT to_regclass('pg_temp.anchors') IS NOT NULL", &[])?
            .is_some_and(|r| r.get(0));
        self.execute(
            match made {
                true => "DELETE FROM pg_temp.anchors",
                false => {
                    "CREATE TEMP TABLE anchors (revision BIGINT NOT NULL, earliest BIGINT, latest BIGINT) \
                     ON COMMIT DROP"
                }
            },
            &[],
        )?;
        let mut pending = Vec::with_capacity(ANCHOR_BATCH);
        gather(&mut |a| {
            pending.push(a);
            match pending.len() >= ANCHOR_BATCH {
                true => self.add_anchors(&mut pending),
                false => Ok(()),
            }
        })?;
        self.add_anchors(&mut pending)?;
        self.stored_anchors(cluster, &mut pending)?;
        // Bounds that contradict the others are left out first.
        self.execute(
            &format!(
                "CREATE TEMP TABLE clock_regions ON COMMIT DROP AS {}",
                crate::store::clock::CONTRADICTIONS
            ),
            &[],
        )?;
        let mut left_out = 0;
        for late in [false, true] {
            left_out += self.execute(crate::store::clock::leave_out(late), &[])?;
        }
        self.execute("DROP TABLE pg_temp.clock_regions", &[])?;
        self.execute("DELETE FROM clock_envelope WHERE cluster_id = $1", &[&cluster])?;
        self.execute(
            "INSERT INTO clock_envelope (cluster_id, revision, earliest, latest) \
             SELECT $1::bigint, revision, max(e) OVER (ORDER BY revision ROWS UNBOUNDED PRECEDING), \
               min(l) OVER (ORDER BY revision DESC ROWS UNBOUNDED PRECEDING) \
             FROM (SELECT revision, max(earliest) AS e, min(latest) AS l FROM pg_temp.anchors GROUP BY revision) g",
            &[&cluster],
        )?;
        Ok(left_out)
    }
}

impl ClockRecorder for Store {
    fn rebuild_clock(
        &self,
        cluster: i64,
        gather: &mut dyn FnMut(&mut AnchorSink<'_>) -> Result<(), StoreError>,
    ) -> Result<u64, StoreError> {
        // Inside the caller's transaction when it has one (analyze writes
        // findings in one), else in its own: all of the clock or none. The
        // anchors' table lasts until that transaction ends.
        if self.in_transaction_now() {
            self.rebuild(cluster, gather)
        } else {
            self.in_transaction(|| self.rebuild(cluster, gather))
        }
    }
}

impl crate::store::reader::ClockReads for Store {
    fn revision_by_clock(
        &self,
        cluster: Option<i64>,
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
        let clocked: bool = self
            .query_opt(
                "SELECT EXISTS (SELECT 1 FROM clock_envelope WHERE cluster_id = $1)",
                &[&cluster],
            )?
            .expect("a row")
            .get(0);
        if !clocked {
            return Ok(ByClock::NoClock);
        }
        let at = time.as_microsecond();
        let found: Option<i64> = match after {
            // Every revision up to the last anchor written no later than
            // before `time` was written before it.
            true => self.query_opt(
                "SELECT max(revision) FROM clock_envelope WHERE cluster_id = $1 AND latest < $2",
                &[&cluster, &at],
            )?,
            // Every revision from the first anchor written no earlier
            // than after `time` was written after it.
            false => self.query_opt(
                "SELECT min(revision) FROM clock_envelope WHERE cluster_id = $1 AND earliest > $2",
                &[&cluster, &at],
            )?,
        }
        .expect("an aggregate's row")
        .get(0);
        Ok(ByClock::beside(found, after))
    }
}
