//! The cluster's clock as the store keeps it: anchors (what one source says
//! about when one revision was written) folded into an envelope that bounds
//! every revision with one lookup each way.

use jiff::{SignedDuration, Timestamp};

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

/// Where `analyze` sends the anchors it reads from the stored objects.
pub type AnchorSink<'a> = dyn FnMut(Anchor) -> Result<(), crate::store::StoreError> + 'a;

/// The clock's write side.
pub trait ClockRecorder {
    /// Rebuilds the clock of `cluster` from the anchors `gather` sends to
    /// its sink, with the stored marks (Lease renewals) and the times of
    /// the audit requests attributed to revisions.
    fn rebuild_clock(
        &self,
        cluster: i64,
        gather: &mut dyn FnMut(&mut AnchorSink<'_>) -> Result<(), crate::store::StoreError>,
    ) -> Result<(), crate::store::StoreError>;
}
