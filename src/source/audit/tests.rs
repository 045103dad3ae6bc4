//! The reader on files as the apiserver, the webhook backend, GKE and EKS
//! write them.

use super::{read, AuditError, AuditEvent, AuditInput, Level, ReadSummary, Stage};
use crate::source::Revision;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// An audit.k8s.io/v1 Event as the log backend writes it, with `extra`'s
/// fields replacing or adding to the defaults.
fn event(id: &str, stage: &str, extra: Value) -> Value {
    let mut e = json!({
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
        "auditID": id, "stage": stage,
        "requestURI": "/apis/apps/v1/namespaces/team/deployments/app", "verb": "update",
        "user": {"username": "system:serviceaccount:kube-system:deployment-controller", "uid": "u1",
                 "groups": ["system:serviceaccounts", "system:authenticated"]},
        "sourceIPs": ["10.0.0.7"], "userAgent": "kube-controller-manager/v1.31.0",
        "objectRef": {"resource": "deployments", "namespace": "team", "name": "app",
                      "apiGroup": "apps", "apiVersion": "v1", "resourceVersion": "41"},
        "responseStatus": {"metadata": {}, "code": 200},
        "requestObject": {"kind": "Deployment", "metadata": {"name": "app", "resourceVersion": "41"}},
        "responseObject": {"kind": "Deployment", "metadata": {"name": "app", "resourceVersion": "42"}},
        "requestReceivedTimestamp": "2026-11-29T09:02:00.100000Z",
        "stageTimestamp": "2026-11-29T09:02:00.123456Z",
        "annotations": {"authorization.k8s.io/decision": "allow"}
    });
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    e
}

fn lines(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn gzip(content: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(content).unwrap();
    gz.finish().unwrap()
}

fn collect(inputs: &[PathBuf]) -> (Vec<AuditEvent>, ReadSummary) {
    let inputs: Vec<AuditInput> = inputs.iter().map(|p| AuditInput::Path(p.clone())).collect();
    let mut events = Vec::new();
    let summary = read(&inputs, |e| {
        events.push(e);
        Ok(())
    })
    .unwrap();
    (events, summary)
}

fn ids(events: &[AuditEvent]) -> Vec<&str> {
    events.iter().map(|e| e.audit_id.as_str()).collect()
}

#[test]
fn log_backend_lines_give_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let content = lines(&[
        event(
            "a1",
            "RequestReceived",
            json!({"responseStatus": null, "responseObject": null}),
        ),
        event(
            "a1",
            "ResponseComplete",
            json!({"impersonatedUser": {"username": "alice"}}),
        ),
    ]) + "\n";
    let path = write(dir.path(), "audit.log", content.as_bytes());
    let (events, summary) = collect(std::slice::from_ref(&path));
    assert_eq!(events.len(), 2);
    let e = &events[1];
    assert_eq!(e.audit_id, "a1");
    assert_eq!(
        (e.stage, e.level, e.verb.as_str()),
        (Stage::ResponseComplete, Level::RequestResponse, "update")
    );
    assert_eq!(e.user, "system:serviceaccount:kube-system:deployment-controller");
    assert_eq!(e.groups, ["system:serviceaccounts", "system:authenticated"]);
    assert_eq!(e.impersonated_user.as_deref(), Some("alice"));
    assert_eq!(e.user_agent.as_deref(), Some("kube-controller-manager/v1.31.0"));
    assert_eq!(e.source_ips, ["10.0.0.7"]);
    let o = e.object.as_ref().unwrap();
    assert_eq!(
        (o.api_group.as_str(), o.api_version.as_str(), o.resource.as_str()),
        ("apps", "v1", "deployments")
    );
    assert_eq!(
        (
            o.namespace.as_deref(),
            o.name.as_deref(),
            o.subresource.as_deref()
        ),
        (Some("team"), Some("app"), None)
    );
    assert_eq!(
        (e.code, e.response_revision, e.precondition_revision),
        (Some(200), Some(Revision(42)), Some(Revision(41)))
    );
    // The time as written, and parsed to the microsecond.
    assert_eq!(e.stage_timestamp, "2026-11-29T09:02:00.123456Z");
    assert_eq!(e.time.as_microsecond(), 1_795_942_920_123_456);
    assert_eq!(
        (e.origin.input.as_str(), e.origin.line),
        (path.to_str().unwrap(), 2)
    );
    let first = &events[0];
    assert_eq!(
        (
            first.stage,
            first.code,
            first.response_revision,
            first.impersonated_user.as_deref()
        ),
        (Stage::RequestReceived, None, None, None)
    );
    assert_eq!(
        summary,
        ReadSummary {
            files: 1,
            lines: 3,
            events: 2,
            by_stage: [1, 0, 1, 0],
            skipped: 1,
            malformed: 0,
            first_malformed: vec![]
        }
    );
}

