//! Objects named as kubectl names them, `show` of any stored revision (also
//! after etcd compacted it away), `--for-apply` manifests checked against
//! the Kubernetes schema, `diff --object --unified`, YAML output, and the
//! completion and man commands, against a real etcd.

use crate::util::etcd::TestEtcd;
use crate::util::{
    base64, inspector, json, missing, ok, one_line_error, run_inspector, snapshot, stderr, temp_db,
};
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::{json as j, Value};
use std::process::{Command, Output};

const DEP: &str = "/registry/deployments/shop/web";
const CM: &str = "/registry/configmaps/shop/app.config";
const SVC: &str = "/registry/services/specs/shop/web";

fn deployment(replicas: i64, image: &str) -> Value {
    j!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-dep", "generation": 1,
            "creationTimestamp": "2026-11-29T08:00:00Z",
            "labels": {"app.kubernetes.io/name": "web"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"kind\":\"Deployment\"}"},
            "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
                "time": "2026-11-29T08:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app.kubernetes.io/name": "web"}},
            "template": {"metadata": {"labels": {"app.kubernetes.io/name": "web"}},
                "spec": {"containers": [{"name": "web", "image": image}]}}},
        "status": {"replicas": replicas, "observedGeneration": 1}})
}

fn config_map(properties: &str) -> Value {
    j!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app.config", "namespace": "shop", "uid": "u-cm",
            "creationTimestamp": "2026-11-29T08:00:00Z",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-dep"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "old-web", "uid": "u-gone"}]},
        "data": {"app.properties": properties}})
}

fn service() -> Value {
    j!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-svc"},
        "spec": {"selector": {"app.kubernetes.io/name": "web"}, "ports": [{"port": 80, "protocol": "TCP"}]}})
}

fn pb(v: &Value) -> Vec<u8> {
    encode_protobuf(v).unwrap()
}

fn json_bytes(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec(v).unwrap();
    b.push(b'\n');
    b
}

