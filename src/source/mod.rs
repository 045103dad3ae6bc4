//! Sources of stored records. A source pushes every revision it reads into a
//! [`Sink`]; the store writer is one sink, a test's collecting `Vec` another.

use std::collections::HashMap;

pub mod audit;
pub mod bolt;
pub mod db_file;
pub mod etcd;
pub mod filter;
pub mod revision;
pub mod server_version;
pub mod wal;

pub use revision::Revision;

/// One revision of one key as etcd keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: Vec<u8>,
    pub mod_revision: Revision,
    /// For a tombstone, the create_revision of the generation it ended (0
    /// when unknown).
    pub create_revision: Revision,
    /// 0 for a tombstone.
    pub version: i64,
    pub lease: i64,
    /// Empty for a tombstone.
    pub value: Vec<u8>,
    pub deleted: bool,
}

/// A live key's counters as etcd reports them at a revision: what a run
/// checks its stored history against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveKey {
    pub key: Vec<u8>,
    pub create_revision: Revision,
    pub mod_revision: Revision,
    /// Writes since `create_revision`, that one included.
    pub version: i64,
}

/// The newest revision of each key among the records it observed: the
/// counters a data file or a watch reports for every key still live.
#[derive(Debug, Default)]
pub struct Census {
    /// Key → its newest record's counters; `version` 0 and `deleted` for a
    /// tombstone.
    newest: HashMap<Vec<u8>, Counters, hashbrown::DefaultHashBuilder>,
}

#[derive(Clone, Copy, Debug)]
struct Counters {
    create_revision: Revision,
    mod_revision: Revision,
    version: i64,
    deleted: bool,
}

impl Census {
    /// Takes `record` if it is the newest of its key so far.
    pub fn observe(&mut self, record: &Record) {
        let counters = Counters {
            create_revision: record.create_revision,
            mod_revision: record.mod_revision,
            version: record.version,
            deleted: record.deleted,
        };
        match self.newest.get_mut(&record.key) {
            Some(known) if known.mod_revision >= record.mod_revision => {}
            Some(known) => *known = counters,
            None => {
                self.newest.insert(record.key.clone(), counters);
            }
        }
    }

    /// The keys whose newest observed record is not a tombstone; consumes
    /// the census, so that its keys are not held twice.
    pub fn into_live(self) -> Vec<LiveKey> {
        self.newest
            .into_iter()
            .filter(|(_, c)| !c.deleted)
            .map(|(key, c)| LiveKey {
                key,
                create_revision: c.create_revision,
                mod_revision: c.mod_revision,
                version: c.version,
            })
            .collect()
    }
}

/// Receives records from a source.
///
/// A source calls [`Sink::record`] once per revision it reads, in no
/// guaranteed order and possibly more than once for the same
/// `(key, mod_revision)`; the sink must treat repeats as no-ops. Each call
/// returns whether the source should go on: `Ok(false)` stops it cleanly
/// (it returns [`Read::Stopped`]), an error stops it with that error.
pub trait Sink {
    type Error;

    fn record(&mut self, record: Record) -> Result<bool, Self::Error>;

    /// Every record up to `revision` has been pushed (a watch knows this
    /// from its responses and progress notifications).
    fn progress(&mut self, _revision: Revision) -> Result<bool, Self::Error> {
        Ok(true)
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    type Error = S::Error;

    fn record(&mut self, record: Record) -> Result<bool, Self::Error> {
        (**self).record(record)
    }

    fn progress(&mut self, revision: Revision) -> Result<bool, Self::Error> {
        (**self).progress(revision)
    }
}

impl Sink for Vec<Record> {
    type Error = std::convert::Infallible;

    fn record(&mut self, record: Record) -> Result<bool, Self::Error> {
        self.push(record);
        Ok(true)
    }
}

/// How a read ended: with its result, or stopped by the sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read<T> {
    Done(T),
    Stopped,
}

/// A read that failed: the source (etcd, a data file), or the sink.
#[derive(Debug, thiserror::Error)]
pub enum ReadError<E: std::error::Error + 'static> {
    #[error(transparent)]
    Etcd(#[from] etcd::EtcdError),
    #[error(transparent)]
    File(#[from] bolt::BoltError),
    #[error(transparent)]
    Sink(E),
}

#[cfg(test)]
mod tests {
    use super::{Census, Record, Revision};

    fn record(key: &str, mod_revision: i64, version: i64, deleted: bool) -> Record {
        Record {
            key: key.as_bytes().to_vec(),
            mod_revision: Revision(mod_revision),
            create_revision: Revision(2),
            version,
            lease: 0,
            value: Vec::new(),
            deleted,
        }
    }

    #[test]
    fn census_keeps_the_newest_revision_of_each_live_key() {
        let mut census = Census::default();
        for r in [
            record("a", 3, 2, false),
            record("a", 2, 1, false),
            record("b", 4, 1, false),
            record("b", 5, 0, true),
            record("c", 7, 1, false),
            record("c", 6, 0, true),
        ] {
            census.observe(&r);
        }
        let mut live: Vec<(String, i64, i64)> = census
            .into_live()
            .into_iter()
            .map(|k| (String::from_utf8(k.key).unwrap(), k.mod_revision.0, k.version))
            .collect();
        live.sort();
        assert_eq!(live, [("a".into(), 3, 2), ("c".into(), 7, 1)]);
        assert!(Census::default().into_live().is_empty());
    }
}
