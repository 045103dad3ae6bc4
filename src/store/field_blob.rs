//! The byte layout of `semantic_values.fields`: for each hashed field, its
//! interned path id as a LEB128 varint, then its 16-byte hash. The writer
//! and the reader live here side by side.

use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use std::collections::{BTreeMap, HashMap};

/// Appends `n` as a LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn read_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

/// Encodes `(path id, hash)` pairs.
pub(super) fn encode<'h>(fields: impl IntoIterator<Item = (i64, &'h [u8; FIELD_HASH_LEN])>) -> Vec<u8> {
    let mut out = Vec::new();
    for (id, hash) in fields {
        put_varint(&mut out, id as u64);
        out.extend_from_slice(hash);
    }
    out
}

/// A fields blob that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("field-hash blob is damaged at byte {offset} of {len}")]
pub struct Damaged {
    offset: usize,
    len: usize,
}

/// Decodes a blob into field path → hash, naming paths by `paths` (ids no
/// longer interned are left out).
pub(super) fn decode(
    blob: &[u8],
    paths: &HashMap<i64, FieldPath>,
) -> Result<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>, Damaged> {
    let mut out = BTreeMap::new();
    let mut pos = 0;
    while pos < blob.len() {
        let damaged = Damaged {
            offset: pos,
            len: blob.len(),
        };
        let id = read_varint(blob, &mut pos).ok_or(damaged)?;
        let hash: [u8; FIELD_HASH_LEN] = blob
            .get(pos..pos + FIELD_HASH_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or(Damaged {
                offset: pos,
                len: blob.len(),
            })?;
        pos += FIELD_HASH_LEN;
        if let Some(path) = paths.get(&(id as i64)) {
            out.insert(path.clone(), hash);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_a_cut_blob() {
        let a = [1u8; FIELD_HASH_LEN];
        let b = [2u8; FIELD_HASH_LEN];
        let blob = encode([(3, &a), (300, &b)]);
        let paths = HashMap::from([
            (3, FieldPath::field("spec")),
            (300, FieldPath::fields(["data", "x"])),
        ]);
        let decoded = decode(&blob, &paths).unwrap();
        assert_eq!(decoded.len(), 2);
        assert_eq!((decoded["spec"], decoded["data.x"]), (a, b));
        assert!(decode(&blob[..blob.len() - 1], &paths).is_err());
        assert!(decode(&[0x80], &paths).is_err());
    }
}