/// Standard output parsed as YAML.
fn yaml(out: Output) -> Value {
    let out = ok(out);
    serde_yaml_ng::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Validates manifests with the Kubernetes schemas (`kubernetes-validate`,
/// as the CronJob manifests test does); `false` when it is not installed.
fn validate(manifests: &[(&str, &[u8])]) -> bool {
    let validator = std::env::var("KUBERNETES_VALIDATE").unwrap_or_else(|_| "kubernetes-validate".into());
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = manifests
        .iter()
        .map(|(name, text)| {
            let path = dir.path().join(format!("{name}.yaml"));
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect();
    let out = match Command::new(&validator).arg("--strict").args(&files).output() {
        Ok(out) => out,
        Err(e) => {
            missing::<()>(format_args!(
                "{validator} is not installed ({e}); .ci/run installs it"
            ));
            return false;
        }
    };
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    true
}

/// `get OBJECT -n shop -o yaml` from `etcd`, parsed.
fn live_yaml(etcd: &TestEtcd, object: &[&str]) -> Value {
    let args = [
        &["get"][..],
        object,
        &["-n", "shop", "--endpoints", &etcd.endpoint, "-o", "yaml"],
    ]
    .concat();
    yaml(run_inspector(&args, None))
}

/// `diff --object OBJECT -n shop --rev-a A --rev-b B EXTRA...`.
fn object_diff(db: &std::path::Path, object: &str, a: &str, b: &str, extra: &[&str]) -> Output {
    let args = [
        "diff", "--object", object, "-n", "shop", "--rev-a", a, "--rev-b", b,
    ];
    inspector(db, &[&args[..], extra].concat())
}

#[test]
fn the_object_from_before_the_incident_comes_back_as_yaml_and_for_apply() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    etcd.put(DEP, &pb(&deployment(3, "web:1")));
    etcd.put(CM, &json_bytes(&config_map("color=blue\n")));
    etcd.put(SVC, &pb(&service()));
    let before = etcd.put(
        "/registry/configmaps/shop/other",
        &json_bytes(&j!({"apiVersion": "v1",
        "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "shop", "uid": "u-other"}})),
    );
    ok(snapshot(&etcd, &db, &[]));

    // The incident: the Deployment scaled down with a new image (etcd
    // compacts its earlier revision away), the ConfigMap changed, then
    // deleted.
    let after = etcd.put(DEP, &pb(&deployment(1, "web:2")));
    etcd.compact(after);
    etcd.put(CM, &json_bytes(&config_map("color=red\n")));
    let deleted = etcd.delete(CM);
    ok(snapshot(&etcd, &db, &[]));

    // kubectl names, the storage name `services/specs` included, find the
    // same key as the etcd key.
    let by_key = json(inspector(&db, &["history", DEP, "-o", "json"]));
    assert_eq!(by_key.as_array().unwrap().len(), 2);
    for name in [
        &["deploy/web"][..],
        &["deployment", "web"],
        &["deployments.apps/web"],
        &["deployment.v1.apps/web"],
        &["Deployment/web"],
    ] {
        let mut args = vec!["history"];
        args.extend_from_slice(name);
        args.extend_from_slice(&["-n", "shop", "-o", "json"]);
        assert_eq!(json(inspector(&db, &args)), by_key, "{name:?}");
    }
    let svc = json(inspector(
        &db,
        &["history", "svc/web", "--namespace", "shop", "-o", "json"],
    ));
    assert_eq!(svc.as_array().unwrap().len(), 1);
    assert_eq!(svc[0]["kind"], "Service");

    // Bad names: one line each, with the candidates.
    let e = one_line_error(&inspector(&db, &["history", "deploy/web"]));
    assert!(e.contains("namespace shop"), "{e}");
    let e = one_line_error(&inspector(&db, &["history", "deploymnt/web", "-n", "shop"]));
    assert!(e.contains("deployments.apps"), "{e}");
    let e = one_line_error(&inspector(&db, &["history", "deploy/api", "-n", "shop"]));
    assert!(e.contains("stored there: web"), "{e}");
    let e = one_line_error(&inspector(&db, &["history", "deploy"]));
    assert!(e.contains("TYPE/NAME"), "{e}");

    // `show` at the revision before the incident, long compacted in etcd.
    let rev = before.to_string();
    let at_before = &["show", "deploy/web", "-n", "shop", "--rev", &rev][..];
    let shown = yaml(inspector(&db, at_before));
    assert_eq!(shown["apiVersion"], "apps/v1");
    assert_eq!(shown["spec"]["replicas"], 3);
    assert_eq!(
        shown["spec"]["template"]["spec"]["containers"][0]["image"],
        "web:1"
    );
    assert_eq!(shown["metadata"]["labels"]["app.kubernetes.io/name"], "web");
    assert!(
        shown["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<i64>()
            .unwrap()
            <= before
    );
    assert!(
        shown["metadata"].get("managedFields").is_none(),
        "hidden, as kubectl hides them"
    );
    let with_managed = yaml(inspector(&db, &[at_before, &["--show-managed-fields"]].concat()));
    assert_eq!(with_managed["metadata"]["managedFields"][0]["manager"], "kubectl");
    assert_eq!(
        json(inspector(
            &db,
            &[
                "show",
                "deployments.apps",
                "web",
                "-n",
                "shop",
                "--run",
                "1",
                "-o",
                "json"
            ]
        )),
        shown
    );
    let by_rev = |text: &str| {
        yaml(inspector(
            &db,
            &["show", "deploy/web", "-n", "shop", "--at", text],
        ))
    };
    assert_eq!(by_rev(&format!("rev:{before}")), shown);
    let run_1 = json(inspector(&db, &["runs", "-o", "json"]))[0]["finished_at"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(by_rev(&run_1), shown, "when run 1 had read it");
    one_line_error(&inspector(
        &db,
        &["show", "deploy/web", "-n", "shop", "--at", "2000-01-01T00:00:00Z"],
    ));
    let now = yaml(inspector(&db, &["show", "deploy/web", "-n", "shop"]));
    assert_eq!(now["spec"]["replicas"], 1);
    assert_eq!(
        yaml(inspector(
            &db,
            &["show", "deploy/web", "-n", "shop", "--rev", &after.to_string()]
        )),
        now
    );

    // Deleted since: the error says where its content is.
    let e = one_line_error(&inspector(&db, &["show", "cm/app.config", "-n", "shop"]));
    assert!(e.contains(&format!("deleted at revision {deleted}")), "{e}");
    assert!(e.contains("--rev"), "{e}");

    // As manifests to re-apply.
    let dep = ok(inspector(
        &db,
        &["show", "deploy/web", "-n", "shop", "--rev", &rev, "--for-apply"],
    ));
    let cm = ok(inspector(
        &db,
        &[
            "show",
            "cm",
            "app.config",
            "-n",
            "shop",
            "--rev",
            &rev,
            "--for-apply",
        ],
    ));
    let (dep_manifest, cm_manifest): (Value, Value) = (
        serde_yaml_ng::from_slice(&dep.stdout).unwrap(),
        serde_yaml_ng::from_slice(&cm.stdout).unwrap(),
    );
    let meta = dep_manifest["metadata"].as_object().unwrap();
    let mut fields: Vec<&str> = meta.keys().map(String::as_str).collect();
    fields.sort();
    assert_eq!(fields, ["labels", "name", "namespace"], "{dep_manifest:#}");
    assert!(dep_manifest.get("status").is_none());
    assert_eq!(dep_manifest["spec"]["replicas"], 3);
    assert_eq!(cm_manifest["data"]["app.properties"], "color=blue\n");
    let owners = cm_manifest["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(owners.len(), 1, "the owner never stored is dropped: {owners:?}");
    assert_eq!(owners[0]["uid"], "u-dep");
    assert!(stderr(&cm).contains("old-web"), "{}", stderr(&cm));
    let kept = yaml(inspector(
        &db,
        &[
            "show",
            "cm/app.config",
            "-n",
            "shop",
            "--rev",
            &rev,
            "--for-apply",
            "--keep-owner-references",
            "--keep-last-applied",
        ],
    ));
    assert_eq!(kept["metadata"]["ownerReferences"].as_array().unwrap().len(), 2);
    let last_applied = yaml(inspector(
        &db,
        &[
            "show",
            "deploy/web",
            "-n",
            "shop",
            "--rev",
            &rev,
            "--for-apply",
            "--keep-last-applied",
        ],
    ));
    assert!(
        last_applied["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    if validate(&[("deployment", &dep.stdout), ("configmap", &cm.stdout)]) {
        // The validator does reject what a server sets.
        let raw = ok(inspector(
            &db,
            &["show", "deploy/web", "-n", "shop", "--rev", &rev],
        ));
        let mut broken = raw.stdout.clone();
        broken.extend_from_slice(b"extra: 1\n");
        let validator = std::env::var("KUBERNETES_VALIDATE").unwrap_or_else(|_| "kubernetes-validate".into());
        let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
        std::fs::write(file.path(), broken).unwrap();
        let out = Command::new(validator)
            .arg("--strict")
            .arg(file.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "an unknown field passes validation");
    }

    // `diff --object --unified`: the two revisions' YAML, as kubectl diff prints.
    let (a, b) = (before.to_string(), after.to_string());
    let diff = stdout(&ok(object_diff(&db, "deploy/web", &a, &b, &["--unified"])));
    assert!(
        diff.starts_with(&format!(
            "--- revision-{a}/apps.v1.Deployment.shop.web\n+++ revision-{b}/apps.v1.Deployment.shop.web\n"
        )),
        "{diff}"
    );
    for line in [
        "-  replicas: 3",
        "+  replicas: 1",
        "-      - image: web:1",
        "+      - image: web:2",
    ] {
        assert!(diff.lines().any(|l| l == line), "{line:?} in\n{diff}");
    }
    assert!(!diff.contains("resourceVersion"), "{diff}");
    let gone = stdout(&ok(object_diff(
        &db,
        "cm/app.config",
        &a,
        &deleted.to_string(),
        &["--unified"],
    )));
    assert!(gone.lines().any(|l| l == "-  app.properties: |"), "{gone}");
    assert!(
        !gone.lines().any(|l| l.starts_with('+') && !l.starts_with("+++")),
        "{gone}"
    );
    // Without --unified, --object narrows the field-level diff to it.
    let drift = json(object_diff(&db, "deploy/web", &a, &b, &["-o", "json"]));
    let objects = drift["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 1, "{drift:#}");
    assert_eq!(objects[0]["key"], DEP);
    let drift_yaml = yaml(object_diff(&db, "deploy/web", &a, &b, &["-o", "yaml"]));
    assert_eq!(drift_yaml["objects"], drift["objects"]);

    // `history --diff -o yaml`, and --object on findings and report.
    let history = yaml(inspector(
        &db,
        &["history", "deploy/web", "-n", "shop", "--diff", "-o", "yaml"],
    ));
    let changes = history[1]["diff"].as_array().unwrap();
    assert!(
        changes
            .iter()
            .any(|c| c["path"] == "spec.replicas" && c["old"] == 3 && c["new"] == 1),
        "{history:#}"
    );
    let all = json(inspector(&db, &["findings", "-o", "json"]));
    let findings = |object: &str, format: &str| {
        let out = inspector(&db, &["findings", "--object", object, "-n", "shop", "-o", format]);
        if format == "yaml" {
            yaml(out)
        } else {
            json(out)
        }
    };
    let of_dep: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["keys"].as_array().unwrap().iter().any(|k| k == DEP))
        .collect();
    assert!(
        !of_dep.is_empty(),
        "its spec changed without a new generation: {all:#}"
    );
    let found = findings("deploy/web", "json");
    assert_eq!(found.as_array().unwrap().iter().collect::<Vec<_>>(), of_dep);
    assert_eq!(
        findings("deploy/web", "yaml"),
        found,
        "YAML streamed an entry at a time"
    );
    assert_eq!(findings("svc/web", "json"), j!([]));
    assert_eq!(findings("svc/web", "yaml"), j!([]));
    let report = json(inspector(
        &db,
        &[
            "report",
            "--format",
            "json",
            "--object",
            "deploy/web",
            "-n",
            "shop",
        ],
    ));
    assert_eq!(report["summary"]["busiest_keys"], j!([[DEP, 2]]), "{report:#}");
    assert!(report["timelines"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["key"] == DEP));

    let stats = json(inspector(
        &db,
        &["stats", "--object", "deploy/web", "-n", "shop", "-o", "json"],
    ));
    let resources = stats["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 1, "{stats:#}");
    assert_eq!(
        (&resources[0]["resource"], &resources[0]["revisions"]),
        (&j!("deployments"), &j!(2))
    );

    // `get` takes kubectl names too, and prints YAML.
    let live = live_yaml(&etcd, &["deploy/web"]);
    assert_eq!(live["spec"]["replicas"], 1);
    let svc = live_yaml(&etcd, &["svc", "web"]);
    assert_eq!(svc["kind"], "Service");
}

#[test]
fn secrets_show_all_but_their_values_and_custom_resources_go_by_their_crd_names() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    etcd.put(
        "/registry/apiextensions.k8s.io/customresourcedefinitions/gizmos.example.com",
        &json_bytes(
            &j!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gizmos.example.com", "uid": "u-crd"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "shortNames": ["gz"]},
                "versions": [{"name": "v1", "served": true, "storage": true}]}}),
        ),
    );
    let gizmo = |size: i64| {
        json_bytes(&j!({"apiVersion": "example.com/v1", "kind": "Gizmo",
            "metadata": {"name": "g1", "namespace": "shop", "uid": "u-g1"}, "spec": {"size": size}}))
    };
    etcd.put("/registry/example.com/gizmos/shop/g1", &gizmo(2));
    etcd.put(
        "/registry/statefulsets/shop/db",
        &pb(&j!({"apiVersion": "apps/v1beta2", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "shop", "uid": "u-sts"},
            "spec": {"serviceName": "db", "selector": {"matchLabels": {"app.kubernetes.io/name": "db"}},
                "template": {"metadata": {"labels": {"app.kubernetes.io/name": "db"}},
                    "spec": {"containers": [{"name": "db", "image": "db:1"}]}}}})),
    );
    let password = "hunter2-in-the-db";
    let secret = "/registry/secrets/shop/db.creds";
    let first = etcd.put(
        secret,
        &crate::util::k8s::secret("shop", "db.creds", "u-s", password),
    );
    let second = etcd.put(
        secret,
        &crate::util::k8s::secret("shop", "db.creds", "u-s", "another-one"),
    );
    ok(snapshot(&etcd, &db, &[]));

    let by_plural = yaml(inspector(&db, &["show", "gizmos.example.com/g1", "-n", "shop"]));
    assert_eq!(by_plural["spec"]["size"], 2);
    assert_eq!(by_plural["apiVersion"], "example.com/v1");
    for name in [
        &["gz/g1"][..],
        &["gizmo", "g1"],
        &["Gizmo/g1"],
        &["gizmo.v1.example.com/g1"],
    ] {
        let mut args = vec!["show"];
        args.extend_from_slice(name);
        args.extend_from_slice(&["-n", "shop"]);
        assert_eq!(yaml(inspector(&db, &args)), by_plural, "{name:?}");
    }
    let e = one_line_error(&inspector(&db, &["show", "gizmoz/g1", "-n", "shop"]));
    assert!(e.contains("gizmos.example.com"), "{e}");

    // A kind stored in a version clusters no longer serve is converted to
    // the one they do, and says so.
    let sts = ok(inspector(&db, &["show", "sts/db", "-n", "shop", "--for-apply"]));
    assert!(
        stderr(&sts).contains("note: converted from apps/v1beta2 to apps/v1"),
        "{}",
        stderr(&sts)
    );
    let manifest: Value = serde_yaml_ng::from_slice(&sts.stdout).unwrap();
    assert_eq!(manifest["apiVersion"], "apps/v1");
    assert_eq!(
        manifest["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
        "db"
    );
    validate(&[("sts", &sts.stdout)]);
    // Without --for-apply it is shown as stored.
    let stored = yaml(inspector(&db, &["show", "sts/db", "-n", "shop"]));
    assert_eq!(stored["apiVersion"], "apps/v1beta2");
    let by_gizmo = ok(inspector(&db, &["show", "gz/g1", "-n", "shop", "--for-apply"]));
    assert_eq!(stderr(&by_gizmo), "");

    // `get` reads a custom resource's names from the CRDs etcd holds.
    let live = live_yaml(&etcd, &["gz/g1"]);
    assert_eq!(live["spec"]["size"], 2);
    let e = one_line_error(&run_inspector(
        &["get", "gizmoz/g1", "--endpoints", &etcd.endpoint],
        None,
    ));
    assert!(e.contains("gizmos.example.com"), "{e}");

    // A Secret: its data values only as keyed hashes, and said so.
    let out = ok(inspector(
        &db,
        &[
            "show",
            "secret/db.creds",
            "-n",
            "shop",
            "--rev",
            &first.to_string(),
        ],
    ));
    let text = stdout(&out);
    for needle in [password.to_string(), base64(password)] {
        assert!(
            !text.contains(&needle) && !stderr(&out).contains(&needle),
            "{text}"
        );
    }
    let shown: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert!(
        shown["data"]["password"]
            .as_str()
            .unwrap()
            .starts_with("<redacted: keyed hash "),
        "{text}"
    );
    assert_eq!(shown["metadata"]["name"], "db.creds");
    assert_eq!(shown["type"], "Opaque");
    assert!(stderr(&out).contains("never stored"), "{}", stderr(&out));
    let diff = ok(object_diff(
        &db,
        "secret/db.creds",
        &first.to_string(),
        &second.to_string(),
        &["--unified"],
    ));
    let text = stdout(&diff);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("-  password: ")).count(),
        1,
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("+  password: ")).count(),
        1,
        "{text}"
    );
    for needle in [password, "another-one"] {
        assert!(
            !text.contains(needle) && !text.contains(&base64(needle)),
            "{text}"
        );
    }
    crate::util::assert_secrets_nowhere(&db, &[password, "another-one"]);
}

#[test]
fn completions_and_the_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let out = ok(run_inspector(&["completion", shell], None));
        let text = stdout(&out);
        assert!(
            text.contains("etcd-inspector") && text.contains("show"),
            "{shell}: {text}"
        );
    }
    let man = stdout(&ok(run_inspector(&["man"], None)));
    assert!(
        man.starts_with(".ie") || man.starts_with(".TH"),
        "{}",
        &man[..200.min(man.len())]
    );
    assert!(man.contains("etcd\\-inspector") && man.contains("show"), "{man}");
    let show = stdout(&ok(run_inspector(&["man", "show"], None)));
    assert!(
        show.contains("etcd\\-inspector\\-show") && show.contains("for\\-apply"),
        "{show}"
    );
    let e = one_line_error(&run_inspector(&["man", "shwo"], None));
    assert!(e.contains("show"), "{e}");
    let e = run_inspector(&["completion", "tcsh"], None);
    assert_eq!(e.status.code(), Some(2));
}

/// A Secret with labels, annotations and kubectl's last-applied copy of its
/// values, base64 as etcd holds them.
fn labelled_secret(username: &str, password: &str, labels: Value) -> Vec<u8> {
    let data = j!({"username": base64(username), "password": base64(password)});
    let applied = j!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
        "metadata": {"name": "db.creds", "namespace": "shop"}, "data": data});
    pb(
        &j!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
        "metadata": {"name": "db.creds", "namespace": "shop", "uid": "u-s", "labels": labels,
            "creationTimestamp": "2026-11-29T08:00:00Z",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied.to_string(),
                "shop.example.com/owner": "team-db"}},
        "data": data}),
    )
}

