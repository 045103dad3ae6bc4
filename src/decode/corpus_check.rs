//! Whole-corpus digest of the decoder's output: every Kubernetes fixture in
//! `../shared/corpus`, each decoded several times in a row and as mutated
//! copies (one byte changed), every outcome serialized and hashed. The digest
//! pins the decoder's exact output across optimisations; skipped when the
//! corpus is absent.

use super::{decode_value, Outcome};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// The `.pb` fixtures of the corpus, sorted; `None` when it is absent.
pub(crate) fn fixtures() -> Option<Vec<(String, Vec<u8>)>> {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !corpus.is_dir() {
        eprintln!("skipping: corpus folder {} is absent", corpus.display());
        return None;
    }
    let mut out = Vec::new();
    for dir in ["k8s-api-fixtures", "k8s-api-fixtures-newer-than-schema"] {
        let mut pbs: Vec<_> = std::fs::read_dir(corpus.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "pb"))
            .collect();
        pbs.sort();
        for p in pbs {
            let name = format!("{dir}/{}", p.file_name().unwrap().to_string_lossy());
            out.push((name, std::fs::read(&p).unwrap()));
        }
    }
    Some(out)
}

/// One outcome as text: everything `decode_value` returned.
pub(super) fn render(result: &Result<Outcome, super::Undecodable>) -> String {
    match result {
        Ok(Outcome::Decoded(d)) => format!(
            "ok {} {}",
            serde_json::to_string(&d.object).unwrap(),
            serde_json::to_string(d).unwrap()
        ),
        Ok(Outcome::Encrypted(e)) => format!("encrypted {e:?}"),
        Err(e) => format!("err {}", serde_json::to_string(e).unwrap()),
    }
}

/// The copies of `value` with one byte changed, at positions spread over it.
pub(crate) fn mutations(value: &[u8]) -> Vec<Vec<u8>> {
    let step = (value.len() / 97).max(1);
    let mut out = Vec::new();
    for (k, at) in (4..value.len()).step_by(step).enumerate() {
        for m in 0..3 {
            let mut copy = value.to_vec();
            copy[at] = match (k + m) % 3 {
                0 => copy[at] ^ 0x01,
                1 => copy[at] ^ 0x80,
                _ => 0x00,
            };
            if copy[at] != value[at] {
                out.push(copy);
            }
        }
    }
    out
}

/// Runs every decode of the check in order, handing each outcome to `each`.
pub(super) fn run(mut each: impl FnMut(&str, usize, String)) -> bool {
    let Some(fixtures) = fixtures() else { return false };
    for (name, value) in &fixtures {
        let mut n = 0;
        let mut emit = |bytes: &[u8]| {
            each(name, n, render(&decode_value(bytes)));
            n += 1;
        };
        for _ in 0..3 {
            emit(value);
        }
        for m in mutations(value) {
            emit(&m);
        }
        emit(value);
    }
    true
}

#[test]
fn corpus_digest_is_stable() {
    let mut hasher = Sha256::new();
    let mut count = 0usize;
    let ran = run(|name, n, text| {
        hasher.update(name.as_bytes());
        hasher.update(n.to_le_bytes());
        hasher.update((text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
        count += 1;
    });
    if !ran {
        return;
    }
    let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    eprintln!("corpus digest over {count} decodes: {digest}");
    if let Ok(want) = std::env::var("DECODE_CORPUS_DIGEST") {
        assert_eq!(digest, want, "decoder output changed");
    }
}
