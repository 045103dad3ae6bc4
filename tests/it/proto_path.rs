//! `--proto-path` and `--descriptor-set`: a schema newer than the built-in
//! one, produced here from the generator's own output with the project's
//! options stripped (as upstream files have none), a field added to PodSpec
//! and a new kind. New fields and kinds decode by name, the merge keeps
//! JSON names (also where an upstream proto name differs from it), inlining
//! and list wrappers (every Kubernetes fixture decodes
//! as with the built-in schema), the built-in behaviour without the option
//! is unchanged, and a run records which schema it used.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::stored_protobuf;
use crate::util::*;
use prost::Message;
use std::path::{Path, PathBuf};

/// The repository's `proto/k8s.io` tree copied under `dir`, without the
/// project's own options; `edit(relative path, text)` may change each file.
fn upstream_like(dir: &Path, edit: &dyn Fn(&str, String) -> String) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto");
    let mut stack = vec![src.join("k8s.io")];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap().to_str().unwrap().to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            let stripped: Vec<String> = text
                .lines()
                .filter(|l| !l.contains("import \"etcd_inspector/") && !l.contains("option (etcd_inspector."))
                .map(|l| match (l.find(" ["), l.ends_with("];")) {
                    (Some(at), true) => format!("{};", &l[..at]),
                    _ => l.to_string(),
                })
                .collect();
            let out = dir.join(&rel);
            std::fs::create_dir_all(out.parent().unwrap()).unwrap();
            std::fs::write(out, edit(&rel, stripped.join("\n") + "\n")).unwrap();
        }
    }
}

/// A newer core/v1: PodSpec gains `futureField = 999`, and a kind `Gizmo`.
fn newer(rel: &str, text: String) -> String {
    if rel != "k8s.io/api/core/v1/generated.proto" {
        return text;
    }
    let text = text.replacen(
        "message PodSpec {\n",
        "message PodSpec {\n  optional string futureField = 999;\n",
        1,
    );
    text + "\nmessage Gizmo {\n  optional .k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;\n  optional string colour = 2;\n}\n"
}

fn delimited(number: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    prost::encoding::encode_key(number, prost::encoding::WireType::LengthDelimited, &mut out);
    prost::encoding::encode_varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

/// A Pod whose PodSpec carries field 999, and a Gizmo.
fn values() -> (Vec<u8>, Vec<u8>) {
    let pod = k8s_pb::api::core::v1::Pod {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("web".into()),
            namespace: Some("shop".into()),
            ..Default::default()
        }),
        spec: Some(k8s_pb::api::core::v1::PodSpec {
            node_name: Some("n1".into()),
            ..Default::default()
        }),
        status: None,
    };
    let mut spec = pod.spec.clone().unwrap().encode_to_vec();
    spec.extend(delimited(999, b"soon"));
    let raw = [
        delimited(1, &pod.metadata.clone().unwrap().encode_to_vec()),
        delimited(2, &spec),
    ]
    .concat();
    let meta = k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        name: Some("g".into()),
        namespace: Some("shop".into()),
        ..Default::default()
    };
    let gizmo = [delimited(1, &meta.encode_to_vec()), delimited(2, b"teal")].concat();
    (
        stored_protobuf("v1", "Pod", raw),
        stored_protobuf("v1", "Gizmo", gizmo),
    )
}

fn decode(file: &Path, extra: &[&str]) -> (serde_json::Value, String) {
    let mut args = vec!["decode", file.to_str().unwrap(), "--show-envelope"];
    args.extend_from_slice(extra);
    let out = ok(run_inspector(&args, None));
    (serde_json::from_slice(&out.stdout).unwrap(), stderr(&out))
}

