//! The WAL reader on a real etcd's log: every request a client sent, in
//! order, with its values, as kube-apiserver writes (creates and updates as
//! transactions comparing `mod_revision`, a conflict's loser, deletes,
//! a key attached to a lease that is revoked), beside writes outside its
//! prefix and a compaction. Runs on every etcd of the matrix.

pub(crate) mod data_dir;
mod live;

use crate::util::etcd::TestEtcd;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use etcd_inspector::source::bolt::BoltDb;
use etcd_inspector::source::db_file;
use etcd_inspector::source::wal::{self, revisions, CompareTarget, Op, Request};
use etcd_inspector::source::Revision;

/// kube-apiserver's write: `If(mod_revision(key) == rev) Then(op) Else(get)`.
fn optimistic(key: &str, rev: i64, then: TxnOp) -> Txn {
    Txn::new()
        .when([Compare::mod_revision(key, CompareOp::Equal, rev)])
        .and_then([then])
        .or_else([TxnOp::get(key, None)])
}

/// An entry as the test sent it, or `None` for what etcd adds itself.
fn said(request: &Request) -> Option<String> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let op = |op: &Op| match op {
        Op::Put(p) if p.lease != 0 => format!("put {}={} with a lease", text(&p.key), text(&p.value)),
        Op::Put(p) => format!("put {}={}", text(&p.key), text(&p.value)),
        Op::DeleteRange(d) => format!("delete {}", text(&d.key)),
        Op::Range(r) => format!("get {}", text(&r.key)),
        Op::Txn(_) => "txn".into(),
    };
    Some(match request {
        Request::Put(p) => format!("put {}={}", text(&p.key), text(&p.value)),
        Request::DeleteRange(d) => format!("delete {}", text(&d.key)),
        Request::Txn(t) => {
            let compares: Vec<String> = t
                .compare
                .iter()
                .map(|c| match &c.target_union {
                    Some(CompareTarget::ModRevision(r)) => format!("mod({})=={r}", text(&c.key)),
                    other => format!("{other:?}"),
                })
                .collect();
            let then: Vec<String> = t
                .success
                .iter()
                .filter_map(|o| o.request.as_ref())
                .map(op)
                .collect();
            let or: Vec<String> = t
                .failure
                .iter()
                .filter_map(|o| o.request.as_ref())
                .map(op)
                .collect();
            format!(
                "if {} then {} else {}",
                compares.join(","),
                then.join(","),
                or.join(",")
            )
        }
        Request::Compaction(c) => format!("compact {}", c.revision),
        Request::LeaseGrant(_) => "grant".into(),
        Request::LeaseRevoke(_) => "revoke".into(),
        _ => return None,
    })
}

#[test]
fn every_request_sent_is_in_the_wal_in_order() {
    let mut etcd = TestEtcd::start();
    let key = "/registry/configmaps/shop/app.properties";
    let mut sent = Vec::new();
    let mut expect = |s: String| sent.push(s);

    assert!(etcd.txn(optimistic(key, 0, TxnOp::put(key, "v1", None))));
    expect(format!("if mod({key})==0 then put {key}=v1 else get {key}"));
    let created = etcd.put("/other/x", b"outside");
    expect("put /other/x=outside".into());
    let r1 = created - 1;
    assert!(etcd.txn(optimistic(key, r1, TxnOp::put(key, "v2", None))));
    expect(format!("if mod({key})=={r1} then put {key}=v2 else get {key}"));
    // A conflict's loser: it read r1 too, and writes nothing.
    assert!(!etcd.txn(optimistic(key, r1, TxnOp::put(key, "v2-lost", None))));
    expect(format!(
        "if mod({key})=={r1} then put {key}=v2-lost else get {key}"
    ));
    let r2 = created + 1;
    assert!(etcd.txn(optimistic(key, r2, TxnOp::put(key, "v3", None))));
    expect(format!("if mod({key})=={r2} then put {key}=v3 else get {key}"));
    let r3 = r2 + 1;
    assert!(etcd.txn(optimistic(key, r3, TxnOp::delete(key, None))));
    expect(format!("if mod({key})=={r3} then delete {key} else get {key}"));
    // An Event on a lease, removed when the lease is revoked.
    let lease = etcd.grant(3600);
    expect("grant".into());
    let event = "/registry/events/shop/web.17f0";
    let with_lease = PutOptions::new().with_lease(lease);
    assert!(etcd.txn(optimistic(event, 0, TxnOp::put(event, "e", Some(with_lease)))));
    expect(format!(
        "if mod({event})==0 then put {event}=e with a lease else get {event}"
    ));
    etcd.revoke(lease);
    expect("revoke".into());
    let head = etcd.put("/other/y", b"last");
    expect("put /other/y=last".into());
    etcd.compact(head - 1);
    expect(format!("compact {}", head - 1));
    let gone = etcd.delete("/other/x");
    expect("delete /other/x".into());
    assert!(gone > head);

    etcd.stop();
    let mut log = wal::Wal::open(&etcd.wal_dir(), wal::Options::default()).unwrap();
    let mut seen = Vec::new();
    let mut last = 0;
    while let Some(entry) = log.next_entry().unwrap() {
        assert!(entry.index > last, "entries out of order at {}", entry.index);
        last = entry.index;
        seen.extend(said(&entry.request));
    }
    assert_eq!(seen, sent);
    let summary = log.summary();
    assert_eq!(summary.cut, None, "{summary:?}");
    let info = db_file::inspect(&BoltDb::open(&etcd.db_file()).unwrap()).unwrap();
    let applied = info
        .consistent_index
        .expect("the db records its consistent index");
    assert!(
        applied <= last,
        "the db applied {applied}, the WAL ends at {last}"
    );
}

