//! `attribute`: a real etcd written as kube-apiserver writes it, with the
//! audit log the apiserver would have written for the same requests, at
//! `RequestResponse` and at `Metadata` level, with repeated stages,
//! conflicts, no-op updates, a write from outside the apiserver, rotated and
//! compressed files and a truncated last line. Every attribution is checked
//! against the truth.

use crate::util::etcd::TestEtcd;
use crate::util::*;
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::{json as j, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// A body marker that must never reach the database.
const BODY_SECRET: &str = "s3cr3t-in-the-request-body";

/// The apiserver as the test plays it: writes etcd, logs each request.
struct Apiserver<'a> {
    etcd: &'a TestEtcd,
    /// Lines of the audit log, in the order they were written.
    lines: Vec<String>,
    /// (key, revision) → auditID of the request that wrote it.
    truth: BTreeMap<(String, i64), String>,
    /// auditID of requests that succeeded without writing.
    no_ops: Vec<String>,
    /// Seconds since 09:00:00 of the next request.
    clock: u32,
    requests: u32,
}

/// Who sends a request: a user and its client's user agent.
#[derive(Clone, Copy)]
struct Who(&'static str, &'static str);

/// What a request does.
#[derive(Clone, Copy, PartialEq)]
enum Effect {
    Writes,
    NoOp,
    Conflict,
    /// A delete of an object with a finalizer: it only marks it deleted.
    MarksDeleted,
    /// An update removing the last finalizer of an object being deleted:
    /// the apiserver writes it, then deletes the object.
    Finalizes,
    /// It writes, but the client gave up first: answered 504 Timeout while
    /// the write went on.
    TimesOut,
}

fn time(seconds: u32, micros: u32) -> String {
    format!(
        "2026-11-29T09:{:02}:{:02}.{micros:06}Z",
        seconds / 60,
        seconds % 60
    )
}

fn key(ns: &str, name: &str) -> String {
    format!("/registry/configmaps/{ns}/{name}")
}

/// `config_map` being deleted since `at`, still held by `finalizers`.
fn deleting(ns: &str, name: &str, at: &str, finalizers: &[&str]) -> Vec<u8> {
    encode_protobuf(&j!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"), "creationTimestamp": "2026-11-29T09:00:00Z",
            "deletionTimestamp": at, "deletionGracePeriodSeconds": 0, "finalizers": finalizers},
        "data": {"app.properties": "last"}}))
    .unwrap()
}

fn config_map(ns: &str, name: &str, created: &str, value: &str) -> Vec<u8> {
    encode_protobuf(&j!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"), "creationTimestamp": created,
            "labels": {"app.kubernetes.io/name": name}},
        "data": {"app.properties": value}}))
    .unwrap()
}

impl<'a> Apiserver<'a> {
    fn new(etcd: &'a TestEtcd) -> Self {
        Apiserver {
            etcd,
            lines: Vec::new(),
            truth: BTreeMap::new(),
            no_ops: Vec::new(),
            clock: 0,
            requests: 0,
        }
    }

