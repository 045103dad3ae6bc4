//! A WAL directory's segment files and the framed records in each.
//!
//! Facts from etcd's `server/storage/wal/` (`util.go`, `decoder.go`,
//! `encoder.go`, `wal.go`):
//! - A segment is named `%016x-%016x.wal`: its sequence number and the raft
//!   index of its first entry. Sequence numbers run without a gap. A
//!   `*.tmp` file is the next segment, preallocated, not yet data.
//! - A record is an 8-byte little-endian length field, then the record,
//!   padded to 8 bytes. A negative length field (top bit set) means
//!   padding: its low 56 bits are the record's length, and the low 3 bits
//!   of its top byte the padding (`encoder.go`'s `encodeFrameSize` writes
//!   `0x80 | pad` there, `decoder.go`'s `decodeFrameSize` reads it). So
//!   every record starts at a multiple of 8 in its file.
//! - A segment is preallocated (64,000,000 bytes, `SegmentSizeBytes`) and
//!   its tail is zeros: a zero length field, or the end of the file, ends
//!   a segment's records (`decodeRecord`). A segment the writer moved on
//!   from is truncated at its last record (`wal.go`'s `cut`); only the
//!   last one has a zeroed tail.
//! - A record is a `walpb.Record { type, crc, data }`. The CRC is CRC-32C
//!   (Castagnoli) chained over every record's data in order: each record's
//!   `crc` is the chain's value after its data. A `crc` record (type 4)
//!   carries the chain's value across a segment boundary: it must equal
//!   the chain so far (unless that is 0, at the very start) and seeds it.
//! - A record torn by a crash (or by copying a member while it writes) is
//!   one whose 512-byte sector is all zeros, or that runs past the end:
//!   etcd accepts it at the end of the last segment and nowhere else.

use super::message::Record;
use super::WalError;
use prost::Message;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// Record types (`wal.go`).
pub const METADATA: i64 = 1;
pub const ENTRY: i64 = 2;
pub const STATE: i64 = 3;
pub const CRC: i64 = 4;
pub const SNAPSHOT: i64 = 5;

/// The sector a torn write is judged by (`decoder.go`'s minSectorSize).
const SECTOR: u64 = 512;

/// One segment file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub path: PathBuf,
    pub seq: u64,
    /// The raft index of its first entry.
    pub first_index: u64,
}

impl Segment {
    /// The file's name, for messages.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// The segments in `dir`, by sequence; an error for a name that is not a
/// segment's, a gap in the sequence, or none at all.
pub fn segments(dir: &Path) -> Result<Vec<Segment>, WalError> {
    let io = |source| WalError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.ends_with(".tmp") || !name.ends_with(".wal") {
            continue;
        }
        let Some((seq, first_index)) = parse_name(name) else {
            return Err(WalError::BadName(path));
        };
        found.push(Segment {
            path,
            seq,
            first_index,
        });
    }
    if found.is_empty() {
        return Err(WalError::NoSegments(dir.to_path_buf()));
    }
    found.sort_by_key(|s| s.seq);
    for pair in found.windows(2) {
        if pair[1].seq != pair[0].seq + 1 {
            return Err(WalError::SequenceGap {
                before: pair[0].path.clone(),
                after: pair[1].path.clone(),
            });
        }
    }
    Ok(found)
}

/// `%016x-%016x.wal` → (sequence, first index).
fn parse_name(name: &str) -> Option<(u64, u64)> {
    let stem = name.strip_suffix(".wal")?;
    let (seq, index) = stem.split_once('-')?;
    let hex = |s: &str| (s.len() == 16).then(|| u64::from_str_radix(s, 16).ok()).flatten();
    Some((hex(seq)?, hex(index)?))
}

/// The length field's record length and padding.
pub fn frame_size(field: u64) -> (u64, u64) {
    let len = field & !(0xff << 56);
    let pad = if field >> 63 == 1 { (field >> 56) & 0x7 } else { 0 };
    (len, pad)
}