#[test]
fn newer_fields_and_kinds_decode_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let protos = dir.path().join("protos");
    upstream_like(&protos, &newer);
    let (pod, gizmo) = values();
    let (pod_file, gizmo_file) = (dir.path().join("pod.bin"), dir.path().join("gizmo.bin"));
    std::fs::write(&pod_file, &pod).unwrap();
    std::fs::write(&gizmo_file, &gizmo).unwrap();
    let path = protos.to_str().unwrap();

    // Built in: the new field by number, the new kind by number.
    let (builtin, env) = decode(&pod_file, &[]);
    assert_eq!(builtin["spec"]["#999"], "soon", "{builtin}");
    assert!(env.contains("unknown fields: spec.#999"), "{env}");
    assert!(env.contains("schema: built-in Kubernetes 1.35"), "{env}");
    let (g, _) = decode(&gizmo_file, &[]);
    assert_eq!(g["#2"], "teal", "{g}");

    // With the newer files: by name.
    let (named, env) = decode(&pod_file, &["--proto-path", path]);
    assert_eq!(named["spec"]["futureField"], "soon", "{named}");
    assert_eq!(named["spec"]["nodeName"], "n1");
    assert!(env.contains("unknown fields: none"), "{env}");
    assert!(
        env.contains("schema: --proto-path") && env.contains("sha256"),
        "{env}"
    );
    let (g, env) = decode(&gizmo_file, &["--proto-path", path]);
    assert_eq!(g["colour"], "teal", "{g}");
    assert_eq!(g["metadata"]["name"], "g");
    assert!(env.contains("message: k8s.io.api.core.v1.Gizmo"), "{env}");

    // A run records the schema it decoded with.
    let etcd = TestEtcd::start();
    etcd.put("/registry/pods/shop/web", &pod);
    let (_db_dir, db) = temp_db();
    ok(snapshot(&etcd, &db, &["--proto-path", path]));
    let run = &runs(&db)[0];
    assert!(
        run["schema"].as_str().unwrap().starts_with("--proto-path"),
        "{run}"
    );
    let diffed = history(&db, "/registry/pods/shop/web");
    assert!(diffed[0]["decode_error"].is_null());
    let (_plain_dir, plain) = temp_db();
    ok(snapshot(&etcd, &plain, &[]));
    assert_eq!(runs(&plain)[0]["schema"], "built-in Kubernetes 1.35 (k8s-pb 0.9)");
}

#[test]
fn the_merge_keeps_json_names_inlining_and_list_wrappers() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let protos = dir.path().join("protos");
    // Upstream names a few fields otherwise than their JSON (`Webhooks` for
    // `webhooks`): the JSON name comes from the built-in field of that number.
    upstream_like(&protos, &|rel, t| match rel {
        "k8s.io/api/admissionregistration/v1/generated.proto" => {
            t.replace(" webhooks = 2;", " Webhooks = 2;")
        }
        _ => t,
    });
    // Compiled once, as protoc --include_imports --descriptor_set_out would.
    let mut compiler = protox::Compiler::new([&protos]).unwrap();
    compiler.include_imports(true);
    let mut files = Vec::new();
    let mut stack = vec![protos.join("k8s.io")];
    while let Some(at) = stack.pop() {
        for e in std::fs::read_dir(&at).unwrap().flatten() {
            match e.path() {
                p if p.is_dir() => stack.push(p),
                p => files.push(p.strip_prefix(&protos).unwrap().to_path_buf()),
            }
        }
    }
    compiler.open_files(&files).unwrap();
    let set = dir.path().join("k8s.pb");
    std::fs::write(&set, compiler.encode_file_descriptor_set()).unwrap();
    let set = set.to_str().unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(corpus.join("k8s-api-fixtures"))
        .unwrap()
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "pb") {
            continue;
        }
        let p = path.to_str().unwrap();
        let builtin = run_inspector(&["decode", p, "--show-secrets"], None);
        let merged = run_inspector(&["decode", p, "--show-secrets", "--descriptor-set", set], None);
        assert_eq!(
            String::from_utf8_lossy(&merged.stdout),
            String::from_utf8_lossy(&builtin.stdout),
            "{}: the merged schema decodes differently",
            path.display()
        );
        checked += 1;
    }
    assert!(checked > 50, "{checked} fixtures");
}

#[test]
fn bad_schemas_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(broken.join("k8s.io/api/core/v1")).unwrap();
    std::fs::write(
        broken.join("k8s.io/api/core/v1/generated.proto"),
        "syntax = \"proto2\";\nmessage Pod {\n  optional string x = ;\n}\n",
    )
    .unwrap();
    let value = dir.path().join("v.bin");
    std::fs::write(&value, values().0).unwrap();
    let v = value.to_str().unwrap();
    let line = one_line_error(&run_inspector(
        &["decode", v, "--proto-path", broken.to_str().unwrap()],
        None,
    ));
    assert!(line.contains("generated.proto") && line.contains(":3:"), "{line}");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let line = one_line_error(&run_inspector(
        &["decode", v, "--proto-path", empty.to_str().unwrap()],
        None,
    ));
    assert!(line.contains("no k8s.io folder"), "{line}");
    let line = one_line_error(&run_inspector(&["decode", v, "--descriptor-set", v], None));
    assert!(line.contains("not a FileDescriptorSet"), "{line}");
}
