//! `etcd-inspector decode` as a user runs it: every storage encoding, values
//! it cannot decode, and key parsing.

use crate::util::k8s::admission_review;
use crate::util::{corpus_dir, json, one_line_error, run_inspector, stderr};
use etcd_inspector::canon::canonical;
use serde_json::{json, Value};
use std::path::Path;

fn write_value(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

/// A custom resource as the apiextensions server stores it: compact JSON
/// with a trailing newline.
fn widget() -> Value {
    json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {
            "name": "w1", "namespace": "prod", "uid": "6f0c1b8e-1f1d-4a59-9a43-3f6f5d3f2a11",
            "generation": 3, "creationTimestamp": "2026-11-01T10:00:00Z",
            "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "example.com/v1",
                               "time": "2026-11-01T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:size": {}}}}]
        },
        "spec": {"size": 3, "colour": "blue", "nested": {"list": [1, 2, 3]}},
        "status": {"ready": true}
    })
}

#[test]
fn json_custom_resource_with_and_without_newline() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = serde_json::to_vec(&widget()).unwrap();
    let plain = write_value(dir.path(), "plain", &bytes);
    bytes.push(b'\n');
    let newline = write_value(dir.path(), "newline", &bytes);
    for file in [plain, newline] {
        let out = run_inspector(&["decode", &file, "--show-envelope"], None);
        assert_eq!(json(&out), widget());
        assert!(stderr(&out).contains("encoding: json"), "{}", stderr(&out));
    }
}

