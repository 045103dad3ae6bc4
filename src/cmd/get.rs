//! `etcd-inspector get KEY`: read one key from a live etcd and decode it.

use super::common::show;
use super::Status;
use crate::cli::GetArgs;
use crate::decode::key::key_of;
use crate::decode::names::{parse_object, Catalog, NameError, ObjectSpec};
use crate::source::etcd::Connection;
use anyhow::{bail, Context, Result};
use std::io::Write;

/// The key OBJECT names: a built-in kind by any of its names, or a custom
/// resource as `PLURAL.GROUP/NAME` (namespaced when -n is given).
fn key(args: &GetArgs) -> Result<String> {
    let t = &args.target;
    let (word, name) = match parse_object(&t.object, t.name.as_deref())? {
        ObjectSpec::Key(key) => return Ok(key),
        ObjectSpec::Named { word, name } => (word, name),
    };
    let prefix = &args.view.prefix;
    match Catalog::built_in().object(&word, &name, t.namespace.as_deref()) {
        Ok(o) => Ok(key_of(
            prefix,
            &o.resource.group,
            &o.resource.resource,
            o.namespace.as_deref(),
            &name,
        )),
        Err(NameError::Unknown { .. }) if word.split_once('.').is_some_and(|(_, g)| g.contains('.')) => {
            let (resource, group) = word.split_once('.').expect("checked");
            Ok(key_of(prefix, group, resource, t.namespace.as_deref(), &name))
        }
        Err(e) => Err(e.into()),
    }
}

pub fn run(args: &GetArgs) -> Result<Status> {
    let key = key(args)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let kv = runtime.block_on(async {
        let etcd = Connection::from(&args.etcd).connect().await?;
        let got = etcd.get(key.as_bytes(), args.rev).await;
        for warning in etcd.take_events().iter().filter_map(|e| e.warning()) {
            eprintln!("warning: {warning}");
        }
        got
    })?;
    let Some(kv) = kv else {
        let at = if args.rev > 0 {
            format!(" at revision {}", args.rev)
        } else {
            String::new()
        };
        bail!("key {key} not found{at}");
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
    show(&key, &kv.value, Some(&key), Some(kv.mod_revision), &args.view)
}