/// What the db at `db` holds, and the last entry it applied.
fn db_facts(db: &std::path::Path) -> (revisions::Facts, u64) {
    let file = BoltDb::open(db).unwrap();
    let info = db_file::inspect(&file).unwrap();
    let mut records: Vec<etcd_inspector::source::Record> = Vec::new();
    db_file::read_revisions(&file, b"", Revision(0), 0, &mut records).unwrap();
    records.sort_by_key(|r| r.mod_revision);
    let mut facts = revisions::Facts::new(info.head(), info.finished_compact.unwrap_or_default());
    for r in &records {
        facts.add(r);
    }
    (facts, info.consistent_index.unwrap())
}

/// What the db of `etcd` (stopped) holds, the entries of its log up to
/// the last the db applied, and the log's first snapshot record.
fn member(etcd: &TestEtcd) -> (revisions::Facts, Vec<wal::Entry>, Option<(u64, u64)>) {
    let (facts, applied) = db_facts(&etcd.db_file());
    let mut log = wal::Wal::open(&etcd.wal_dir(), wal::Options::default()).unwrap();
    let mut entries = Vec::new();
    while let Some(e) = log.next_entry().unwrap() {
        if e.index <= applied {
            entries.push(e);
        }
    }
    (facts, entries, log.summary().snapshot)
}

/// The revision each of `entries` wrote (`None`: nothing), placed and
/// checked against `facts`.
fn place(entries: &[wal::Entry], facts: &revisions::Facts) -> Result<Vec<Option<i64>>, revisions::Unplaced> {
    let mut placer = revisions::Placer::new(facts);
    let mut placed = Vec::new();
    for e in entries {
        placed.push(placer.apply(e)?.first().map(|w| w.mod_revision.0));
    }
    placer.finish()?;
    Ok(placed)
}

/// Places every write of the log of `etcd` (stopped) against its db and
/// returns how many wrote; fails with the reason when the two disagree.
pub(crate) fn place_member(etcd: &TestEtcd) -> usize {
    let (facts, entries, _) = member(etcd);
    let placed = place(&entries, &facts).unwrap();
    let writes = placed.iter().flatten().count();
    assert_eq!(
        writes as i64,
        facts.revision.0 - 1,
        "every revision after 1 placed"
    );
    writes
}

/// Runs `f` against `etcd` and notes `what` with the revision it wrote, if
/// any (the store's revision rose).
fn record(truth: &mut Vec<(String, Option<i64>)>, etcd: &TestEtcd, what: String, f: &dyn Fn(&TestEtcd)) {
    let before = etcd.head();
    f(etcd);
    let after = etcd.head();
    truth.push((what, (after > before).then_some(after)));
}