#[test]
fn v1beta1_is_read_and_unknown_names_are_malformed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let content = lines(&[
        event(
            "b1",
            "ResponseComplete",
            json!({"apiVersion": "audit.k8s.io/v1beta1", "timestamp": "2026-11-29T09:02:00Z"}),
        ),
        event("b2", "ResponseFinished", json!({})),
        event("b3", "ResponseComplete", json!({"level": "Everything"})),
        event("b4", "ResponseComplete", json!({"apiVersion": "audit.k8s.io/v2"})),
        event("b5", "ResponseComplete", json!({"stageTimestamp": "yesterday"})),
        event("b6", "ResponseComplete", json!({"auditID": null})),
        event(
            "b7",
            "ResponseComplete",
            json!({"responseObject": {"metadata": {"resourceVersion": "abc"}}}),
        ),
        json!({"kind": "Pod", "apiVersion": "v1"}),
    ]);
    let path = write(dir.path(), "audit.log", content.as_bytes());
    let (events, summary) = collect(std::slice::from_ref(&path));
    assert_eq!(ids(&events), ["b1"]);
    assert_eq!(summary.malformed, 7);
    // The place and the reason, without the parser's wording of a bad time.
    let reasons: Vec<&str> = summary
        .first_malformed
        .iter()
        .map(|m| m.rsplit_once(".log:").unwrap().1)
        .map(|r| r.split(": failed").next().unwrap())
        .collect();
    assert_eq!(
        reasons,
        [
            "2: \"ResponseFinished\" is not an audit stage",
            "3: \"Everything\" is not an audit level",
            "4: unknown apiVersion \"audit.k8s.io/v2\"",
            "5: stageTimestamp \"yesterday\" is not an RFC 3339 time",
            "6: not an audit event: no auditID",
            "7: responseObject.metadata.resourceVersion \"abc\" is not a revision",
            "8: unknown kind \"Pod\" (expected Event)",
        ]
    );
}

#[test]
fn a_cut_last_line_is_one_malformed_line_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let whole = lines(&[
        event("c1", "ResponseComplete", json!({})),
        event("c2", "ResponseComplete", json!({})),
    ]);
    let cut = &whole[..whole.len() - 40];
    let path = write(dir.path(), "audit.log", cut.as_bytes());
    let (events, summary) = collect(std::slice::from_ref(&path));
    assert_eq!(ids(&events), ["c1"]);
    assert_eq!((summary.lines, summary.malformed), (2, 1));
    let quoted = &summary.first_malformed[0];
    assert!(
        quoted.starts_with(&format!("{}:2: truncated JSON (", path.display())),
        "{quoted}"
    );
}

#[test]
fn bodies_are_skipped_yet_the_response_revision_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(1 << 20);
    let items: Vec<Value> = (0..2000)
        .map(|i| json!({"k": i, "v": [big.get(..40), {"deep": [[[]]]}]}))
        .collect();
    let e = event(
        "d1",
        "ResponseComplete",
        json!({
            "requestObject": {"kind": "ConfigMap", "data": {"blob": big}, "metadata": {"resourceVersion": "7"}},
            // resourceVersion after the large fields, as a ConfigMap's
            // metadata can follow its data.
            "responseObject": {"kind": "ConfigMap", "data": {"blob": big, "items": items}, "metadata": {"name": "cm", "resourceVersion": "9000000001"}}
        }),
    );
    let path = write(dir.path(), "audit.log", lines(&[e]).as_bytes());
    let (events, summary) = collect(&[path]);
    assert_eq!(summary.events, 1);
    assert_eq!(events[0].response_revision, Some(Revision(9_000_000_001)));
}

