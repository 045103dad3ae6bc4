//! A run over an etcd data file (a copied `member/snap/db`, an `etcdctl
//! snapshot save` file, or the server's snapshot downloaded here), checked
//! against the file's own counters.

use super::plan::{read_error, Identity, Plan, Tail};
use super::progress::{phase, spinning, Position, Progress, Unit};
use super::restore;
use super::vanished::KeySet;
use super::wal::WalHistory;
use super::{Settings, Summary};
use crate::source::bolt::BoltDb;
use crate::source::db_file;
use crate::source::etcd::Etcd;
use crate::source::{Census, Read, Revision};
use crate::store::{Backend, RunFact};
use crate::store::{Gap, RunId};
use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use std::io::{Seek, Write};
use std::path::Path;

/// Which data file a run reads, and how.
pub(super) struct FileRead<'a> {
    pub path: &'a Path,
    /// Overrides the cluster id derived from the file.
    pub cluster_id: Option<&'a str>,
    /// Read what survives of a damaged file, recording the damage.
    pub salvage: bool,
    /// A member's WAL folder, whose history is read beside the file's.
    pub wal: Option<&'a Path>,
}

/// Reads the data file `file` names. `None` when a signal stopped the read.
pub(super) fn read(
    store: &dyn Backend,
    run: RunId,
    file: &FileRead<'_>,
    prefix: &str,
    settings: &Settings,
    bar: &ProgressBar,
) -> Result<Option<Summary>> {
    let path = file.path;
    bar.set_message(format!("opening {}", path.display()));
    let db = BoltDb::open(path)?;
    let info = match file.salvage {
        true => db_file::inspect_salvaging(&db)?,
        false => db_file::inspect(&db)?,
    };
    let cluster_id = file
        .cluster_id
        .map(str::to_string)
        .or(info.cluster_id.clone())
        .unwrap_or_else(|| format!("file:{}", &info.sha256[..16]));
    let compact = info.finished_compact.unwrap_or_default();
    let wal = match file.wal {
        Some(dir) => match WalHistory::check(&db, &info, dir, file.salvage, bar)? {
            Some(wal) => Some(wal),
            None => return Ok(None),
        },
        None => None,
    };
    // The log's committed entries after the db's consistent index move the
    // head on.
    let past_db = wal.as_ref().and_then(|w| w.recovered.past_db);
    let head = past_db.map_or(info.head(), |(_, last)| last.max(info.head()));
    let identity = Identity {
        id: &cluster_id,
        name: settings.cluster_name.as_ref(),
        certain: file.cluster_id.is_some(),
    };
    // A placed log holds history from its first write on.
    let starts = wal.as_ref().and_then(WalHistory::starts).unwrap_or(compact);
    let plan = Plan::new(store, &identity, starts, prefix, &settings.filter)?;
    let cluster = plan.cluster;
    store.record(run, plan.target(head, compact))?;
    let pinned_at = (head, compact);
    let recorded = (prefix, &settings.filter);
    let db_head = info.head();
    if let Some(restore) = restore::check_file(store, &db, &plan, pinned_at, db_head, recorded, file.salvage)?
    {
        restore::refuse(store, run, restore)?;
    }
    let read_file = RunFact::File {
        size: info.size,
        sha256: &info.sha256,
        first: info.first_revision,
        last: info.last_revision,
    };
    store.record(run, read_file)?;
    if let Some(wal) = &wal {
        store.record(run, RunFact::Wal(&wal.recovered))?;
    }
    let mut writer = settings.writer(store, cluster, run, prefix)?;
    let mut sink = Progress {
        writer: &mut writer,
        bar: bar.clone(),
        seen: 0,
        census: Some(Census::default()),
        position: Position::Unknown,
    };
    if let Some(wal) = &wal {
        spinning(bar);
        bar.set_message(format!("reading the history {} adds", wal.recovered.dir));
        if wal.push(plan.from, prefix.as_bytes(), &mut sink)? == Read::Stopped {
            return Ok(None);
        }
    }
    // A log placed from entry 1 gave every write the db holds, each checked
    // against it: the db's records need no second reading. One placed
    // after a raft snapshot did not give those before it.
    let placed = wal.as_ref().is_some_and(WalHistory::whole);
    crate::stop::stage("read");
    let damage = match placed {
        true => db_file::Damage::default(),
        false => match read_db(&db, &info, file, &plan, prefix, &mut sink, bar)? {
            Some(damage) => damage,
            None => return Ok(None),
        },
    };
    if let Some(wal) = &wal {
        if wal.push_past_db(db_head, prefix.as_bytes(), &mut sink)? == Read::Stopped {
            return Ok(None);
        }
    }
    if file.salvage {
        store.record(run, RunFact::Salvage(&damage))?;
        if !damage.is_none() {
            tracing::warn!("salvaged: {}", damage.describe());
        }
    }
    let live = sink.census.take().map(Census::into_live).unwrap_or_default();
    spinning(bar);
    bar.set_message("storing the last revisions and checking them against the file's counters");
    // Damaged ranges are history gaps: detectors say coverage was partial.
    let gaps: Vec<Gap> = plan
        .gaps
        .iter()
        .copied()
        .chain(damage.ranges.iter().map(|&(from_revision, to_revision)| Gap {
            from_revision,
            to_revision,
        }))
        .collect();
    let after_damage = damage.ranges.iter().map(|r| r.1.next()).max().unwrap_or_default();
    let covered_from = plan.covered_from(plan.from).max(after_damage);
    // A run that does not continue the previous one tells which stored keys
    // are gone by what the file holds live: what it read, and what it holds
    // from before that.
    let read_from = match placed {
        true => plan.from,
        false => plan.previous.map_or(Revision(0), |p| p.head.next()),
    };
    let earlier = match plan.continuous() || (file.salvage && plan.previous.is_some()) {
        true => None,
        false if read_from <= info.first_revision.unwrap_or_default() => Some(Vec::new()),
        false => Some(db_file::live_keys_before(&db, prefix.as_bytes(), read_from)?),
    };
    let held = earlier.as_ref().map(|earlier| {
        KeySet::new(
            live.iter()
                .map(|k| k.key.as_slice())
                .chain(earlier.iter().map(Vec::as_slice)),
        )
    });
    let tail = Tail {
        run,
        cluster,
        head,
        gaps: &gaps,
        covered_from,
        live: &live,
        prefix,
        present: held.as_ref(),
    };
    tail.write(store, &mut writer, &settings.filter)?;
    let keys = store.live_keys(cluster, prefix.as_bytes(), head)?;
    Ok(Some(Summary {
        cluster,
        keys,
        head,
        history_from: plan.from,
        gaps: plan.gaps,
        covered_from,
    }))
}

