//! `etcd-inspector get OBJECT`: read one key from a live etcd and decode it.

use super::common::show;
use super::Status;
use crate::cli::GetArgs;
use crate::decode::key::{key_of, parse_key};
use crate::decode::names::{parse_object, Catalog, NameError, ObjectSpec, CRDS};
use crate::ingest::open::{open, KeyClass, Opened};
use crate::source::etcd::Etcd;
use crate::source::{Record, Revision};
use anyhow::{bail, Context, Result};
use std::io::Write;

/// CRDs read per request.
const PAGE: i64 = 500;

/// The key OBJECT names: a built-in kind by any of its names, else a custom
/// resource by the names of a CRD etcd holds.
async fn key(args: &GetArgs, etcd: &Etcd) -> Result<String> {
    let t = &args.target;
    let (word, name) = match parse_object(&t.object, t.name.as_deref())? {
        ObjectSpec::Key(key) => return Ok(key),
        ObjectSpec::Named { word, name } => (word, name),
    };
    let ns = t.namespace.as_deref();
    let o = match Catalog::built_in().object(&word, &name, ns) {
        Err(NameError::Unknown { .. }) => live_catalog(etcd, &args.view.prefix)
            .await?
            .object(&word, &name, ns)?,
        found => found?,
    };
    let (group, resource) = (&o.resource.group, &o.resource.resource);
    Ok(key_of(
        &args.view.prefix,
        group,
        resource,
        o.namespace.as_deref(),
        &name,
    ))
}

/// The built-in types and those of every CRD etcd holds now.
async fn live_catalog(etcd: &Etcd, prefix: &str) -> Result<Catalog> {
    let crds = key_of(prefix, CRDS.0, CRDS.1, None, "");
    let head = etcd.pin().await?.head;
    let mut records: Vec<Record> = Vec::new();
    etcd.read_state(crds.as_bytes(), head, PAGE, &mut records)
        .await
        .with_context(|| format!("reading the CRDs under {crds}"))?;
    let mut catalog = Catalog::built_in();
    for r in records.iter().filter(|r| r.key.starts_with(crds.as_bytes())) {
        let key = String::from_utf8_lossy(&r.key);
        let class = KeyClass::of(parse_key(&key, prefix).ok().as_ref(), None);
        if let Opened::Decoded { decoded, .. } = open(&class, &r.key, &r.value, None) {
            catalog.add_crd(&decoded.object);
        }
    }
    Ok(catalog)
}

pub fn run(args: &GetArgs) -> Result<Status> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let (key, kv) = runtime.block_on(async {
        let etcd = super::connection(&args.etcd)?.connect().await?;
        let key = key(args, &etcd).await;
        let got = match &key {
            Ok(key) => etcd
                .get(key.as_bytes(), args.rev)
                .await
                .map_err(anyhow::Error::from),
            Err(_) => Ok(None),
        };
        for warning in etcd.take_events().iter().filter_map(|e| e.warning()) {
            tracing::warn!("{warning}");
        }
        anyhow::Ok((key?, got?))
    })?;
    let Some(kv) = kv else {
        let at = if args.rev > Revision(0) {
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
