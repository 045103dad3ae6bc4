//! Compression of stored blobs (canonical JSON, managedFields). New blobs are
//! zstd frames, optionally compressed against a base: the decompressed blob
//! of the same key's earlier content, used as a raw dictionary, so a revision
//! that changed a few fields costs a few bytes. Databases written before
//! zstd hold deflate blobs, which stay readable.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use zstd::zstd_safe::{self, CCtx, DCtx};

/// zstd level of a blob compressed alone: fast, and with a base most of the
/// saving comes from the dictionary, not from a higher level.
const LEVEL: i32 = 3;
/// zstd level of a blob compressed against a base. A later revision mostly
/// repeats its base, which level 1 finds as well as level 3 (its frames of
/// the benchmark's fully filled Pods came out 9% smaller), while loading
/// the base into one hash table instead of two: a quarter less time per
/// frame.
const DELTA_LEVEL: i32 = 1;

/// How a row's blobs are compressed (`semantic_values.codec`).
pub(crate) const ZSTD: &str = "zstd";
const DEFLATE: &str = "deflate";

/// Compresses `bytes`, against `base` when it is not empty, with this
/// thread's zstd context.
pub(crate) fn pack(bytes: &[u8], base: &[u8]) -> Vec<u8> {
    thread_local! {
        static CCTX: RefCell<CCtx<'static>> = RefCell::new(CCtx::create());
    }
    let level = if base.is_empty() { LEVEL } else { DELTA_LEVEL };
    let mut out = Vec::with_capacity(zstd_safe::compress_bound(bytes.len()));
    CCTX.with_borrow_mut(|cctx| cctx.compress_using_dict(&mut out, bytes, base, level))
        .expect("the output holds the compress bound");
    out
}

/// The size a zstd blob decompresses to, when its frame says.
pub(crate) fn unpacked_size(bytes: &[u8]) -> Option<usize> {
    zstd_safe::get_frame_content_size(bytes)
        .ok()
        .flatten()
        .and_then(|n| usize::try_from(n).ok())
}

fn bad(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("corrupt stored blob: {what}"))
}

fn unzstd(bytes: &[u8], dict: &[u8]) -> io::Result<Vec<u8>> {
    thread_local! {
        static DCTX: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
    }
    let size = zstd_safe::get_frame_content_size(bytes)
        .map_err(|_| bad("not a zstd frame"))?
        .ok_or_else(|| bad("zstd frame without a content size"))?;
    let size = usize::try_from(size).map_err(bad)?;
    let mut out = Vec::with_capacity(size);
    DCTX.with_borrow_mut(|dctx| dctx.decompress_using_dict(&mut out, bytes, dict))
        .map_err(|code| bad(zstd_safe::get_error_name(code)))?;
    Ok(out)
}

/// `bytes`, compressed against `dict`, compressed again without one.
pub(crate) fn repack_without(bytes: &[u8], dict: &[u8]) -> io::Result<Vec<u8>> {
    Ok(pack(&unzstd(bytes, dict)?, &[]))
}

/// A compressed blob and its decompressed bytes.
type Unpacked = (Vec<u8>, Rc<Vec<u8>>);

/// The decompressed base blob: readers go key by key, so the same few bases
/// come back row after row.
fn unpacked_base(base: &[u8]) -> io::Result<Rc<Vec<u8>>> {
    const KEPT: usize = 4;
    thread_local! {
        static RECENT: RefCell<VecDeque<Unpacked>> = const { RefCell::new(VecDeque::new()) };
    }
    if let Some(hit) = RECENT.with_borrow(|r| r.iter().find(|(k, _)| k == base).map(|(_, v)| v.clone())) {
        return Ok(hit);
    }
    let unpacked = Rc::new(unzstd(base, &[])?);
    RECENT.with_borrow_mut(|r| {
        if r.len() == KEPT {
            r.pop_back();
        }
        r.push_front((base.to_vec(), unpacked.clone()));
    });
    Ok(unpacked)
}

/// Decompresses a blob written with `codec`; `base` is the (compressed)
/// blob of the row's base, if it has one.
pub(crate) fn unpack(codec: &str, bytes: &[u8], base: Option<&[u8]>) -> io::Result<Vec<u8>> {
    match codec {
        ZSTD => match base {
            Some(base) => unzstd(bytes, &unpacked_base(base)?),
            None => unzstd(bytes, &[]),
        },
        DEFLATE => {
            let mut out = Vec::new();
            io::Read::read_to_end(&mut flate2::read::DeflateDecoder::new(bytes), &mut out)?;
            Ok(out)
        }
        other => Err(bad(format!("unknown codec {other:?}"))),
    }
}

/// A compressed column as read with its row's codec and its base's blob.
#[derive(Default)]
pub(crate) struct Packed {
    pub codec: Option<String>,
    pub blob: Option<Vec<u8>>,
    pub base: Option<Vec<u8>>,
}

impl Packed {
    /// A column compressed alone, as zstd (`None`: the column is NULL).
    pub(crate) fn alone(blob: Option<Vec<u8>>) -> Packed {
        Packed {
            codec: Some(ZSTD.into()),
            blob,
            base: None,
        }
    }

    /// The decompressed bytes, if the column holds a blob.
    pub(crate) fn bytes(&self) -> Option<io::Result<Vec<u8>>> {
        let blob = self.blob.as_deref()?;
        Some(unpack(
            self.codec.as_deref().unwrap_or(ZSTD),
            blob,
            self.base.as_deref(),
        ))
    }

    /// The field-hash blob, which rows written before zstd hold raw.
    pub(crate) fn field_bytes(&self) -> Option<io::Result<Vec<u8>>> {
        match self.codec.as_deref() {
            Some(DEFLATE) => self.blob.clone().map(Ok),
            _ => self.bytes(),
        }
    }

    /// The blob as JSON; `None` when absent, an error when it does not
    /// decompress or parse.
    pub(crate) fn json(&self) -> io::Result<Option<serde_json::Value>> {
        self.bytes()
            .transpose()?
            .map(|b| serde_json::from_slice(&b).map_err(|e| bad(format!("not JSON: {e}"))))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_alone_and_against_a_base() {
        // JSON-like text, as stored: a short period (which a blob alone
        // compresses well against itself) would test the match finder on
        // what canonical JSON never is.
        let members: Vec<String> = (0..200)
            .map(|i| format!("\"key-{i}\":\"value-{}\"", i * 7919 % 10007))
            .collect();
        let base = format!("{{{}}}", members.join(",")).into_bytes();
        let mut changed = base.clone();
        changed[base.len() / 2] = b'!';
        let alone = pack(&base, &[]);
        let delta = pack(&changed, &base);
        assert!(
            delta.len() < 100 && delta.len() * 5 < alone.len(),
            "a one-byte change costs {} bytes, the whole {}",
            delta.len(),
            alone.len()
        );
        assert_eq!(unpack(ZSTD, &alone, None).unwrap(), base);
        assert_eq!(unpacked_size(&delta), Some(changed.len()));
        assert_eq!(unpack(ZSTD, &delta, Some(&alone)).unwrap(), changed);
        assert_ne!(
            unpack(ZSTD, &delta, None).ok(),
            Some(changed),
            "a delta needs its base"
        );
        assert!(unpack(ZSTD, b"garbage", None).is_err());
    }

    #[test]
    fn reads_deflate_blobs_of_older_databases() {
        use std::io::Write;
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(b"{\"a\":1}").unwrap();
        assert_eq!(unpack(DEFLATE, &z.finish().unwrap(), None).unwrap(), b"{\"a\":1}");
    }
}
