//! A read-only reader of bbolt files (etcd's `member/snap/db` and
//! `etcdctl snapshot save` files) over a memory map.
//!
//! It picks the valid meta page with the higher txid (falling back to the
//! other), walks branch, leaf, overflow and inline-bucket pages, and checks
//! every page id against the file and the high-water mark; a cycle or a page
//! out of range is an error, never a hang or a panic. The file is opened
//! read-only and never written.

mod cursor;
mod meta;
mod page;
mod salvage;

pub use meta::{fnv1a64, Meta};
pub use salvage::{Unreadable, Walked};

use memmap2::Mmap;
use page::{Page, BUCKET_LEAF, HEADER};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// Size of the SHA-256 trailer `etcdctl snapshot save` appends.
pub const TRAILER: usize = 32;

/// What went wrong reading a bbolt file.
#[derive(Debug, thiserror::Error)]
pub enum BoltError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a bbolt database ({reason})")]
    NotBolt { path: PathBuf, reason: String },
    #[error("{path}: both meta pages are invalid (page 0: {first}; page 1: {second})")]
    BadMeta {
        path: PathBuf,
        first: String,
        second: String,
    },
    #[error("{path}: truncated: {size} bytes, but the database needs {needed}")]
    Truncated { path: PathBuf, size: u64, needed: u64 },
    #[error("{path}: the SHA-256 trailer does not match the content (corrupted or incomplete snapshot)")]
    BadTrailer { path: PathBuf },
    #[error("page {}: {problem}", page.map_or("inline".to_string(), |p| p.to_string()))]
    BadPage { page: Option<u64>, problem: String },
    #[error("page {page} is out of range (the database has {limit} pages)")]
    PageOutOfRange { page: u64, limit: u64 },
    #[error("page {page} is reached twice: the tree has a cycle")]
    Cycle { page: u64 },
    #[error("{path}: no {name:?} bucket")]
    NoBucket { path: PathBuf, name: String },
    /// An entry whose content is not what the reader expects.
    #[error("{0}")]
    Content(String),
}

impl BoltError {
    /// Adds the file path to errors raised while walking pages.
    pub fn at(self, path: &Path) -> BoltError {
        match self {
            e @ (BoltError::BadPage { .. } | BoltError::PageOutOfRange { .. } | BoltError::Cycle { .. }) => {
                BoltError::NotBolt {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                }
            }
            other => other,
        }
    }
}

/// An open bbolt file.
pub struct BoltDb {
    map: Mmap,
    /// The mapped file, for reads that should not map pages.
    file: File,
    /// Bytes of the database proper (without a snapshot trailer).
    len: usize,
    path: PathBuf,
    meta: Meta,
    /// Whether a verified SHA-256 trailer was present.
    pub had_trailer: bool,
    /// SHA-256 of the whole file, once computed (verifying the trailer
    /// computes it in the same pass).
    file_sha256: std::sync::OnceLock<[u8; 32]>,
}

/// A bucket: where its root page is.
#[derive(Clone, Copy)]
pub enum Bucket<'a> {
    Paged(u64),
    Inline(&'a [u8]),
}

/// Bytes hashed between releases of the pages just read.
const HASH_CHUNK: usize = 64 << 20;

/// SHA-256 of `map[..end]`, releasing each chunk's pages once hashed so that
/// hashing a large file does not make it resident.
fn sha256_releasing(map: &Mmap, end: usize) -> Sha256 {
    let mut hasher = Sha256::new();
    let mut at = 0;
    while at < end {
        let len = HASH_CHUNK.min(end - at);
        hasher.update(&map[at..at + len]);
        #[cfg(unix)]
        // SAFETY: as in `release_resident`: a read-only shared file mapping
        // only loses its page-table entries and reads the file again.
        let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, at, len) };
        at += len;
    }
    hasher
}

