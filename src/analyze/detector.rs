//! What a detector is: a name, what it reads, the severity its findings
//! usually have, and the code that turns what it reads into findings.
//! `analyze` runs every registered detector over one pass of the stored
//! history (see [`super::REGISTRY`]).

use super::clock::Clock;
use super::objects::Objects;
use super::Options;
use crate::store::audit::{AuditedObject, AuditedRequest};
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;
use crate::store::ClusterId;
use crate::store::{AnalysisReads, FindingsWriter, Gap, StoreError, ValueReader};
use std::collections::BTreeMap;
use std::time::Duration;

/// How many findings each detector and each severity had.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: usize,
    pub by_detector: BTreeMap<&'static str, usize>,
    pub by_severity: BTreeMap<Severity, usize>,
}

impl Counts {
    fn count(&mut self, f: &Finding) {
        self.total += 1;
        *self.by_detector.entry(f.detector).or_default() += 1;
        *self.by_severity.entry(f.severity).or_default() += 1;
    }

    /// Adds another cluster's counts.
    pub fn add(&mut self, other: &Counts) {
        self.total += other.total;
        for (d, n) in &other.by_detector {
            *self.by_detector.entry(d).or_default() += n;
        }
        for (s, n) in &other.by_severity {
            *self.by_severity.entry(*s).or_default() += n;
        }
    }
}

/// Where detectors put their findings: straight into the store as
/// `analyze` finds them (memory does not grow with their number), or kept
/// in memory for a test to look at.
pub struct Findings<'w> {
    writer: Option<Box<dyn FindingsWriter + 'w>>,
    kept: Vec<Finding>,
    counts: Counts,
    /// The first failure to store one; the rest are dropped after it.
    failure: Option<StoreError>,
}

impl<'w> Findings<'w> {
    /// Findings written by `writer` as they come.
    pub fn into_store(writer: Box<dyn FindingsWriter + 'w>) -> Findings<'w> {
        Findings {
            writer: Some(writer),
            kept: Vec::new(),
            counts: Counts::default(),
            failure: None,
        }
    }

    /// Findings kept in memory ([`Findings::into_kept`]).
    pub fn kept() -> Findings<'static> {
        Findings {
            writer: None,
            kept: Vec::new(),
            counts: Counts::default(),
            failure: None,
        }
    }

    pub fn push(&mut self, finding: Finding) {
        self.counts.count(&finding);
        match &mut self.writer {
            Some(w) if self.failure.is_none() => {
                if let Err(e) = w.put(&finding) {
                    self.failure = Some(e);
                }
            }
            Some(_) => {}
            None => self.kept.push(finding),
        }
    }

    pub fn extend(&mut self, findings: impl IntoIterator<Item = Finding>) {
        for f in findings {
            self.push(f);
        }
    }

    /// How many were found so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Commits what was written (the first failure to write, if any).
    pub fn commit(self) -> Result<Counts, StoreError> {
        if let Some(e) = self.failure {
            return Err(e);
        }
        if let Some(w) = self.writer {
            w.commit()?;
        }
        Ok(self.counts)
    }

    /// What a kept set holds.
    pub fn into_kept(self) -> Vec<Finding> {
        self.kept
    }

    /// The findings `detect` puts, kept (for tests).
    #[cfg(test)]
    pub fn of(detect: impl FnOnce(&mut Findings)) -> Vec<Finding> {
        let mut out = Findings::kept();
        detect(&mut out);
        out.into_kept()
    }
}

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
    /// Each object's audited write requests (`attribute`), after every key.
    AuditRequests,
}

/// The cluster a detector is set up for.
pub struct Setup<'s> {
    pub store: &'s dyn AnalysisReads,
    pub cluster: ClusterId,
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
    pub store: &'s dyn AnalysisReads,
}

