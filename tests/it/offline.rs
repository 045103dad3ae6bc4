//! `snapshot --file` and `snapshot --fetch-snapshot`: etcd's bbolt files
//! read with no etcd running, compared with what the live server gives.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::{pod, widget};
use crate::util::{
    corpus_dir, db_in, delete_revisions, every_revision, history, inspector, ok, one_line_error,
    run_statuses, runs, temp_db,
};
use etcd_inspector::decode::encode::encode_protobuf;
use etcd_inspector::source::bolt::BoltDb;
use etcd_inspector::source::{db_file, Record, Revision};
use sha2::Digest;
use std::path::Path;

fn sha256(path: &Path) -> Vec<u8> {
    sha2::Sha256::digest(std::fs::read(path).unwrap()).to_vec()
}

/// Every stored revision, as comparable rows.
fn revisions(db: &Path) -> Vec<String> {
    let text = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    every_revision(db)
        .into_iter()
        .map(|(key, r)| {
            [
                key,
                r.mod_revision.to_string(),
                r.create_revision.to_string(),
                r.version.to_string(),
                r.lease.to_string(),
                i64::from(r.deleted).to_string(),
                r.value_size.to_string(),
                text(r.value_sha256),
                text(r.encoding),
                text(r.api_version),
                text(r.kind),
                text(r.uid),
                text(r.generation.map(|g| g.to_string())),
                text(r.decode_error),
            ]
            .join("|")
        })
        .collect()
}

#[test]
fn corpus_gce_file_yields_its_three_objects() {
    let Some(corpus) = corpus_dir() else { return };
    let file = corpus.join("etcd-db/gce-2017-job-pod.db");
    let before = sha256(&file);
    let (_dir, db) = temp_db();
    ok(inspector(&db, &["snapshot", "--file", file.to_str().unwrap()]));
    for (key, kind, ns, name) in [
        ("/registry/namespaces/default", "Namespace", None, "default"),
        ("/registry/jobs/default/pi", "Job", Some("default"), "pi"),
        (
            "/registry/pods/default/pi-dqtsw",
            "Pod",
            Some("default"),
            "pi-dqtsw",
        ),
    ] {
        let h = history(&db, key);
        let last = h.last().unwrap();
        assert_eq!(
            (
                last["kind"].as_str(),
                last["name"].as_str(),
                last["namespace"].as_str()
            ),
            (Some(kind), Some(name), ns),
            "{key}"
        );
        assert_eq!(last["encoding"].as_str(), Some("protobuf"));
        assert!(last["decode_error"].is_null(), "{key}: {}", last["decode_error"]);
    }
    let runs = runs(&db);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        (run["compact_revision"].as_i64(), run["keys_seen"].as_i64()),
        (Some(241828), Some(3))
    );
    assert_eq!(run["file"]["size"].as_i64(), Some(20480));
    assert_eq!(
        run["file"]["sha256"].as_str().unwrap(),
        before.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    assert_eq!(sha256(&file), before, "reading a file never modifies it");
}

#[test]
fn corpus_json_file_yields_its_object_under_the_doubled_prefix_key() {
    let Some(corpus) = corpus_dir() else { return };
    let file = corpus.join("etcd-db/sample-apiserver-json.db");
    let before = sha256(&file);
    let (_dir, db) = temp_db();
    ok(inspector(&db, &["snapshot", "--file", file.to_str().unwrap()]));
    let key = "/registry/wardle.kubernetes.io/registry/wardle.kubernetes.io/hyrule.k8s.io/hyrulecastles/default/links-place";
    let h = history(&db, key);
    assert_eq!(h.len(), 1);
    assert_eq!(
        (
            h[0]["encoding"].as_str(),
            h[0]["kind"].as_str(),
            h[0]["name"].as_str()
        ),
        (Some("json"), Some("HyruleCastle"), Some("links-place"))
    );
    assert_eq!(sha256(&file), before);
}

