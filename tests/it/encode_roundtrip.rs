//! The encoder used by tests and the demo is the decoder's inverse and
//! writes what Kubernetes writes: every JSON fixture encodes to exactly the
//! bytes of its `.pb` twin (written by Kubernetes' Go code), and decodes back
//! to the same object.

use crate::util::corpus_dir;
use etcd_inspector::canon::canonical;
use etcd_inspector::decode::encode::encode_protobuf;
use etcd_inspector::decode::{decode_value, Outcome};
use serde_json::Value;

#[test]
fn every_json_fixture_encodes_to_kubernetes_bytes_and_back() {
    let Some(corpus) = corpus_dir() else {
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
        let pb = std::fs::read(path.with_extension("pb")).unwrap();
        if let Some(at) = pb
            .iter()
            .zip(&bytes)
            .position(|(a, b)| a != b)
            .or((pb.len() != bytes.len()).then_some(0))
        {
            panic!(
                "{}: encodes to different bytes than Kubernetes does (first difference at byte {at})",
                path.display()
            );
        }
        n += 1;
    }
    assert!(n >= 61, "found {n} fixtures");
}
