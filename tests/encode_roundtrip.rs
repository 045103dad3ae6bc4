//! The encoder used by tests and the demo is the decoder's inverse: every
//! Kubernetes JSON fixture, encoded as kube-apiserver stores it and decoded
//! again, gives back the same object.

mod common;

use etcd_inspector::canon::canonical;
use etcd_inspector::decode::encode::encode_protobuf;
use etcd_inspector::decode::{decode_value, Outcome};
use serde_json::Value;

#[test]
fn every_json_fixture_survives_encode_then_decode() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let dir = corpus.join("k8s-api-fixtures");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let want: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let bytes = encode_protobuf(&want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let Ok(Outcome::Decoded(got)) = decode_value(&bytes) else {
            panic!("{}: does not decode", path.display())
        };
        assert_eq!(canonical(&got.object), canonical(&want), "{}", path.display());
        n += 1;
    }
    assert!(n >= 61, "found {n} fixtures");
}