impl BoltDb {
    /// Opens and validates `path`.
    pub fn open(path: &Path) -> Result<BoltDb, BoltError> {
        let io = |source| BoltError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        // SAFETY: the map is read-only; a file truncated underneath a reader
        // is outside what any reader of a live file can defend against, and
        // post-mortem inputs are copies.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        let size = map.len();
        if size < 2 * 1024 {
            return Err(BoltError::NotBolt {
                path: path.to_path_buf(),
                reason: format!("only {size} bytes"),
            });
        }
        let mut len = size;
        let mut had_trailer = false;
        let file_sha256 = std::sync::OnceLock::new();
        if size % 512 == TRAILER {
            let body = sha256_releasing(&map, size - TRAILER);
            let mut whole = body.clone();
            whole.update(&map[size - TRAILER..]);
            let _ = file_sha256.set(whole.finalize().into());
            if body.finalize().as_slice() != &map[size - TRAILER..] {
                return Err(BoltError::BadTrailer {
                    path: path.to_path_buf(),
                });
            }
            len = size - TRAILER;
            had_trailer = true;
        }
        let meta = Self::choose_meta(&map[..len], path)?;
        let needed = meta.pgid.saturating_mul(u64::from(meta.page_size));
        if (len as u64) < needed {
            return Err(BoltError::Truncated {
                path: path.to_path_buf(),
                size: len as u64,
                needed,
            });
        }
        Ok(BoltDb {
            map,
            file,
            len,
            path: path.to_path_buf(),
            meta,
            had_trailer,
            file_sha256,
        })
    }

