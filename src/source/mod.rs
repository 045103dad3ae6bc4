//! Sources of stored records. A source pushes every revision it reads into a
//! [`Sink`]; the store writer is one sink, a test's collecting `Vec` another.

pub mod bolt;
pub mod db_file;
pub mod etcd;
pub mod filter;
pub mod revision;

/// One revision of one key as etcd keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: Vec<u8>,
    pub mod_revision: i64,
    /// For a tombstone, the create_revision of the generation it ended (0
    /// when unknown).
    pub create_revision: i64,
    /// 0 for a tombstone.
    pub version: i64,
    pub lease: i64,
    /// Empty for a tombstone.
    pub value: Vec<u8>,
    pub deleted: bool,
}

/// Receives records from a source.
///
/// A source calls [`Sink::record`] once per revision it reads, in no
/// guaranteed order and possibly more than once for the same
/// `(key, mod_revision)`; the sink must treat repeats as no-ops. An error
/// stops the source, which returns it.
pub trait Sink {
    type Error;

    fn record(&mut self, record: Record) -> Result<(), Self::Error>;

    /// Every record up to `revision` has been pushed (a watch knows this
    /// from its responses and progress notifications).
    fn progress(&mut self, _revision: i64) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl Sink for Vec<Record> {
    type Error = std::convert::Infallible;

    fn record(&mut self, record: Record) -> Result<(), Self::Error> {
        self.push(record);
        Ok(())
    }
}