/// Reads the data file's revisions into `sink`, as `file` says (salvaging
/// or not), from after what earlier runs stored: each key's latest below
/// the compaction point etcd kept is read too. The damage salvage worked
/// around; `None` when a signal stopped the read.
fn read_db(
    db: &BoltDb,
    info: &db_file::FileInfo,
    file: &FileRead<'_>,
    plan: &Plan,
    prefix: &str,
    sink: &mut Progress<'_, '_>,
    bar: &ProgressBar,
) -> Result<Option<db_file::Damage>> {
    let (path, head) = (file.path, info.head());
    let read_from = plan.previous.map_or(Revision(0), |p| p.head.next());
    let first = info.first_revision.unwrap_or_default().max(read_from);
    // Read in key order: the bar counts records, of all the file holds on a
    // first read, else of the revision range.
    let total = match read_from <= info.first_revision.unwrap_or_default() {
        true => info.revisions,
        false => (head - first + 1).max(0) as u64,
    };
    phase(
        bar,
        format!("reading revisions {first}-{head} from {}", path.display()),
        total,
        Unit::Revisions,
    );
    sink.position = Position::Records;
    let mut damage = db_file::Damage::default();
    let read = match file.salvage {
        true => {
            let (read, found) =
                db_file::salvage_revisions(db, prefix.as_bytes(), read_from, sink).map_err(read_error)?;
            damage = found;
            read
        }
        false => {
            db_file::read_revisions(db, prefix.as_bytes(), read_from, total, sink).map_err(read_error)?
        }
    };
    Ok((read != Read::Stopped).then_some(damage))
}

/// Streams the server's snapshot into `dest`; returns the cluster id.
pub(super) async fn fetch(
    store: &dyn Backend,
    run: RunId,
    etcd: &Etcd,
    dest: &Path,
    bar: &ProgressBar,
) -> Result<String> {
    super::members::report(store, run, etcd)?;
    let downloaded = download(etcd, dest, bar).await;
    super::members::report(store, run, etcd)?;
    downloaded
}

/// The download part of [`fetch`], once connected.
async fn download(etcd: &Etcd, dest: &Path, bar: &ProgressBar) -> Result<String> {
    let pinned = etcd.pin().await?;
    let mut file =
        std::fs::File::create(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    let mut done = 0u64;
    let written = etcd
        .download_snapshot(&mut |chunk, remaining, from_start| {
            if from_start {
                // A download cut off starts again, from another member.
                file.set_len(0)?;
                file.seek(std::io::SeekFrom::Start(0))?;
                done = 0;
                let total = chunk.len() as u64 + remaining;
                phase(bar, "downloading the snapshot".into(), total, Unit::Bytes);
                crate::stop::stage("download");
            }
            done += chunk.len() as u64;
            bar.set_position(done);
            file.write_all(chunk)
        })
        .await
        .with_context(|| format!("downloading the snapshot into {}", dest.display()))?;
    spinning(bar);
    file.sync_all()
        .with_context(|| format!("writing {}", dest.display()))?;
    if written % 512 != crate::source::bolt::TRAILER as u64 {
        bail!("the server's snapshot ({written} bytes) has no SHA-256 trailer; refusing an unverifiable download");
    }
    Ok(pinned.cluster_id)
}