/// Revisions found by replaying kube-apiserver's writes against the db,
/// before and after a compaction, equal the revisions etcd gave them.
#[test]
fn each_write_is_placed_at_the_revision_etcd_gave_it() {
    let mut etcd = TestEtcd::start();
    // (what was sent, the revision it wrote) in order.
    let mut truth: Vec<(String, Option<i64>)> = Vec::new();
    let kube_put = |k: &'static str, x: i64, v: &'static str| {
        move |e: &TestEtcd| {
            e.txn(optimistic(k, x, TxnOp::put(k, v, None)));
        }
    };
    let (a, b, c, d) = (
        "/registry/pods/shop/a",
        "/registry/pods/shop/b",
        "/registry/configmaps/shop/c.properties",
        "/registry/pods/shop/d",
    );
    for (k, v) in [(a, "a1"), (b, "b1"), (c, "c1")] {
        record(&mut truth, &etcd, format!("create {k}"), &kube_put(k, 0, v));
    }
    let ra = etcd.head() - 2;
    record(&mut truth, &etcd, "update a".into(), &kube_put(a, ra, "a2"));
    let ra2 = etcd.head();
    record(
        &mut truth,
        &etcd,
        "update a, a conflict's loser".into(),
        &kube_put(a, ra, "a2-lost"),
    );
    record(
        &mut truth,
        &etcd,
        "update a again".into(),
        &kube_put(a, ra2, "a3"),
    );
    let rb = ra + 1;
    record(&mut truth, &etcd, "delete b".into(), &move |e: &TestEtcd| {
        e.txn(optimistic(b, rb, TxnOp::delete(b, None)));
    });
    record(&mut truth, &etcd, "create b again".into(), &kube_put(b, 0, "b2"));
    let lease = etcd.grant(3600);
    truth.push(("grant".into(), None));
    for k in ["/registry/events/shop/e1", "/registry/events/shop/e2"] {
        record(
            &mut truth,
            &etcd,
            format!("create {k} on a lease"),
            &move |e: &TestEtcd| {
                let opts = PutOptions::new().with_lease(lease);
                e.txn(optimistic(k, 0, TxnOp::put(k, "event", Some(opts))));
            },
        );
    }
    record(&mut truth, &etcd, "put outside".into(), &|e: &TestEtcd| {
        e.put("/other/x", b"x");
    });
    record(&mut truth, &etcd, "delete outside".into(), &|e: &TestEtcd| {
        e.delete("/other/x");
    });
    record(&mut truth, &etcd, "delete nothing".into(), &|e: &TestEtcd| {
        e.delete("/other/none");
    });
    record(&mut truth, &etcd, "revoke".into(), &move |e: &TestEtcd| {
        e.revoke(lease)
    });
    let compact_at = etcd.head();
    etcd.compact(compact_at);
    truth.push(("compact".into(), None));
    let ra3 = ra2 + 1;
    record(
        &mut truth,
        &etcd,
        "update a after the compaction".into(),
        &kube_put(a, ra3, "a4"),
    );
    let rc = ra + 2;
    record(&mut truth, &etcd, "delete c".into(), &move |e: &TestEtcd| {
        e.txn(optimistic(c, rc, TxnOp::delete(c, None)));
    });
    record(&mut truth, &etcd, "create d".into(), &kube_put(d, 0, "d1"));
    record(
        &mut truth,
        &etcd,
        "create d, a retried create's loser".into(),
        &kube_put(d, 0, "d1"),
    );
    let key = "compact_rev_key";
    for v in 0..2 {
        record(
            &mut truth,
            &etcd,
            format!("compactor {v}"),
            &move |e: &TestEtcd| {
                e.txn(
                    Txn::new()
                        .when([Compare::version(key, CompareOp::Equal, v)])
                        .and_then([TxnOp::put(key, format!("{v}"), None)])
                        .or_else([TxnOp::get(key, None)]),
                );
            },
        );
    }
    etcd.stop();

    let (facts, entries, snapshot) = member(&etcd);
    // The log starts at entry 1: that the store was empty then follows
    // from the entries' indexes alone.
    assert_eq!(snapshot, Some((0, 0)));
    let placed = place(&entries, &facts).unwrap();
    let mut sent = truth.iter();
    let mut wrong = Vec::new();
    for (entry, placed) in entries.iter().zip(&placed) {
        let index = entry.index;
        let expected = match said(&entry.request) {
            Some(_) if matches!(entry.request, Request::LeaseGrant(_) | Request::Compaction(_)) => {
                sent.next();
                None
            }
            Some(text) => {
                let (what, revision) = sent.next().expect("a request sent for each entry");
                if placed != revision {
                    wrong.push(format!(
                        "{what} ({text}): etcd wrote {revision:?}, placed {placed:?}"
                    ));
                }
                continue;
            }
            None => None,
        };
        assert_eq!(*placed, expected, "entry {index}");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // A log whose first entries were purged (a raft snapshot, then older
    // segments removed) says it cannot be placed yet.
    let later = place(&entries[1..], &facts).expect_err("a log from after entry 1 is not placed");
    assert_eq!(later.index, entries[1].index);
    assert!(later.why.contains("raft snapshot"), "{later}");
    // Nor is a log against a db that does not match it.
    let (mut other, _) = db_facts(&etcd.db_file());
    other.revision = other.revision.next();
    let stopped = place(&entries, &other).expect_err("a db one revision ahead disagrees");
    assert!(stopped.why.contains("disagree"), "{stopped}");
}