    /// One request by `who` on configmap `ns/name`, at `level`, writing
    /// `value` when it writes.
    fn request(
        &mut self,
        level: &str,
        who: Who,
        verb: &str,
        object: (&str, &str),
        value: &str,
        effect: Effect,
    ) {
        let (Who(user, agent), (ns, name)) = (who, object);
        self.requests += 1;
        self.clock += 2;
        let id = format!("00000000-0000-0000-0000-{:012}", self.requests);
        let received = time(self.clock, 100);
        let completed = time(self.clock, 345_678);
        let k = key(ns, name);
        // The key's newest revision before this request: what a PUT read.
        let head = self.newest(&k);
        let revision = match (effect, verb) {
            (Effect::Writes, "delete") => Some(self.etcd.delete(&k)),
            (Effect::Writes | Effect::TimesOut, _) => {
                Some(self.etcd.put(&k, &config_map(ns, name, &self.second(), value)))
            }
            (Effect::MarksDeleted, _) => Some(
                self.etcd
                    .put(&k, &deleting(ns, name, &self.second(), &["example.com/cleanup"])),
            ),
            (Effect::Finalizes, _) => {
                let at = self.etcd.put(&k, &deleting(ns, name, &self.second(), &[]));
                let gone = self.etcd.delete(&k);
                self.truth.insert((k.clone(), gone), id.clone());
                Some(at)
            }
            _ => None,
        };
        if let Some(rev) = revision {
            self.truth.insert((k.clone(), rev), id.clone());
        }
        if effect == Effect::NoOp {
            self.no_ops.push(id.clone());
        }
        let mut event = j!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level, "auditID": id,
            "stage": "RequestReceived", "verb": verb,
            "requestURI": format!("/api/v1/namespaces/{ns}/configmaps/{name}"),
            "user": {"username": user, "uid": "u-1", "groups": ["system:authenticated", "dev.example.com/team-a"]},
            "sourceIPs": ["192.0.2.7"], "userAgent": agent,
            "objectRef": {"resource": "configmaps", "namespace": ns, "name": name, "apiVersion": "v1"},
            "requestReceivedTimestamp": received, "stageTimestamp": received,
        });
        if verb == "update" {
            // A PUT carries the revision it read: the precondition.
            event["objectRef"]["resourceVersion"] = j!(head.to_string());
        }
        self.lines.push(event.to_string());
        event["stage"] = j!("ResponseComplete");
        event["stageTimestamp"] = j!(completed);
        let code = match effect {
            Effect::Conflict => 409,
            Effect::TimesOut => 504,
            _ if verb == "create" => 201,
            _ => 200,
        };
        event["responseStatus"] = j!({"metadata": {}, "code": code});
        if level == "RequestResponse" {
            event["requestObject"] = j!({"kind": "ConfigMap", "data": {"password": BODY_SECRET}});
            if effect == Effect::TimesOut {
                event["responseObject"] = j!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                    "status": "Failure", "reason": "Timeout", "code": 504,
                    "message": "request did not complete within requested timeout - context canceled"});
            } else if effect != Effect::Conflict {
                let rv = revision.unwrap_or(head);
                event["responseObject"] = j!({"kind": "ConfigMap", "apiVersion": "v1",
                    "metadata": {"name": name, "namespace": ns, "resourceVersion": rv.to_string()},
                    "data": {"password": BODY_SECRET, "pad": "x".repeat(4096)}});
            }
        }
        self.lines.push(event.to_string());
    }

    /// The whole second the request is served in, as the apiserver
    /// stamps objects.
    fn second(&self) -> String {
        format!("2026-11-29T09:{:02}:{:02}Z", self.clock / 60, self.clock % 60)
    }

    /// The newest revision of `k` the apiserver wrote.
    fn newest(&self, k: &str) -> i64 {
        let revs = self.truth.keys().filter(|(key, _)| key == k);
        revs.map(|(_, r)| *r).max().unwrap_or(0)
    }
}

