//! Where a run's history starts, how it is replayed across a compaction
//! that overtakes it, and the self-check every run ends with.

use super::progress::Progress;
use super::vanished::{KeySet, Vanished};
use super::RevisionWriter;
use crate::source::etcd::{Etcd, Replay, Scope};
use crate::source::filter::ResourceFilter;
use crate::source::{LiveKey, ReadError, Revision};
use crate::store::cluster::{Cluster, ClusterName};
use crate::store::restore::ClusterChange;
use crate::store::ClusterId;
use crate::store::{Backend, RunFact};
use crate::store::{Gap, Previous, RunId};
use anyhow::Result;

/// A failed read as the error it carries, so callers can tell a database
/// failure from a source's.
pub(super) fn read_error<E>(e: ReadError<E>) -> anyhow::Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    match e {
        ReadError::Etcd(e) => e.into(),
        ReadError::File(e) => e.into(),
        ReadError::Sink(e) => e.into(),
    }
}

/// Where history starts for this run, and what compaction lost since what
/// earlier runs of the same cluster, prefix and resource filter stored.
pub(super) struct Plan {
    pub cluster: ClusterId,
    pub previous: Option<Previous>,
    pub from: Revision,
    pub gaps: Vec<Gap>,
    /// The named cluster's etcd cluster id when it was another: the run
    /// reads a different etcd than the one its cluster's history is of.
    pub etcd_cluster: Option<ClusterChange>,
}

/// The cluster a run reads, as the run knows it.
pub(super) struct Identity<'a> {
    /// etcd's cluster id (hex), or what stands for it.
    pub id: &'a str,
    /// The name `--cluster` gives it, when given.
    pub name: Option<&'a ClusterName>,
    /// Whether `id` is certainly etcd's own (a member's answer, or
    /// `--cluster-id`), not one derived from a data file's member list,
    /// which changes with every membership change.
    pub certain: bool,
}

impl Plan {
    /// The plan of a run of the cluster `identity` names, which it names
    /// (saying so when that renames it). A name whose cluster has a
    /// complete run of another etcd cluster id plans to continue that run,
    /// with the change noted, so the run can record it as a restore.
    pub fn new(
        store: &dyn Backend,
        identity: &Identity<'_>,
        compact: Revision,
        prefix: &str,
        filter: &ResourceFilter,
    ) -> Result<Plan> {
        let everything = ResourceFilter::default().describe();
        let filter = filter.describe();
        if let Some((named, previous)) = replaced(store, identity, prefix, &filter, &everything)? {
            return Ok(Plan {
                cluster: named.row,
                previous: Some(previous),
                from: previous.head.next(),
                gaps: Vec::new(),
                etcd_cluster: Some(ClusterChange {
                    from: named.etcd_cluster_id,
                    to: identity.id.to_string(),
                }),
            });
        }
        let (cluster, renamed) = store.cluster(identity.id, identity.name)?;
        if let (Some(old), Some(new)) = (renamed, identity.name) {
            tracing::warn!("etcd cluster {} was named {old}; it is {new} now", identity.id);
        }
        let previous = store.previous_head(cluster, prefix, &filter, &everything)?;
        let mut gaps = Vec::new();
        let from = match previous {
            Some(p) if compact > p.head.next() => {
                gaps.push(Gap {
                    from_revision: p.head.next(),
                    to_revision: compact.prev(),
                });
                compact
            }
            Some(p) => p.head.next(),
            None => compact.max(Revision(1)),
        };
        Ok(Plan {
            cluster,
            previous,
            from,
            gaps,
            etcd_cluster: None,
        })
    }

    /// What the run pinned, to record with it: its cluster, the `head` it
    /// reads to, etcd's `compact` revision and where this plan starts.
    pub fn target(&self, head: Revision, compact: Revision) -> RunFact<'static> {
        RunFact::Target {
            cluster: self.cluster,
            head,
            compact,
            history_from: self.from,
        }
    }

    /// Whether the previous run's head is still retained, so this run's
    /// history continues it without a gap.
    pub fn continuous(&self) -> bool {
        self.previous.is_some() && self.gaps.is_empty()
    }

    /// From where the stored history is unbroken once this run replayed
    /// from `history_from` (later than planned if compaction overtook it).
    pub fn covered_from(&self, history_from: Revision) -> Revision {
        match self.previous {
            Some(p) if self.gaps.is_empty() && history_from == self.from => p.covered_from,
            _ => history_from,
        }
    }
}

