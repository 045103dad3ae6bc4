//! `snapshot --data-dir` against the truth: a `follow` run records every
//! write of a real etcd as it happens (kube-apiserver's creates, updates,
//! a conflict's loser and its retry, deletes, keys on leases that are
//! revoked or expire, keys outside the prefix, its compactor) while the
//! history is compacted every few hundred revisions; the member's data
//! dir then gives back the same history, revision by revision, though its
//! db kept only the last stretch.

use super::optimistic;
use crate::util::etcd::TestEtcd;
use crate::util::k8s::pod;
use crate::util::{every_revision, inspector, ok, one_line_error, runs, spawn_inspector, temp_db, terminate};
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use etcd_inspector::source::Revision;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// kube-apiserver's compactor: bump `compact_rev_key` if no other
/// apiserver did, then compact at the revision before.
fn compact_as_kube_apiserver(etcd: &TestEtcd, version: &mut i64) {
    let key = "compact_rev_key";
    let head = etcd.head();
    etcd.txn(
        Txn::new()
            .when([Compare::version(key, CompareOp::Equal, *version)])
            .and_then([TxnOp::put(key, head.to_string(), None)])
            .or_else([TxnOp::get(key, None)]),
    );
    *version += 1;
    etcd.compact(head);
}

/// Writes a round of kube-apiserver's traffic; `round` names the objects.
/// Returns the revision of its last write under `/registry/`.
fn round(etcd: &TestEtcd, round: usize) -> i64 {
    let key = |i: usize| format!("/registry/pods/shop/web-{round}-{i}");
    // A write that must succeed, and the revision it wrote (not the head
    // after it: the leader may revoke an expired lease in between).
    let write = |k: &str, x: i64, then: TxnOp| {
        let (held, revision) = etcd.txn_at(optimistic(k, x, then));
        assert!(held, "{k} at {x}");
        revision
    };
    let mut at = Vec::new();
    for i in 0..30 {
        let k = key(i);
        let value = pod(
            "shop",
            &format!("web-{round}-{i}"),
            &format!("uid-{round}-{i}"),
            "web:1",
        );
        at.push(write(&k, 0, TxnOp::put(k.as_str(), value, None)));
    }
    for image in ["web:2", "web:3", "web:4"] {
        for (i, rev) in at.iter_mut().enumerate() {
            let k = key(i);
            let value = pod(
                "shop",
                &format!("web-{round}-{i}"),
                &format!("uid-{round}-{i}"),
                image,
            );
            *rev = write(&k, *rev, TxnOp::put(k.as_str(), value, None));
        }
    }
    // Two writers from one read: the loser's compare fails, it reads again
    // and retries.
    let k = key(0);
    let stale = at[0];
    let winner = pod(
        "shop",
        &format!("web-{round}-0"),
        &format!("uid-{round}-0"),
        "winner",
    );
    let fresh = write(&k, stale, TxnOp::put(k.as_str(), winner, None));
    let loser = pod(
        "shop",
        &format!("web-{round}-0"),
        &format!("uid-{round}-0"),
        "loser",
    );
    assert!(!etcd.txn(optimistic(&k, stale, TxnOp::put(k.as_str(), loser.clone(), None))));
    at[0] = write(&k, fresh, TxnOp::put(k.as_str(), loser, None));
    // Deletes, as the apiserver's: compare, then delete.
    for (i, rev) in at.iter().enumerate().skip(20) {
        let k = key(i);
        write(&k, *rev, TxnOp::delete(k.as_str(), None));
    }
    // Events on a lease revoked, and on one left to expire.
    for ttl in [60, 2] {
        let lease = etcd.grant(ttl);
        for i in 0..3 {
            let k = format!("/registry/events/shop/web-{round}.{ttl}.{i}");
            let with_lease = PutOptions::new().with_lease(lease);
            assert!(etcd.txn(optimistic(
                &k,
                0,
                TxnOp::put(k.as_str(), "event", Some(with_lease))
            )));
        }
        if ttl == 60 {
            etcd.revoke(lease);
        }
    }
    let last = etcd.head();
    // Keys outside the prefix.
    etcd.put(&format!("/other/{round}"), b"not kubernetes");
    etcd.put("/other/shared", round.to_string().as_bytes());
    last
}

/// `snapshot --data-dir DIR` into a new database: the database and its
/// run, which must be complete.
fn read_data_dir(dir: &Path) -> (tempfile::TempDir, PathBuf, serde_json::Value) {
    let (tmp, db) = temp_db();
    ok(inspector(&db, &["snapshot", "--data-dir", dir.to_str().unwrap()]));
    let run = runs(&db).pop().unwrap();
    assert_eq!(run["status"], "complete", "{run}");
    (tmp, db, run)
}