/// The record length and padding of a length field exactly as etcd's
/// encoder writes one (a non-empty record, its top byte 0 or `0x80 | pad`
/// with the padding making it a multiple of 8), else `None`: what salvage
/// takes for a frame.
pub fn strict_frame_size(field: u64) -> Option<(u64, u64)> {
    let top = field >> 56;
    let len = field & !(0xff << 56);
    let pad = match top {
        0 => 0,
        0x81..=0x87 => top & 0x7,
        _ => return None,
    };
    (len > 0 && (len + pad).is_multiple_of(8)).then_some((len, pad))
}

/// What reading a segment's next record gave.
pub enum Next {
    /// A whole record, CRC not yet checked, at this offset; whether a
    /// sector of its frame is zeros (torn, should its CRC not match).
    Record(Record, u64, bool),
    /// The segment's records end at this offset (end of file or a zero
    /// length field).
    End(u64),
    /// A record that cannot be whole: `torn` when a sector of it is zeros
    /// or it runs past the end (as a crash leaves the last one), else
    /// damage.
    Broken { offset: u64, torn: bool, what: String },
}

/// Reads one segment's records in order, streaming.
pub struct SegmentReader {
    file: BufReader<File>,
    pub segment: Segment,
    size: u64,
    /// Where the next record starts.
    pub offset: u64,
}

impl SegmentReader {
    pub fn open(segment: &Segment) -> Result<SegmentReader, WalError> {
        let io = |source| WalError::Io {
            path: segment.path.clone(),
            source,
        };
        let file = File::open(&segment.path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        Ok(SegmentReader {
            file: BufReader::with_capacity(1 << 20, file),
            segment: segment.clone(),
            size,
            offset: 0,
        })
    }

    fn io(&self, source: std::io::Error) -> WalError {
        WalError::Io {
            path: self.segment.path.clone(),
            source,
        }
    }

    /// The next record.
    pub fn next(&mut self) -> Result<Next, WalError> {
        let at = self.offset;
        if self.size.saturating_sub(at) < 8 {
            // Fewer than 8 bytes left: no room for a record.
            let rest = self.read_rest()?;
            return Ok(if rest.iter().all(|&b| b == 0) {
                Next::End(at)
            } else {
                Next::Broken {
                    offset: at,
                    torn: true,
                    what: format!("{} bytes, less than a length field", rest.len()),
                }
            });
        }
        let mut field = [0u8; 8];
        self.file.read_exact(&mut field).map_err(|e| self.io(e))?;
        self.offset = at + 8;
        let field = u64::from_le_bytes(field);
        if field == 0 {
            return Ok(Next::End(at));
        }
        let (len, pad) = frame_size(field);
        let room = self.size - at - 8;
        if len.saturating_add(pad) > room {
            return Ok(Next::Broken {
                offset: at,
                torn: true,
                what: format!("a record of {len} bytes where {room} remain"),
            });
        }
        let mut data = vec![0u8; (len + pad) as usize];
        self.file.read_exact(&mut data).map_err(|e| self.io(e))?;
        self.offset = at + 8 + len + pad;
        let torn = torn(at + 8, &data);
        match Record::decode(&data[..len as usize]) {
            Ok(record) => Ok(Next::Record(record, at, torn)),
            Err(e) => Ok(Next::Broken {
                offset: at,
                torn,
                what: format!("a record that does not decode ({e})"),
            }),
        }
    }

    /// The record framed at `at` as etcd's encoder frames one
    /// ([`strict_frame_size`]), whole within the file and decoding as a
    /// `walpb.Record`, with the offset after it; `None` when there is none.
    /// For salvage: the CRC is not checked.
    pub fn record_at(&mut self, at: u64) -> Result<Option<(Record, u64)>, WalError> {
        if at.saturating_add(8) > self.size {
            return Ok(None);
        }
        self.skip_to(at)?;
        let mut field = [0u8; 8];
        self.file.read_exact(&mut field).map_err(|e| self.io(e))?;
        self.offset = at + 8;
        let Some((len, pad)) = strict_frame_size(u64::from_le_bytes(field)) else {
            return Ok(None);
        };
        if len + pad > self.size - at - 8 {
            return Ok(None);
        }
        let mut data = vec![0u8; (len + pad) as usize];
        self.file.read_exact(&mut data).map_err(|e| self.io(e))?;
        self.offset = at + 8 + len + pad;
        Ok(Record::decode(&data[..len as usize])
            .ok()
            .map(|record| (record, at + 8 + len + pad)))
    }

    /// Moves to `offset` (within the buffer when it can).
    pub fn skip_to(&mut self, offset: u64) -> Result<(), WalError> {
        let by = offset as i64 - self.offset as i64;
        self.file.seek_relative(by).map_err(|e| self.io(e))?;
        self.offset = offset;
        Ok(())
    }

    /// The rest of the file from the current offset (at most 8 bytes when
    /// called by `next`).
    fn read_rest(&mut self) -> Result<Vec<u8>, WalError> {
        let mut rest = Vec::new();
        self.file.read_to_end(&mut rest).map_err(|e| self.io(e))?;
        self.offset += rest.len() as u64;
        Ok(rest)
    }

    /// How many bytes from the current offset to the last non-zero byte of
    /// the file: what a cut at the end leaves unread.
    pub fn unread_bytes(&mut self) -> Result<u64, WalError> {
        let start = self.offset;
        let mut last_nonzero = None;
        let mut at = start;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = self.file.read(&mut buf).map_err(|e| self.io(e))?;
            if n == 0 {
                break;
            }
            if let Some(i) = buf[..n].iter().rposition(|&b| b != 0) {
                last_nonzero = Some(at + i as u64);
            }
            at += n as u64;
        }
        self.offset = at;
        Ok(last_nonzero.map_or(0, |l| l + 1 - start))
    }
}