    /// Meta 0 gives the page size; meta 1 is then at that offset (probed at
    /// 1 KiB·2^i when meta 0 is unreadable). The valid one with the higher
    /// txid wins.
    fn choose_meta(data: &[u8], path: &Path) -> Result<Meta, BoltError> {
        let first = meta::parse(data);
        let second = match &first {
            Ok(m) => meta::parse(data.get(m.page_size as usize..).unwrap_or_default()),
            Err(_) => (10..=16)
                .map(|shift| meta::parse(data.get(1usize << shift..).unwrap_or_default()))
                .find(Result::is_ok)
                .unwrap_or_else(|| Err("no valid meta page at any page size from 1 KiB to 64 KiB".into())),
        };
        match (first, second) {
            (Ok(a), Ok(b)) => Ok(if b.txid > a.txid && b.page_size == a.page_size {
                b
            } else {
                a
            }),
            (Ok(a), Err(_)) => Ok(a),
            (Err(_), Ok(b)) => Ok(b),
            (Err(first), Err(second)) => {
                let magic = data
                    .get(HEADER..HEADER + 4)
                    .map(|m| m != meta::MAGIC.to_le_bytes())
                    .unwrap_or(true);
                if magic && first.starts_with("magic") {
                    Err(BoltError::NotBolt {
                        path: path.to_path_buf(),
                        reason: first,
                    })
                } else {
                    Err(BoltError::BadMeta {
                        path: path.to_path_buf(),
                        first,
                        second,
                    })
                }
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn meta(&self) -> Meta {
        self.meta
    }

    /// SHA-256 of the whole file, trailer included, without keeping it
    /// resident.
    pub fn file_sha256(&self) -> [u8; 32] {
        *self
            .file_sha256
            .get_or_init(|| sha256_releasing(&self.map, self.map.len()).finalize().into())
    }

    /// Copies `bytes`, a slice of this map, into `into` by reading the file
    /// rather than the map. For reads in no particular order: touching the
    /// map there maps the kernel's whole page-cache folio around each read
    /// (often megabytes), so a scattered read keeps most of a large file
    /// resident in this process however often it is released.
    pub fn read_copy(&self, bytes: &[u8], into: &mut Vec<u8>) -> std::io::Result<()> {
        let offset = self.offset_of(bytes);
        into.clear();
        into.resize(bytes.len(), 0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.read_exact_at(into, offset as u64)
        }
        #[cfg(not(unix))]
        {
            into.copy_from_slice(&self.map[offset..offset + bytes.len()]);
            Ok(())
        }
    }

    /// Where `bytes`, a slice of this map, starts in it.
    pub fn offset_of(&self, bytes: &[u8]) -> usize {
        (bytes.as_ptr() as usize)
            .checked_sub(self.map.as_ptr() as usize)
            .filter(|o| o + bytes.len() <= self.map.len())
            .expect("a slice of this map")
    }

    /// Drops the mapped pages from this process's resident memory (they
    /// stay in the page cache and fault back in when read again), so that
    /// reading a large file does not grow the process by the file's size.
    pub fn release_resident(&self) {
        #[cfg(unix)]
        // SAFETY: the map is a read-only shared file mapping; MADV_DONTNEED
        // only drops its page-table entries, and the next access reads the
        // same bytes from the file again. Slices into the map stay valid.
        let _ = unsafe { self.map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
    }

    /// The whole file as mapped, trailer included.
    pub fn file_bytes(&self) -> &[u8] {
        &self.map
    }

    /// The database bytes (without a trailer).
    pub fn bytes(&self) -> &[u8] {
        &self.map[..self.len]
    }

    /// Page `id`, with its overflow pages, bounds-checked.
    fn page(&self, id: u64) -> Result<Page<'_>, BoltError> {
        let size = self.meta.page_size as usize;
        let limit = self.meta.pgid.min((self.len / size) as u64);
        if id < 2 || id >= limit {
            return Err(BoltError::PageOutOfRange { page: id, limit });
        }
        let start = id as usize * size;
        let overflow = page::u32_at(self.bytes(), start + 12).unwrap_or(0) as u64;
        let end_page = id
            .checked_add(overflow)
            .and_then(|p| p.checked_add(1))
            .unwrap_or(u64::MAX);
        if end_page > limit {
            return Err(BoltError::PageOutOfRange {
                page: end_page - 1,
                limit,
            });
        }
        let bytes = &self.bytes()[start..end_page as usize * size];
        let stored_id = page::u64_at(bytes, 0).unwrap_or(u64::MAX);
        if stored_id != id {
            return Err(BoltError::BadPage {
                page: Some(id),
                problem: format!("header says page {stored_id}"),
            });
        }
        Ok(Page { bytes, id: Some(id) })
    }

    /// The root bucket.
    pub fn root(&self) -> Bucket<'_> {
        Bucket::Paged(self.meta.root)
    }

    /// A sub-bucket of `parent` by name, if present.
    pub fn bucket<'a>(&'a self, parent: Bucket<'a>, name: &[u8]) -> Result<Option<Bucket<'a>>, BoltError> {
        let mut found = None;
        let _ = self.for_each(parent, &mut |key, value, flags| {
            if key == name && flags & BUCKET_LEAF != 0 {
                found = Some(value);
                return Ok(ControlFlow::Break(()));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        let Some(value) = found else { return Ok(None) };
        let root = page::u64_at(value, 0).ok_or_else(|| BoltError::BadPage {
            page: None,
            problem: "bucket header shorter than 16 bytes".into(),
        })?;
        Ok(Some(if root == 0 {
            Bucket::Inline(&value[16.min(value.len())..])
        } else {
            Bucket::Paged(root)
        }))
    }

    /// A top-level bucket, or an error naming it.
    pub fn top_bucket(&self, name: &str) -> Result<Bucket<'_>, BoltError> {
        self.bucket(self.root(), name.as_bytes())
            .map_err(|e| e.at(&self.path))?
            .ok_or_else(|| BoltError::NoBucket {
                path: self.path.clone(),
                name: name.to_string(),
            })
    }

    /// Calls `visit(key, value, flags)` for every entry of `bucket`, in key
    /// order, until it breaks; says whether it did.
    pub fn for_each<'a>(
        &'a self,
        bucket: Bucket<'a>,
        visit: &mut dyn FnMut(&'a [u8], &'a [u8], u32) -> Result<ControlFlow<()>, BoltError>,
    ) -> Result<ControlFlow<()>, BoltError> {
        cursor::walk(self, bucket, visit)
    }

    /// Calls `visit(key, value, flags)` for every entry of `bucket`, in key
    /// order.
    pub fn for_all<'a>(
        &'a self,
        bucket: Bucket<'a>,
        visit: &mut dyn FnMut(&'a [u8], &'a [u8], u32) -> Result<(), BoltError>,
    ) -> Result<(), BoltError> {
        self.for_each(bucket, &mut |k, v, flags| {
            visit(k, v, flags).map(|()| ControlFlow::Continue(()))
        })
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 4096;

    /// A file of `pages` pages whose two metas point at `root`; `fill`
    /// writes the other pages.
    fn image(pages: usize, root: u64, fill: impl Fn(&mut [u8])) -> tempfile::NamedTempFile {
        let mut bytes = vec![0u8; pages * PAGE];
        for (m, txid) in [(0usize, 1u64), (PAGE, 2)] {
            bytes[m..m + 8].copy_from_slice(&(m / PAGE).to_le_bytes());
            bytes[m + 8..m + 10].copy_from_slice(&page::META.to_le_bytes());
            let meta = m + HEADER;
            bytes[meta..meta + 4].copy_from_slice(&meta::MAGIC.to_le_bytes());
            bytes[meta + 4..meta + 8].copy_from_slice(&meta::VERSION.to_le_bytes());
            bytes[meta + 8..meta + 12].copy_from_slice(&(PAGE as u32).to_le_bytes());
            bytes[meta + 16..meta + 24].copy_from_slice(&root.to_le_bytes());
            bytes[meta + 40..meta + 48].copy_from_slice(&(pages as u64).to_le_bytes());
            bytes[meta + 48..meta + 56].copy_from_slice(&txid.to_le_bytes());
            let sum = fnv1a64(&bytes[meta..meta + 56]);
            bytes[meta + 56..meta + 64].copy_from_slice(&sum.to_le_bytes());
        }
        fill(&mut bytes);
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &bytes).unwrap();
        file
    }

    fn branch_to(bytes: &mut [u8], page_id: usize, children: &[u64]) {
        let p = page_id * PAGE;
        bytes[p..p + 8].copy_from_slice(&(page_id as u64).to_le_bytes());
        bytes[p + 8..p + 10].copy_from_slice(&page::BRANCH.to_le_bytes());
        bytes[p + 10..p + 12].copy_from_slice(&(children.len() as u16).to_le_bytes());
        for (i, child) in children.iter().enumerate() {
            let e = p + HEADER + i * 16;
            bytes[e..e + 4].copy_from_slice(&0u32.to_le_bytes());
            bytes[e + 8..e + 16].copy_from_slice(&child.to_le_bytes());
        }
    }

    fn walk_err(file: &tempfile::NamedTempFile) -> BoltError {
        let db = BoltDb::open(file.path()).unwrap();
        db.for_each(db.root(), &mut |_, _, _| Ok(ControlFlow::Continue(())))
            .unwrap_err()
    }

    #[test]
    fn a_branch_pointing_at_itself_is_a_cycle() {
        let file = image(3, 2, |b| branch_to(b, 2, &[2]));
        assert!(matches!(walk_err(&file), BoltError::Cycle { page: 2 }));
    }

    #[test]
    fn a_child_past_the_high_water_mark_is_out_of_range() {
        let file = image(3, 2, |b| branch_to(b, 2, &[7]));
        assert!(matches!(
            walk_err(&file),
            BoltError::PageOutOfRange { page: 7, limit: 3 }
        ));
    }

    #[test]
    fn the_newer_valid_meta_wins_and_a_broken_one_falls_back() {
        let file = image(3, 2, |_| {});
        assert_eq!(BoltDb::open(file.path()).unwrap().meta().txid, 2);
        let broken = image(3, 2, |b| b[PAGE + HEADER + 48] ^= 1);
        assert_eq!(BoltDb::open(broken.path()).unwrap().meta().txid, 1);
    }

    #[test]
    fn a_snapshot_trailer_is_verified() {
        let file = image(3, 2, |_| {});
        let mut bytes = std::fs::read(file.path()).unwrap();
        let digest = Sha256::digest(&bytes);
        bytes.extend_from_slice(&digest);
        std::fs::write(file.path(), &bytes).unwrap();
        assert!(BoltDb::open(file.path()).unwrap().had_trailer);
        bytes[100] ^= 1;
        std::fs::write(file.path(), &bytes).unwrap();
        assert!(matches!(
            BoltDb::open(file.path()),
            Err(BoltError::BadTrailer { .. })
        ));
    }
}
