//! The reader on WALs written here byte for byte as etcd's encoder writes
//! them (`encoder.go`, `wal.go`): framing, padding, the CRC chain across
//! segments, a torn or zeroed end, damage in the middle and salvage, a
//! replaced uncommitted tail, a snapshot received from a leader.

use super::message::{self, HardState, InternalRaftRequest, Record};
use super::*;
use prost::Message;

const MEMBER: Metadata = Metadata {
    node_id: 0x8e9e05c52164694d,
    cluster_id: 0xcdf818194e3a8c32,
};

/// Writes segments as etcd's encoder does.
struct Writer {
    dir: tempfile::TempDir,
    segments: Vec<Vec<u8>>,
    crc: u32,
    /// Where each record starts: (segment, offset).
    offsets: Vec<(usize, u64)>,
}

impl Writer {
    /// A new member's WAL: crc 0, metadata, the empty snapshot.
    fn new() -> Writer {
        let mut w = Writer {
            dir: tempfile::tempdir().unwrap(),
            segments: Vec::new(),
            crc: 0,
            offsets: Vec::new(),
        };
        w.cut();
        w.record(SNAPSHOT, message::Snapshot { index: 0, term: 0 }.encode_to_vec());
        w
    }

    /// Starts a new segment as `wal.go`'s `cut` does: a crc record carrying
    /// the chain, the metadata.
    fn cut(&mut self) {
        self.segments.push(Vec::new());
        let crc = self.crc;
        self.frame(Record {
            r#type: CRC,
            crc,
            data: Vec::new(),
        });
        self.record(METADATA, MEMBER.encode_to_vec());
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
        let seq = self.segments.len() - 1;
        let seg = &mut self.segments[seq];
        self.offsets.push((seq, seg.len() as u64));
        seg.extend(field.to_le_bytes());
        seg.extend(&bytes);
        seg.extend(std::iter::repeat_n(0u8, pad));
    }

    /// Where the last record written starts.
    fn last_offset(&self) -> u64 {
        self.offsets.last().unwrap().1
    }

    fn entry(&mut self, index: u64, term: u64, request: InternalRaftRequest) {
        self.raw_entry(index, term, 0, request.encode_to_vec());
    }

