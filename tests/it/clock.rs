//! The clock without an audit log: a real etcd written as a cluster writes
//! it, with leader-election Leases renewed every 2 s and a node's every
//! 10 s between the writes of ConfigMaps whose true write times the test
//! knows. Every revision's `written_between` must hold its true time and be
//! about as wide as the renewals are apart, whether the run stores Leases
//! or leaves them out (the default).

use crate::util::etcd::TestEtcd;
use crate::util::*;
use etcd_inspector::decode::encode::encode_protobuf;
use jiff::{SignedDuration, Timestamp};
use serde_json::json;
use std::collections::BTreeMap;

fn lease(name: &str, ns: &str, renewed: Timestamp) -> Vec<u8> {
    let micro = renewed.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    encode_protobuf(&json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"), "creationTimestamp": "2026-11-29T09:00:00Z"},
        "spec": {"holderIdentity": "cp-1_0a1b", "leaseDurationSeconds": 15, "renewTime": micro}}))
    .unwrap()
}

/// A ConfigMap written at `at`: its creationTimestamp (whole seconds) is
/// `created`, and a managedFields time only when `manager_time` says so
/// (an old client's write carries none).
fn config_map(name: &str, created: Timestamp, at: Timestamp, manager_time: bool, value: u32) -> Vec<u8> {
    let second = |t: Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let mut metadata = json!({"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
        "creationTimestamp": second(created), "labels": {"app.kubernetes.io/name": "web"}});
    if manager_time {
        metadata["managedFields"] = json!([{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
            "time": second(at), "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:app.properties": {}}}}]);
    }
    encode_protobuf(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
        "data": {"app.properties": format!("v={value}")}}),
    )
    .unwrap()
}

#[test]
fn every_revision_gets_an_interval_that_holds_its_true_time() {
    for exclude in ["leases.coordination.k8s.io", "none"] {
        let etcd = TestEtcd::start();
        let (_dir, db) = temp_db();
        let start: Timestamp = "2026-11-29T09:00:00.250Z".parse().unwrap();
        let mut truth: BTreeMap<(String, i64), Timestamp> = BTreeMap::new();
        let mut created: BTreeMap<String, Timestamp> = BTreeMap::new();
        // Half-second steps over two minutes of the cluster's time.
        for step in 0..=240u32 {
            let now = start + SignedDuration::from_millis(500 * i64::from(step));
            if step % 4 == 0 {
                etcd.put(
                    "/registry/leases/kube-system/kube-controller-manager",
                    &lease("kube-controller-manager", "kube-system", now),
                );
            }
            if step % 20 == 3 {
                etcd.put(
                    "/registry/leases/kube-node-lease/node-1",
                    &lease("node-1", "kube-node-lease", now),
                );
            }
            if step % 3 == 1 {
                let name = format!("web.config-{}", step % 5);
                let key = format!("/registry/configmaps/shop/{name}");
                let born = *created.entry(key.clone()).or_insert(now);
                let rev = etcd.put(&key, &config_map(&name, born, now, step % 2 == 1, step));
                truth.insert((key, rev), now);
            }
        }
        ok(snapshot(&etcd, &db, &["--exclude-resource", exclude]));
        let mut widths = Vec::new();
        for key in created.keys() {
            for row in history(&db, key) {
                let rev = row["mod_revision"].as_i64().unwrap();
                let between = &row["written_between"];
                let side = |i: usize| {
                    between[i]
                        .as_str()
                        .unwrap_or_else(|| panic!("{key}@{rev} unbounded ({exclude}): {row:#}"))
                        .parse::<Timestamp>()
                        .unwrap()
                };
                let (from, to) = (side(0), side(1));
                let at = truth[&(key.clone(), rev)];
                assert!(
                    from <= at && at <= to,
                    "{key}@{rev} written at {at}, not in [{from}, {to}] ({exclude})"
                );
                widths.push(to.duration_since(from));
            }
        }
        assert_eq!(widths.len(), truth.len());
        let widest = widths.iter().max().unwrap();
        // Renewals 2 s apart, a second of slack after the later one.
        assert!(
            *widest <= SignedDuration::from_secs(3),
            "widest {widest:?} ({exclude})"
        );

        // A report for a window of the cluster's time covers the revisions
        // written in it, give or take an interval at each end.
        let (since, until) = ("2026-11-29T09:00:40Z", "2026-11-29T09:01:10Z");
        let report = json(inspector(
            &db,
            &["report", "--format", "json", "--since", since, "--until", until],
        ));
        let (from, to) = (
            report["from_revision"].as_i64().unwrap(),
            report["to_revision"].as_i64().unwrap(),
        );
        let (since, until): (Timestamp, Timestamp) = (since.parse().unwrap(), until.parse().unwrap());
        let slack = SignedDuration::from_secs(3);
        for ((key, rev), at) in &truth {
            if (since..=until).contains(at) {
                assert!(
                    (from..=to).contains(rev),
                    "{key}@{rev} at {at} outside {from}..={to}"
                );
            }
            if *at < since - slack || *at > until + slack {
                assert!(
                    !(from..=to).contains(rev),
                    "{key}@{rev} at {at} inside {from}..={to}"
                );
            }
        }

        // The table shows the middle and half the width.
        let key = created.keys().next().unwrap();
        let table = String::from_utf8(ok(inspector(&db, &["history", key])).stdout).unwrap();
        assert!(table.contains("~2026-11-29T09:0"), "{table}");
        assert!(table.contains(" ± 2 s") || table.contains(" ± 1 s"), "{table}");
    }
}