#[test]
fn json_crd_and_yaml_output() {
    let crd = json!({
        "kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1beta1",
        "metadata": {"name": "widgets.example.com", "uid": "1b3c", "generation": 1, "creationTimestamp": "2026-10-01T08:00:00Z"},
        "spec": {"group": "example.com", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
                 "conversion": {"strategy": "None"}},
        "status": {"acceptedNames": {"plural": "widgets", "kind": "Widget"}, "storedVersions": ["v1"]}
    });
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = serde_json::to_vec(&crd).unwrap();
    bytes.push(b'\n');
    let file = write_value(dir.path(), "crd", &bytes);
    let key = "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com";
    let out = run_inspector(&["decode", &file, "--key", key, "-o", "yaml"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let yaml: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(yaml, crd);
    let err = stderr(&out);
    assert!(err.contains("group: \"apiextensions.k8s.io\""), "{err}");
    assert!(err.contains("resource: customresourcedefinitions"), "{err}");
    assert!(err.contains("name: widgets.example.com"), "{err}");
}

#[test]
fn cbor_custom_resource() {
    // Kubernetes' CBOR: self-described tag 55799, strings as byte strings.
    let bytes = etcd_inspector::decode::encode::encode_cbor(&widget());
    assert_eq!(&bytes[..3], &[0xd9, 0xd9, 0xf7]);
    let dir = tempfile::tempdir().unwrap();
    let file = write_value(dir.path(), "cbor", &bytes);
    let out = run_inspector(&["decode", &file, "--show-envelope"], None);
    assert_eq!(json(&out), widget());
    assert!(stderr(&out).contains("encoding: cbor"));
}

#[test]
fn yaml_storage_from_stdin() {
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  mode: fast\n";
    let out = run_inspector(&["decode", "-", "--show-envelope"], Some(yaml.as_bytes()));
    assert_eq!(
        json(&out),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"}, "data": {"mode": "fast"}})
    );
    assert!(stderr(&out).contains("encoding: yaml"));
}

#[test]
fn encrypted_value_is_recognised_with_exit_status_3() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = b"k8s:enc:aescbc:v1:key1:".to_vec();
    bytes.extend((0u8..48).map(|i| i.wrapping_mul(37)));
    let file = write_value(dir.path(), "secret", &bytes);
    let out = run_inspector(
        &["decode", &file, "--key", "/registry/secrets/default/db-password"],
        None,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(
        err.contains("encrypted at rest (provider aescbc v1, key \"key1\")"),
        "{err}"
    );
    assert!(err.contains("resource: secrets"), "{err}");

    let kms = write_value(dir.path(), "kms", b"k8s:enc:kms:v2:vault-kms:\x0a\x03abc");
    let out = run_inspector(&["decode", &kms], None);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("provider kms v2, key \"vault-kms\""),
        "{}",
        stderr(&out)
    );
}

/// Runs `decode` on bad input and returns its single error line.
fn decode_error(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = write_value(dir.path(), "bad", bytes);
    let err = one_line_error(&run_inspector(&["decode", &file], None));
    assert!(err.contains(&file), "error names the input: {err}");
    err
}

#[test]
fn truncated_and_garbage_protobuf_give_one_line_errors() {
    let Some(corpus) = corpus_dir() else { return };
    let pod = std::fs::read(corpus.join("k8s-api-fixtures/core.v1.Pod.pb")).unwrap();
    for cut in [pod.len() / 3, pod.len() / 2, pod.len() - 1] {
        let err = decode_error(&pod[..cut]);
        assert!(err.contains("byte offset"), "{err}");
    }
    // A valid envelope around an object whose field lengths are wrong.
    let mut garbage = b"k8s\0\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x06".to_vec();
    garbage.extend([0x0a, 0x20, 0x01, 0x02, 0x03, 0x04]);
    let err = decode_error(&garbage);
    // metadata (field 1) claims 32 bytes where 4 remain; the raw object starts at byte 17.
    assert!(
        err.contains("v1 Pod") && err.contains("runs past the end") && err.contains("byte offset 17"),
        "{err}"
    );
    let err = decode_error(&[0x00, 0x9f, 0x42, 0x13, 0x37]);
    assert!(
        err.contains("unrecognised encoding") && err.contains("00 9f 42 13 37"),
        "{err}"
    );
    let err = decode_error(b"");
    assert!(err.contains("empty value"), "{err}");
}

#[test]
fn protobuf_fixture_with_key() {
    let Some(corpus) = corpus_dir() else { return };
    let file = corpus.join("k8s-api-fixtures/apps.v1.Deployment.pb");
    let out = run_inspector(
        &[
            "decode",
            file.to_str().unwrap(),
            "--key",
            "/registry/deployments/prod/web",
            "--show-envelope",
        ],
        None,
    );
    let obj = json(&out);
    assert_eq!(
        (obj["apiVersion"].as_str(), obj["kind"].as_str()),
        (Some("apps/v1"), Some("Deployment"))
    );
    let err = stderr(&out);
    for line in [
        "group: \"apps\"",
        "resource: deployments",
        "namespace: prod",
        "name: web",
        "encoding: protobuf",
        "message: k8s.io.api.apps.v1.Deployment",
        "unknown fields: none",
    ] {
        assert!(err.contains(line), "missing {line:?} in {err}");
    }
}

#[test]
fn value_piped_from_etcdctl_with_a_trailing_newline() {
    let Some(corpus) = corpus_dir() else { return };
    let mut value = std::fs::read(corpus.join("k8s-api-fixtures/core.v1.Pod.pb")).unwrap();
    let plain = json(run_inspector(&["decode"], Some(&value)));
    value.push(b'\n');
    let out = run_inspector(&["decode", "-"], Some(&value));
    assert_eq!(json(&out), plain);
    assert!(
        stderr(&out).contains("warning: ignored a newline after the protobuf envelope"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn key_special_cases_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let value = write_value(
        dir.path(),
        "v",
        br#"{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"x"}}"#,
    );
    let cases = [
        (
            "/registry/services/specs/default/kubernetes",
            "\"\"",
            "services",
            "default",
            "kubernetes",
        ),
        (
            "/registry/services/endpoints/default/kubernetes",
            "\"\"",
            "endpoints",
            "default",
            "kubernetes",
        ),
        ("/registry/minions/node-a", "\"\"", "nodes", "-", "node-a"),
        (
            "/registry/controllers/ns1/rc1",
            "\"\"",
            "replicationcontrollers",
            "ns1",
            "rc1",
        ),
        (
            "/registry/ingress/ns1/web",
            "\"networking.k8s.io\"",
            "ingresses",
            "ns1",
            "web",
        ),
        (
            "/registry/apiregistration.k8s.io/apiservices/v1.apps",
            "\"apiregistration.k8s.io\"",
            "apiservices",
            "-",
            "v1.apps",
        ),
        (
            "/registry/example.com/widgets/ns1/w",
            "\"example.com\"",
            "widgets",
            "ns1",
            "w",
        ),
        (
            "/registry/masterleases/10.0.0.7",
            "\"\"",
            "endpoints",
            "-",
            "10.0.0.7",
        ),
        (
            "/registry/ranges/servicenodeports",
            "\"\"",
            "rangeallocations",
            "-",
            "servicenodeports",
        ),
    ];
    for (key, group, resource, ns, name) in cases {
        let out = run_inspector(&["decode", &value, "--key", key], None);
        assert!(out.status.success(), "{key}: {}", stderr(&out));
        let err = stderr(&out);
        let want = format!("  group: {group}\n  resource: {resource}\n  namespace: {ns}\n  name: {name}");
        assert!(err.contains(&want), "{key}:\n{err}\nwanted:\n{want}");
    }
    let rev = write_value(dir.path(), "rev", b"241828");
    let out = run_inspector(&["decode", &rev, "--key", "compact_rev_key"], None);
    assert_eq!(json(&out), json!({"compactRevision": 241828}));
    assert!(
        stderr(&out).contains("special: \"compact-revision\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn objects_newer_than_the_schema_keep_unknown_fields() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = corpus.join("k8s-api-fixtures-newer-than-schema");
    // Fixtures read, and their fields decoded only by number.
    let (mut fixtures, mut by_number) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let pb = entry.unwrap().path();
        if pb.extension().is_none_or(|e| e != "pb") {
            continue;
        }
        fixtures += 1;
        let out = run_inspector(&["decode", pb.to_str().unwrap(), "--show-envelope"], None);
        let got = canonical(&json(&out));
        let want =
            canonical(&serde_json::from_slice(&std::fs::read(pb.with_extension("json")).unwrap()).unwrap());
        assert_eq!(got["apiVersion"], want["apiVersion"], "{}", pb.display());
        assert_eq!(got["kind"], want["kind"], "{}", pb.display());
        // Every field decoded by name is right; every expected field that is
        // missing sits under an object that kept an unknown field by number.
        let mut got_leaves = Vec::new();
        leaves("", &got, &mut got_leaves);
        for (path, v) in &got_leaves {
            if !path.contains('#') {
                assert_eq!(lookup(&want, path), Some(*v), "{}: {path}", pb.display());
            }
        }
        let mut want_leaves = Vec::new();
        leaves("", &want, &mut want_leaves);
        let lost: Vec<&String> = want_leaves
            .iter()
            .map(|(p, _)| p)
            .filter(|p| lookup(&got, p).is_none())
            .collect();
        by_number += lost.len();
        for path in lost {
            let mut parent = path.as_str();
            let holder = loop {
                parent = &parent[..parent.rfind(['.', '[']).unwrap_or(0)];
                if let Some(Value::Object(o)) = lookup(&got, parent) {
                    break o;
                }
                assert!(!parent.is_empty(), "{}: {path} lost", pb.display());
            };
            assert!(
                holder.keys().any(|k| k.starts_with('#')),
                "{}: {path} neither decoded nor kept by number",
                pb.display()
            );
        }
        let err = stderr(&out);
        assert!(err.contains("unknown fields:"), "{err}");
    }
    assert_eq!(fixtures, 4, "the fixtures in {}", dir.display());
    assert!(by_number > 0, "no field of a newer object was kept by number");
}

fn leaves<'a>(path: &str, v: &'a Value, out: &mut Vec<(String, &'a Value)>) {
    match v {
        Value::Object(o) => o.iter().for_each(|(k, x)| leaves(&format!("{path}.{k}"), x, out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| leaves(&format!("{path}[{i}]"), x, out)),
        leaf => out.push((path.to_string(), leaf)),
    }
}

fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            cur = cur.as_object()?.get(&r[..end])?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            cur = cur.as_array()?.get(r[..end].parse::<usize>().ok()?)?;
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(cur)
}

#[test]
fn secret_values_are_redacted_unless_asked_for() {
    let Some(corpus) = corpus_dir() else { return };
    let file = corpus.join("k8s-api-fixtures/core.v1.Secret.pb");
    let want: Value = serde_json::from_slice(&std::fs::read(file.with_extension("json")).unwrap()).unwrap();
    let out = run_inspector(&["decode", file.to_str().unwrap()], None);
    let obj = json(&out);
    let data = want["data"].as_object().unwrap();
    assert!(!data.is_empty());
    for (k, v) in data {
        assert_ne!(&obj["data"][k], v, "{k} printed");
        assert!(
            obj["data"][k].as_str().unwrap().starts_with("<redacted"),
            "{}",
            obj["data"][k]
        );
    }
    assert!(
        stderr(&out).contains("redacted; --show-secrets prints them"),
        "{}",
        stderr(&out)
    );
    let shown = json(run_inspector(
        &["decode", file.to_str().unwrap(), "--show-secrets"],
        None,
    ));
    assert_eq!(shown["data"], want["data"]);
}

/// The JSON under a path of `#<number>` keys.
fn by_number<'a>(v: &'a Value, numbers: &[u32]) -> Option<&'a Value> {
    numbers.iter().try_fold(v, |at, n| at.get(format!("#{n}")))
}

#[test]
fn unknown_kind_whose_field_1_is_not_object_meta_decodes_by_field_number() {
    // admission.k8s.io has no stored kinds, so the schema does not resolve
    // AdmissionReview; its field 1 is the request, not an ObjectMeta.
    let (_, how) = etcd_inspector::decode::schema::schema().resolve("admission.k8s.io/v1", "AdmissionReview");
    assert_eq!(how, etcd_inspector::decode::Resolution::Unknown);
    let uid = "705ab4f5-6393-11e8-b7cc-42010a800002";
    let dir = tempfile::tempdir().unwrap();
    let file = write_value(dir.path(), "review", &admission_review(uid));
    let out = run_inspector(&["decode", &file, "--show-envelope"], None);
    let obj = json(&out);
    assert_eq!(obj["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(obj["kind"], "AdmissionReview");
    assert!(obj.get("metadata").is_none(), "{obj:#}");
    // request.uid, request.operation, request.kind.kind, request.userInfo.username
    assert_eq!(by_number(&obj, &[1, 1]), Some(&json!(uid)), "{obj:#}");
    assert_eq!(by_number(&obj, &[1, 7]), Some(&json!("CREATE")), "{obj:#}");
    assert_eq!(by_number(&obj, &[1, 2, 3]), Some(&json!("Deployment")), "{obj:#}");
    assert_eq!(
        by_number(&obj, &[1, 8, 1]),
        Some(&json!("kubernetes-admin")),
        "{obj:#}"
    );
    let err = stderr(&out);
    for line in [
        "encoding: protobuf",
        "apiVersion: admission.k8s.io/v1",
        "kind: AdmissionReview",
        "schema: kind not in the schema and its field 1 is not an ObjectMeta; every field decoded by number",
        "unknown fields: #1",
    ] {
        assert!(err.contains(line), "missing {line:?} in {err}");
    }
    assert!(!err.lines().any(|l| l.starts_with("message:")), "{err}");
    // Without --show-envelope: still exit 0, the same object, and a warning.
    let out = run_inspector(&["decode", &file], None);
    assert_eq!(json(&out), obj);
    assert!(stderr(&out).contains("warning: "), "{}", stderr(&out));
}