#[test]
fn a_secret_shows_and_applies_all_but_its_values() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/secrets/shop/db.creds";
    let (user, first_pass, second_pass) = ("admin-user-7", "first-pass-9041", "second-pass-5528");
    let first = etcd.put(key, &labelled_secret(user, first_pass, j!({"app": "shop"})));
    let second = etcd.put(
        key,
        &labelled_secret(user, second_pass, j!({"app": "shop", "tier": "db"})),
    );
    let cm = "/registry/configmaps/shop/app.settings";
    let token = "tok-3f9a-secret";
    etcd.put(
        cm,
        &crate::util::k8s::config_map(
            "shop",
            "app.settings",
            "u-cm",
            &[
                ("app.token", token),
                ("app.other", "in-the-clear"),
                ("app", "plain-too"),
            ],
        ),
    );
    ok(snapshot(
        &etcd,
        &db,
        &["--sensitive-path", r#"data["app.token"]"#],
    ));
    let secrets = [user, first_pass, second_pass, token];
    let assert_none = |out: &Output| {
        for s in secrets {
            for needle in [s.to_string(), base64(s)] {
                assert!(
                    !stdout(out).contains(&needle) && !stderr(out).contains(&needle),
                    "{needle}: {}{}",
                    stdout(out),
                    stderr(out)
                );
            }
        }
    };
    let placeholder = |v: &Value| {
        v.as_str()
            .unwrap_or_default()
            .starts_with("<redacted: keyed hash ")
    };

    // Everything but the values, which show as their keyed hashes.
    let show = |extra: &[&str]| {
        let out = ok(inspector(
            &db,
            &[&["show", "secret/db.creds", "-n", "shop"][..], extra].concat(),
        ));
        assert_none(&out);
        out
    };
    let out = show(&["--rev", &first.to_string()]);
    let shown: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["type"], "kubernetes.io/basic-auth");
    assert_eq!(shown["metadata"]["labels"], j!({"app": "shop"}));
    assert_eq!(shown["metadata"]["uid"], "u-s");
    let annotations = &shown["metadata"]["annotations"];
    assert_eq!(annotations["shop.example.com/owner"], "team-db");
    assert!(placeholder(
        &annotations["kubectl.kubernetes.io/last-applied-configuration"]
    ));
    let data = shown["data"].as_object().unwrap();
    assert_eq!(data.len(), 2, "{data:?}");
    assert!(data.values().all(placeholder), "{data:?}");
    assert!(stderr(&out).contains("never stored"), "{}", stderr(&out));
    // Equal values, equal placeholders; another value, another.
    let newer: Value = serde_yaml_ng::from_slice(&show(&[]).stdout).unwrap();
    assert_eq!(newer["metadata"]["labels"]["tier"], "db");
    assert_eq!(newer["data"]["username"], shown["data"]["username"]);
    assert_ne!(newer["data"]["password"], shown["data"]["password"]);

    // A manifest to apply once the values are filled in, which says so.
    let out = show(&["--for-apply"]);
    let manifest: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(manifest["type"], "kubernetes.io/basic-auth");
    assert_eq!(manifest["metadata"]["labels"], j!({"app": "shop", "tier": "db"}));
    assert_eq!(
        manifest["metadata"]["annotations"],
        j!({"shop.example.com/owner": "team-db"})
    );
    assert!(manifest["metadata"].get("uid").is_none());
    assert!(manifest["data"].as_object().unwrap().values().all(placeholder));
    let err = stderr(&out);
    assert!(
        err.contains("note: 2 value(s) are never stored")
            && err.contains("(data.password, data.username)")
            && err.contains("fill them in before applying"),
        "{err}"
    );

    // Field diffs show what is not sensitive; the values stay redacted.
    let diff = json(inspector(&db, &["history", key, "--diff", "-o", "json"]));
    let changes = diff[1]["diff"].as_array().unwrap();
    let change = |path: &str| changes.iter().find(|c| c["path"] == path).unwrap().clone();
    assert_eq!(
        change("data.password"),
        j!({"path": "data.password", "old": "<redacted>", "new": "<redacted>", "managers": []})
    );
    assert_eq!(change("metadata.labels")["old"], j!({"app": "shop"}));
    assert_eq!(
        change("metadata.labels")["new"],
        j!({"app": "shop", "tier": "db"})
    );
    let unified = ok(object_diff(
        &db,
        "secret/db.creds",
        &first.to_string(),
        &second.to_string(),
        &["--unified"],
    ));
    assert_none(&unified);
    let text = stdout(&unified);
    assert!(text.contains("\n+    tier: db\n"), "{text}");
    for sign in ['-', '+'] {
        let line = format!("{sign}  password: ");
        let lines = text.lines().filter(|l| l.starts_with(&line));
        assert_eq!(
            lines.filter(|l| l.contains("<redacted: keyed hash ")).count(),
            1,
            "{text}"
        );
    }

    // A marked path takes its value, not the keys beside it.
    let out = ok(inspector(&db, &["show", "cm/app.settings", "-n", "shop"]));
    assert_none(&out);
    let shown: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["data"]["app.other"], "in-the-clear");
    assert_eq!(shown["data"]["app"], "plain-too");
    assert!(placeholder(&shown["data"]["app.token"]), "{shown}");
    let out = ok(inspector(
        &db,
        &["show", "cm/app.settings", "-n", "shop", "--for-apply"],
    ));
    assert!(stderr(&out).contains(r"(data.app\.token)"), "{}", stderr(&out));

    assert_eq!(crate::util::assert_secrets_nowhere(&db, &secrets), 3);

    // A database from before redacted forms has only hashes to show, and
    // nothing to apply.
    assert_eq!(
        crate::util::backend::execute(
            &db,
            "UPDATE semantic_values SET redacted = NULL WHERE redacted IS NOT NULL"
        ),
        3
    );
    let out = show(&[]);
    let shown: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert!(
        shown["data"]["password"]
            .as_str()
            .unwrap()
            .starts_with("<redacted: stored only as hash "),
        "{shown}"
    );
    let e = one_line_error(&inspector(
        &db,
        &["show", "secret/db.creds", "-n", "shop", "--for-apply"],
    ));
    assert!(e.contains("cannot be recreated"), "{e}");
}
