//! Bytes as lowercase hex, the one way hashes and raw bytes are shown.

use std::fmt::Write;

/// Every byte as two lowercase hex digits.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        write!(out, "{b:02x}").expect("writing to a String");
    }
    out
}

/// The first six bytes of a hash, enough to tell values apart in a line.
pub fn short(hash: &[u8]) -> String {
    hex(&hash[..hash.len().min(6)])
}

/// Bytes from [`hex`]'s form; `None` if `text` is not an even run of hex
/// digits.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_shortens() {
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
        assert_eq!(unhex("00ab10"), Some(vec![0, 0xab, 0x10]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(short(&[1, 2, 3, 4, 5, 6, 7, 8]), "010203040506");
        assert_eq!(short(&[0xff]), "ff");
    }
}