/// The stored revisions of `db` from revision `from` to `to`, each as the
/// fields a source gives.
pub(crate) fn stored(db: &std::path::Path, from: i64, to: i64) -> Vec<String> {
    every_revision(db)
        .into_iter()
        .filter(|(_, r)| (Revision(from)..=Revision(to)).contains(&r.mod_revision))
        .map(|(key, r)| {
            format!(
                "{key} @{} created {} v{} deleted {} lease {} {:?} {:?} {:?} {:?}",
                r.mod_revision,
                r.create_revision,
                r.version,
                r.deleted,
                r.lease,
                r.value_sha256,
                r.encoding,
                r.kind,
                r.decode_error
            )
        })
        .collect()
}

#[test]
fn a_data_dir_gives_back_the_history_follow_recorded() {
    let mut etcd = TestEtcd::start();
    let (_dir, followed) = temp_db();
    let follow = spawn_inspector(
        &followed,
        &["follow", "--endpoints", &etcd.endpoint, "--commit-every=200ms"],
    );
    // Once follow has read this, it watches: every later write reaches
    // it through the watch.
    let first = etcd.put("/registry/configmaps/shop/first.properties", b"the start");
    wait_for(&followed, &etcd, first);
    let mut compactions = 0;
    for r in 0..4 {
        let last = round(&etcd, r);
        // A follower that lags is overtaken by the compaction and records a
        // gap, which is not what this test compares: kube-apiserver
        // compacts every five minutes, long after a follower has caught up.
        wait_for(&followed, &etcd, last);
        compact_as_kube_apiserver(&etcd, &mut compactions);
    }
    // Let the short lease expire: etcd's leader revokes it through the log.
    std::thread::sleep(Duration::from_secs(4));
    let last = "/registry/configmaps/shop/last.properties";
    etcd.put(last, b"the end");
    let start = Instant::now();
    // No revision of the key yet is an error, not an empty list.
    while !inspector(&followed, &["history", last]).status.success()
        && start.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    // A copy of the running member, as docs/snapshot.md says to take one.
    let copied = tempfile::tempdir().unwrap();
    etcd.copy_data_dir(copied.path());
    let out = terminate(follow);
    assert!(
        inspector(&followed, &["history", last]).status.success(),
        "follow never stored {last}: {}; {:?}; {}",
        String::from_utf8_lossy(&out.stderr),
        runs(&followed),
        String::from_utf8_lossy(&inspector(&followed, &["history", last]).stderr)
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    etcd.stop();

    let (_dir2, recovered, run) = read_data_dir(&etcd.data_dir());
    assert_eq!(run["history_from"], 1, "{run}");
    let wal = &run["wal"];
    assert_eq!(wal["first"][0], 1, "{run}");
    assert_eq!(wal["undecided"], 0, "{run}");
    assert_eq!(wal["compactions"].as_array().unwrap().len(), 4, "{run}");
    let added = wal["added"]
        .as_array()
        .expect("the WAL adds revisions the db lost");
    assert!(added[0].as_i64().unwrap() <= 3, "{run}");

    let want = stored(&followed, 1, i64::MAX);
    let got = stored(&recovered, 1, i64::MAX);
    assert_same(&want, &got);
    assert!(want.len() > 500, "{} revisions", want.len());

    // The copy taken while etcd ran gives the same, up to where it was taken.
    let (_dir3, from_copy, run) = read_data_dir(copied.path());
    let head = run["head_revision"].as_i64().unwrap();
    assert_same(&stored(&followed, 1, head), &stored(&from_copy, 1, head));
    let listed = String::from_utf8(ok(inspector(&recovered, &["runs", "-o", "wide"])).stdout).unwrap();
    assert!(listed.contains("WAL from entry 1"), "{listed}");
}

/// Writes between the copy of a running member's db and the copy of its
/// log (a creates, updates and a conflict's loser, deletes, and a lease
/// the db holds, revoked): their keys and the lease are the db's; `tag`
/// names them. Returns the revision of the last.
fn writes_past_the_db(etcd: &TestEtcd, lease: i64, tag: &str) -> i64 {
    let k = format!("/registry/configmaps/shop/{tag}.properties");
    let created = etcd.txn_at(optimistic(&k, 0, TxnOp::put(k.as_str(), "v1", None)));
    assert!(created.0);
    let updated = etcd.txn_at(optimistic(&k, created.1, TxnOp::put(k.as_str(), "v2", None)));
    assert!(updated.0);
    assert!(!etcd.txn(optimistic(&k, created.1, TxnOp::put(k.as_str(), "loser", None))));
    let attached = format!("/registry/events/shop/{tag}.after");
    let with_lease = PutOptions::new().with_lease(lease);
    assert!(etcd.txn(optimistic(
        &attached,
        0,
        TxnOp::put(attached.as_str(), "event", Some(with_lease))
    )));
    etcd.revoke(lease);
    let (deleted, last) = etcd.txn_at(optimistic(&k, updated.1, TxnOp::delete(k.as_str(), None)));
    assert!(deleted);
    last
}

/// A running member copied as its log ran past its db.
struct PastDb {
    /// The copy: the db, then (after [`writes_past_the_db`]) the log.
    copied: tempfile::TempDir,
    _follow_dir: tempfile::TempDir,
    /// What `follow` recorded, from before the copy to after it.
    followed: PathBuf,
    /// etcd's head when the db was copied, and the last write after it.
    db_head: i64,
    last: i64,
}

/// A key the db holds on a lease that entries after it revoke.
const HELD: &str = "/registry/events/shop/held.before";

/// Starts `follow`, writes `before`, puts [`HELD`] on a lease, copies the
/// db, makes [`writes_past_the_db`], copies the log once `follow` has them
/// all, and stops etcd.
fn copy_past_the_db(etcd: &mut TestEtcd, before: impl FnOnce(&TestEtcd)) -> PastDb {
    let (follow_dir, followed) = temp_db();
    let follow = spawn_inspector(
        &followed,
        &["follow", "--endpoints", &etcd.endpoint, "--commit-every=200ms"],
    );
    before(etcd);
    let lease = etcd.grant(600);
    let with_lease = PutOptions::new().with_lease(lease);
    assert!(etcd.txn(optimistic(HELD, 0, TxnOp::put(HELD, "event", Some(with_lease)))));
    let_the_db_commit();
    let copied = tempfile::tempdir().unwrap();
    etcd.copy_db(copied.path());
    let db_head = etcd.head();
    let last = writes_past_the_db(etcd, lease, "after");
    wait_for(&followed, etcd, last);
    etcd.copy_wal(copied.path());
    terminate(follow);
    etcd.stop();
    PastDb {
        copied,
        _follow_dir: follow_dir,
        followed,
        db_head,
        last,
    }
}

/// Waits for the backend's batch commit (every 100 ms), so that a copy of
/// the db holds every write made so far.
fn let_the_db_commit() {
    std::thread::sleep(Duration::from_millis(500));
}

/// A copy of a running member whose log runs past its db (the db copied,
/// then writes, then the log): the writes after the db's consistent index
/// are stored at their revisions, as `follow` saw them, and the run's head
/// is the last.
#[test]
fn a_log_copied_after_the_db_gives_the_writes_past_it() {
    let mut etcd = TestEtcd::start();
    let past = copy_past_the_db(&mut etcd, |etcd| {
        round(etcd, 0);
    });
    let (followed, db_head, last) = (&past.followed, past.db_head, past.last);
    let (_dir2, recovered, run) = read_data_dir(past.copied.path());
    let head = run["head_revision"].as_i64().unwrap();
    let wal = &run["wal"];
    assert_eq!(wal["past_db"], serde_json::json!([db_head + 1, last]), "{run}");
    assert_eq!(head, last, "{run}");
    assert_same(&stored(followed, 1, head), &stored(&recovered, 1, head));
    // The revoke deleted the key the db held on the lease.
    let gone = stored(&recovered, db_head + 1, head);
    assert!(
        gone.iter()
            .any(|r| r.starts_with(&format!("{HELD} @")) && r.contains("deleted true")),
        "{gone:#?}"
    );
    let listed = String::from_utf8(ok(inspector(&recovered, &["runs", "-o", "wide"])).stdout).unwrap();
    assert!(listed.contains("after the db's consistent index"), "{listed}");
}

/// A copy whose log is damaged in the middle: the run fails naming the
/// segment and offset; with `--salvage` it keeps the db's history, says
/// which entries were lost, and still stores the writes past the db.
#[test]
fn a_log_damaged_in_the_middle_fails_or_with_salvage_keeps_the_db() {
    let mut etcd = TestEtcd::start();
    let past = copy_past_the_db(&mut etcd, |etcd| {
        round(etcd, 0);
    });
    let copied = past.copied.path().to_str().unwrap();
    // A byte of one request's key flipped: its record's CRC breaks.
    let segment = past
        .copied
        .path()
        .join("member/wal/0000000000000000-0000000000000000.wal");
    let mut bytes = std::fs::read(&segment).unwrap();
    let key = b"/registry/pods/shop/web-0-7";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap();
    bytes[at + key.len() - 1] ^= 1;
    std::fs::write(&segment, bytes).unwrap();

    let (_dir, db) = temp_db();
    let failed = inspector(&db, &["snapshot", "--data-dir", copied]);
    let line = one_line_error(&failed);
    assert!(
        line.contains("0000000000000000-0000000000000000.wal at byte") && line.contains("--salvage"),
        "{line}"
    );
    let (_dir2, salvaged) = temp_db();
    ok(inspector(
        &salvaged,
        &["snapshot", "--data-dir", copied, "--salvage"],
    ));
    let run = runs(&salvaged).pop().unwrap();
    assert_eq!(run["status"], "complete", "{run}");
    let wal = &run["wal"];
    let why = wal["not_placed"].as_str().expect("the run says why");
    assert!(why.contains("lost in damage --salvage skipped"), "{why}");
    assert_eq!(wal["gaps"].as_array().unwrap().len(), 1, "{run}");
    assert_eq!(
        wal["past_db"],
        serde_json::json!([past.db_head + 1, past.last]),
        "{run}"
    );
    assert_same(
        &stored(&past.followed, past.db_head + 1, past.last),
        &stored(&salvaged, past.db_head + 1, past.last),
    );
}

/// Waits until `follow` into `db` has stored revision `rev` of `etcd`, or
/// one after it.
fn wait_for(db: &Path, etcd: &TestEtcd, rev: i64) {
    let start = Instant::now();
    while !holds(db, rev) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "follow never stored revision {rev}: {}",
            etcd.log().len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Whether `db` holds revision `rev` or a later one; not while `follow`
/// is still making the database.
fn holds(db: &Path, rev: i64) -> bool {
    let Ok(store) = etcd_inspector::store::Store::open_for_reading(db) else {
        return false;
    };
    let Ok(clusters) = store.clusters() else {
        return false;
    };
    clusters.iter().any(|cluster| {
        let mut found = false;
        let read = store.key_histories(cluster.row, &mut |history| {
            found |= history.iter().any(|r| r.mod_revision >= Revision(rev));
        });
        read.is_ok() && found
    })
}

/// Fails, naming a few, unless `followed` and `recovered` hold the same
/// revisions.
pub(crate) fn assert_same(followed: &[String], recovered: &[String]) {
    let missing: Vec<&String> = followed
        .iter()
        .filter(|r| !recovered.contains(r))
        .take(5)
        .collect();
    let extra: Vec<&String> = recovered
        .iter()
        .filter(|r| !followed.contains(r))
        .take(5)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} revisions followed, {} recovered; followed only: {missing:#?}; recovered only: {extra:#?}",
        followed.len(),
        recovered.len()
    );
}

/// A member whose first segments etcd purged after a raft snapshot, copied
/// while it ran: the run finds where the log starts (its writes overwrite
/// keys created in the purged segments) and gives every write from there
/// on as `follow` recorded it, below the db's compaction too, and those
/// the log holds past the db.
#[test]
fn a_purged_log_is_placed_from_where_it_starts() {
    let mut etcd = TestEtcd::start_with_flags(&["--snapshot-count", "100", "--max-wals", "1"]);
    let first = etcd.wal_dir().join("0000000000000000-0000000000000000.wal");
    // `follow` records every write from the first, to compare with.
    let past = copy_past_the_db(&mut etcd, |etcd| {
        // 200 kB values: a 64 MB segment every ~320 writes.
        let value = vec![b'x'; 200_000];
        let start = Instant::now();
        let mut written = 0;
        // etcd purges every 30 s what is beyond --max-wals and before its
        // last raft snapshot.
        while first.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(180),
                "etcd never purged {}",
                first.display()
            );
            if written < 800 {
                for _ in 0..50 {
                    etcd.put(&format!("/registry/configmaps/shop/big-{}", written % 20), &value);
                    written += 1;
                }
            } else {
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        etcd.compact(etcd.head());
        etcd.put("/registry/configmaps/shop/last", b"the end");
    });
    let (followed, db_head, last) = (&past.followed, past.db_head, past.last);
    let (_dir, db, run) = read_data_dir(past.copied.path());
    let wal = &run["wal"];
    let from = wal["first"][0].as_i64().unwrap();
    assert!(from > 1, "{run}");
    assert_eq!(wal["not_placed"], serde_json::Value::Null, "{run}");
    assert_eq!(wal["skipped"], 0, "blind puts leave one start: {run}");
    let history_from = run["history_from"].as_i64().unwrap();
    assert!(
        history_from > 1 && history_from < run["compact_revision"].as_i64().unwrap(),
        "history starts inside the log, below the compaction: {run}"
    );
    assert_eq!(
        run["wal"]["past_db"],
        serde_json::json!([db_head + 1, last]),
        "{run}"
    );
    assert_eq!(run["head_revision"], last, "{run}");
    assert_same(
        &stored(followed, history_from, last),
        &stored(&db, history_from, last),
    );
    let listed = String::from_utf8(ok(inspector(&db, &["runs", "-o", "wide"])).stdout).unwrap();
    assert!(
        listed.contains(&format!("WAL from entry {from} ")) && !listed.contains("not placed"),
        "{listed}"
    );
}