    fn raw_entry(&mut self, index: u64, term: u64, kind: i32, data: Vec<u8>) {
        let data = message::Entry {
            r#type: kind,
            term,
            index,
            data,
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

    fn snapshot(&mut self, index: u64, term: u64) {
        self.record(SNAPSHOT, message::Snapshot { index, term }.encode_to_vec());
    }

    fn path(&self, seq: usize) -> PathBuf {
        self.dir.path().join(format!("{seq:016x}-{:016x}.wal", seq * 100))
    }

    /// Writes the segments: all but the last as `cut` leaves them
    /// (truncated), the last followed by `zeros` bytes of preallocated
    /// space.
    fn write(&self, zeros: usize) -> &Path {
        for (seq, bytes) in self.segments.iter().enumerate() {
            let mut bytes = bytes.clone();
            if seq + 1 == self.segments.len() {
                bytes.extend(std::iter::repeat_n(0u8, zeros));
            }
            std::fs::write(self.path(seq), bytes).unwrap();
        }
        self.dir.path()
    }

    /// Changes segment `seq`'s file.
    fn damage(&self, seq: usize, f: impl FnOnce(&mut Vec<u8>)) {
        let mut bytes = std::fs::read(self.path(seq)).unwrap();
        f(&mut bytes);
        std::fs::write(self.path(seq), bytes).unwrap();
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
    let entries = wal.entries().collect::<Result<Vec<_>, _>>()?;
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

/// Three entries over two segments, committed, then preallocated zeros.
fn three_entries() -> Writer {
    let mut w = Writer::new();
    w.put(1, "a");
    w.put(2, "b");
    w.commit(2);
    w.cut();
    w.put(3, "c");
    w.commit(3);
    w
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
    assert!(entries.iter().all(|e| e.committed));
    assert_eq!(summary.first, Some((1, 1)));
    assert_eq!(summary.last, Some((3, 1)));
    assert_eq!(summary.entries, 3);
    assert_eq!(summary.segments, 2);
    assert_eq!(summary.snapshot, Some((0, 0)));
    assert_eq!(summary.metadata, Some(MEMBER));
    assert_eq!(summary.hard_state, Some((1, 1, 3)));
    // The preallocated zeros are not a cut.
    assert_eq!(summary.cut, None);
    assert!(
        summary.gaps.is_empty() && summary.missing.is_empty(),
        "{summary:?}"
    );
}

#[test]
fn preallocated_next_segments_are_not_read_and_foreign_names_are_named() {
    let w = three_entries();
    let dir = w.write(0);
    std::fs::write(dir.join("0.tmp"), vec![0u8; 4096]).unwrap();
    std::fs::write(dir.join("README"), b"not a segment").unwrap();
    let (entries, _) = read(dir, Options::default()).unwrap();
    assert_eq!(keys(&entries), ["a", "b", "c"]);
    std::fs::write(dir.join("0000000000000002.wal"), b"").unwrap();
    let err = read(dir, Options::default()).unwrap_err().to_string();
    assert!(
        err.ends_with("0000000000000002.wal: not a WAL segment's name (%016x-%016x.wal)"),
        "{err}"
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
    assert!(
        err.contains("0000000000000000-0000000000000000.wal and ")
            && err.ends_with("0000000000000002-0000000000000009.wal"),
        "{err}"
    );
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
    w.put(3, "c");
    w.commit(3);
    let (entries, summary) = read(w.write(0), Options::default()).unwrap();
    assert_eq!(keys(&entries), ["a", "b", "c"]);
    assert_eq!(entries.iter().map(|e| e.term).collect::<Vec<_>>(), [1, 2, 1]);
    assert_eq!(summary.replaced, 2);
}

#[test]
fn a_committed_entry_written_again_is_damage() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.put(2, "b");
    w.commit(2);
    w.put(2, "b again");
    let at = w.last_offset();
    let err = read(w.write(0), Options::default()).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "0000000000000000-0000000000000000.wal at byte {at}: entry 2 written again after index 2 was committed (--salvage skips to the next whole record)"
        )
    );
}

#[test]
fn a_snapshot_from_the_leader_replaces_the_tail_and_leaves_a_hole() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.commit(1);
    w.put(2, "divergent");
    // The member's own snapshot at a committed index changes nothing.
    w.snapshot(1, 1);
    // A snapshot received from a leader at 10: entries 2..=10 are not here.
    w.snapshot(10, 3);
    w.commit(10);
    w.put(11, "k");
    w.commit(11);
    let (entries, summary) = read(w.write(0), Options::default()).unwrap();
    assert_eq!(keys(&entries), ["a", "k"]);
    assert_eq!(summary.replaced, 1);
    assert_eq!(summary.missing, [(2, 10)]);
    assert_eq!(summary.snapshot, Some((0, 0)));
}

#[test]
fn a_zeroed_tail_ends_the_log_quietly() {
    let w = three_entries();
    let (entries, summary) = read(w.write(1 << 16), Options::default()).unwrap();
    assert_eq!(keys(&entries), ["a", "b", "c"]);
    assert_eq!(summary.cut, None);
}

#[test]
fn a_torn_last_record_ends_the_log_and_is_reported() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.commit(1);
    w.put(2, "b");
    w.commit(2);
    let at = w.last_offset();
    let dir = w.write(0);
    // The last record (the commit) cut short, as a copy of a live member
    // can be.
    let mut whole = 0;
    w.damage(0, |bytes| {
        whole = bytes.len() as u64;
        bytes.truncate(bytes.len() - 3);
    });
    let (entries, summary) = read(dir, Options::default()).unwrap();
    assert_eq!(keys(&entries), ["a", "b"]);
    let cut = summary.cut.unwrap();
    assert_eq!(cut.segment, "0000000000000000-0000000000000000.wal");
    assert_eq!(cut.offset, at);
    assert_eq!(cut.bytes, whole - 3 - at);
    assert_eq!(cut.last_entry, Some(2));
    assert!(cut.what.contains("remain"), "{cut:?}");
    assert_eq!(summary.beyond_commit, Some((1, 2)));
}

