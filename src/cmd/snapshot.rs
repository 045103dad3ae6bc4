//! `etcd-inspector snapshot`: a live etcd, an etcd data file or a downloaded
//! snapshot into the database, as one recorded run.

use super::common::{record_options, report_finished};
use super::Status;
use crate::cli::SnapshotArgs;
use crate::lifecycle::{self, Source};
use crate::source::etcd::Connection;
use anyhow::Result;
use std::path::Path;

pub fn run(db: &Path, args: &SnapshotArgs) -> Result<Status> {
    let source = match (&args.file, args.fetch_snapshot) {
        (Some(path), _) => Source::File {
            path: path.clone(),
            cluster_id: args.cluster_id.clone(),
        },
        (None, true) => Source::Fetch {
            connection: Connection::from(&args.etcd),
            save: args.save.clone(),
        },
        (None, false) => Source::Live(Connection::from(&args.etcd)),
    };
    let finished = lifecycle::snapshot(db, &source, &record_options(&args.record)?)?;
    report_finished(finished, args.record.fail_on)
}
