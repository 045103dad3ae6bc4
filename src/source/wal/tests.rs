//! The reader on WALs written here byte for byte as etcd's encoder writes
//! them: framing, padding, the CRC chain across segments, a torn or zeroed
//! end, damage in the middle, a replaced uncommitted tail.

use super::message::{self, HardState, InternalRaftRequest, Record};
use super::*;
use prost::Message;

/// Writes segments as etcd's encoder does.
struct Writer {
    dir: tempfile::TempDir,
    segments: Vec<Vec<u8>>,
    crc: u32,
}

impl Writer {
    fn new() -> Writer {
        let mut w = Writer {
            dir: tempfile::tempdir().unwrap(),
            segments: Vec::new(),
            crc: 0,
        };
        w.cut();
        w.record(METADATA, b"meta".to_vec());
        w.record(SNAPSHOT, message::Snapshot { index: 0, term: 0 }.encode_to_vec());
        w
    }

    /// Starts a new segment with a CRC record carrying the chain.
    fn cut(&mut self) {
        self.segments.push(Vec::new());
        let crc = self.crc;
        self.frame(Record {
            r#type: CRC,
            crc,
            data: Vec::new(),
        });
    }

    fn record(&mut self, kind: i64, data: Vec<u8>) {
        self.crc = crc32c::crc32c_append(self.crc, &data);
        let crc = self.crc;
        self.frame(Record {
            r#type: kind,
            crc,
            data,
        });
    }

    fn frame(&mut self, record: Record) {
        let bytes = record.encode_to_vec();
        let pad = (8 - bytes.len() % 8) % 8;
        let mut field = bytes.len() as u64;
        if pad > 0 {
            field |= (0x80 | pad as u64) << 56;
        }
        let seg = self.segments.last_mut().unwrap();
        seg.extend(field.to_le_bytes());
        seg.extend(&bytes);
        seg.extend(std::iter::repeat_n(0u8, pad));
    }

    fn entry(&mut self, index: u64, term: u64, request: InternalRaftRequest) {
        let data = message::Entry {
            r#type: 0,
            term,
            index,
            data: request.encode_to_vec(),
        }
        .encode_to_vec();
        self.record(ENTRY, data);
    }

    fn put(&mut self, index: u64, key: &str) {
        self.entry(index, 1, put(key));
    }

    fn commit(&mut self, commit: u64) {
        self.record(
            STATE,
            HardState {
                term: 1,
                vote: 1,
                commit,
            }
            .encode_to_vec(),
        );
    }

    /// Writes the segments, each followed by `zeros` bytes of preallocated
    /// space.
    fn write(&self, zeros: usize) -> &Path {
        for (seq, bytes) in self.segments.iter().enumerate() {
            let mut bytes = bytes.clone();
            bytes.extend(std::iter::repeat_n(0u8, zeros));
            std::fs::write(
                self.dir.path().join(format!("{seq:016x}-{:016x}.wal", seq * 100)),
                bytes,
            )
            .unwrap();
        }
        self.dir.path()
    }
}