#[test]
fn a_record_with_a_zeroed_sector_in_the_preallocated_tail_is_a_cut() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.commit(1);
    // A big value spans sectors: its length field reached the disk, a later
    // sector did not.
    w.entry(
        2,
        1,
        InternalRaftRequest {
            put: Some(PutRequest {
                key: b"big".to_vec(),
                value: vec![b'x'; 2000],
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    let at = w.last_offset();
    let dir = w.write(8192);
    w.damage(0, |bytes| {
        let sector = (at as usize / 512 + 2) * 512;
        bytes[sector..sector + 512].fill(0);
    });
    let (entries, summary) = read(dir, Options::default()).unwrap();
    assert_eq!(keys(&entries), ["a"]);
    let cut = summary.cut.unwrap();
    assert_eq!(cut.offset, at);
    assert_eq!(cut.last_entry, Some(1));
    assert!(cut.what.starts_with("CRC mismatch"), "{cut:?}");
    // What is left of the torn record: up to its last non-zero byte.
    assert!(cut.bytes > 1000 && cut.bytes < 2100, "{cut:?}");
}

#[test]
fn a_zero_length_field_with_whole_records_after_it_is_damage_or_a_gap() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.commit(1);
    w.put(2, "b");
    let at = w.last_offset();
    w.put(3, "c");
    w.commit(3);
    let dir = w.write(4096);
    // The sector holding entry 2's length field never reached the copy.
    w.damage(0, |bytes| bytes[at as usize..at as usize + 8].fill(0));
    let err = read(dir, Options::default()).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "0000000000000000-0000000000000000.wal at byte {at}: a zero length field, then "
        )),
        "{err}"
    );
    assert!(err.contains("and a whole record follows at byte"), "{err}");
    let (entries, summary) = read(dir, Options { salvage: true }).unwrap();
    // Entry 2 is lost, and so is entry 3, the seed of the chain: its CRC is
    // checked by the commit after it, its data by nothing.
    assert_eq!(keys(&entries), ["a"]);
    assert_eq!(summary.gaps.len(), 1, "{summary:?}");
    assert_eq!(summary.gaps[0].from, at);
    assert_eq!(summary.hard_state, Some((1, 1, 3)));
    assert_eq!(summary.cut, None);
}

#[test]
fn damage_in_the_middle_is_an_error_naming_the_segment_and_offset_or_a_gap_with_salvage() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.put(2, "b");
    let at = w.last_offset();
    w.put(3, "c");
    let next = w.last_offset();
    w.commit(3);
    w.cut();
    w.put(4, "d");
    w.commit(4);
    let dir = w.write(64);
    // Flip a byte of the key of "b" (field 1, length 1), not of the
    // record's crc field.
    w.damage(0, |bytes| {
        let b = (at as usize..next as usize)
            .find(|&i| bytes[i..i + 3] == [0x0a, 1, b'b'])
            .unwrap();
        bytes[b + 2] = b'x';
    });
    let err = read(dir, Options::default()).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "0000000000000000-0000000000000000.wal at byte {at}: CRC mismatch"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("a whole record follows at byte {next}")),
        "{err}"
    );
    // Only the damaged record is skipped: its intact crc field seeds the
    // chain for the next.
    let (entries, summary) = read(dir, Options { salvage: true }).unwrap();
    assert_eq!(keys(&entries), ["a", "c", "d"]);
    assert_eq!(summary.gaps.len(), 1, "{summary:?}");
    let gap = &summary.gaps[0];
    assert_eq!(
        (gap.segment.as_str(), gap.from, gap.to),
        ("0000000000000000-0000000000000000.wal", at, next)
    );
    assert_eq!(gap.skipped(), next - at);
    assert_eq!(summary.missing, [(2, 2)]);
}

#[test]
fn salvage_resyncs_after_a_broken_length_field_and_never_yields_unchecked_data() {
    let mut w = Writer::new();
    w.put(1, "a");
    w.put(2, "b");
    let at = w.last_offset();
    w.put(3, "c");
    w.put(4, "d");
    let resume = w.last_offset();
    w.put(5, "e");
    w.commit(5);
    w.cut();
    w.put(6, "f");
    w.commit(6);
    let dir = w.write(0);
    // Entry 2's length field claims more than the file holds.
    w.damage(0, |bytes| bytes[at as usize + 5] = 0x7f);
    let err = read(dir, Options::default()).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "0000000000000000-0000000000000000.wal at byte {at}: a record of "
        )),
        "{err}"
    );
    let (entries, summary) = read(dir, Options { salvage: true }).unwrap();
    // Entry 3's record is whole but only seeds the chain; entry 4 is the
    // first whose CRC is checked.
    assert_eq!(keys(&entries), ["a", "d", "e", "f"]);
    assert_eq!(summary.gaps.len(), 1, "{summary:?}");
    assert_eq!((summary.gaps[0].from, summary.gaps[0].to), (at, resume));
    assert_eq!(summary.missing, [(2, 3)]);
}

