//! The clock's tables: marks the runs keep, the envelope `analyze`
//! rebuilds, and the interval one revision reads from it.

use super::Store;
use crate::store::clock::{Anchor, AnchorSink, ByClock, ClockRecorder, Interval};
use crate::store::reader::ClusterReads;
use crate::store::StoreError;
use jiff::Timestamp;
use rusqlite::{params, OptionalExtension};

fn micros(t: Timestamp) -> i64 {
    t.as_microsecond()
}

fn from_micros(us: i64) -> Option<Timestamp> {
    Timestamp::from_microsecond(us).ok()
}

impl Store {
    fn add_anchor(&self, a: Anchor) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("INSERT INTO temp.anchors (revision, earliest, latest) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![a.revision, a.earliest.map(micros), a.latest.map(micros)]))
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The anchors the store holds itself: Lease renewals (marks) and the
    /// successful requests attributed to revisions (answered after the
    /// write; one answered 504 may have written after its answer).
    fn stored_anchors(&self, cluster: i64) -> Result<(), StoreError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT revision, at, 1 FROM clock_marks WHERE cluster_id = ?1 \
                 UNION ALL SELECT w.mod_revision, a.time, 0 FROM revision_writers w \
                   JOIN audit_requests a ON a.id = w.request_id WHERE a.cluster_id = ?1 AND a.code BETWEEN 200 AND 299",
            )
            .map_err(err)?;
        let mut rows = stmt.query([cluster]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let (revision, at, mark): (i64, String, bool) = (
                r.get(0).map_err(err)?,
                r.get(1).map_err(err)?,
                r.get(2).map_err(err)?,
            );
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
            self.add_anchor(Anchor::stored(revision, t, mark))?;
        }
        Ok(())
    }

    fn rebuild(
        &self,
        cluster: i64,
        gather: &mut dyn FnMut(&mut AnchorSink<'_>) -> Result<(), StoreError>,
    ) -> Result<u64, StoreError> {
        let err = |e| self.err(e);
        self.conn
            .execute_batch(
                "CREATE TEMP TABLE IF NOT EXISTS anchors (revision INTEGER NOT NULL, earliest INTEGER, latest INTEGER); \
                 DELETE FROM temp.anchors;",
            )
            .map_err(err)?;
        gather(&mut |a| self.add_anchor(a))?;
        self.stored_anchors(cluster)?;
        let left_out = self.leave_out_contradictions()?;
        self.conn
            .execute("DELETE FROM clock_envelope WHERE cluster_id = ?1", [cluster])
            .map_err(err)?;
        self.conn
            .execute(
                "INSERT INTO clock_envelope (cluster_id, revision, earliest, latest) \
                 SELECT ?1, revision, max(e) OVER (ORDER BY revision ROWS UNBOUNDED PRECEDING), \
                   min(l) OVER (ORDER BY revision DESC ROWS UNBOUNDED PRECEDING) \
                 FROM (SELECT revision, max(earliest) AS e, min(latest) AS l FROM temp.anchors GROUP BY revision)",
                [cluster],
            )
            .map_err(err)?;
        self.conn.execute_batch("DELETE FROM temp.anchors").map_err(err)?;
        Ok(left_out)
    }

    /// Leaves out the bounds that contradict the others (see
    /// [`crate::store::clock::CONTRADICTIONS`]); returns how many.
    fn leave_out_contradictions(&self) -> Result<u64, StoreError> {
        let err = |e| self.err(e);
        self.conn
            .execute_batch(&format!(
                "DROP TABLE IF EXISTS temp.clock_regions; \
                 CREATE TEMP TABLE clock_regions AS {}; \
                 CREATE INDEX temp.clock_regions_revision ON clock_regions (revision);",
                crate::store::clock::CONTRADICTIONS
            ))
            .map_err(err)?;
        let mut left_out = 0;
        for late in [false, true] {
            left_out += self
                .conn
                .execute(crate::store::clock::leave_out(late), [])
                .map_err(err)? as u64;
        }
        self.conn
            .execute_batch("DROP TABLE temp.clock_regions")
            .map_err(err)?;
        Ok(left_out)
    }

    /// When revision `revision` of `cluster` was written, as far as the
    /// clock tells.
    pub(in crate::store) fn read_interval(
        &self,
        cluster: i64,
        revision: i64,
    ) -> Result<Interval, StoreError> {
        let err = |e| self.err(e);
        let earliest: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT earliest FROM clock_envelope WHERE cluster_id = ?1 AND revision <= ?2 ORDER BY revision DESC LIMIT 1",
            )
            .and_then(|mut s| s.query_row(params![cluster, revision], |r| r.get(0)).optional())
            .map_err(err)?
            .flatten();
        let latest: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT latest FROM clock_envelope WHERE cluster_id = ?1 AND revision >= ?2 ORDER BY revision LIMIT 1",
            )
            .and_then(|mut s| s.query_row(params![cluster, revision], |r| r.get(0)).optional())
            .map_err(err)?
            .flatten();
        Ok(Interval {
            earliest: earliest.and_then(from_micros),
            latest: latest.and_then(from_micros),
        })
    }
}

impl ClockRecorder for Store {
    fn rebuild_clock(
        &self,
        cluster: i64,
        gather: &mut dyn FnMut(&mut AnchorSink<'_>) -> Result<(), StoreError>,
    ) -> Result<u64, StoreError> {
        // Inside the caller's transaction when it has one (analyze writes
        // findings in one), else in its own: all of the clock or none.
        if self.conn.is_autocommit() {
            self.in_transaction(|| self.rebuild(cluster, gather))
        } else {
            self.rebuild(cluster, gather)
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
        let err = |e| self.err(e);
        let cluster = match cluster {
            Some(c) => c,
            None => match self.clusters()?.as_slice() {
                [only] => only.row,
                _ => return Ok(ByClock::NoClock),
            },
        };
        let clocked: bool = self
            .conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM clock_envelope WHERE cluster_id = ?1)",
                [cluster],
                |r| r.get(0),
            )
            .map_err(err)?;
        if !clocked {
            return Ok(ByClock::NoClock);
        }
        let at = micros(time);
        let found: Option<i64> = match after {
            // Every revision up to the last anchor written no later than
            // before `time` was written before it.
            true => self
                .conn
                .query_row(
                    "SELECT max(revision) FROM clock_envelope WHERE cluster_id = ?1 AND latest < ?2",
                    params![cluster, at],
                    |r| r.get(0),
                )
                .map_err(err)?,
            // Every revision from the first anchor written no earlier
            // than after `time` was written after it.
            false => self
                .conn
                .query_row(
                    "SELECT min(revision) FROM clock_envelope WHERE cluster_id = ?1 AND earliest > ?2",
                    params![cluster, at],
                    |r| r.get(0),
                )
                .map_err(err)?,
        };
        Ok(ByClock::beside(found, after))
    }
}
