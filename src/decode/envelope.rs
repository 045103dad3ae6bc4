//! Recognises how a stored value is encoded, from its first bytes
//! (reference §2.1): `k8s\0` protobuf, JSON, CBOR, `k8s:enc:` encryption,
//! YAML, or legacy base64-wrapped data.

use super::wire::{Reader, WireValue};
use base64::Engine;
use serde::Serialize;

/// The `k8s\0` magic that starts a protobuf envelope.
pub const PROTOBUF_MAGIC: &[u8] = b"k8s\0";
/// CBOR self-described tag 55799.
pub const CBOR_MAGIC: &[u8] = &[0xd9, 0xd9, 0xf7];
/// Prefix of every value an encryption provider wrote.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// A stored value's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    Protobuf,
    Json,
    Cbor,
    Yaml,
    Encrypted,
}

impl Encoding {
    /// Every encoding.
    pub const ALL: [Encoding; 5] = [
        Encoding::Protobuf,
        Encoding::Json,
        Encoding::Cbor,
        Encoding::Yaml,
        Encoding::Encrypted,
    ];

    /// The encoding [`Encoding::as_str`] names.
    pub fn parse(name: &str) -> Result<Encoding, crate::unknown::UnknownName> {
        crate::unknown::find(&Encoding::ALL, Encoding::as_str, "an encoding", name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Protobuf => "protobuf",
            Encoding::Json => "json",
            Encoding::Cbor => "cbor",
            Encoding::Yaml => "yaml",
            Encoding::Encrypted => "encrypted",
        }
    }
}

/// What an encrypted value's prefix says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EncryptedInfo {
    /// `aescbc`, `aesgcm`, `secretbox`, `kms`, or another provider name.
    pub provider: String,
    /// `v1`, or `v2` for KMS v2.
    pub version: String,
    /// The key name (or KMS provider name) after the version. Key names may
    /// contain `:`, so without the encryption config this is the text up to
    /// the next `:`.
    pub key_name: String,
}

/// The outer layer of a value, before the object inside is decoded.
pub enum Envelope<'a> {
    Protobuf {
        api_version: String,
        kind: String,
        raw: &'a [u8],
        /// Offset of `raw` within the stored value.
        raw_offset: usize,
        /// A newline after the envelope was ignored (`etcdctl get` adds one).
        trailing_newline: bool,
    },
    Json(&'a [u8]),
    Cbor(&'a [u8]),
    Yaml(&'a str),
    Encrypted(EncryptedInfo),
    /// Legacy base64-wrapped storage: decode the inner bytes again.
    Base64(Vec<u8>),
}

/// Why a value's envelope could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct EnvelopeError {
    pub encoding: Option<Encoding>,
    pub reason: String,
    pub offset: Option<usize>,
}

fn fail(encoding: Option<Encoding>, reason: impl Into<String>, offset: Option<usize>) -> EnvelopeError {
    EnvelopeError {
        encoding,
        reason: reason.into(),
        offset,
    }
}

/// Recognises the envelope of `value`.
pub fn detect(value: &[u8]) -> Result<Envelope<'_>, EnvelopeError> {
    if value.is_empty() {
        return Err(fail(None, "empty value", None));
    }
    if let Some(rest) = value.strip_prefix(ENCRYPTED_PREFIX) {
        return encrypted(rest).map(Envelope::Encrypted);
    }
    if let Some(rest) = value.strip_prefix(PROTOBUF_MAGIC) {
        let parsed = protobuf(rest, PROTOBUF_MAGIC.len());
        if parsed.is_err() {
            // `etcdctl get --print-value-only` appends a newline; a 0x0a
            // after a complete envelope cannot start a valid field.
            if let Some(trimmed) = rest.strip_suffix(b"\n") {
                if let Ok(Envelope::Protobuf {
                    api_version,
                    kind,
                    raw,
                    raw_offset,
                    ..
                }) = protobuf(trimmed, PROTOBUF_MAGIC.len())
                {
                    return Ok(Envelope::Protobuf {
                        api_version,
                        kind,
                        raw,
                        raw_offset,
                        trailing_newline: true,
                    });
                }
            }
        }
        return parsed;
    }
    if value.starts_with(CBOR_MAGIC) {
        return Ok(Envelope::Cbor(value));
    }
    let first = value.iter().copied().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'{') {
        return Ok(Envelope::Json(value));
    }
    if let Ok(text) = std::str::from_utf8(value) {
        if looks_like_yaml_object(text) {
            return Ok(Envelope::Yaml(text));
        }
        let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        if let Ok(inner) = base64::engine::general_purpose::STANDARD.decode(compact.as_bytes()) {
            if inner.starts_with(PROTOBUF_MAGIC) || inner.first() == Some(&b'{') {
                return Ok(Envelope::Base64(inner));
            }
        }
    }
    let head: Vec<String> = value.iter().take(8).map(|b| crate::hex::hex(&[*b])).collect();
    Err(fail(
        None,
        format!(
            "unrecognised encoding: value starts with bytes {} (not k8s\\0 protobuf, JSON, CBOR, YAML or k8s:enc:)",
            head.join(" ")
        ),
        Some(0),
    ))
}