#[test]
fn a_chain_broken_between_segments_is_damage() {
    let mut w = three_entries();
    w.crc ^= 1;
    w.cut();
    w.put(4, "d");
    w.commit(4);
    let dir = w.write(0);
    let err = read(dir, Options::default()).unwrap_err().to_string();
    assert!(
        err.starts_with("0000000000000002-00000000000000c8.wal at byte 0: a CRC record"),
        "{err}"
    );
    assert!(
        err.contains("records are missing from the end of 0000000000000001-0000000000000064.wal"),
        "{err}"
    );
    // Salvage reads on from the crc record, which is the chain as the
    // writer had it.
    let (entries, summary) = read(dir, Options { salvage: true }).unwrap();
    assert_eq!(keys(&entries), ["a", "b", "c", "d"]);
    assert_eq!(summary.gaps.len(), 1);
    assert_eq!(summary.gaps[0].segment, "0000000000000001-0000000000000064.wal");
}

#[test]
fn a_segment_whose_end_was_lost_is_damage_at_the_next_ones_start() {
    // A copy taken while etcd moved to a new segment: the old one's last
    // records are missing from the copy.
    let mut w = Writer::new();
    w.put(1, "a");
    w.put(2, "b");
    let at = w.last_offset();
    w.commit(2);
    w.cut();
    w.put(3, "c");
    w.commit(3);
    let dir = w.write(0);
    w.damage(0, |bytes| bytes.truncate(at as usize));
    let err = read(dir, Options::default()).unwrap_err().to_string();
    assert!(
        err.starts_with("0000000000000001-0000000000000064.wal at byte 0: a CRC record"),
        "{err}"
    );
    let (entries, summary) = read(dir, Options { salvage: true }).unwrap();
    assert_eq!(keys(&entries), ["a", "c"]);
    assert_eq!(summary.missing, [(2, 2)]);
}

#[test]
fn segments_of_two_members_are_named() {
    let mut w = three_entries();
    w.segments.push(Vec::new());
    let crc = w.crc;
    w.frame(Record {
        r#type: CRC,
        crc,
        data: Vec::new(),
    });
    let other = Metadata { node_id: 1, ..MEMBER };
    w.record(METADATA, other.encode_to_vec());
    let err = read(w.write(0), Options::default()).unwrap_err();
    assert!(
        matches!(err, WalError::MetadataConflict { ref segment, offset: 16, .. } if segment == "0000000000000002-00000000000000c8.wal"),
        "{err}"
    );
}

#[test]
fn requests_keep_their_kind_and_a_bare_v2_request_reads_as_v2() {
    let mut w = Writer::new();
    let v2 = V2Request {
        method: b"PUT".to_vec(),
        path: b"/0/members/8e9e05c52164694d/attributes".to_vec(),
        val: br#"{"name":"default","clientURLs":["http://localhost:2379"]}"#.to_vec(),
        ..Default::default()
    };
    w.raw_entry(1, 1, 0, v2.encode_to_vec());
    w.raw_entry(2, 2, 0, Vec::new());
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
    // An auth request (auth_enable, field 1000), with its id and header.
    let mut auth = InternalRaftRequest {
        id: 9,
        header: Some(message::RequestHeader {
            id: 9,
            username: b"root".to_vec(),
        }),
        ..Default::default()
    }
    .encode_to_vec();
    auth.extend([0xc2, 0x3e, 0x00]);
    w.raw_entry(4, 2, 0, auth);
    w.raw_entry(5, 2, 1, b"a ConfChange".to_vec());
    w.entry(
        6,
        2,
        InternalRaftRequest {
            lease_grant: Some(LeaseGrantRequest { ttl: 60, id: 5 }),
            ..Default::default()
        },
    );
    w.commit(6);
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
            Request::Other(1000),
            Request::ConfChange,
            Request::LeaseGrant(LeaseGrantRequest { ttl: 60, id: 5 }),
        ]
    );
}