#[test]
fn webhook_event_lists_per_line_and_as_a_pretty_printed_file() {
    let dir = tempfile::tempdir().unwrap();
    let list = |ids: &[&str]| {
        json!({"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {},
               "items": ids.iter().map(|id| event(id, "ResponseComplete", json!({}))).collect::<Vec<_>>()})
    };
    let per_line = write(
        dir.path(),
        "batches.jsonl",
        lines(&[list(&["w1", "w2"]), list(&["w3"])]).as_bytes(),
    );
    let mut second = list(&["w5"]);
    second["items"][0]["stage"] = json!("Bogus");
    let bad = write(
        dir.path(),
        "bad.jsonl",
        lines(&[list(&["w4"]), second]).as_bytes(),
    );
    let pretty = write(
        dir.path(),
        "batch.json",
        serde_json::to_string_pretty(&list(&["p1", "p2", "p3"]))
            .unwrap()
            .as_bytes(),
    );
    let (events, summary) = collect(&[per_line, bad, pretty.clone()]);
    assert_eq!(ids(&events), ["w1", "w2", "w3", "w4", "p1", "p2", "p3"]);
    assert_eq!(summary.malformed, 1);
    assert!(summary.first_malformed[0].ends_with("bad.jsonl:2: \"Bogus\" is not an audit stage"));
    // Each item of the document is placed on the line its item starts.
    let text = std::fs::read_to_string(&pretty).unwrap();
    let item_lines: Vec<u64> = events[4..].iter().map(|e| e.origin.line).collect();
    let expected: Vec<u64> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "{")
        .skip(1)
        .map(|(i, _)| i as u64 + 1)
        .collect();
    assert_eq!(item_lines, expected);
    assert_eq!(summary.lines, 2 + 2 + text.lines().count() as u64);
}

fn gke_entry(id: &str, method: &str, resource: &str, extra: Value) -> Value {
    let mut e = json!({
        "protoPayload": {
            "@type": "type.googleapis.com/google.cloud.audit.AuditLog",
            "authenticationInfo": {"principalEmail": "system:kube-scheduler"},
            "authorizationInfo": [{"granted": true, "permission": "io.k8s.core.v1.pods.binding.create", "resource": resource}],
            "methodName": method,
            "requestMetadata": {"callerIp": "172.16.0.2", "callerSuppliedUserAgent": "kube-scheduler/v1.31.1"},
            "resourceName": resource,
            "serviceName": "k8s.io",
            "status": {},
            "request": {"@type": "core.k8s.io/v1.Binding", "metadata": {"name": "app"}, "target": {"name": "node-1"}},
        },
        "insertId": format!("insert-{id}"),
        "resource": {"type": "k8s_cluster", "labels": {"cluster_name": "c", "location": "europe-west1", "project_id": "p"}},
        "timestamp": "2026-11-29T09:02:00.123456789Z",
        "severity": "NOTICE",
        "logName": "projects/p/logs/cloudaudit.googleapis.com%2Factivity",
        "operation": {"id": id, "producer": "k8s.io", "first": true, "last": true},
        "receiveTimestamp": "2026-11-29T09:02:01.5Z"
    });
    for (k, v) in extra.as_object().unwrap() {
        e["protoPayload"][k] = v.clone();
    }
    e
}