/// YAML as the apiserver writes it: a mapping with `apiVersion` or `kind`
/// at the top level.
fn looks_like_yaml_object(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with("apiVersion:") || l.starts_with("kind:"))
}

/// An encrypted value's provider, version and the bytes after them
/// (`k8s:enc:<provider>:<version>:` + rest); `None` for other values.
pub fn encrypted_parts(value: &[u8]) -> Option<(&str, &str, &[u8])> {
    let rest = value.strip_prefix(ENCRYPTED_PREFIX)?;
    let mut parts = rest.splitn(3, |&b| b == b':');
    let provider = std::str::from_utf8(parts.next()?).ok()?;
    let version = std::str::from_utf8(parts.next()?).ok()?;
    let rest = parts.next()?;
    Some((provider, version, rest))
}

fn encrypted(rest: &[u8]) -> Result<EncryptedInfo, EnvelopeError> {
    let mut parts = rest.splitn(4, |&b| b == b':');
    let mut next = |what: &str| -> Result<String, EnvelopeError> {
        let part = parts.next().filter(|p| !p.is_empty()).ok_or_else(|| {
            fail(
                Some(Encoding::Encrypted),
                format!("encrypted value without a {what} after k8s:enc:"),
                None,
            )
        })?;
        String::from_utf8(part.to_vec()).map_err(|_| {
            fail(
                Some(Encoding::Encrypted),
                format!("encrypted value: {what} is not text"),
                None,
            )
        })
    };
    let provider = next("provider")?;
    let version = next("version")?;
    let key_name = next("key name")?;
    Ok(EncryptedInfo {
        provider,
        version,
        key_name,
    })
}

/// Reads `runtime.Unknown` (typeMeta 1 {apiVersion 1, kind 2}, raw 2,
/// contentEncoding 3, contentType 4); `base` is its offset in the value.
fn protobuf(buf: &[u8], base: usize) -> Result<Envelope<'_>, EnvelopeError> {
    let bad = |e: super::wire::WireError| {
        fail(
            Some(Encoding::Protobuf),
            format!("runtime.Unknown envelope: {e}"),
            Some(e.offset),
        )
    };
    let mut r = Reader::new(buf, base);
    let (mut api_version, mut kind, mut raw, mut raw_offset) =
        (String::new(), String::new(), &buf[..0], base);
    while let Some(f) = r.next_field().map_err(bad)? {
        let WireValue::Bytes(bytes) = f.value else {
            continue;
        };
        let at = r.offset() - bytes.len();
        match f.number {
            1 => {
                let mut tm = Reader::new(bytes, at);
                while let Some(t) = tm.next_field().map_err(bad)? {
                    if let WireValue::Bytes(s) = t.value {
                        let text = String::from_utf8_lossy(s).into_owned();
                        match t.number {
                            1 => api_version = text,
                            2 => kind = text,
                            _ => {}
                        }
                    }
                }
            }
            2 => {
                raw = bytes;
                raw_offset = at;
            }
            3 if !bytes.is_empty() => {
                return Err(fail(
                    Some(Encoding::Protobuf),
                    format!(
                        "runtime.Unknown contentEncoding {:?} is not supported",
                        String::from_utf8_lossy(bytes)
                    ),
                    Some(at),
                ))
            }
            _ => {}
        }
    }
    if kind.is_empty() {
        return Err(fail(
            Some(Encoding::Protobuf),
            "runtime.Unknown envelope has no kind",
            Some(base),
        ));
    }
    Ok(Envelope::Protobuf {
        api_version,
        kind,
        raw,
        raw_offset,
        trailing_newline: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encrypted_prefix_is_reported() {
        let Envelope::Encrypted(info) = detect(b"k8s:enc:aescbc:v1:key1:\x01\x02").unwrap() else {
            panic!()
        };
        assert_eq!(
            info,
            EncryptedInfo {
                provider: "aescbc".into(),
                version: "v1".into(),
                key_name: "key1".into()
            }
        );
    }

    #[test]
    fn garbage_names_its_bytes() {
        let e = detect(&[0x01, 0x02, 0xff]).err().unwrap();
        assert!(e.reason.contains("01 02 ff"), "{e}");
    }

    #[test]
    fn truncated_envelope_is_an_error() {
        let e = detect(b"k8s\0\x0a\x10\x0a\x02v1").err().unwrap();
        assert_eq!(e.encoding, Some(Encoding::Protobuf));
        assert_eq!(e.offset, Some(4));
    }
}
