//! `history-invariants` on real etcd: history written one key a revision,
//! as kube-apiserver writes it, with updates, deletes, re-creates and keys
//! deleted together by their lease expiring, breaks nothing; one txn that
//! writes two keys is a finding naming both; and a stored row damaged
//! behind the tool's back is a finding quoting the rows.

use crate::util::backend::execute;
use crate::util::etcd::TestEtcd;
use crate::util::k8s::{config_map, pod, secret};
use crate::util::{findings, inspector, ok, snapshot, temp_db};
use etcd_client::{PutOptions, Txn, TxnOp};

const DETECTOR: &str = "history-invariants";

#[test]
fn history_etcd_keeps_breaks_nothing_and_a_two_key_txn_does() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let web = "/registry/pods/shop/web";
    etcd.put(web, &pod("shop", "web", "u1", "web:1"));
    etcd.put(web, &pod("shop", "web", "u1", "web:2"));
    etcd.delete(web);
    etcd.put(web, &pod("shop", "web", "u2", "web:2"));
    // Two Events on one lease, deleted together when it is revoked.
    let lease = etcd.grant(3600);
    for name in ["tick.1", "tick.2"] {
        let key = format!("/registry/events/shop/{name}");
        let opts = PutOptions::new().with_lease(lease);
        assert!(etcd.txn(Txn::new().and_then([TxnOp::put(
            key.as_str(),
            config_map("shop", name, name, &[]),
            Some(opts)
        )])));
    }
    etcd.revoke(lease);
    ok(snapshot(&etcd, &db, &[]));
    assert_eq!(findings(&db, DETECTOR), Vec::<serde_json::Value>::new());

    // Someone with etcd's keys writes a Secret and the Pod in one txn.
    let token = "/registry/secrets/shop/token";
    let (done, at) = etcd.txn_at(Txn::new().and_then([
        TxnOp::put(token, secret("shop", "token", "u3", "hunter2"), None),
        TxnOp::put(web, pod("shop", "web", "u2", "evil:1"), None),
    ]));
    assert!(done);
    ok(snapshot(&etcd, &db, &[]));
    let found = findings(&db, DETECTOR);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert_eq!(f["severity"], "high");
    assert_eq!(f["revisions"], serde_json::json!([at]));
    assert_eq!(
        f["summary"],
        format!(
            "revision {at} wrote 2 keys in one txn, which kube-apiserver never sends: \
             {web} written, {token} written"
        )
    );
    assert_eq!(f["details"]["rows"][1]["key"], token);
    assert_eq!(f["details"]["rows"][1]["version"], 1);
    assert!(
        !String::from_utf8_lossy(&inspector(&db, &["findings", "-o", "json"]).stdout).contains("hunter2")
    );
}

#[test]
fn a_stored_row_damaged_behind_the_tools_back_is_quoted() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/configmaps/shop/app";
    let mut at = Vec::new();
    for v in ["1", "2", "3"] {
        at.push(etcd.put(key, &config_map("shop", "app", "u1", &[("app.properties", v)])));
    }
    ok(snapshot(&etcd, &db, &[]));
    assert_eq!(findings(&db, DETECTOR), Vec::<serde_json::Value>::new());

    // The middle write's version stored as the newest's: a row lost or
    // mixed by a copy, which no run of etcd could have given.
    let changed = execute(
        &db,
        &format!("UPDATE revisions SET version = 3 WHERE mod_revision = {}", at[1]),
    );
    assert_eq!(changed, 1);
    ok(inspector(&db, &["analyze"]));
    let found = findings(&db, DETECTOR);
    assert_eq!(found.len(), 1, "{found:#?}");
    // Counted from 1 to 3 in one revision, then not at all.
    assert_eq!(
        found[0]["summary"],
        format!(
            "{key}: versions that do not count the writes between at @{} (created @{}, version 1) \
             then @{} (created @{}, version 3) (and 1 more break)",
            at[0], at[0], at[1], at[0]
        )
    );
    assert_eq!(found[0]["revisions"], serde_json::json!(at));
    assert_eq!(found[0]["details"]["breaks"][1]["rows"][1]["mod_revision"], at[2]);
}