/// Writes `lines` as the log backend would have, rotated twice: two
/// backups (the older gzipped) and the active file, whose last line was cut
/// mid-write.
fn write_rotated(dir: &Path, lines: &[String]) {
    let third = lines.len() / 3;
    let gz = std::fs::File::create(dir.join("audit-2026-11-29T09-00-20.000.log.gz")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(gz, flate2::Compression::default());
    for l in &lines[..third] {
        writeln!(gz, "{l}").unwrap();
    }
    gz.finish().unwrap();
    let plain: String = lines[third..2 * third].iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("audit-2026-11-29T09-01-00.000.log"), plain).unwrap();
    let mut active: String = lines[2 * third..].iter().map(|l| format!("{l}\n")).collect();
    active.push_str(r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"cut"#);
    std::fs::write(dir.join("audit.log"), active).unwrap();
    std::fs::write(dir.join("README.txt"), "not a log").unwrap();
}

/// Every revision of `k` with the auditID history says wrote it.
fn writers(db: &Path, k: &str) -> Vec<(i64, Option<String>, Option<String>, Value)> {
    history(db, k)
        .iter()
        .map(|r| {
            (
                r["mod_revision"].as_i64().unwrap(),
                r["written_by"]["audit_id"].as_str().map(String::from),
                r["written_by"]["match"].as_str().map(String::from),
                r.clone(),
            )
        })
        .collect()
}

#[test]
fn attribute_joins_audit_logs_to_revisions_exactly_and_by_order() {
    let etcd = TestEtcd::start();
    let (dir, db) = temp_db();
    let mut api = Apiserver::new(&etcd);
    let kubectl = "kubectl/v1.31.0 (linux/amd64) kubernetes/abcdef";
    let operator = "settings-operator/2.1 (linux/amd64)";
    let op = "system:serviceaccount:ops:settings";
    let (alice, bob) = (Who("alice@example.com", kubectl), Who("bob@example.com", kubectl));
    let (carol, dave, erin) = (
        Who("carol@example.com", kubectl),
        Who("dave@example.com", kubectl),
        Who("erin@example.com", kubectl),
    );
    let settings = Who(op, operator);
    let (app, web, db_settings) = (
        ("team-a", "app.config"),
        ("team-b", "web.settings"),
        ("team-b", "db.settings"),
    );
    // RequestResponse: alice creates and edits; an operator rewrites
    // blindly (no-ops) and conflicts while alice's patch wins; bob deletes.
    let rr = "RequestResponse";
    api.request(rr, alice, "create", app, "v=1", Effect::Writes);
    api.request(rr, alice, "update", app, "v=2", Effect::Writes);
    for round in 0..3 {
        // Its resync, every 30 s: long after any write it could be
        // catching up with.
        api.clock += 30;
        api.request(rr, settings, "update", app, "", Effect::NoOp);
        api.request(rr, settings, "update", app, "", Effect::Conflict);
        if round == 1 {
            api.request(rr, alice, "patch", app, "v=3", Effect::Writes);
        }
    }
    api.request(rr, bob, "delete", app, "", Effect::Writes);
    // Metadata: a create and updates, attributed by order.
    let md = "Metadata";
    api.request(md, carol, "create", web, "a", Effect::Writes);
    api.request(md, carol, "update", web, "b", Effect::Writes);
    api.request(md, carol, "patch", web, "c", Effect::Writes);
    api.request(md, dave, "patch", web, "", Effect::Conflict);
    // Metadata with a write from outside the apiserver (etcdctl) after the
    // patch: two revisions, one request; the order cannot tell which.
    api.request(md, erin, "create", db_settings, "1", Effect::Writes);
    api.request(md, erin, "patch", db_settings, "2", Effect::Writes);
    // Metadata: a delete held by a finalizer, then the controller's update
    // removing it, which the apiserver follows with the delete itself.
    let queue = ("team-b", "queue.settings");
    api.request(md, carol, "create", queue, "q", Effect::Writes);
    api.request(md, carol, "delete", queue, "", Effect::MarksDeleted);
    api.request(md, settings, "update", queue, "", Effect::Finalizes);
    // A create whose client gave up: answered 504, stored all the same.
    let slow = ("team-a", "slow.settings");
    api.request(rr, alice, "create", slow, "late", Effect::TimesOut);
    let outside = config_map("team-b", "db.settings", "2026-11-29T09:00:00Z", "etcdctl");
    etcd.put(&key("team-b", "db.settings"), &outside);
    ok(snapshot(&etcd, &db, &[]));

    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    write_rotated(&logs, &api.lines);
    let first = json(inspector(
        &db,
        &["attribute", "--audit-log", logs.to_str().unwrap(), "-o", "json"],
    ));
    let read = &first["read"];
    assert_eq!(read["files"], 3, "{first:#}");
    assert_eq!(read["events"], api.lines.len(), "{first:#}");
    assert_eq!(read["malformed"], 1, "{first:#}");
    let named = read["first_malformed"][0].as_str().unwrap();
    assert!(named.contains("audit.log:"), "{named}");
    let joined = &first["joined"];
    // Exact: alice's create, update, patch and bob's delete.
    assert_eq!(joined["exact"], 4, "{first:#}");
    // By order: carol's three writes, erin's create, the finalized
    // object's four revisions (the last two the controller's update) and
    // the create answered 504.
    assert_eq!(joined["by_order"], 9, "{first:#}");
    assert_eq!(joined["no_op"], api.no_ops.len(), "{first:#}");
    assert_eq!(joined["failed"], 4, "{first:#}");
    // erin's patch: two revisions after the create, one request.
    assert_eq!(joined["ambiguous"], 1, "{first:#}");
    assert_eq!(joined["unattributed_revisions"], 2, "{first:#}");

    // Every attributed revision is the truth, and every revision the truth
    // knows of the first two objects is attributed.
    for (k, must_all) in [
        (key("team-a", "app.config"), true),
        (key("team-b", "web.settings"), true),
        (key("team-b", "db.settings"), false),
        (key("team-b", "queue.settings"), true),
    ] {
        for (rev, audit_id, matched, row) in writers(&db, &k) {
            let truth = api.truth.get(&(k.clone(), rev));
            match &audit_id {
                Some(id) => assert_eq!(
                    Some(id),
                    truth,
                    "{k}@{rev} attributed to the wrong request: {row:#}"
                ),
                None => assert!(!must_all, "{k}@{rev} unattributed: {row:#}"),
            }
            if let Some(m) = matched {
                let level_exact = k.contains("team-a");
                assert_eq!(m, if level_exact { "exact" } else { "by-order" }, "{row:#}");
                assert!(
                    row["written_at"].as_str().unwrap().ends_with(".345678Z"),
                    "{row:#}"
                );
                let at = &row["written_at"];
                assert_eq!(row["written_between"], j!([at, at]), "{row:#}");
                assert_eq!(row["written_by"]["source_ips"], j!(["192.0.2.7"]));
                assert_eq!(row["written_by"]["groups"][1], "dev.example.com/team-a");
            }
        }
    }
    let timed_out = writers(&db, &key("team-a", "slow.settings"));
    let truth = api.truth.get(&(key("team-a", "slow.settings"), timed_out[0].0));
    assert_eq!(timed_out[0].1.as_ref(), truth, "{:#}", timed_out[0].3);
    assert_eq!(timed_out[0].2.as_deref(), Some("by-order"));
    let app = history(&db, &key("team-a", "app.config"));
    assert_eq!(app[0]["written_by"]["user"], "alice@example.com");
    assert_eq!(app[0]["written_by"]["verb"], "create");
    assert_eq!(app[0]["written_by"]["user_agent"], kubectl);
    assert_eq!(app.last().unwrap()["written_by"]["user"], "bob@example.com");

    // Reading the same logs again (here the active file through standard
    // input) changes nothing.
    let before: Vec<_> = [key("team-a", "app.config"), key("team-b", "web.settings")]
        .iter()
        .map(|k| history(&db, k))
        .collect();
    let active = std::fs::read(logs.join("audit.log")).unwrap();
    let again = run_inspector(
        &[
            "--db",
            db.to_str().unwrap(),
            "attribute",
            "--audit-log",
            "-",
            "-o",
            "json",
        ],
        Some(&active),
    );
    let again = json(again);
    assert_eq!(again["staged"], 0, "{again:#}");
    assert_eq!(again["joined"], first["joined"], "{again:#}");
    let after: Vec<_> = [key("team-a", "app.config"), key("team-b", "web.settings")]
        .iter()
        .map(|k| history(&db, k))
        .collect();
    assert_eq!(before, after);

    // The table names who and when.
    let table =
        String::from_utf8(ok(inspector(&db, &["history", &key("team-a", "app.config")])).stdout).unwrap();
    assert!(
        table.contains("alice@example.com (kubectl/v1.31.0) create"),
        "{table}"
    );
    let summary = String::from_utf8(
        ok(inspector(
            &db,
            &["attribute", "--audit-log", logs.to_str().unwrap()],
        ))
        .stdout,
    )
    .unwrap();
    assert!(summary.contains("revisions attributed exactly"), "{summary}");

    // The detectors, run again by attribute, name the operator.
    let no_ops = findings(&db, "no-op-writes");
    assert_eq!(no_ops.len(), 1, "{no_ops:#?}");
    let f = &no_ops[0]["details"];
    assert_eq!(
        (f["user"].as_str(), f["user_agent"].as_str(), f["count"].as_i64()),
        (Some(op), Some(operator), Some(3))
    );
    assert_eq!(f["object"]["name"], "app.config");
    assert_eq!(no_ops[0]["keys"], j!([key("team-a", "app.config")]));
    let storms = findings(&db, "conflict-storms");
    assert_eq!(storms.len(), 1, "{storms:#?}");
    let f = &storms[0]["details"];
    assert_eq!(
        (f["count"].as_i64(), f["writes_won"].as_i64()),
        (Some(3), Some(1)),
        "{f:#}"
    );
    assert_eq!(f["won"][0]["user"], "alice@example.com");
    // A finding's evidence names who wrote the revisions it gives.
    let won_rev = storms[0]["revisions"][0].as_i64().unwrap().to_string();
    assert_eq!(
        storms[0]["written_by"][&won_rev]["user"], "alice@example.com",
        "{storms:#?}"
    );
    let patch = api
        .truth
        .iter()
        .find(|(_, id)| id.ends_with("000000000007"))
        .unwrap();
    assert_eq!(storms[0]["revisions"], j!([(patch.0).1]), "{storms:#?}");

    // The report's timelines say who wrote each revision, and when.
    let report = json(inspector(&db, &["report", "--format", "json"]));
    assert_report_schema(&report);
    let md = String::from_utf8(ok(inspector(&db, &["report", "--format", "md"])).stdout).unwrap();
    assert!(
        md.contains("| alice@example.com (kubectl/v1.31.0) create at 2026-11-29T09:00:02.345678Z |"),
        "{md}"
    );

    // diff says who wrote each object as it is at the later side.
    let web_key = key("team-b", "web.settings");
    let web_revs: Vec<i64> = api
        .truth
        .keys()
        .filter(|(k, _)| *k == web_key)
        .map(|(_, r)| *r)
        .collect();
    let (first, last) = (web_revs[0].to_string(), web_revs[web_revs.len() - 1].to_string());
    let diff = json(inspector(
        &db,
        &["diff", "--rev-a", &first, "--rev-b", &last, "-o", "json"],
    ));
    let web = diff["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["key"] == web_key.as_str())
        .unwrap();
    assert_eq!(
        (
            web["written_by_b"]["user"].as_str(),
            web["written_by_b"]["verb"].as_str()
        ),
        (Some("carol@example.com"), Some("patch")),
        "{web:#}"
    );

    // stats counts per user and per user agent.
    let stats = json(inspector(&db, &["stats", "-o", "json"]));
    let row = |list: &str, name: &str| {
        let rows = stats[list].as_array().unwrap();
        rows.iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {rows:#?}"))
    };
    // alice's: create, update, patch, and the create answered 504.
    let alice_row = row("users", "alice@example.com");
    assert_eq!(
        (alice_row["writes"].as_i64(), alice_row["no_op_writes"].as_i64()),
        (Some(4), Some(0))
    );
    let op_row = row("users", op);
    assert_eq!(
        (
            op_row["writes"].as_i64(),
            op_row["no_op_writes"].as_i64(),
            op_row["conflicts"].as_i64()
        ),
        (Some(2), Some(3), Some(3))
    );
    // alice, bob, carol and erin all sent kubectl: 4 + 1 + 5 + 1 attributed.
    assert_eq!(row("user_agents", kubectl)["writes"], 11);
    let table = String::from_utf8(ok(inspector(&db, &["stats"])).stdout).unwrap();
    assert!(table.contains("User agents (from the audit logs"), "{table}");

    // snapshot reads the logs when its run ends, as attribute does; a log
    // that is not there stops it before the run begins.
    let runs_before = runs(&db).len();
    let missing = snapshot(&etcd, &db, &["--audit-log", "/nonexistent/audit"]);
    assert!(
        one_line_error(&missing).contains("/nonexistent/audit"),
        "{}",
        stderr(&missing)
    );
    assert_eq!(runs(&db).len(), runs_before);
    let run = ok(snapshot(&etcd, &db, &["--audit-log", logs.to_str().unwrap()]));
    let said = stderr(&run);
    assert!(
        said.contains("4 revisions attributed exactly, 9 by order, 3 no-op writes"),
        "{said}"
    );

    // Bodies are never stored.
    assert_secrets_nowhere(&db, &[BODY_SECRET]);
}

#[test]
fn attribute_names_bad_input_in_one_line() {
    let etcd = TestEtcd::start();
    let (dir, db) = temp_db();
    let no_db = inspector(&db, &["attribute", "--audit-log", "/nonexistent/audit.log"]);
    assert_exit(&no_db, 1);
    etcd.put(&key("a", "b"), &config_map("a", "b", "2026-11-29T09:00:00Z", "x"));
    ok(snapshot(&etcd, &db, &[]));
    let missing = inspector(&db, &["attribute", "--audit-log", "/nonexistent/audit.log"]);
    assert!(
        one_line_error(&missing).contains("/nonexistent/audit.log"),
        "{}",
        stderr(&missing)
    );
    let bad_gz = dir.path().join("audit.log.gz");
    std::fs::write(&bad_gz, [0x1f, 0x8b, 0x08, 0x00, 0x01]).unwrap();
    let broken = inspector(&db, &["attribute", "--audit-log", bad_gz.to_str().unwrap()]);
    assert!(
        one_line_error(&broken).contains("audit.log.gz"),
        "{}",
        stderr(&broken)
    );
    // No log at all is a usage error.
    let none = inspector(&db, &["attribute"]);
    assert_exit(&none, 2);
    assert!(stderr(&none).contains("--audit-log"), "{}", stderr(&none));
}

/// GKE's Cloud Logging export and EKS's CloudWatch export, joined as the
/// log backend's lines are: the write each names is attributed exactly.
#[test]
fn attribute_reads_gke_and_eks_exports() {
    let etcd = TestEtcd::start();
    let (dir, db) = temp_db();
    let created = "2026-11-29T09:00:00Z";
    let gke_rev = etcd.put(
        &key("team-a", "gke.config"),
        &config_map("team-a", "gke.config", created, "g"),
    );
    let eks_rev = etcd.put(
        &key("team-a", "eks.config"),
        &config_map("team-a", "eks.config", created, "e"),
    );
    ok(snapshot(&etcd, &db, &[]));
    let gke = j!({
        "protoPayload": {
            "@type": "type.googleapis.com/google.cloud.audit.AuditLog",
            "authenticationInfo": {"principalEmail": "alice@example.com"},
            "methodName": "io.k8s.core.v1.configmaps.create",
            "requestMetadata": {"callerIp": "192.0.2.7", "callerSuppliedUserAgent": "kubectl/v1.31.0 (linux/amd64)"},
            "resourceName": "core/v1/namespaces/team-a/configmaps/gke.config",
            "serviceName": "k8s.io",
            "status": {},
            "response": {"@type": "core.k8s.io/v1.ConfigMap", "metadata": {"resourceVersion": gke_rev.to_string()}},
        },
        "insertId": "insert-1",
        "timestamp": "2026-11-29T09:00:00.500000Z",
        "operation": {"id": "gke-op-1", "producer": "k8s.io", "first": true, "last": true},
    });
    let event = j!({"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
        "auditID": "eks-1", "stage": "ResponseComplete", "verb": "create",
        "user": {"username": "arn:aws:iam::123456789012:role/deployer", "groups": ["system:authenticated"]},
        "sourceIPs": ["198.51.100.4"], "userAgent": "helm/v3.16.0",
        "objectRef": {"resource": "configmaps", "namespace": "team-a", "name": "eks.config", "apiVersion": "v1"},
        "responseStatus": {"code": 201},
        "responseObject": {"metadata": {"resourceVersion": eks_rev.to_string()}},
        "requestReceivedTimestamp": "2026-11-29T09:00:00.600000Z", "stageTimestamp": "2026-11-29T09:00:00.700000Z"});
    let cloudwatch = j!({"events": [{"timestamp": 1764406800700i64, "message": event.to_string(), "logStreamName": "kube-apiserver-audit-1"}]});
    let (gke_file, eks_file) = (dir.path().join("gke.jsonl"), dir.path().join("eks.json"));
    std::fs::write(&gke_file, format!("{gke}\n")).unwrap();
    std::fs::write(&eks_file, cloudwatch.to_string()).unwrap();
    let out = json(inspector(
        &db,
        &[
            "attribute",
            "--audit-log",
            gke_file.to_str().unwrap(),
            "--audit-log",
            eks_file.to_str().unwrap(),
            "-o",
            "json",
        ],
    ));
    assert_eq!(
        (out["joined"]["exact"].as_i64(), out["read"]["malformed"].as_i64()),
        (Some(2), Some(0)),
        "{out:#}"
    );
    let gke_row = &history(&db, &key("team-a", "gke.config"))[0];
    assert_eq!(
        (
            gke_row["written_by"]["user"].as_str(),
            gke_row["written_by"]["audit_id"].as_str()
        ),
        (Some("alice@example.com"), Some("gke-op-1")),
        "{gke_row:#}"
    );
    let eks_row = &history(&db, &key("team-a", "eks.config"))[0];
    assert_eq!(
        eks_row["written_by"]["user"], "arn:aws:iam::123456789012:role/deployer",
        "{eks_row:#}"
    );
    assert_eq!(eks_row["written_at"], "2026-11-29T09:00:00.700000Z");

    // follow reads the logs when its run ends, too.
    let followed = inspector(
        &db,
        &[
            "follow",
            "--endpoints",
            &etcd.endpoint,
            "--duration",
            "1s",
            "--audit-log",
            gke_file.to_str().unwrap(),
        ],
    );
    let said = stderr(&ok(followed));
    assert!(said.contains("attributed: 1 audit events in 1 files"), "{said}");
}
