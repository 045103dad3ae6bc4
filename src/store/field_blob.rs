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
pub(crate) fn encode<'h>(fields: impl IntoIterator<Item = (i64, &'h [u8; FIELD_HASH_LEN])>) -> Vec<u8> {
    let mut out = Vec::new();
    for (id, hash) in fields {
        put_varint(&mut out, id as u64);
        out.extend_from_slice(hash);
    }
    out
}

/// A fields blob that does not parse.
#[derive(Clone, Copy, Debug, thiserror::Error)]
#[error("field-hash blob is damaged at byte {offset} of {len}")]
pub struct Damaged {
    offset: usize,
    len: usize,
}

/// The interned field paths by id, each with its rank in path order, so
/// that a blob decodes into a map by sorting integers rather than by
/// comparing paths (a fully filled Pod has hundreds of fields, and each
/// revision is decoded when it is classified and again when it is read).
#[derive(Debug, Default)]
pub struct PathNames {
    by_id: HashMap<i64, (u32, FieldPath)>,
}

impl PathNames {
    pub fn new(paths: impl IntoIterator<Item = (i64, FieldPath)>) -> PathNames {
        let mut all: Vec<(i64, FieldPath)> = paths.into_iter().collect();
        all.sort_by(|a, b| a.1.cmp(&b.1));
        let by_id = all
            .into_iter()
            .enumerate()
            .map(|(rank, (id, path))| (id, (u32::try_from(rank).expect("fewer than 2^32 paths"), path)))
            .collect();
        PathNames { by_id }
    }
}

/// Decodes a blob into field path → hash, naming paths by `paths` (ids no
/// longer interned are left out; of an id repeated, the last hash counts).
pub(super) fn decode(
    blob: &[u8],
    paths: &PathNames,
) -> Result<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>, Damaged> {
    let mut found: Vec<(u32, &FieldPath, [u8; FIELD_HASH_LEN])> =
        Vec::with_capacity(blob.len() / (FIELD_HASH_LEN + 1));
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
        if let Some((rank, path)) = paths.by_id.get(&(id as i64)) {
            found.push((*rank, path, hash));
        }
    }
    // Stable, so that of a repeated id the last stays last; the map then
    // keeps it and builds from the sorted run without comparing paths
    // beyond neighbours.
    found.sort_by_key(|(rank, _, _)| *rank);
    Ok(found
        .into_iter()
        .map(|(_, path, hash)| (path.clone(), hash))
        .collect())
}

/// The blob with each path id `id` replaced by `map(id)`, in the same
/// order (ids `map` does not know are damage).
pub(super) fn remap(blob: &[u8], map: &dyn Fn(i64) -> Option<i64>) -> Result<Vec<u8>, Damaged> {
    let mut out = Vec::with_capacity(blob.len() + 8);
    let mut pos = 0;
    while pos < blob.len() {
        let damaged = Damaged {
            offset: pos,
            len: blob.len(),
        };
        let id = read_varint(blob, &mut pos).ok_or(damaged)?;
        let hash = blob.get(pos..pos + FIELD_HASH_LEN).ok_or(damaged)?;
        let to = map(id as i64).ok_or(damaged)?;
        put_varint(&mut out, to as u64);
        out.extend_from_slice(hash);
        pos += FIELD_HASH_LEN;
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
        let paths = PathNames::new([
            (3, FieldPath::field("spec")),
            (300, FieldPath::fields(["data", "x"])),
            (7, FieldPath::fields(["app.kubernetes.io/name"])),
        ]);
        let decoded = decode(&blob, &paths).unwrap();
        assert_eq!(decoded.len(), 2);
        assert_eq!((decoded["spec"], decoded["data.x"]), (a, b));
        let repeated = encode([(300, &a), (7, &a), (3, &b), (300, &b)]);
        let decoded = decode(&repeated, &paths).unwrap();
        assert_eq!(
            decoded.into_iter().collect::<Vec<_>>(),
            vec![
                (FieldPath::fields(["app.kubernetes.io/name"]), a),
                (FieldPath::fields(["data", "x"]), b),
                (FieldPath::field("spec"), b),
            ],
            "in path order, the last of a repeated id kept"
        );
        assert!(decode(&blob[..blob.len() - 1], &paths).is_err());
        assert!(decode(&[0x80], &paths).is_err());
    }
}