fn put(key: &str) -> InternalRaftRequest {
    InternalRaftRequest {
        put: Some(PutRequest {
            key: key.into(),
            value: b"v".to_vec(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn read(dir: &Path, options: Options) -> Result<(Vec<Entry>, Summary), WalError> {
    let mut wal = Wal::open(dir, options)?;
    let mut entries = Vec::new();
    while let Some(e) = wal.next_entry()? {
        entries.push(e);
    }
    Ok((entries, wal.summary().clone()))
}

fn keys(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| match &e.request {
            Request::Put(p) => String::from_utf8_lossy(&p.key).into_owned(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn entries_across_segments_in_order_with_the_chain_checked() {
    let mut w = Writer::new();
    w.put(1, "/registry/a");
    w.put(2, "/registry/a.b/c");
    w.commit(2);
    w.cut();
    w.put(3, "/registry/c");
    w.commit(3);
    let (entries, summary) = read(w.write(4096), Options::default()).unwrap();
    assert_eq!(keys(&entries), ["/registry/a", "/registry/a.b/c", "/registry/c"]);
    assert_eq!(summary.first, Some((1, 1)));
    assert_eq!(summary.last, Some((3, 1)));
    assert_eq!(summary.segments, 2);
    assert_eq!(summary.snapshot, Some((0, 0)));
    assert_eq!(summary.cut, None);
}

#[test]
fn entries_beyond_the_commit_index_come_last_not_marked_committed() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.put(2, "b");
    w.commit(1);
    let (entries, summary) = read(w.write(0), Options::default()).unwrap();
    assert_eq!(keys(&entries), ["a", "b"]);
    assert_eq!(
        entries.iter().map(|e| e.committed).collect::<Vec<_>>(),
        [true, false]
    );
    assert_eq!(summary.beyond_commit, Some((1, 2)));
}

#[test]
fn a_new_leader_replaces_the_uncommitted_tail() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.commit(1);
    w.put(2, "lost");
    w.put(3, "lost too");
    w.entry(2, 2, put("b"));
    w.commit(2);
    let (entries, summary) = read(w.write(0), Options::default()).unwrap();
    assert_eq!(keys(&entries), ["a", "b"]);
    assert_eq!(summary.replaced, 2);
}

#[test]
fn a_torn_last_record_ends_the_log_and_is_reported() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.commit(1);
    w.put(2, "b");
    w.commit(2);
    let dir = w.write(0);
    let file = dir.join(format!("{:016x}-{:016x}.wal", 0, 0));
    let mut bytes = std::fs::read(&file).unwrap();
    // The last record (the commit) cut short, as a copy of a live member can be.
    let whole = bytes.len();
    bytes.truncate(whole - 3);
    std::fs::write(&file, &bytes).unwrap();
    let (entries, summary) = read(dir, Options::default()).unwrap();
    assert_eq!(keys(&entries), ["a", "b"]);
    let cut = summary.cut.unwrap();
    assert!(cut.bytes > 0 && cut.offset < whole as u64, "{cut:?}");
    assert_eq!(summary.beyond_commit, Some((1, 2)));
}

#[test]
fn damage_in_the_middle_is_an_error_naming_the_segment_and_offset_or_a_gap_with_salvage() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.put(2, "b");
    w.put(3, "c");
    w.commit(3);
    w.cut();
    w.put(4, "d");
    w.commit(4);
    let dir = w.write(64);
    let file = dir.join(format!("{:016x}-{:016x}.wal", 0, 0));
    let mut bytes = std::fs::read(&file).unwrap();
    // Flip a byte of the value of "b" (its record is not the last).
    let at = bytes.iter().rposition(|&b| b == b'b').unwrap();
    bytes[at] = b'x';
    std::fs::write(&file, &bytes).unwrap();
    let err = read(dir, Options::default()).unwrap_err().to_string();
    assert!(
        err.starts_with("0000000000000000-0000000000000000.wal at byte "),
        "{err}"
    );
    assert!(err.contains("CRC mismatch"), "{err}");
    let (entries, summary) = read(dir, Options { salvage: true }).unwrap();
    assert_eq!(keys(&entries), ["a", "c", "d"]);
    assert_eq!(summary.gaps.len(), 1, "{summary:?}");
}

#[test]
fn a_chain_broken_between_segments_is_damage() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.commit(1);
    w.crc ^= 1;
    w.cut();
    w.put(2, "b");
    w.commit(2);
    let err = read(w.write(0), Options::default()).unwrap_err().to_string();
    assert!(
        err.starts_with("0000000000000001-0000000000000064.wal at byte 0: a CRC record"),
        "{err}"
    );
}

#[test]
fn a_bare_v2_request_reads_as_v2_and_requests_keep_their_kind() {
    let mut w = Writer::new();
    let v2 = V2Request {
        method: b"PUT".to_vec(),
        path: b"/0/members/8e9e05c52164694d/attributes".to_vec(),
        val: br#"{"name":"default","clientURLs":["http://localhost:2379"]}"#.to_vec(),
        ..Default::default()
    };
    let data = message::Entry {
        r#type: 0,
        term: 1,
        index: 1,
        data: v2.encode_to_vec(),
    }
    .encode_to_vec();
    w.record(ENTRY, data);
    w.record(
        ENTRY,
        message::Entry {
            r#type: 0,
            term: 2,
            index: 2,
            data: Vec::new(),
        }
        .encode_to_vec(),
    );
    w.entry(
        3,
        2,
        InternalRaftRequest {
            compaction: Some(CompactionRequest {
                revision: 7,
                physical: false,
            }),
            ..Default::default()
        },
    );
    w.commit(3);
    let (entries, _) = read(w.write(0), Options::default()).unwrap();
    assert_eq!(
        entries.iter().map(|e| e.request.clone()).collect::<Vec<_>>(),
        [
            Request::V2 {
                method: "PUT".into(),
                path: "/0/members/8e9e05c52164694d/attributes".into()
            },
            Request::Empty,
            Request::Compaction(CompactionRequest {
                revision: 7,
                physical: false
            }),
        ]
    );
}

#[test]
fn a_folder_without_segments_or_with_a_missing_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let err = read(dir.path(), Options::default()).unwrap_err().to_string();
    assert!(err.ends_with("no WAL segments (*.wal) here"), "{err}");
    std::fs::write(dir.path().join("0000000000000000-0000000000000000.wal"), b"").unwrap();
    std::fs::write(dir.path().join("0000000000000002-0000000000000009.wal"), b"").unwrap();
    let err = read(dir.path(), Options::default()).unwrap_err().to_string();
    assert!(err.starts_with("WAL segments missing between"), "{err}");
}