#[test]
fn gke_log_entries_per_line_and_as_an_array() {
    let dir = tempfile::tempdir().unwrap();
    let update = gke_entry(
        "g1",
        "io.k8s.apps.v1.deployments.update",
        "apps/v1/namespaces/team/deployments/app",
        json!({"request": {"metadata": {"resourceVersion": "41"}, "spec": {}},
               "response": {"@type": "apps.k8s.io/v1.Deployment", "metadata": {"resourceVersion": "42"}}}),
    );
    let binding = gke_entry(
        "g2",
        "io.k8s.core.v1.pods.binding.create",
        "core/v1/namespaces/team/pods/app/binding",
        json!({}),
    );
    let conflict = gke_entry(
        "g3",
        "io.k8s.core.v1.pods.status.update",
        "core/v1/namespaces/team/pods/app/status",
        json!({"status": {"code": 10, "message": "the object has been modified"}}),
    );
    let mut no_operation = gke_entry(
        "g4",
        "io.k8s.core.v1.configmaps.delete",
        "core/v1/namespaces/team/configmaps/cm",
        json!({"status": {"code": 5}}),
    );
    no_operation.as_object_mut().unwrap().remove("operation");
    let other_type = gke_entry(
        "g5",
        "x.y",
        "core/v1/pods",
        json!({"@type": "type.googleapis.com/google.cloud.audit.Other"}),
    );
    let per_line = write(
        dir.path(),
        "gke.jsonl",
        lines(&[update.clone(), binding.clone(), other_type]).as_bytes(),
    );
    let array = write(
        dir.path(),
        "gke.json",
        serde_json::to_string_pretty(&json!([conflict, no_operation]))
            .unwrap()
            .as_bytes(),
    );
    let (events, summary) = collect(&[per_line, array]);
    assert_eq!(ids(&events), ["g1", "g2", "g3", "insert-g4"]);
    assert_eq!(summary.malformed, 1);
    assert!(
        summary.first_malformed[0].contains("gke.jsonl:3: unknown protoPayload @type"),
        "{:?}",
        summary.first_malformed
    );

    let u = &events[0];
    assert_eq!(
        (u.stage, u.level, u.verb.as_str(), u.code),
        (
            Stage::ResponseComplete,
            Level::RequestResponse,
            "update",
            Some(200)
        )
    );
    assert_eq!(
        (u.response_revision, u.precondition_revision),
        (Some(Revision(42)), Some(Revision(41)))
    );
    assert_eq!(
        (u.user.as_str(), u.user_agent.as_deref()),
        ("system:kube-scheduler", Some("kube-scheduler/v1.31.1"))
    );
    assert_eq!(u.source_ips, ["172.16.0.2"]);
    assert!(u.groups.is_empty() && u.impersonated_user.is_none());
    let o = u.object.as_ref().unwrap();
    assert_eq!(
        (
            o.api_group.as_str(),
            o.resource.as_str(),
            o.namespace.as_deref(),
            o.name.as_deref()
        ),
        ("apps", "deployments", Some("team"), Some("app"))
    );
    assert_eq!(u.stage_timestamp, "2026-11-29T09:02:00.123456789Z");
    assert_eq!(u.time.subsec_nanosecond(), 123_456_789);

    let b = &events[1];
    assert_eq!(
        (b.verb.as_str(), b.level, b.response_revision),
        ("create", Level::Metadata, None)
    );
    let o = b.object.as_ref().unwrap();
    assert_eq!(
        (
            o.api_group.as_str(),
            o.resource.as_str(),
            o.subresource.as_deref()
        ),
        ("", "pods", Some("binding"))
    );
    assert_eq!(
        (
            events[2].code,
            events[2].object.as_ref().unwrap().subresource.as_deref()
        ),
        (Some(409), Some("status"))
    );
    assert_eq!((events[3].code, events[3].verb.as_str()), (Some(404), "delete"));
}

#[test]
fn eks_cloudwatch_events_per_line_and_as_cli_output() {
    let dir = tempfile::tempdir().unwrap();
    let cw = |id: &str| json!({"timestamp": 1795942920123_u64, "message": event(id, "ResponseComplete", json!({})).to_string(), "ingestionTime": 1795942921000_u64});
    let per_line = write(
        dir.path(),
        "cw.jsonl",
        lines(&[cw("e1"), cw("e2"), json!({"timestamp": 1, "message": "not json"})]).as_bytes(),
    );
    let output = json!({"events": [
        {"logStreamName": "kube-apiserver-audit-abc", "timestamp": 1795942920123_u64, "message": event("e3", "ResponseComplete", json!({})).to_string(), "eventId": "1"},
        {"logStreamName": "kube-apiserver-audit-abc", "timestamp": 1795942920124_u64, "message": event("e4", "RequestReceived", json!({})).to_string(), "eventId": "2"}
    ], "searchedLogStreams": []});
    let cli = write(
        dir.path(),
        "filter-log-events.json",
        serde_json::to_string_pretty(&output).unwrap().as_bytes(),
    );
    let (events, summary) = collect(&[per_line, cli]);
    assert_eq!(ids(&events), ["e1", "e2", "e3", "e4"]);
    assert_eq!(events[0].response_revision, Some(Revision(42)));
    assert_eq!(summary.by_stage, [1, 0, 3, 0]);
    assert_eq!(summary.malformed, 1);
    assert!(summary.first_malformed[0].contains("cw.jsonl:3: the CloudWatch message is not JSON"));
}

