//! `snapshot --file --salvage`: a data file with one leaf page of the `key`
//! bucket destroyed. The default run fails with one line; a salvaging run
//! completes, recovers every revision outside that page, records the damage
//! and its revision range as a history gap, and stores no wrong value.

use crate::util::etcd::TestEtcd;
use crate::util::*;
use etcd_inspector::source::bolt::BoltDb;
use std::collections::BTreeMap;
use std::path::Path;

/// key, revision → value hash, of every stored revision.
fn stored(db: &Path) -> BTreeMap<(String, i64), Option<String>> {
    every_revision(db)
        .into_iter()
        .map(|(key, r)| ((key, r.mod_revision.0), r.value_sha256))
        .collect()
}

/// The main revisions of the entries of the leaf page at `offset`.
fn page_revisions(bytes: &[u8], offset: usize) -> Vec<i64> {
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let count = u16::from_le_bytes(bytes[offset + 10..offset + 12].try_into().unwrap()) as usize;
    (0..count)
        .map(|i| {
            let e = offset + 16 + i * 16;
            let key = e + u32_at(e + 4);
            i64::from_be_bytes(bytes[key..key + 8].try_into().unwrap())
        })
        .collect()
}

#[test]
fn a_destroyed_leaf_page_fails_the_run_and_salvage_recovers_the_rest() {
    let mut etcd = TestEtcd::start();
    let items: Vec<(String, Vec<u8>)> = (0..3000)
        .map(|i| {
            let name = format!("cm-{}", i % 700);
            (
                format!("/registry/configmaps/shop/{name}"),
                k8s::config_map("shop", &name, &format!("uid-{name}"), &[("n", &i.to_string())]),
            )
        })
        .collect();
    etcd.put_many(&items);
    etcd.delete("/registry/configmaps/shop/cm-3");
    // etcd commits its data file every 100 ms: let the last writes land.
    std::thread::sleep(std::time::Duration::from_secs(1));
    etcd.stop();
    let dir = tempfile::tempdir().unwrap();
    // A copied data-dir file: no SHA-256 trailer.
    let file = dir.path().join("db");
    std::fs::copy(etcd.db_file(), &file).unwrap();
    let file = file.to_str().unwrap().to_string();
    let (_a, whole) = temp_db();
    ok(inspector(&whole, &["snapshot", "--file", &file]));
    let all = stored(&whole);
    assert!(all.len() > 2000, "{} revisions", all.len());

    // One leaf page the key bucket's tree reaches, from its middle.
    let (page, page_size) = {
        let db = BoltDb::open(Path::new(&file)).unwrap();
        let keys = db.top_bucket("key").unwrap();
        let walked = db.salvage_walk(keys, &mut |_, _, _| {});
        assert!(walked.unreadable.is_empty());
        let mut leaves: Vec<u64> = walked.leaves.into_iter().collect();
        leaves.sort();
        assert!(leaves.len() > 4, "{} leaves", leaves.len());
        (leaves[leaves.len() / 2], db.meta().page_size as usize)
    };
    let mut bytes = std::fs::read(&file).unwrap();
    let at = page as usize * page_size;
    let lost = page_revisions(&bytes, at);
    assert!(!lost.is_empty());
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for b in &mut bytes[at..at + page_size] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    std::fs::write(&file, &bytes).unwrap();

    // The default run fails, in one line naming the file.
    let (_b, failed) = temp_db();
    let line = one_line_error(&inspector(&failed, &["snapshot", "--file", &file]));
    assert!(line.contains(&file), "{line}");
    assert_eq!(run_statuses(&failed), ["failed"]);

    // Salvaging completes and records the damage.
    let (_c, salvaged) = temp_db();
    let out = ok(inspector(
        &salvaged,
        &["snapshot", "--file", &file, "--salvage", "--no-analyze"],
    ));
    assert!(
        stderr(&out).contains("salvaged: 1 pages unreadable"),
        "{}",
        stderr(&out)
    );
    let run = &runs(&salvaged)[0];
    assert_eq!(run["status"], "complete");
    assert_eq!(run["salvaged"], true);
    let ranges = run["damage"]["ranges"].as_array().unwrap();
    assert_eq!(ranges.len(), 1, "{run:#}");
    let (lo, hi) = (ranges[0][0].as_i64().unwrap(), ranges[0][1].as_i64().unwrap());
    assert!(
        lost.iter().all(|r| (lo..=hi).contains(r)),
        "{lost:?} in {lo}-{hi}"
    );
    assert_eq!(run["gaps"][0]["from_revision"], lo, "{run:#}");
    let table = String::from_utf8(ok(inspector(&salvaged, &["runs"])).stdout).unwrap();
    assert!(table.contains("salvaged"), "{table}");

    // Every revision outside the page is there, with the undamaged run's
    // value; nothing is stored that the undamaged run did not store.
    let got = stored(&salvaged);
    for (at, hash) in &got {
        assert_eq!(all.get(at), Some(hash), "{at:?} differs from the undamaged run");
    }
    for at in all.keys() {
        if !lost.contains(&at.1) {
            assert!(got.contains_key(at), "{at:?} outside the page was not recovered");
        }
    }
    assert!(got.len() < all.len());
    // Detectors say their coverage was partial: the range is a gap.
    ok(inspector(&salvaged, &["analyze"]));
}
