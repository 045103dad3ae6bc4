//! What a run took from a member's WAL, recorded with the run and shown by
//! `runs`: where the log starts and ends (raft index and term), what of it
//! the db had applied, the writes it placed and where they start, and what
//! the read cut or skipped.

use serde::{Deserialize, Serialize};

/// A WAL as one run read it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovered {
    /// The WAL's folder.
    pub dir: String,
    pub segments: usize,
    /// The first and last entry read (raft index, term).
    pub first: Option<(u64, u64)>,
    pub last: Option<(u64, u64)>,
    /// The db's consistent index: entries up to it are placed.
    pub applied: u64,
    /// Entries after it, which the db had not applied: not placed.
    pub beyond_db: u64,
    /// Revisions the placed entries wrote.
    pub writes: u64,
    /// The revisions the log adds to the db's: those at or below its
    /// compaction, (first, last); `None` when it adds none.
    pub added: Option<(i64, i64)>,
    /// Compactions the log asked for, by revision.
    pub compactions: Vec<i64>,
    /// Writes whose revision the log alone cannot decide (an interval, not
    /// a revision): none while the log starts at entry 1.
    pub undecided: u64,
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
        match (&self.not_placed, self.added) {
            (Some(why), _) => format!("db; WAL from {from} not placed: {why}"),
            (None, Some((first, last))) => {
                format!("WAL from {from} + db; the WAL adds revisions {first}-{last}")
            }
            (None, None) => format!("db + WAL from {from}; the WAL adds nothing the db lacks"),
        }
    }
}