/// Whether data starting at file offset `start` has a 512-byte sector
/// (split on the file's sector boundaries) that is all zeros.
fn torn(start: u64, data: &[u8]) -> bool {
    let mut at = 0usize;
    let mut file_at = start;
    while at < data.len() {
        let chunk = ((SECTOR - file_at % SECTOR) as usize).min(data.len() - at);
        if data[at..at + chunk].iter().all(|&b| b == 0) {
            return true;
        }
        at += chunk;
        file_at += chunk as u64;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_as_etcd_writes_them() {
        assert_eq!(parse_name("0000000000000000-0000000000000000.wal"), Some((0, 0)));
        assert_eq!(
            parse_name("000000000000000a-00000000000186a1.wal"),
            Some((10, 100_001))
        );
        assert_eq!(parse_name("0-0.wal"), None);
        assert_eq!(parse_name("000000000000000g-0000000000000000.wal"), None);
    }

    #[test]
    fn padding_is_in_the_top_byte() {
        assert_eq!(frame_size(13), (13, 0));
        // 13 bytes padded by 3: top byte 0x80 | 3.
        assert_eq!(frame_size((0x83u64 << 56) | 13), (13, 3));
    }

    #[test]
    fn salvage_takes_only_frames_etcd_writes() {
        assert_eq!(strict_frame_size(16), Some((16, 0)));
        assert_eq!(strict_frame_size((0x83u64 << 56) | 13), Some((13, 3)));
        // Unpadded but not a multiple of 8, padding that does not add up,
        // stray bits in the top byte, nothing.
        assert_eq!(strict_frame_size(13), None);
        assert_eq!(strict_frame_size((0x82u64 << 56) | 13), None);
        assert_eq!(strict_frame_size((0xc3u64 << 56) | 13), None);
        assert_eq!(strict_frame_size(0), None);
    }

    #[test]
    fn a_zeroed_sector_is_torn() {
        let mut data = vec![1u8; 1024];
        assert!(!torn(0, &data));
        data[512..1024].fill(0);
        assert!(torn(0, &data));
        // Sectors are the file's: data starting at 504 has its first
        // sector's 8 bytes, then 512, then the rest.
        let mut data = vec![1u8; 600];
        data[8..520].fill(0);
        assert!(torn(504, &data));
        assert!(!torn(500, &data));
    }
}
