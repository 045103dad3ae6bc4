//! bbolt meta pages 0 and 1: magic, version, page size, root bucket, high
//! water mark, txid and an FNV-1a checksum over the 56 bytes before it.

use super::page::{u32_at, u64_at, HEADER, META};

pub const MAGIC: u32 = 0xED0C_DAED;
pub const VERSION: u32 = 2;

/// A validated meta page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub page_size: u32,
    /// Page id of the root bucket's root page.
    pub root: u64,
    /// High water mark: pages at or beyond it are never in use.
    pub pgid: u64,
    pub txid: u64,
}

/// FNV-1a, 64 bits.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Parses the meta page that starts `page`; `Err` says why it is not valid.
pub fn parse(page: &[u8]) -> Result<Meta, String> {
    let m = HEADER;
    let field = |off: usize| u64_at(page, m + off).ok_or("file too short for a meta page");
    let magic = u32_at(page, m).ok_or("file too short for a meta page")?;
    if magic != MAGIC {
        return Err(format!("magic {magic:#010x}, expected {MAGIC:#010x}"));
    }
    let flags = super::page::u16_at(page, 8).unwrap_or(0);
    if flags & META == 0 {
        return Err(format!("page flags {flags:#x} do not mark a meta page"));
    }
    let version = u32_at(page, m + 4).ok_or("file too short")?;
    if version != VERSION {
        return Err(format!("format version {version}, expected {VERSION}"));
    }
    let checksum = field(56)?;
    let computed = fnv1a64(&page[m..m + 56]);
    if checksum != computed {
        return Err(format!(
            "checksum {checksum:#018x} does not match {computed:#018x}"
        ));
    }
    let page_size = u32_at(page, m + 8).ok_or("file too short")?;
    if !(512..=1 << 20).contains(&page_size) || !page_size.is_power_of_two() {
        return Err(format!("implausible page size {page_size}"));
    }
    Ok(Meta {
        page_size,
        root: field(16)?,
        pgid: field(40)?,
        txid: field(48)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }
}
