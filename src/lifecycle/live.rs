//! A run over a live etcd: the state at a pinned head (unless the database
//! already holds everything up to the previous head, which is still
//! retained), the history etcd retains since what is stored, and the check
//! of the stored history against etcd's counters.

use super::plan::{read_error, replay_all, Identity, Plan, Tail};
use super::progress::{phase, spinning, Position, Progress, Unit};
use super::restore;
use super::vanished::KeySet;
use super::{RecordOptions, Settings, Summary};
use crate::source::etcd::{Etcd, Pinned, Scope};
use crate::source::{Census, Read, Revision};
use crate::store::RunId;
use crate::store::{Backend, RunFact};
use anyhow::Result;
use indicatif::ProgressBar;

/// A connected etcd, the revision pinned for the run, etcd's compaction
/// revision and where the run's history starts.
pub(super) struct Planned {
    pub pinned: Pinned,
    pub compact: Revision,
    pub plan: Plan,
}

/// Pins the head and plans the run's history.
pub(super) async fn planned(
    store: &dyn Backend,
    etcd: &Etcd,
    options: &RecordOptions,
    settings: &Settings,
) -> Result<Planned> {
    let scope = Scope {
        prefix: options.prefix.as_bytes(),
    };
    let pinned = etcd.pin().await?;
    let compact = etcd.compaction_revision(scope, pinned.head).await?;
    let identity = Identity {
        id: &pinned.cluster_id,
        name: settings.cluster_name.as_ref(),
        certain: true,
    };
    let plan = Plan::new(store, &identity, compact, &options.prefix, &settings.filter)?;
    Ok(Planned {
        pinned,
        compact,
        plan,
    })
}

/// Reads a live etcd into the run, with the plan already made when given;
/// `None` when a signal stopped it.
pub(super) async fn read(
    store: &dyn Backend,
    run: RunId,
    etcd: &Etcd,
    made: Option<Planned>,
    options: &RecordOptions,
    settings: &Settings,
    bar: &ProgressBar,
) -> Result<Option<Summary>> {
    super::members::report(store, run, etcd)?;
    let read = async {
        let planned = match made {
            Some(p) => p,
            None => planned(store, etcd, options, settings).await?,
        };
        let version = etcd.version();
        if !version.is_empty() {
            store.record(run, RunFact::EtcdVersion(&version))?;
        }
        read_planned(store, run, etcd, &planned, options, settings, bar).await
    }
    .await;
    // Whatever the outcome, the run says which members served it.
    super::members::report(store, run, etcd)?;
    read
}

/// The reading part of [`read`], once connected and planned.
async fn read_planned(
    store: &dyn Backend,
    run: RunId,
    etcd: &Etcd,
    planned: &Planned,
    options: &RecordOptions,
    settings: &Settings,
    bar: &ProgressBar,
) -> Result<Option<Summary>> {
    let Planned {
        pinned,
        compact,
        plan,
    } = planned;
    let compact = *compact;
    let scope = Scope {
        prefix: options.prefix.as_bytes(),
    };
    let (cluster, mut gaps) = (plan.cluster, plan.gaps.clone());
    store.record(run, plan.target(pinned.head, compact))?;
    bar.set_message("checking that etcd still holds the stored history");
    let pinned_at = (pinned.head, compact);
    let recorded = (options.prefix.as_str(), &settings.filter);
    if let Some(restore) =
        restore::check_live(store, etcd, plan, pinned_at, recorded, options.page_size).await?
    {
        restore::refuse(store, run, restore)?;
    }
    let mut writer = settings.writer(store, cluster, run, &options.prefix)?;
    let mut sink = Progress {
        writer: &mut writer,
        bar: bar.clone(),
        seen: 0,
        census: None,
        position: Position::Unknown,
    };
    // etcd's own counters for every key live at the head, to check the
    // history against: from the state read, or, when the previous run's
    // head is still retained (every change since is in the replay, so
    // reading the values again would add nothing), from the keys alone.
    let live = if plan.continuous() {
        etcd.live_keys(scope, pinned.head, options.page_size).await?
    } else {
        bar.set_message(format!(
            "reading keys under {} at revision {}",
            options.prefix, pinned.head
        ));
        sink.census = Some(Census::default());
        let read = etcd
            .read_state(scope.prefix, pinned.head, options.page_size, &mut sink)
            .await
            .map_err(read_error)?;
        if read == Read::Stopped {
            return Ok(None);
        }
        sink.census.take().map(Census::into_live).unwrap_or_default()
    };
    phase(
        bar,
        format!("replaying revisions {}-{}", plan.from, pinned.head),
        (pinned.head - plan.from + 1).max(0) as u64,
        Unit::Revisions,
    );
    sink.position = Position::Revision(plan.from);
    crate::stop::stage("replay");
    let Some(from) = replay_all(etcd, scope, plan.from, pinned.head, &mut sink, &mut gaps).await? else {
        return Ok(None);
    };
    spinning(bar);
    bar.set_message("storing the last revisions and checking them against etcd's counters");
    let covered_from = plan.covered_from(from);
    // A run that does not continue the previous one read the whole state at
    // its head: what it holds tells which stored keys are gone.
    let held = (!plan.continuous()).then(|| KeySet::new(live.iter().map(|k| k.key.as_slice())));
    let tail = Tail {
        run,
        cluster,
        head: pinned.head,
        gaps: &gaps,
        covered_from,
        live: &live,
        prefix: &options.prefix,
        present: held.as_ref(),
    };
    tail.write(store, &mut writer, &settings.filter)?;
    Ok(Some(Summary {
        cluster,
        keys: live.iter().filter(|k| k.key.starts_with(scope.prefix)).count() as i64,
        head: pinned.head,
        history_from: from,
        gaps,
        covered_from,
    }))
}
