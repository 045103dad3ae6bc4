//! Every protobuf fixture Kubernetes ships for its types, decoded by the
//! `decode` command, must equal the JSON Kubernetes wrote for the same object
//! (both canonicalised: keys sorted, empty values dropped).

use crate::util::{corpus_dir, json, run_inspector};
use etcd_inspector::canon::canonical;
use serde_json::Value;
use std::path::Path;

/// The first difference between two canonical JSON values, as a field path.
fn first_diff(path: &str, want: &Value, got: &Value) -> Option<String> {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, av) in a {
                let p = format!("{path}.{k}");
                match b.get(k) {
                    None => return Some(format!("{p}: missing from decoder output (expected {av})")),
                    Some(bv) => {
                        if let Some(d) = first_diff(&p, av, bv) {
                            return Some(d);
                        }
                    }
                }
            }
            b.keys()
                .find(|k| !a.contains_key(*k))
                .map(|k| format!("{path}.{k}: not expected, decoder gave {}", b[k]))
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_diff(&format!("{path}[{i}]"), x, y)),
        _ if want == got => None,
        _ => Some(format!("{path}: expected {want}, decoder gave {got}")),
    }
}

fn check_dir(dir: &Path) -> usize {
    let mut pbs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pb"))
        .collect();
    pbs.sort();
    for pb in &pbs {
        let out = run_inspector(
            &["decode", pb.to_str().unwrap(), "-o", "json", "--show-secrets"],
            None,
        );
        let got = json(&out);
        let want: Value = serde_json::from_slice(&std::fs::read(pb.with_extension("json")).unwrap()).unwrap();
        if let Some(d) = first_diff("", &canonical(&want), &canonical(&got)) {
            panic!("{}: {d}", pb.display());
        }
    }
    pbs.len()
}

#[test]
fn every_protobuf_fixture_decodes_to_its_json() {
    let Some(corpus) = corpus_dir() else { return };
    let n = check_dir(&corpus.join("k8s-api-fixtures"));
    assert!(n >= 61, "expected the 61 fixtures, found {n}");
}
