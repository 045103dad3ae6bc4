//! The WAL reader on a copy of a running member's `member/wal`, taken while
//! a client writes, as a user copying a live data dir gets it: it reads to
//! its last whole record, and what it holds is the start of the log the
//! member went on to write.

use crate::util::etcd::TestEtcd;
use etcd_inspector::source::bolt::BoltDb;
use etcd_inspector::source::db_file;
use etcd_inspector::source::wal::{self, Request};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Every entry and the summary; a copy damaged by a write racing the copy
/// (a page copied before it was written, the next after) is read with
/// salvage, reported.
fn read(dir: &Path) -> (Vec<wal::Entry>, wal::Summary) {
    let all = |options| -> Result<_, wal::WalError> {
        let mut log = wal::Wal::open(dir, options)?;
        let entries = log.entries().collect::<Result<Vec<_>, _>>()?;
        Ok((entries, log.summary().clone()))
    };
    all(wal::Options::default()).unwrap_or_else(|e| {
        assert!(matches!(e, wal::WalError::Damaged { .. }), "{e}");
        eprintln!("a write raced the copy: {e}; read with salvage");
        all(wal::Options { salvage: true }).unwrap()
    })
}

/// A put's key and value.
fn put(entry: &wal::Entry) -> Option<(String, String)> {
    let Request::Put(p) = &entry.request else {
        return None;
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Some((text(&p.key), text(&p.value)))
}

#[test]
fn a_copy_of_a_running_member_reads_to_its_last_whole_record() {
    let mut etcd = TestEtcd::start();
    let before: Vec<(String, String)> = (0..100)
        .map(|i| {
            let value = format!("value-{i}-{}", "x".repeat(i * 37));
            (format!("/registry/configmaps/live/cm-{i}"), value)
        })
        .collect();
    for (k, v) in &before {
        etcd.put(k, v.as_bytes());
    }
    // A client writing Events all along, so the copy is taken mid-write.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, endpoint) = (stop.clone(), etcd.endpoint.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let mut c = etcd_client::Client::connect([&endpoint], None).await.unwrap();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("/registry/events/live/e-{n}");
                    c.put(key, vec![b'e'; 3000], None).await.unwrap();
                    n += 1;
                }
                n
            })
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let copy = tempfile::tempdir().unwrap();
    for file in std::fs::read_dir(etcd.wal_dir()).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), copy.path().join(file.file_name())).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    etcd.stop();

    let (copied, summary) = read(copy.path());
    let (whole, _) = read(&etcd.wal_dir());
    // The copy is the start of the log as the member finished it.
    assert!(
        copied.len() < whole.len(),
        "{} entries copied, {} in the end",
        copied.len(),
        whole.len()
    );
    for (c, w) in copied.iter().zip(&whole) {
        assert_eq!((c.index, c.term, &c.request), (w.index, w.term, &w.request));
    }
    // Everything written before the copy began is in it, in order, with
    // its value; then a run of the Events from the first.
    let configmaps: Vec<_> = copied
        .iter()
        .filter_map(put)
        .filter(|(k, _)| k.starts_with("/registry/configmaps/live/"))
        .collect();
    assert_eq!(configmaps, before);
    let events: Vec<String> = copied
        .iter()
        .filter_map(put)
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("/registry/events/live/"))
        .collect();
    let expected: Vec<String> = (0..events.len())
        .map(|n| format!("/registry/events/live/e-{n}"))
        .collect();
    assert_eq!(events, expected);
    assert!(
        !events.is_empty() && (events.len() as u64) < written,
        "{} of {written}",
        events.len()
    );
    eprintln!(
        "live copy: {} of {} entries, {} of {written} Events; cut {:?}, gaps {:?}, beyond commit {:?}",
        copied.len(),
        whole.len(),
        events.len(),
        summary.cut,
        summary.gaps,
        summary.beyond_commit
    );

    // The stopped member's db applied an entry of its WAL, and (3.5 on)
    // records that entry's term.
    let info = db_file::inspect(&BoltDb::open(&etcd.db_file()).unwrap()).unwrap();
    let applied = info
        .consistent_index
        .expect("the db records its consistent index");
    let entry = whole
        .iter()
        .find(|e| e.index == applied)
        .unwrap_or_else(|| panic!("no entry {applied} in the WAL"));
    if let Some(term) = info.consistent_term {
        assert_eq!(term, entry.term, "entry {applied}");
    }
    // What the member itself logs besides the client's puts: its joining
    // (a ConfChange), a new leader's empty entry, and its attributes and the
    // cluster version, as bare v2 requests before 3.6, as cluster requests
    // (fields 1301, 1300) after.
    let mut own = std::collections::BTreeMap::new();
    for e in &whole {
        let kind = match &e.request {
            Request::Put(_) => continue,
            Request::V2 { method, path } if path.starts_with("/0/") => format!(
                "V2 {method} {}",
                path.split('/').take(3).collect::<Vec<_>>().join("/")
            ),
            Request::Empty | Request::ConfChange | Request::Other(1300 | 1301) => format!("{:?}", e.request),
            other => panic!("entry {}: {other:?}", e.index),
        };
        *own.entry(kind).or_insert(0) += 1;
    }
    assert!(own.len() >= 3, "{own:?}");
    eprintln!(
        "the member's own entries: {own:?}; db applied {applied} term {:?}",
        info.consistent_term
    );
}