/// Anchors that contradict the rest: a ConfigMap written around the
/// apiserver (a restore) with an October creationTimestamp, and one whose
/// writer's clock ran a month ahead. Each is left out and counted; every
/// other revision keeps an interval that holds its true time, and no
/// interval runs backwards.
#[test]
fn contradicting_anchors_are_left_out_and_counted() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let start: Timestamp = "2026-11-29T09:00:00.250Z".parse().unwrap();
    let mut truth: BTreeMap<(String, i64), Timestamp> = BTreeMap::new();
    for step in 0..=80u32 {
        let now = start + SignedDuration::from_millis(500 * i64::from(step));
        if step % 4 == 0 {
            etcd.put(
                "/registry/leases/kube-system/kube-controller-manager",
                &lease("kube-controller-manager", "kube-system", now),
            );
        }
        if step % 3 == 1 {
            let name = format!("web.config-{}", step % 5);
            let key = format!("/registry/configmaps/shop/{name}");
            let rev = etcd.put(&key, &config_map(&name, now, now, true, step));
            truth.insert((key, rev), now);
        }
        if step == 30 {
            let october: Timestamp = "2026-10-01T00:00:00Z".parse().unwrap();
            etcd.put(
                "/registry/configmaps/shop/restored",
                &config_map("restored", october, october, true, step),
            );
        }
        if step == 50 {
            let ahead = now + SignedDuration::from_hours(24 * 30);
            etcd.put(
                "/registry/configmaps/shop/skewed",
                &config_map("skewed", now, ahead, true, step),
            );
        }
    }
    ok(snapshot(&etcd, &db, &["--no-analyze"]));
    let analyzed = ok(inspector(&db, &["analyze"]));
    assert!(
        stderr(&analyzed).contains("the clock left out 2 time bounds that contradict the others"),
        "{}",
        stderr(&analyzed)
    );
    for (key, row) in every_revision(&db) {
        let rev = row.mod_revision.0;
        let [from, to] = row
            .written_between
            .clone()
            .map(|t| t.map(|t| t.parse::<Timestamp>().unwrap()));
        if let (Some(from), Some(to)) = (from, to) {
            assert!(from <= to, "{key}@{rev} runs backwards: {from} to {to}");
        }
        let Some(at) = truth.get(&(key.clone(), rev)) else {
            continue;
        };
        let (from, to) = (from.unwrap(), to.unwrap());
        assert!(
            from <= *at && *at <= to,
            "{key}@{rev} written at {at}, not in [{from}, {to}]"
        );
        assert!(
            to.duration_since(from) <= SignedDuration::from_secs(3),
            "{key}@{rev}: {from} to {to}"
        );
    }
}