#[test]
fn a_txn_reads_with_its_compares_and_both_branches() {
    let key = b"/registry/pods/shop/web".to_vec();
    let txn = TxnRequest {
        compare: vec![Compare {
            result: 0,
            target: 2,
            key: key.clone(),
            target_union: Some(CompareTarget::ModRevision(41)),
            range_end: Vec::new(),
        }],
        success: vec![RequestOp {
            request: Some(Op::Put(PutRequest {
                key: key.clone(),
                value: b"k8s\0...".to_vec(),
                lease: 0,
                ignore_value: false,
                ignore_lease: false,
            })),
        }],
        failure: vec![RequestOp {
            request: Some(Op::Range(RangeRequest {
                key,
                range_end: Vec::new(),
            })),
        }],
    };
    let mut w = Writer::new();
    w.entry(
        1,
        1,
        InternalRaftRequest {
            txn: Some(txn.clone()),
            ..Default::default()
        },
    );
    w.commit(1);
    let (entries, _) = read(w.write(0), Options::default()).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].request, Request::Txn(txn));
}

/// Five full segments of Kubernetes-sized entries read in bounded memory:
/// measured in a child process (this test binary, run for the one test
/// below), whose peak RSS is the reader's alone.
#[test]
fn five_full_segments_read_within_256_mib() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "source::wal::tests::read_five_segments_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("WAL_MEMORY_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("wal-memory: ").map(|(_, m)| m))
        .unwrap_or_else(|| panic!("no measure in {stdout}"));
    let fields: Vec<u64> = line.split(' ').map(|f| f.parse().unwrap()).collect();
    let (entries, before_kib, peak_kib) = (fields[0], fields[1], fields[2]);
    assert!(entries > 200_000, "{line}");
    // The peak while reading, over what writing the files left.
    assert!(
        peak_kib < 256 * 1024,
        "peak {peak_kib} KiB (before reading {before_kib} KiB)"
    );
}

/// The child of [`five_full_segments_read_within_256_mib`].
#[test]
#[ignore = "run by five_full_segments_read_within_256_mib in its own process"]
fn read_five_segments_child() {
    if std::env::var_os("WAL_MEMORY_CHILD").is_none() {
        return;
    }
    const SEGMENT: usize = 64_000_000;
    let dir = tempfile::tempdir().unwrap();
    let value = vec![b'v'; 1000];
    let mut index = 0u64;
    let mut crc = 0u32;
    let record = |seg: &mut Vec<u8>, kind: i64, data: Vec<u8>, crc: &mut u32| {
        if kind != CRC {
            *crc = crc32c::crc32c_append(*crc, &data);
        }
        let bytes = Record {
            r#type: kind,
            crc: *crc,
            data,
        }
        .encode_to_vec();
        let pad = (8 - bytes.len() % 8) % 8;
        let mut field = bytes.len() as u64;
        if pad > 0 {
            field |= (0x80 | pad as u64) << 56;
        }
        seg.extend(field.to_le_bytes());
        seg.extend(&bytes);
        seg.extend(std::iter::repeat_n(0u8, pad));
    };
    for seq in 0..5u64 {
        let mut seg = Vec::with_capacity(SEGMENT);
        let first = index + 1;
        record(&mut seg, CRC, Vec::new(), &mut crc);
        record(&mut seg, METADATA, MEMBER.encode_to_vec(), &mut crc);
        if seq == 0 {
            record(
                &mut seg,
                SNAPSHOT,
                message::Snapshot { index: 0, term: 0 }.encode_to_vec(),
                &mut crc,
            );
        }
        while seg.len() < SEGMENT - 4096 {
            index += 1;
            let req = InternalRaftRequest {
                put: Some(PutRequest {
                    key: format!("/registry/configmaps/shop/cm-{}", index % 5000).into_bytes(),
                    value: value.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            };
            let entry = message::Entry {
                r#type: 0,
                term: 2,
                index,
                data: req.encode_to_vec(),
            };
            record(&mut seg, ENTRY, entry.encode_to_vec(), &mut crc);
            let state = HardState {
                term: 2,
                vote: 1,
                commit: index,
            };
            record(&mut seg, STATE, state.encode_to_vec(), &mut crc);
        }
        if seq == 4 {
            seg.resize(SEGMENT, 0);
        }
        std::fs::write(dir.path().join(format!("{seq:016x}-{first:016x}.wal")), &seg).unwrap();
    }
    let status = |field: &str| -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let before = status("VmRSS:");
    // Reset the peak to now (Linux ≥ 4.0), so it measures the read alone.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let mut wal = Wal::open(dir.path(), Options::default()).unwrap();
    let mut count = 0u64;
    for entry in wal.entries() {
        let entry = entry.unwrap();
        assert!(entry.committed);
        count += 1;
    }
    assert_eq!(count, index);
    assert_eq!(wal.summary().cut, None);
    println!("wal-memory: {count} {before} {}", status("VmHWM:"));
}