#[test]
fn live_fetched_and_copied_files_give_identical_history() {
    let mut etcd = TestEtcd::start();
    // A history: creates, updates, identical rewrites, deletes, recreates,
    // the apiserver's compaction marker, a value spanning several pages,
    // and thousands of keys so the key bucket has branch pages.
    let key = "/registry/pods/shop/web";
    etcd.put(key, &pod("shop", "web", "uid-a", "web:1"));
    etcd.put(key, &pod("shop", "web", "uid-a", "web:2"));
    etcd.put(key, &pod("shop", "web", "uid-a", "web:2"));
    etcd.delete(key);
    etcd.put("compact_rev_key", b"5");
    let early = etcd.put(key, &pod("shop", "web", "uid-b", "web:2"));
    let items: Vec<(String, Vec<u8>)> = (0..3000)
        .map(|i| {
            (
                format!("/registry/pods/bulk/p{i:05}"),
                pod("bulk", &format!("p{i:05}"), &format!("u{i}"), "img"),
            )
        })
        .collect();
    etcd.put_many(&items);
    let big = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "shop", "uid": "ub"},
                                 "data": {"blob": "y".repeat(50_000)}});
    etcd.put("/registry/configmaps/shop/big", &encode_protobuf(&big).unwrap());
    etcd.put(
        "/registry/example.com/widgets/shop/w",
        &widget("shop", "w", "uw", 1),
    );
    etcd.put(
        "/registry/example.com/widgets/shop/w",
        &widget("shop", "w", "uw", 2),
    );
    etcd.put("compact_rev_key", early.to_string().as_bytes());
    etcd.compact(early);
    etcd.delete("/registry/example.com/widgets/shop/w");
    etcd.put(key, &pod("shop", "web", "uid-b", "web:3"));
    std::thread::sleep(std::time::Duration::from_millis(1500)); // let etcd commit its backend batch

    let dir = tempfile::tempdir().unwrap();
    let dbs: std::collections::HashMap<&str, std::path::PathBuf> =
        ["live", "fetch", "running-copy", "stopped"]
            .into_iter()
            .map(|name| (name, db_in(dir.path(), name)))
            .collect();
    let db = |name: &str| dbs[name].clone();
    let ep = etcd.endpoint.clone();
    ok(inspector(&db("live"), &["snapshot", "--endpoints", &ep]));
    let saved = dir.path().join("fetched.db");
    ok(inspector(
        &db("fetch"),
        &[
            "snapshot",
            "--endpoints",
            &ep,
            "--fetch-snapshot",
            "--save",
            saved.to_str().unwrap(),
        ],
    ));
    assert_eq!(
        std::fs::metadata(&saved).unwrap().len() % 512,
        32,
        "the download keeps its SHA-256 trailer"
    );
    let running_copy = dir.path().join("running-copy.db");
    std::fs::copy(etcd.db_file(), &running_copy).unwrap();
    ok(inspector(
        &db("running-copy"),
        &["snapshot", "--file", running_copy.to_str().unwrap()],
    ));
    etcd.stop();
    let stopped = etcd.db_file();
    let before = sha256(&stopped);
    ok(inspector(
        &db("stopped"),
        &["snapshot", "--file", stopped.to_str().unwrap()],
    ));
    assert_eq!(
        sha256(&stopped),
        before,
        "reading the data file never modifies it"
    );

    let live = revisions(&db("live"));
    assert!(live.len() > 3000, "{}", live.len());
    assert!(
        live.iter()
            .any(|r| r.starts_with(&format!("{key}|")) && r.contains("|1|0|")),
        "tombstones are recorded"
    );
    for other in ["fetch", "running-copy", "stopped"] {
        let got = revisions(&db(other));
        assert_eq!(got.len(), live.len(), "{other}");
        let missing: Vec<_> = live.iter().filter(|r| !got.contains(r)).take(3).collect();
        let extra: Vec<_> = got.iter().filter(|r| !live.contains(r)).take(3).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{other}: missing {missing:?}, extra {extra:?}"
        );
    }
    let cluster = |name: &str| runs(&db(name))[0]["cluster_id"].clone();
    assert_eq!(
        cluster("stopped"),
        cluster("live"),
        "a file is recognised as the cluster that wrote it"
    );
    assert_eq!(cluster("fetch"), cluster("live"));
    let run = &runs(&db("stopped"))[0];
    assert_eq!(run["compact_revision"].as_i64(), Some(early));
    assert!(run["file"]["first_revision"].as_i64().unwrap() <= early);
}

/// A file run checks the stored history against the file's own counters:
/// one continuing a database that lost revisions fails.
#[test]
fn a_file_run_over_a_short_history_fails() {
    let etcd = TestEtcd::start();
    let dir = tempfile::tempdir().unwrap();
    let key = "/registry/pods/shop/web";
    let scratch = db_in(dir.path(), "scratch");
    let save = |name: &str| {
        let path = dir.path().join(name);
        ok(inspector(
            &scratch,
            &[
                "snapshot",
                "--endpoints",
                &etcd.endpoint,
                "--fetch-snapshot",
                "--save",
                path.to_str().unwrap(),
            ],
        ));
        path
    };
    let revs: Vec<i64> = (1..=3)
        .map(|i| etcd.put(key, &pod("shop", "web", "uid-a", &format!("web:{i}"))))
        .collect();
    let older = save("older.db");
    etcd.put(key, &pod("shop", "web", "uid-a", "web:4"));
    let newer = save("newer.db");
    let db = db_in(dir.path(), "db");
    ok(inspector(&db, &["snapshot", "--file", older.to_str().unwrap()]));
    assert_eq!(delete_revisions(&db, key, &revs[..1]), 1);
    let err = one_line_error(&inspector(&db, &["snapshot", "--file", newer.to_str().unwrap()]));
    assert!(err.contains(&format!("e.g. {key}: stored 3 of 4")), "{err}");
    assert_eq!(run_statuses(&db), ["complete", "failed"]);
}

