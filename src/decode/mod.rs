//! Decoding: a raw value as kube-apiserver stored it → the Kubernetes JSON
//! object it holds, with its encoding and anything the decoder could not
//! name.

mod cbor;
pub mod encode;
pub mod envelope;
mod gotime;
pub mod key;
mod protobuf;
pub mod schema;
mod wire;

pub use envelope::{Encoding, EncryptedInfo};
pub use key::{parse_key, ParsedKey};
pub use schema::Resolution;

use serde::Serialize;
use serde_json::{Map, Value};

/// A decoded object and how it was stored.
#[derive(Clone, Debug, Serialize)]
pub struct Decoded {
    pub encoding: Encoding,
    /// Legacy values wrapped in base64 before the real encoding.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub base64_wrapped: bool,
    pub api_version: String,
    pub kind: String,
    /// Protobuf message used, for protobuf values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// How the protobuf message was chosen; `None` for other encodings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    /// Paths of fields kept by field number because the schema lacks them.
    pub unknown_fields: Vec<String>,
    /// Values shown in a fallback form.
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub object: Value,
}

/// What a stored value turned out to be.
#[derive(Clone, Debug)]
pub enum Outcome {
    Decoded(Decoded),
    /// Encrypted at rest; the prefix names the provider and key.
    Encrypted(EncryptedInfo),
}

/// A value that could not be decoded, and exactly why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{reason}")]
pub struct Undecodable {
    /// The encoding, when the envelope was recognised.
    pub encoding: Option<Encoding>,
    pub reason: String,
    /// Byte offset of the fault within the stored value, when known.
    pub offset: Option<usize>,
}

impl From<envelope::EnvelopeError> for Undecodable {
    fn from(e: envelope::EnvelopeError) -> Self {
        Undecodable {
            encoding: e.encoding,
            reason: e.reason,
            offset: e.offset,
        }
    }
}

/// Decodes one stored value.
pub fn decode_value(value: &[u8]) -> Result<Outcome, Undecodable> {
    decode_inner(value, false)
}

fn decode_inner(value: &[u8], base64_wrapped: bool) -> Result<Outcome, Undecodable> {
    let textual = |encoding: Encoding, object: Result<Value, String>| -> Result<Outcome, Undecodable> {
        let object = object.map_err(|reason| Undecodable {
            encoding: Some(encoding),
            reason,
            offset: None,
        })?;
        let Value::Object(map) = &object else {
            return Err(Undecodable {
                encoding: Some(encoding),
                reason: format!("{} value is not an object", encoding.as_str()),
                offset: None,
            });
        };
        let text = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        Ok(Outcome::Decoded(Decoded {
            encoding,
            base64_wrapped,
            api_version: text("apiVersion"),
            kind: text("kind"),
            message: None,
            resolution: None,
            unknown_fields: Vec::new(),
            warnings: Vec::new(),
            object,
        }))
    };
    match envelope::detect(value)? {
        envelope::Envelope::Encrypted(info) => Ok(Outcome::Encrypted(info)),
        envelope::Envelope::Json(bytes) => textual(
            Encoding::Json,
            serde_json::from_slice(bytes).map_err(|e| format!("JSON does not parse: {e}")),
        ),
        envelope::Envelope::Yaml(text) => textual(
            Encoding::Yaml,
            serde_yaml_ng::from_str(text).map_err(|e| format!("YAML does not parse: {e}")),
        ),
        envelope::Envelope::Cbor(bytes) => textual(Encoding::Cbor, cbor::to_json(bytes)),
        envelope::Envelope::Base64(inner) => decode_inner(&inner, true),
        envelope::Envelope::Protobuf {
            api_version,
            kind,
            raw,
            raw_offset,
            trailing_newline,
        } => {
            let s = schema::schema();
            let (desc, resolution) = s.resolve(&api_version, &kind);
            let json = protobuf::to_json(s, &desc, raw, raw_offset).map_err(|e| Undecodable {
                encoding: Some(Encoding::Protobuf),
                reason: format!("{api_version} {kind}: {e}"),
                offset: e.offset,
            })?;
            let mut warnings = json.warnings;
            if trailing_newline {
                warnings.insert(
                    0,
                    "ignored a newline after the protobuf envelope (as `etcdctl get` adds)".into(),
                );
            }
            let mut object = Map::new();
            object.insert("apiVersion".into(), Value::String(api_version.clone()));
            object.insert("kind".into(), Value::String(kind.clone()));
            object.extend(json.object);
            Ok(Outcome::Decoded(Decoded {
                encoding: Encoding::Protobuf,
                base64_wrapped,
                api_version,
                kind,
                message: Some(desc.full_name().to_string()),
                resolution: Some(resolution),
                unknown_fields: json.unknown_fields,
                warnings,
                object: Value::Object(object),
            }))
        }
    }
}
