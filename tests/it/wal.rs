//! The WAL reader on a real etcd's log: every request a client sent, in
//! order, with its values, as kube-apiserver writes (creates and updates as
//! transactions comparing `mod_revision`, a conflict's loser, deletes,
//! a key attached to a lease that is revoked), beside writes outside its
//! prefix and a compaction. Runs on every etcd of the matrix.

mod live;

use crate::util::etcd::TestEtcd;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use etcd_inspector::source::bolt::BoltDb;
use etcd_inspector::source::db_file;
use etcd_inspector::source::wal::{self, CompareTarget, Op, Request};

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