#[test]
fn bad_files_fail_with_one_line() {
    let Some(corpus) = corpus_dir() else { return };
    let good = std::fs::read(corpus.join("etcd-db/gce-2017-job-pod.db")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let page = 4096;
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    cases.push((
        "text",
        b"this is not a database\n".repeat(200),
        "not a bbolt database",
    ));
    cases.push(("truncated", good[..good.len() / 2].to_vec(), "truncated"));
    let mut both_meta = good.clone();
    both_meta[page - 100] ^= 0xff; // inside nothing checked: meta 0 is 16..80
    both_meta[40] ^= 0xff;
    both_meta[page + 40] ^= 0xff;
    cases.push(("bad-meta", both_meta, "both meta pages are invalid"));
    // Point both metas' root at a page past the end, checksums recomputed.
    let mut out_of_range = good.clone();
    for m in [0, page] {
        out_of_range[m + 32..m + 40].copy_from_slice(&999u64.to_le_bytes());
        let sum = etcd_inspector::source::bolt::fnv1a64(&out_of_range[m + 16..m + 72]);
        out_of_range[m + 72..m + 80].copy_from_slice(&sum.to_le_bytes());
    }
    cases.push(("out-of-range", out_of_range, "page 999 is out of range"));
    // Rename the `key` bucket in the root page.
    let mut no_key = good.clone();
    let root = u64::from_le_bytes(good[32..40].try_into().unwrap()) as usize;
    let at = (root * page..(root + 1) * page)
        .find(|&i| &no_key[i..i + 3] == b"key")
        .expect("key bucket name");
    no_key[at + 2] = b'z';
    cases.push(("no-key-bucket", no_key, "no \"key\" bucket"));
    for (name, bytes, want) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, &bytes).unwrap();
        let db = db_in(dir.path(), name);
        let err = one_line_error(&inspector(&db, &["snapshot", "--file", file.to_str().unwrap()]));
        assert!(
            err.contains(want) && err.contains(file.to_str().unwrap()),
            "{name}: wanted {want:?} and the path in {err}"
        );
        assert_eq!(run_statuses(&db), ["failed"], "{name}");
    }
}

/// A small deterministic generator for mutations.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Opens and reads a file completely (salvaging, when asked), in a thread
/// that must finish quickly.
fn read_all(path: &Path, salvage: bool) -> Result<usize, String> {
    let path = path.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let result = (|| {
            let db = BoltDb::open(&path).map_err(|e| e.to_string())?;
            let mut records: Vec<Record> = Vec::new();
            if salvage {
                db_file::inspect_salvaging(&db).map_err(|e| e.to_string())?;
                db_file::salvage_revisions(&db, b"/", Revision(0), &mut records)
                    .map_err(|e| e.to_string())?;
            } else {
                db_file::inspect(&db).map_err(|e| e.to_string())?;
                db_file::read_revisions(&db, b"/", Revision(0), 0, &mut records)
                    .map_err(|e| e.to_string())?;
            }
            Ok(records.len())
        })();
        let _ = tx.send(result);
    });
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("reading a corrupted file hung or panicked")
}

#[test]
fn mutated_and_truncated_files_never_panic_or_hang() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    for source in ["gce-2017-job-pod.db", "sample-apiserver-json.db"] {
        let good = std::fs::read(corpus.join("etcd-db").join(source)).unwrap();
        assert!(read_all(&corpus.join("etcd-db").join(source), false).is_ok());
        assert!(read_all(&corpus.join("etcd-db").join(source), true).is_ok());
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut errors = 0;
        for i in 0..300 {
            let mut bytes = good.clone();
            match i % 3 {
                0 => bytes.truncate((rng.next() as usize) % good.len()),
                1 => {
                    for _ in 0..1 + rng.next() % 8 {
                        let at = (rng.next() as usize) % bytes.len();
                        bytes[at] = rng.next() as u8;
                    }
                }
                _ => {
                    // Corrupt page headers and element fields, keeping the metas valid.
                    let at = 2 * 4096 + (rng.next() as usize) % (bytes.len() - 2 * 4096);
                    let word = rng.next().to_le_bytes();
                    let end = (at + 8).min(bytes.len());
                    bytes[at..end].copy_from_slice(&word[..end - at]);
                }
            }
            let file = dir.path().join(format!("{source}-{i}"));
            std::fs::write(&file, &bytes).unwrap();
            if read_all(&file, false).is_err() {
                errors += 1;
            }
            // Salvaging never panics or hangs either (it may still fail).
            let _ = read_all(&file, true);
        }
        assert!(
            errors > 50,
            "{source}: only {errors} of 300 mutations were detected"
        );
    }
}
