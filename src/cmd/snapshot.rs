//! `etcd-inspector snapshot`: a live etcd, an etcd data file or a downloaded
//! snapshot into the database, as one recorded run.

use super::common::{record_options, report_finished};
use super::Status;
use crate::cli::FetchMode;
use crate::cli::SnapshotArgs;
use crate::lifecycle::{self, Source};
use crate::source::etcd::Connection;
use anyhow::{bail, Result};
use std::path::Path;

pub fn run(db: &Path, hash_key_file: Option<&Path>, args: &SnapshotArgs) -> Result<Status> {
    let fetch = match args.fetch_snapshot {
        true => FetchMode::Snapshot,
        false => args.fetch.fetch,
    };
    if args.save.is_some() && (args.file.is_some() || fetch == FetchMode::Watch) {
        bail!("--save keeps a downloaded snapshot: it needs --fetch snapshot or auto, not --file or --fetch watch");
    }
    let source = match &args.file {
        Some(path) => Source::File {
            path: path.clone(),
            cluster_id: args.cluster_id.clone(),
            salvage: args.salvage,
        },
        None => Source::Live {
            connection: Connection::from(&args.etcd),
            fetch: fetch.into(),
            save: args.save.clone(),
        },
    };
    let finished = lifecycle::snapshot(db, &source, &record_options(&args.record, hash_key_file)?)?;
    report_finished(finished, args.record.fail_on)
}