#[test]
fn a_folder_is_read_in_write_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = |ids: &[&str]| {
        lines(
            &ids.iter()
                .map(|id| event(id, "ResponseComplete", json!({})))
                .collect::<Vec<_>>(),
        )
    };
    // Written out of order; the names' times say the order.
    write(dir.path(), "audit.log", log(&["active"]).as_bytes());
    write(
        dir.path(),
        "audit-2026-11-29T10-00-00.000.log",
        log(&["third"]).as_bytes(),
    );
    write(
        dir.path(),
        "audit-2026-11-28T23-59-59.999.log.gz",
        &gzip(log(&["first"]).as_bytes()),
    );
    write(
        dir.path(),
        "audit-2026-11-29T09-02-00.000.log",
        log(&["second"]).as_bytes(),
    );
    // Being compressed: the .gz is read only once the original is gone.
    write(
        dir.path(),
        "audit-2026-11-29T09-02-00.000.log.gz",
        b"\x1f\x8b partial",
    );
    write(dir.path(), "notes.txt", b"not an audit file\n");
    write(dir.path(), "audit.log.1", b"junk\n");
    std::fs::create_dir(dir.path().join("old.log")).unwrap();
    let (events, summary) = collect(&[dir.path().to_path_buf()]);
    assert_eq!(ids(&events), ["first", "second", "third", "active"]);
    assert_eq!((summary.files, summary.malformed), (4, 0));
    assert!(events[0]
        .origin
        .input
        .ends_with("audit-2026-11-28T23-59-59.999.log.gz"));
}

#[test]
fn gzip_is_recognised_by_its_bytes_and_members_are_concatenated() {
    let dir = tempfile::tempdir().unwrap();
    let mut two = gzip(lines(&[event("z1", "ResponseComplete", json!({}))]).as_bytes());
    two.extend(gzip(
        lines(&[event("z2", "ResponseComplete", json!({}))]).as_bytes(),
    ));
    let path = write(dir.path(), "audit-export", &two);
    let with_bom = [
        b"\xEF\xBB\xBF".as_slice(),
        lines(&[event("z3", "ResponseComplete", json!({}))]).as_bytes(),
    ]
    .concat();
    let bom = write(dir.path(), "exported.jsonl", &with_bom);
    let (events, _) = collect(&[path, bom]);
    assert_eq!(ids(&events), ["z1", "z2", "z3"]);
}

#[test]
fn unreadable_inputs_are_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let bad_gz = write(
        dir.path(),
        "audit.log.gz",
        b"\x1f\x8b\x00garbage that is no deflate stream",
    );
    let missing = dir.path().join("absent.log");
    let junk_only = dir.path().join("junk");
    std::fs::create_dir(&junk_only).unwrap();
    write(&junk_only, "README", b"x");
    for path in [bad_gz, missing, junk_only] {
        let err = read(&[AuditInput::Path(path.clone())], |_| Ok(())).unwrap_err();
        assert!(err.downcast_ref::<AuditError>().is_some(), "{err}");
        assert!(err.to_string().starts_with(&path.display().to_string()), "{err}");
    }
}

#[test]
fn an_error_from_on_event_stops_the_read_and_is_returned() {
    let dir = tempfile::tempdir().unwrap();
    let content = lines(
        &(0..5)
            .map(|i| event(&format!("s{i}"), "ResponseComplete", json!({})))
            .collect::<Vec<_>>(),
    );
    let path = write(dir.path(), "audit.log", content.as_bytes());
    let mut seen = 0;
    let err = read(&[AuditInput::Path(path.clone()), AuditInput::Path(path)], |e| {
        seen += 1;
        anyhow::ensure!(e.audit_id != "s2", "stop at {}", e.audit_id);
        Ok(())
    })
    .unwrap_err();
    assert_eq!((seen, err.to_string().as_str()), (3, "stop at s2"));
}

#[test]
fn inputs_parse_and_print() {
    assert_eq!("-".parse::<AuditInput>().unwrap(), AuditInput::Stdin);
    let p: AuditInput = "/var/log/kubernetes/audit".parse().unwrap();
    assert_eq!(p, AuditInput::Path("/var/log/kubernetes/audit".into()));
    assert_eq!(
        (p.to_string(), AuditInput::Stdin.to_string()),
        ("/var/log/kubernetes/audit".to_string(), "-".to_string())
    );
    assert!("".parse::<AuditInput>().is_err());
}
