//! `etcd-inspector snapshot`: a live etcd, an etcd data file or a downloaded
//! snapshot into the database, as one recorded run.

use super::common::{record_options, report_finished};
use super::Status;
use crate::cli::FetchMode;
use crate::cli::SnapshotArgs;
use crate::lifecycle::{self, Source};
use anyhow::{bail, Result};
use std::path::Path;

pub fn run(db: &Path, args: &SnapshotArgs) -> Result<Status> {
    let fetch = match args.fetch_snapshot {
        true => FetchMode::Snapshot,
        false => args.fetch.fetch,
    };
    let offline = args.file.is_some() || args.data_dir.is_some();
    if args.save.is_some() && (offline || fetch == FetchMode::Watch) {
        bail!("--save keeps a downloaded snapshot: it needs --fetch snapshot or auto, not --file, --data-dir or --fetch watch");
    }
    let member = args.data_dir.as_ref().map(|dir| dir.join("member"));
    let file = args
        .file
        .clone()
        .or(member.as_ref().map(|m| m.join("snap").join("db")));
    let source = match file {
        Some(path) => Source::File {
            path,
            cluster_id: args.cluster_id.clone(),
            salvage: args.salvage,
            wal: args.wal_dir.clone().or(member.map(|m| m.join("wal"))),
        },
        None => Source::Live {
            connection: super::connection(&args.etcd)?,
            fetch: fetch.into(),
            save: args.save.clone(),
        },
    };
    let finished = lifecycle::snapshot(db, &source, &record_options(&args.record)?)?;
    report_finished(finished, args.record.fail_on)
}