/// The cluster `identity`'s name belongs to, with the complete run of it
/// this run would continue, when that cluster is of another etcd cluster
/// id and `identity`'s id is certain. Otherwise the name is left to
/// [`crate::store::RunRecorder::cluster`], which refuses a name another
/// cluster has.
fn replaced(
    store: &dyn Backend,
    identity: &Identity<'_>,
    prefix: &str,
    filter: &str,
    everything: &str,
) -> Result<Option<(Cluster, Previous)>> {
    let Some(name) = identity.name.filter(|_| identity.certain) else {
        return Ok(None);
    };
    let clusters = store.clusters()?;
    let Some(named) = clusters.into_iter().find(|c| c.name.as_ref() == Some(name)) else {
        return Ok(None);
    };
    if named.etcd_cluster_id.eq_ignore_ascii_case(identity.id) {
        return Ok(None);
    }
    let previous = store.previous_head(named.row, prefix, filter, everything)?;
    Ok(previous.map(|p| (named, p)))
}

/// Replays `scope` from `from` to `head`, starting again after a compaction
/// that overtook the replay (recording what it lost); returns where history
/// really started, or `None` when a signal stopped it.
pub(super) async fn replay_all(
    etcd: &Etcd,
    scope: Scope<'_>,
    mut from: Revision,
    head: Revision,
    sink: &mut Progress<'_, '_>,
    gaps: &mut Vec<Gap>,
) -> Result<Option<Revision>> {
    loop {
        match etcd.replay(scope, from, head, sink).await.map_err(read_error)? {
            Replay::Complete => return Ok(Some(from)),
            Replay::Stopped => return Ok(None),
            Replay::Compacted {
                missing_from,
                retained_from,
            } => {
                if retained_from > missing_from {
                    gaps.push(Gap {
                        from_revision: missing_from,
                        to_revision: retained_from.prev(),
                    });
                }
                from = retained_from;
            }
        }
    }
}

/// What every run does once its source is read, live or from a file: the
/// last revisions stored, the gaps recorded, the coverage set, the deletes
/// compaction hid given their tombstones (see [`super::vanished`]), and the
/// stored history checked against the source's own per-key counters for
/// every key live at the head (see [`Store::history_shortfall`]); a
/// disagreement fails the run.
pub(super) struct Tail<'a> {
    pub run: RunId,
    pub cluster: ClusterId,
    pub head: Revision,
    pub gaps: &'a [Gap],
    pub covered_from: Revision,
    pub live: &'a [LiveKey],
    pub prefix: &'a str,
    /// Which keys the source holds live at the head, when the run's history
    /// does not continue the previous run's (so deletes may be hidden).
    pub present: Option<&'a KeySet<'a>>,
}

impl Tail<'_> {
    pub(super) fn write(
        &self,
        store: &dyn Backend,
        writer: &mut RevisionWriter,
        filter: &ResourceFilter,
    ) -> Result<()> {
        crate::stop::stage("store");
        writer.flush()?;
        for gap in self.gaps {
            store.record(
                self.run,
                RunFact::Gap {
                    cluster: self.cluster,
                    gap: *gap,
                },
            )?;
        }
        store.record(self.run, RunFact::Coverage(self.covered_from))?;
        crate::stop::stage("check");
        // A run a signal ends is interrupted: what it stored is kept, and
        // there is no completeness to check.
        if crate::stop::requested() {
            return Ok(());
        }
        if let Some(present) = self.present {
            let vanished = Vanished {
                run: self.run,
                cluster: self.cluster,
                head: self.head,
                covered_from: self.covered_from,
                prefix: self.prefix,
                filter,
                present,
            };
            match vanished.infer(store)? {
                0 => {}
                n => tracing::warn!(
                    "{n} object(s) stored by earlier runs were deleted in revisions compaction removed before this run: \
                     each has a tombstone at the last revision its delete can have had (`history` says between which revisions)"
                ),
            }
        }
        let shortfall = store.history_shortfall(self.cluster, self.covered_from, self.live, &|key| {
            filter.records_key(key, self.prefix)
        })?;
        match shortfall {
            Some(shortfall) => Err(shortfall.into()),
            None => Ok(()),
        }
    }
}
