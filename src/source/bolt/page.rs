//! A bbolt page over the memory map: its 16-byte header and its elements.
//!
//! Layout (host byte order, little-endian in practice): `id u64 | flags u16 |
//! count u16 | overflow u32`, then `count` 16-byte elements. A branch
//! element is `pos u32 | ksize u32 | pgid u64`; a leaf element is
//! `flags u32 | pos u32 | ksize u32 | vsize u32`. `pos` counts from the
//! element's own address; a leaf's value follows its key. Every read here is
//! bounds-checked against the page's bytes.

use super::BoltError;

pub const HEADER: usize = 16;
const ELEMENT: usize = 16;

pub const BRANCH: u16 = 0x01;
pub const LEAF: u16 = 0x02;
pub const META: u16 = 0x04;

/// A leaf entry whose value is a sub-bucket.
pub const BUCKET_LEAF: u32 = 0x01;

pub fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// One page: its bytes (header included, overflow pages too) and where it
/// came from, for error messages.
pub struct Page<'a> {
    pub bytes: &'a [u8],
    /// The page id, or `None` for a bucket stored inline in a value.
    pub id: Option<u64>,
}

/// A leaf element.
pub struct LeafElement<'a> {
    pub flags: u32,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

impl<'a> Page<'a> {
    fn bad(&self, what: impl Into<String>) -> BoltError {
        BoltError::BadPage {
            page: self.id,
            problem: what.into(),
        }
    }

    pub fn flags(&self) -> u16 {
        u16_at(self.bytes, 8).unwrap_or(0)
    }

    pub fn count(&self) -> usize {
        usize::from(u16_at(self.bytes, 10).unwrap_or(0))
    }

    fn element(&self, i: usize) -> Result<usize, BoltError> {
        let at = HEADER + i * ELEMENT;
        if at + ELEMENT > self.bytes.len() {
            return Err(self.bad(format!("element {i} lies past the page end")));
        }
        Ok(at)
    }

    fn slice(&self, start: usize, len: usize, what: &str) -> Result<&'a [u8], BoltError> {
        start
            .checked_add(len)
            .and_then(|end| self.bytes.get(start..end))
            .ok_or_else(|| {
                self.bad(format!(
                    "{what} at offset {start} of {len} bytes lies past the page end"
                ))
            })
    }

    /// Branch element `i`: its first key and child page id.
    pub fn branch(&self, i: usize) -> Result<(&'a [u8], u64), BoltError> {
        let at = self.element(i)?;
        let pos = u32_at(self.bytes, at).expect("element in bounds") as usize;
        let ksize = u32_at(self.bytes, at + 4).expect("element in bounds") as usize;
        let pgid = u64_at(self.bytes, at + 8).expect("element in bounds");
        Ok((self.slice(at + pos, ksize, "branch key")?, pgid))
    }

    /// Leaf element `i`.
    pub fn leaf(&self, i: usize) -> Result<LeafElement<'a>, BoltError> {
        let at = self.element(i)?;
        let flags = u32_at(self.bytes, at).expect("element in bounds");
        let pos = u32_at(self.bytes, at + 4).expect("element in bounds") as usize;
        let ksize = u32_at(self.bytes, at + 8).expect("element in bounds") as usize;
        let vsize = u32_at(self.bytes, at + 12).expect("element in bounds") as usize;
        let key = self.slice(at + pos, ksize, "leaf key")?;
        let value = self.slice(at + pos + ksize, vsize, "leaf value")?;
        Ok(LeafElement { flags, key, value })
    }
}
