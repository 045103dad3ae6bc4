//! What a run took from a member's WAL, recorded with the run and shown by
//! `runs`: where the log starts and ends (raft index and term), what of it
//! the db had applied, the writes it placed and where they start, and what
//! the read cut or skipped.

use crate::source::Revision;
use serde::{Deserialize, Serialize};

/// A WAL as one run read it (fields a run from before them lacks read as
/// their defaults).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Recovered {
    /// The WAL's folder.
    pub dir: String,
    pub segments: usize,
    /// The first and last entry read (raft index, term).
    pub first: Option<(u64, u64)>,
    pub last: Option<(u64, u64)>,
    /// The db's consistent index: entries up to it are placed.
    pub applied: u64,
    /// Entries after it, which the db had not applied.
    pub beyond_db: u64,
    /// The revisions those the log's commit index covers wrote, (first,
    /// last), placed on the db's state: the run's head is the last.
    pub past_db: Option<(Revision, Revision)>,
    /// Entries past the log's last commit index that the db had not
    /// applied, in a cluster of several members: not read (etcd applies
    /// them on restart unless a new leader replaces them).
    pub uncommitted: u64,
    /// Entries lost in damage `--salvage` skipped after the db's consistent
    /// index: the entries past the db from there on are not read.
    pub past_db_lost: Option<String>,
    /// Revisions the placed entries wrote.
    pub writes: u64,
    /// The revisions the log adds to the db's: those at or below its
    /// compaction, (first, last); `None` when it adds none.
    pub added: Option<(Revision, Revision)>,
    /// Compactions the log asked for, by revision.
    pub compactions: Vec<Revision>,
    /// Writes whose revision the log alone cannot decide (an interval, not
    /// a revision): none while the log starts at entry 1.
    pub undecided: u64,
    /// For a log that starts after a raft snapshot: the entries at its
    /// start left unplaced, because more than one start fits them or the
    /// search did not begin there.
    pub skipped: u64,
    /// Why the search for that start began after the log's first entry
    /// (how the search from there failed): the skipped entries are then
    /// those before the longest tail of the log it places.
    pub unsearched: Option<String>,
    /// Writes of generations begun before such a log and ended in it
    /// before the db's compaction, whose version and create revision no
    /// file holds: not stored (their deletes are).
    pub counters_unknown: u64,
    /// Where a torn end cut the read, as the reader says it.
    pub cut: Option<String>,
    /// Damage skipped with `--salvage`, as the reader says it.
    pub gaps: Vec<String>,
    /// Why the log's writes were not placed (its history then starts at the
    /// db's compaction).
    pub not_placed: Option<String>,
}

impl Recovered {
    /// How `runs` says where the run's history came from.
    pub fn describe(&self) -> String {
        let from = match self.first {
            Some((index, term)) => format!("entry {index} (term {term})"),
            None => "no entries".into(),
        };
        let mut said = match (&self.not_placed, self.added) {
            (Some(why), _) => format!("db; WAL from {from} not placed: {why}"),
            (None, Some((first, last))) => {
                format!("WAL from {from} + db; the WAL adds revisions {first}-{last}")
            }
            (None, None) => format!("db + WAL from {from}; the WAL adds nothing the db lacks"),
        };
        match (self.skipped, &self.unsearched) {
            (0, _) => {}
            (n, None) => said.push_str(&format!(
                "; its first {n} entries not placed (more than one start fits them)"
            )),
            (n, Some(why)) => said.push_str(&format!(
                "; its first {n} entries not placed (placing it from its first entry failed: {why})"
            )),
        }
        if self.counters_unknown > 0 {
            said.push_str(&format!(
                "; {} writes to objects created before it not stored (their versions are in no file)",
                self.counters_unknown
            ));
        }
        if let Some((first, last)) = self.past_db {
            said.push_str(&format!(
                "; revisions {first}-{last} from entries after the db's consistent index {}",
                self.applied
            ));
        }
        if let Some(lost) = &self.past_db_lost {
            said.push_str(&format!(
                "; {lost} lost to damage after the db's consistent index: none read from there"
            ));
        }
        if self.uncommitted > 0 {
            said.push_str(&format!(
                "; {} entries past the log's commit index not read",
                self.uncommitted
            ));
        }
        said
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_says_why_a_purged_log_s_first_entries_are_not_placed() {
        let mut recovered = Recovered {
            first: Some((9001, 4)),
            added: Some((Revision(120), Revision(480))),
            skipped: 37,
            ..Recovered::default()
        };
        assert_eq!(
            recovered.describe(),
            "WAL from entry 9001 (term 4) + db; the WAL adds revisions 120-480; \
             its first 37 entries not placed (more than one start fits them)"
        );
        recovered.unsearched = Some("the search for where it starts ran out of steps".into());
        assert_eq!(
            recovered.describe(),
            "WAL from entry 9001 (term 4) + db; the WAL adds revisions 120-480; its first 37 entries not placed \
             (placing it from its first entry failed: the search for where it starts ran out of steps)"
        );
    }
}
