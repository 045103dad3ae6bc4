//! CBOR (custom resources with `CBORServingAndStorage`) → JSON.
//!
//! Kubernetes encodes strings as CBOR byte strings and wraps the value in the
//! self-described tag 55799; both are undone here.

use base64::Engine;
use ciborium::Value as Cbor;
use serde_json::{Map, Value};

/// Parses a CBOR value into JSON.
pub fn to_json(bytes: &[u8]) -> Result<Value, String> {
    let mut reader = bytes;
    let v: Cbor = ciborium::from_reader(&mut reader).map_err(|e| format!("CBOR does not parse: {e}"))?;
    if !reader.is_empty() {
        let at = bytes.len() - reader.len();
        return Err(format!(
            "CBOR has {} trailing bytes after the value at byte offset {at}",
            reader.len()
        ));
    }
    convert(v)
}

fn text(bytes: Vec<u8>) -> Value {
    match String::from_utf8(bytes) {
        Ok(s) => Value::String(s),
        Err(e) => Value::String(base64::engine::general_purpose::STANDARD.encode(e.into_bytes())),
    }
}

fn convert(v: Cbor) -> Result<Value, String> {
    Ok(match v {
        Cbor::Null => Value::Null,
        Cbor::Bool(b) => Value::Bool(b),
        Cbor::Integer(i) => {
            let n = i128::from(i);
            if let Ok(n) = i64::try_from(n) {
                Value::from(n)
            } else if let Ok(n) = u64::try_from(n) {
                Value::from(n)
            } else {
                return Err(format!("CBOR integer {n} is out of JSON range"));
            }
        }
        Cbor::Float(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .ok_or("CBOR float is NaN or infinite")?,
        Cbor::Text(s) => Value::String(s),
        Cbor::Bytes(b) => text(b),
        Cbor::Array(items) => Value::Array(items.into_iter().map(convert).collect::<Result<_, _>>()?),
        Cbor::Map(entries) => {
            let mut out = Map::new();
            for (k, v) in entries {
                let key = match k {
                    Cbor::Text(s) => s,
                    Cbor::Bytes(b) => String::from_utf8(b).map_err(|_| "CBOR map key is not UTF-8")?,
                    other => return Err(format!("CBOR map key {other:?} is not a string")),
                };
                out.insert(key, convert(v)?);
            }
            Value::Object(out)
        }
        Cbor::Tag(_, inner) => convert(*inner)?,
        other => return Err(format!("unsupported CBOR value {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_string_keys_and_self_described_tag() {
        // 55799({h'6b696e64': h'466f6f'}) = {"kind": "Foo"}
        let bytes = [
            0xd9, 0xd9, 0xf7, 0xa1, 0x44, b'k', b'i', b'n', b'd', 0x43, b'F', b'o', b'o',
        ];
        assert_eq!(to_json(&bytes).unwrap(), serde_json::json!({"kind": "Foo"}));
    }

    #[test]
    fn truncated_cbor_is_an_error() {
        assert!(to_json(&[0xd9, 0xd9, 0xf7, 0xa1, 0x44, b'k']).is_err());
    }
}