impl KeyInput<'_, '_> {
    /// The error for stored data of this key that does not read (`what`
    /// says which and why): the database is damaged.
    pub fn damaged(&self, what: String) -> StoreError {
        StoreError::Damaged {
            path: self.store.location().to_path_buf(),
            what,
        }
    }
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
    fn key(&mut self, input: &mut KeyInput<'_, '_>, out: &mut Findings) -> Result<(), StoreError> {
        let _ = (input, out);
        Ok(())
    }

    /// Looks at one object's audited write requests, in the order they
    /// were answered.
    fn audited(&mut self, object: &AuditedObject, requests: &[AuditedRequest], out: &mut Findings) {
        let _ = (object, requests, out);
    }

    /// Once every key has been seen.
    fn finish(self: Box<Self>, whole: &Whole<'_>, out: &mut Findings) {
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
    pub make: Make,
}

/// How a detector is set up for one cluster.
#[derive(Clone, Copy)]
pub enum Make {
    /// Judges each key's history on its own and keeps nothing.
    PerKey(fn(&[ObjectRevision]) -> Option<Finding>),
    /// Judges the object set at the head by the clock, given how long is
    /// too long (`--stuck-after`).
    AtHead(fn(&Objects, &Clock, Duration, &mut Findings)),
    /// Judges each object's audited write requests on their own.
    Audited(fn(&AuditedObject, &[AuditedRequest], &mut Findings)),
    /// Anything else: the detector, set up.
    With(for<'s> fn(&Setup<'s>) -> Result<Box<dyn Detector + 's>, StoreError>),
}

impl Registration {
    /// A detector that judges each key's history on its own.
    pub const fn per_key(
        name: &'static str,
        severity: Severity,
        detect: fn(&[ObjectRevision]) -> Option<Finding>,
    ) -> Registration {
        Registration {
            name,
            reads: Reads::KeyHistory,
            severity,
            topic: None,
            make: Make::PerKey(detect),
        }
    }

    /// A detector of the object set at the head, judged by the clock.
    pub const fn at_head(
        name: &'static str,
        severity: Severity,
        topic: &'static str,
        detect: fn(&Objects, &Clock, Duration, &mut Findings),
    ) -> Registration {
        Registration {
            name,
            reads: Reads::ObjectsAndClock,
            severity,
            topic: Some(topic),
            make: Make::AtHead(detect),
        }
    }

    /// A detector of each object's audited write requests.
    pub const fn audited(
        name: &'static str,
        severity: Severity,
        detect: fn(&AuditedObject, &[AuditedRequest], &mut Findings),
    ) -> Registration {
        Registration {
            name,
            reads: Reads::AuditRequests,
            severity,
            topic: None,
            make: Make::Audited(detect),
        }
    }

    /// The detector, set up for one cluster.
    pub fn start<'s>(&self, setup: &Setup<'s>) -> Result<Box<dyn Detector + 's>, StoreError> {
        match self.make {
            Make::PerKey(detect) => Ok(Box::new(PerKey(detect))),
            Make::AtHead(detect) => Ok(Box::new(AtHead {
                detect,
                after: setup.options.stuck_after,
            })),
            Make::Audited(detect) => Ok(Box::new(Audited(detect))),
            Make::With(make) => make(setup),
        }
    }
}

struct Audited(fn(&AuditedObject, &[AuditedRequest], &mut Findings));

impl Detector for Audited {
    fn audited(&mut self, object: &AuditedObject, requests: &[AuditedRequest], out: &mut Findings) {
        (self.0)(object, requests, out);
    }
}

struct PerKey(fn(&[ObjectRevision]) -> Option<Finding>);

impl Detector for PerKey {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, out: &mut Findings) -> Result<(), StoreError> {
        out.extend((self.0)(input.history));
        Ok(())
    }
}

struct AtHead {
    detect: fn(&Objects, &Clock, Duration, &mut Findings),
    after: Duration,
}

impl Detector for AtHead {
    fn finish(self: Box<Self>, whole: &Whole<'_>, out: &mut Findings) {
        (self.detect)(whole.objects, whole.clock, self.after, out);
    }
}
