//! `etcd-inspector follow`: start as `snapshot` does, then watch and store
//! every revision as it happens until `--duration` passes or a signal.

use super::common::{record_options, report_finished};
use super::Status;
use crate::cli::FollowArgs;
use crate::lifecycle::{self, FollowOptions};
use anyhow::Result;
use std::path::Path;

pub fn run(db: &Path, args: &FollowArgs) -> Result<Status> {
    let follow = FollowOptions {
        duration: args.duration,
        commit_every: args.commit_every,
        fetch: args.fetch.fetch.into(),
        listen: args.listen,
        stall_limit: args.stall_limit,
    };
    let finished = lifecycle::follow(
        db,
        &super::connection(&args.etcd)?,
        &record_options(&args.record)?,
        &follow,
    )?;
    report_finished(finished, args.record.fail_on)
}
