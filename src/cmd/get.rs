//! `etcd-inspector get KEY`: read one key from a live etcd and decode it.

use super::common::show;
use super::Status;
use crate::cli::GetArgs;
use crate::source::etcd::Connection;
use anyhow::{bail, Context, Result};
use std::io::Write;

pub fn run(args: &GetArgs) -> Result<Status> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let kv = runtime.block_on(async {
        let etcd = Connection::from(&args.etcd).connect().await?;
        let got = etcd.get(args.etcd_key.as_bytes(), args.rev).await;
        for warning in etcd.take_events().iter().filter_map(|e| e.warning()) {
            tracing::warn!("{warning}");
        }
        got
    })?;
    let Some(kv) = kv else {
        let at = if args.rev > 0 {
            format!(" at revision {}", args.rev)
        } else {
            String::new()
        };
        bail!("key {} not found{at}", args.etcd_key);
    };
    writeln!(
        std::io::stderr(),
        "revision: create {} mod {} version {}{}",
        kv.create_revision,
        kv.mod_revision,
        kv.version,
        if kv.lease != 0 {
            format!(" lease {:x}", kv.lease)
        } else {
            String::new()
        }
    )?;
    show(
        &args.etcd_key,
        &kv.value,
        Some(&args.etcd_key),
        Some(kv.mod_revision),
        &args.view,
    )
}
