//! What decryption costs: one etcd holds the same keyspace three times,
//! under `/registry` in plaintext and under two other prefixes with every
//! Secret encrypted (aesgcm; aescbc and secretbox), and each is read by
//! `snapshot --prefix ...`: the plaintext run is the baseline, measured in
//! the same run. Secrets are a third of the objects (service-account
//! tokens, TLS pairs, dockerconfigs of a few KiB), more than most clusters
//! hold, so the overhead shown is an upper bound.
//!
//! Run: `cargo build --release && cargo run --release --example
//! bench_encryption -- [OBJECTS] [UPDATES] [REPEATS]` (defaults 3000 3 3).
//! Asserts nothing: it measures.

#[path = "../tests/it/util/encrypt.rs"]
#[allow(dead_code)]
mod encrypt;
#[path = "../tests/it/util/etcd.rs"]
#[allow(dead_code)]
mod etcd;

use anyhow::Result;
use etcd_inspector::decode::encode::encode_protobuf;
use etcd_inspector::store::Store;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Object `i` at update `round` under `prefix`: a Secret for one in three,
/// else a ConfigMap or a Pod-sized Deployment.
fn object(prefix: &str, i: usize, round: usize) -> (String, Vec<u8>, bool) {
    let ns = format!("team-{}", i % 40);
    let meta = json!({"name": format!("o-{i}"), "namespace": ns, "uid": format!("uid-{i}"),
                      "creationTimestamp": "2026-11-29T07:00:00Z", "labels": {"app": format!("app-{}", i % 300)},
                      "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                         "time": format!("2026-11-29T08:{:02}:00Z", round % 60), "fieldsType": "FieldsV1",
                                         "fieldsV1": {"f:data": {}}}]});
    let pb = |v: serde_json::Value| encode_protobuf(&v).expect("built-in object");
    match i % 3 {
        0 => {
            let token = format!("{}.{round}", "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9".repeat(30));
            let cert = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM".repeat(40);
            let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "kubernetes.io/tls",
                                "data": {"token": b64(&token), "tls.crt": cert, "tls.key": b64(format!("key-{i}-{round}"))}});
            (format!("{prefix}/secrets/{ns}/o-{i}"), pb(secret), true)
        }
        1 => {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                            "data": {"config.yaml": format!("round: {round}\n{}", "key: value\n".repeat(100))}});
            (format!("{prefix}/configmaps/{ns}/o-{i}"), pb(cm), false)
        }
        _ => {
            let env: Vec<serde_json::Value> = (0..30)
                .map(|e| json!({"name": format!("SETTING_{e}"), "value": format!("value-{e}-of-{i}")}))
                .collect();
            let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "x"}},
                                    "template": {"spec": {"containers": [{"name": "app", "image": "registry.example.com/app:1", "env": env}]}}},
                           "status": {"observedGeneration": round, "replicas": 3}});
            (format!("{prefix}/deployments/{ns}/o-{i}"), pb(d), false)
        }
    }
}

fn b64(bytes: impl AsRef<[u8]>) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs[xs.len() / 2]
}

/// Seconds one `snapshot` takes.
fn snapshot(bin: &Path, db: &Path, endpoint: &str, prefix: &str, extra: &[&str]) -> Result<f64> {
    let t = Instant::now();
    let out = Command::new(bin)
        .args([
            "--db",
            db.to_str().unwrap(),
            "snapshot",
            "--endpoints",
            endpoint,
            "--no-analyze",
        ])
        .args(["--prefix", prefix])
        .args(extra)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "snapshot failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(t.elapsed().as_secs_f64())
}

fn main() -> Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let (objects, updates, repeats) = (
        args.first().copied().unwrap_or(3000),
        args.get(1).copied().unwrap_or(3),
        args.get(2).copied().unwrap_or(3),
    );
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/etcd-inspector");
    anyhow::ensure!(bin.exists(), "build the binary first: cargo build --release");
    let work = tempfile::tempdir()?;
    let (gcm_key, cbc_key, box_key) = (encrypt::random(32), encrypt::random(32), encrypt::random(32));
    let config = work.path().join("encryption.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {{keys: [{{name: k1, secret: '{}'}}]}}\n  - aescbc: {{keys: [{{name: k2, secret: '{}'}}]}}\n  - secretbox: {{keys: [{{name: k3, secret: '{}'}}]}}\n",
            b64(&gcm_key),
            b64(&cbc_key),
            b64(&box_key)
        ),
    )?;
    let etcd = etcd::TestEtcd::start();
    let ep = etcd.endpoint.clone();
    let prefixes = ["/registry", "/gcm/registry", "/cbc-box/registry"];
    eprintln!(
        "filling etcd: {objects} objects × {} versions × {} prefixes ...",
        updates + 1,
        prefixes.len()
    );
    for round in 0..=updates {
        for prefix in prefixes {
            let batch: Vec<(String, Vec<u8>)> = (0..objects)
                .map(|i| {
                    let (key, value, secret) = object(prefix, i, round);
                    let value = match (prefix, secret) {
                        (_, false) | ("/registry", _) => value,
                        ("/gcm/registry", true) => encrypt::aesgcm("k1", &gcm_key, &key, &value),
                        (_, true) if i % 2 == 0 => encrypt::aescbc("k2", &cbc_key, &value),
                        (_, true) => encrypt::secretbox("k3", &box_key, &value),
                    };
                    (key, value)
                })
                .collect();
            etcd.put_many(&batch);
        }
    }
    let config = config.to_str().unwrap();
    let mut times = vec![Vec::new(); prefixes.len()];
    for r in 0..repeats {
        for (p, prefix) in prefixes.iter().enumerate() {
            let db = work.path().join(format!("db-{p}-{r}.sqlite"));
            let extra: &[&str] = if p == 0 {
                &[]
            } else {
                &["--encryption-config", config]
            };
            times[p].push(snapshot(&bin, &db, &ep, prefix, extra)?);
        }
    }
    // Every Secret revision must have been decrypted, none left encrypted.
    for (p, prefix) in prefixes.iter().enumerate().skip(1) {
        let db = work.path().join(format!("db-{p}-0.sqlite"));
        let usage = Store::open_for_reading(&db)?.resource_usage(&Default::default())?;
        let decrypted: i64 = usage
            .iter()
            .flat_map(|u| &u.encryption)
            .filter(|(label, _)| label.as_str() != "identity")
            .map(|(_, n)| n)
            .sum();
        let failed: i64 = usage.iter().filter_map(|u| u.encodings.get("encrypted")).sum();
        let expected = (objects.div_ceil(3) * (updates + 1)) as i64;
        anyhow::ensure!(
            decrypted == expected && failed == 0,
            "{prefix}: {decrypted} revisions decrypted, {failed} left encrypted; expected {expected}"
        );
    }
    let base = median(times[0].clone());
    println!(
        "\n{objects} objects × {} versions ({} Secrets each version); medians of {repeats}\n",
        updates + 1,
        objects.div_ceil(3)
    );
    println!("| run | time | vs plaintext | target |\n|---|---|---|---|");
    println!("| snapshot, Secrets in plaintext (baseline) | {base:.2} s | 1.00× | |");
    for (p, name) in [
        (1, "every Secret aesgcm"),
        (2, "every Secret aescbc or secretbox"),
    ] {
        let t = median(times[p].clone());
        println!(
            "| snapshot --encryption-config, {name} | {t:.2} s | {:.2}× ({:+.1}%) | ≤ +10% |",
            t / base,
            100.0 * (t / base - 1.0)
        );
    }
    Ok(())
}
