//! The baseline side of `BENCH_CASE=stage` (issue 28, point 4): commit
//! `33dba2e`'s per-revision stage, as its `store::prepare` ran it minus the
//! compression (decode to a `serde_json::Value`, semantic form, canonical
//! JSON with field hashes, semantic and raw value hashes, facts, repeated
//! entries), over every revision of a db file in (key, revision) order on one
//! thread, as `BENCH_CASE=stage` times today's stage. It builds against that
//! commit's library, not this one, so cargo does not build it here:
//!
//! ```sh
//! git worktree add ../base33 33dba2e
//! cp benches/baseline/stage_33dba2e.rs ../base33/examples/stage.rs
//! (cd ../base33 && cargo run --release --example stage -- FILE 3)
//! BENCH_CASE=stage cargo run --release --example bench -- FILE 3
//! ```
use etcd_inspector::canon::duplicates::duplicate_entries;
use etcd_inspector::canon::facts::object_facts_with_spec_hash;
use etcd_inspector::canon::keyed_hash::ValueHasher;
use etcd_inspector::canon::semantic::{into_semantic_form, serialize_with_field_hashes, Sensitivity};
use etcd_inspector::canon::sensitive::{is_secret, is_sensitive_resource};
use etcd_inspector::decode::key::SpecialKey;
use etcd_inspector::decode::{decode_value, parse_key, Outcome};
use etcd_inspector::source::bolt::BoltDb;
use etcd_inspector::source::{db_file, Record};
use sha2::{Digest, Sha256};
use std::hint::black_box;
use std::time::Instant;

fn stage(r: &Record, hasher: &ValueHasher, sens: &Sensitivity) {
    let key = String::from_utf8_lossy(&r.key);
    let parsed = parse_key(&key, "/registry/").ok();
    let special = parsed.as_ref().and_then(|p| p.special);
    let sensitive = parsed
        .as_ref()
        .is_some_and(|p| is_sensitive_resource(&p.group, &p.resource));
    if r.deleted {
        return;
    }
    let object = match special {
        Some(SpecialKey::CompactRevision) => None,
        _ => match decode_value(&r.value) {
            Ok(Outcome::Decoded(d)) => {
                let meta = d.object.get("metadata");
                let text = |k: &str| {
                    meta.and_then(|m| m.get(k))
                        .and_then(|v| v.as_str())
                        .filter(|v| !v.is_empty())
                        .map(str::to_string)
                };
                black_box((
                    text("namespace"),
                    text("name"),
                    text("uid"),
                    meta.and_then(|m| m.get("generation")).and_then(|v| v.as_i64()),
                    d.api_version,
                    d.kind,
                ));
                Some(d.object)
            }
            other => {
                black_box(other.is_ok());
                None
            }
        },
    };
    black_box(hasher.hash(&r.value, sensitive));
    let Some(object) = object else { return };
    let duplicates = Some(duplicate_entries(&object))
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::to_string(&d).unwrap());
    let has_spec = object.get("spec").is_some();
    let mut facts = object_facts_with_spec_hash(&object, None);
    let secret = sensitive || is_secret(&object);
    let managed = object
        .pointer("/metadata/managedFields")
        .map(|m| serde_json::to_vec(m).unwrap());
    let form = into_semantic_form(object);
    let keyed = sens.covers_any(secret, &form);
    let (canonical, fields) = serialize_with_field_hashes(&form, 2, secret, sens, hasher);
    let hash = hasher.hash(&canonical, keyed).0;
    facts.spec_hash = has_spec.then(|| match fields.iter().find(|(p, _)| p == "spec") {
        Some((_, h)) => h.to_vec(),
        None => Sha256::digest(b"{}")[..16].to_vec(),
    });
    black_box((duplicates, facts, managed, canonical, fields, hash));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(2).map_or(5, |r| r.parse().unwrap());
    let bolt = BoltDb::open(std::path::Path::new(&args[1])).unwrap();
    let mut records: Vec<Record> = Vec::new();
    db_file::read_revisions(&bolt, b"/registry/", 0, &mut records).unwrap();
    records.sort_by(|a, b| (a.key.as_slice(), a.mod_revision).cmp(&(b.key.as_slice(), b.mod_revision)));
    let hasher = ValueHasher::new([7; 32]);
    let sens = Sensitivity::default();
    for _ in 0..rounds {
        let (mut all, mut pods, mut n_pods) = (0.0, 0.0, 0);
        for r in &records {
            let t = Instant::now();
            stage(r, &hasher, &sens);
            let s = t.elapsed().as_secs_f64();
            all += s;
            if r.key.starts_with(b"/registry/pods/") {
                pods += s;
                n_pods += 1;
            }
        }
        println!(
            "stage: {} revisions {:.3} s; {} pod revisions {:.3} s ({:.1} us each)",
            records.len(),
            all,
            n_pods,
            pods,
            pods / n_pods as f64 * 1e6
        );
    }
}
