//! The checked-in `proto/` must be exactly what the generator writes from
//! the pinned k8s-pb and k8s-openapi versions.

use std::path::Path;

#[test]
fn checked_in_schema_matches_a_fresh_generation() {
    let report = xtask::generate(&xtask::locate_sources().unwrap()).unwrap();
    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto");
    let current = xtask::read_tree(&proto).unwrap();
    let stale: Vec<_> = report
        .files
        .iter()
        .filter(|(path, text)| current.get(*path) != Some(text))
        .map(|(p, _)| p.display().to_string())
        .chain(
            current
                .keys()
                .filter(|p| !report.files.contains_key(*p))
                .map(|p| format!("{} (not generated)", p.display())),
        )
        .collect();
    assert!(
        stale.is_empty(),
        "proto/ is stale, run `cargo xtask gen-proto`: {stale:?}"
    );
}

#[test]
fn generation_is_deterministic() {
    let src = xtask::locate_sources().unwrap();
    assert_eq!(
        xtask::generate(&src).unwrap().files,
        xtask::generate(&src).unwrap().files
    );
}
