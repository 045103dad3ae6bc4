//! What a detector is: a name, what it reads, the severity its findings
//! usually have, and the code that turns what it reads into findings.
//! `analyze` runs every registered detector over one pass of the stored
//! history (see [`super::REGISTRY`]).

use super::clock::Clock;
use super::objects::Objects;
use super::Options;
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;
use crate::store::{Gap, Store, StoreError, ValueReader};

/// What a detector reads beyond each key's history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// One key's history at a time, oldest revision first.
    KeyHistory,
    /// Every key's history, then the whole cluster in revision order at the
    /// end (a sweep across keys).
    Sweep,
    /// The object set at the head (owners, finalizers, deletions) and the
    /// clock built from the cluster's own timestamps, after every key.
    ObjectsAndClock,
}

/// The cluster a detector is set up for.
pub struct Setup<'s> {
    pub store: &'s Store,
    pub cluster: i64,
    pub options: &'s Options,
}

/// One key's history and what a detector may read along with it.
pub struct KeyInput<'a, 's> {
    /// Oldest revision first.
    pub history: &'a [ObjectRevision],
    /// The revision ranges of this cluster lost to compaction.
    pub gaps: &'a [Gap],
    /// Stored values, read (and cached) only when a detector asks.
    pub values: &'a mut ValueReader<'s>,
    pub store: &'s Store,
}

/// What every detector may read once every key has been seen.
pub struct Whole<'a> {
    /// Filled only when a registered detector reads
    /// [`Reads::ObjectsAndClock`].
    pub objects: &'a Objects,
    pub clock: &'a Clock,
}

/// A detector at work on one cluster.
pub trait Detector {
    /// Looks at one key's history.
    fn key(&mut self, input: &mut KeyInput<'_, '_>, out: &mut Vec<Finding>) -> Result<(), StoreError> {
        let _ = (input, out);
        Ok(())
    }

    /// Once every key has been seen.
    fn finish(self: Box<Self>, whole: &Whole<'_>, out: &mut Vec<Finding>) {
        let _ = (whole, out);
    }
}

/// A detector as the registry lists it.
pub struct Registration {
    /// The name findings carry (`findings --detector NAME`).
    pub name: &'static str,
    pub reads: Reads,
    /// The severity its findings usually have (some findings rate higher
    /// or lower, as each detector's documentation says).
    pub severity: Severity,
    /// The lifecycle line of the report's summary its findings feed.
    pub topic: Option<&'static str>,
    /// Sets the detector up for one cluster.
    pub make: for<'s> fn(&Setup<'s>) -> Result<Box<dyn Detector + 's>, StoreError>,
}

/// A detector that judges each key's history on its own and keeps nothing.
pub struct PerKey(pub fn(&[ObjectRevision]) -> Option<Finding>);

impl Detector for PerKey {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, out: &mut Vec<Finding>) -> Result<(), StoreError> {
        out.extend((self.0)(input.history));
        Ok(())
    }
}

/// Sets up a [`PerKey`] detector.
pub fn per_key<'s>(
    detect: fn(&[ObjectRevision]) -> Option<Finding>,
) -> Result<Box<dyn Detector + 's>, StoreError> {
    Ok(Box::new(PerKey(detect)))
}
