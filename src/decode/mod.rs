//! Decoding: a raw value as kube-apiserver stored it → the Kubernetes JSON
//! object it holds, with its encoding and anything the decoder could not
//! name.

mod cbor;
#[cfg(test)]
#[cfg(test)]
pub(crate) mod corpus_check;
pub mod encode;
pub mod envelope;
pub mod gotime;
pub mod key;
pub mod names;
mod plan;
mod protobuf;
pub mod protos;
pub mod schema;
mod special;
mod wire;

pub use envelope::{Encoding, EncryptedInfo};
pub use key::{parse_key, ParsedKey};
pub use schema::Resolution;

use crate::json_sink::{send_value, JsonSink, TreeBuilder};
use serde::Serialize;
use serde_json::{Map, Value};

/// A decoded object and how it was stored; `object` is the object itself,
/// or `()` when it was sent into a [`JsonSink`].
#[derive(Clone, Debug, Serialize)]
pub struct Decoded<O = Value> {
    pub encoding: Encoding,
    /// Legacy values wrapped in base64 before the real encoding.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub base64_wrapped: bool,
    pub api_version: String,
    pub kind: String,
    /// Protobuf message used, for protobuf values; `None` for one decoded
    /// without a schema ([`Resolution::Schemaless`]).
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
    pub object: O,
}

impl Decoded<()> {
    /// The same, holding `object`.
    pub fn with<O>(self, object: O) -> Decoded<O> {
        Decoded {
            encoding: self.encoding,
            base64_wrapped: self.base64_wrapped,
            api_version: self.api_version,
            kind: self.kind,
            message: self.message,
            resolution: self.resolution,
            unknown_fields: self.unknown_fields,
            warnings: self.warnings,
            object,
        }
    }
}

/// What a stored value turned out to be.
#[derive(Clone, Debug)]
pub enum Outcome<O = Value> {
    Decoded(Decoded<O>),
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
    let mut tree = TreeBuilder::default();
    Ok(match decode_into(value, &mut tree)? {
        Outcome::Decoded(d) => Outcome::Decoded(d.with(tree.finish())),
        Outcome::Encrypted(info) => Outcome::Encrypted(info),
    })
}

/// Decodes one stored value into `sink`, which receives the object
/// [`decode_value`] gives, member by member in the order it asks for.
/// After an error `sink` holds part of a value.
pub fn decode_into<S: JsonSink>(value: &[u8], sink: &mut S) -> Result<Outcome<()>, Undecodable> {
    decode_inner(value, false, sink)
}

fn decode_inner<S: JsonSink>(
    value: &[u8],
    base64_wrapped: bool,
    sink: &mut S,
) -> Result<Outcome<()>, Undecodable> {
    let mut textual =
        |encoding: Encoding, object: Result<Value, String>| -> Result<Outcome<()>, Undecodable> {
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
            let decoded = Decoded {
                encoding,
                base64_wrapped,
                api_version: text("apiVersion"),
                kind: text("kind"),
                message: None,
                resolution: None,
                unknown_fields: Vec::new(),
                warnings: Vec::new(),
                object: (),
            };
            send_value(&object, sink);
            Ok(Outcome::Decoded(decoded))
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
        envelope::Envelope::Base64(inner) => decode_inner(&inner, true, sink),
        envelope::Envelope::Protobuf {
            api_version,
            kind,
            raw,
            raw_offset,
            trailing_newline,
        } => {
            let s = schema::schema();
            let (desc, resolution) = s.resolve(&api_version, &kind);
            let envelope = [("apiVersion", api_version.as_str()), ("kind", kind.as_str())];
            let (report, message, resolution) = match protobuf::stream(
                s, &desc, raw, raw_offset, &envelope, sink,
            ) {
                Ok(report) => (report, Some(desc.full_name().to_string()), resolution),
                // A kind the schema lacks need not keep an ObjectMeta in
                // field 1 (AdmissionReview holds its request there): when
                // the bytes are still protobuf, keep every field by number.
                Err(e) => {
                    let schemaless = match resolution {
                        Resolution::Unknown => protobuf::by_number(raw),
                        _ => None,
                    };
                    let Some((fields, unknown_fields)) = schemaless else {
                        return Err(Undecodable {
                            encoding: Some(Encoding::Protobuf),
                            reason: format!("{api_version} {kind}: {e}"),
                            offset: e.offset,
                        });
                    };
                    let mut object = Map::new();
                    object.insert("apiVersion".into(), Value::String(api_version.clone()));
                    object.insert("kind".into(), Value::String(kind.clone()));
                    object.extend(fields);
                    sink.clear();
                    send_value(&Value::Object(object), sink);
                    let warning = format!(
                        "{api_version} {kind}: field 1 is not an ObjectMeta ({}); decoded without a schema, every field by number",
                        e.problem
                    );
                    let report = protobuf::Report {
                        unknown_fields,
                        warnings: vec![warning],
                    };
                    (report, None, Resolution::Schemaless)
                }
            };
            let mut warnings = report.warnings;
            if trailing_newline {
                warnings.insert(
                    0,
                    "ignored a newline after the protobuf envelope (as `etcdctl get` adds)".into(),
                );
            }
            Ok(Outcome::Decoded(Decoded {
                encoding: Encoding::Protobuf,
                base64_wrapped,
                api_version,
                kind,
                message,
                resolution: Some(resolution),
                unknown_fields: report.unknown_fields,
                warnings,
                object: (),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::protobuf::tests::{delimited, varint};
    use super::*;
    use serde_json::json;

    /// Field `number` as a varint.
    fn varint_field(number: usize, value: usize) -> Vec<u8> {
        let mut out = Vec::new();
        varint(number << 3, &mut out);
        varint(value, &mut out);
        out
    }

    /// `k8s\0` + runtime.Unknown{typeMeta{apiVersion, kind}, raw}, built by hand.
    fn stored(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [
            delimited(1, api_version.as_bytes()),
            delimited(2, kind.as_bytes()),
        ]
        .concat();
        [
            envelope::PROTOBUF_MAGIC.to_vec(),
            delimited(1, &type_meta),
            delimited(2, raw),
            delimited(3, b""),
            delimited(4, b""),
        ]
        .concat()
    }

    fn decoded(value: &[u8]) -> Decoded {
        match decode_value(value) {
            Ok(Outcome::Decoded(d)) => d,
            Ok(Outcome::Encrypted(_)) => panic!("not encrypted"),
            Err(e) => panic!("undecodable: {e}"),
        }
    }

    #[test]
    fn unknown_kind_whose_field_1_is_a_varint_decodes_by_number() {
        let raw = [varint_field(1, 42), delimited(2, b"hello")].concat();
        let d = decoded(&stored("example.com/v1", "Widget", &raw));
        assert_eq!(
            d.object,
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "#1": 42, "#2": "hello"})
        );
        assert_eq!(
            (d.api_version.as_str(), d.kind.as_str()),
            ("example.com/v1", "Widget")
        );
        assert_eq!(d.resolution, Some(Resolution::Schemaless));
        assert_eq!(d.message, None);
        assert_eq!(d.unknown_fields, ["#1", "#2"]);
        assert!(
            d.warnings.iter().any(|w| w.contains("not an ObjectMeta")),
            "{:?}",
            d.warnings
        );
    }

    #[test]
    fn unknown_kind_whose_field_1_is_not_object_meta_decodes_by_number() {
        // AdmissionReview-shaped: field 1 holds a request whose field 7 is a
        // string (ObjectMeta's 7 is the int64 generation) and whose field 8
        // is a message starting with a string (ObjectMeta's 8 is a Time,
        // whose field 1 is an int64).
        let user = [delimited(1, b"alice"), delimited(3, b"system:authenticated")].concat();
        let request = [
            delimited(1, b"705ab4f5-6393-11e8-b7cc-42010a800002"),
            delimited(
                2,
                &[
                    delimited(1, b"apps"),
                    delimited(2, b"v1"),
                    delimited(3, b"Deployment"),
                ]
                .concat(),
            ),
            delimited(5, b"web"),
            delimited(7, b"CREATE"),
            delimited(8, &user),
            varint_field(11, 1),
        ]
        .concat();
        let raw = [delimited(1, &request), delimited(2, &varint_field(2, 1))].concat();
        let d = decoded(&stored("admission.k8s.io/v1", "AdmissionReview", &raw));
        assert_eq!(
            d.object,
            json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "#1": {
                    "#1": "705ab4f5-6393-11e8-b7cc-42010a800002",
                    "#2": {"#1": "apps", "#2": "v1", "#3": "Deployment"},
                    "#5": "web",
                    "#7": "CREATE",
                    "#8": {"#1": "alice", "#3": "system:authenticated"},
                    "#11": 1
                },
                "#2": {"#2": 1}
            })
        );
        assert_eq!(d.resolution, Some(Resolution::Schemaless));
        assert_eq!(d.message, None);
        assert_eq!(d.unknown_fields, ["#1", "#2"]);

        // Field 1 holds bytes that are not a message at all: kept as base64.
        let d = decoded(&stored("example.com/v1", "Widget", &delimited(1, &[0xff, 0x01])));
        assert_eq!(
            d.object,
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "#1": "/wE="})
        );
        assert_eq!(d.resolution, Some(Resolution::Schemaless));
    }

    #[test]
    fn unknown_kind_with_object_meta_keeps_metadata_by_name() {
        let meta = [delimited(1, b"w1"), delimited(3, b"prod"), varint_field(7, 3)].concat();
        let raw = [delimited(1, &meta), delimited(2, &delimited(1, b"blue"))].concat();
        let d = decoded(&stored("example.com/v1", "Widget", &raw));
        assert_eq!(
            d.object,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                   "metadata": {"name": "w1", "namespace": "prod", "generation": 3},
                   "#2": {"#1": "blue"}})
        );
        assert_eq!(d.resolution, Some(Resolution::Unknown));
        assert_eq!(d.message.as_deref(), Some("etcd_inspector.UnknownObject"));
        assert_eq!(d.unknown_fields, ["#2"]);
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    }

    #[test]
    fn unknown_kind_with_broken_wire_format_stays_undecodable() {
        // Field 2 claims 32 bytes where 2 remain.
        let raw = [varint_field(1, 1), vec![0x12, 0x20, 0x01, 0x02]].concat();
        let e = decode_value(&stored("example.com/v1", "Widget", &raw)).expect_err("undecodable");
        assert_eq!(e.encoding, Some(Encoding::Protobuf));
        assert!(e.reason.contains("runs past the end"), "{e}");
        // The raw object starts at byte 32; field 2's key is its third byte.
        assert_eq!(e.offset, Some(34), "{e:?}");
        // A known kind whose field has the wrong wire type is still an error.
        let e = decode_value(&stored("v1", "Pod", &varint_field(1, 1))).expect_err("undecodable");
        assert!(e.reason.contains("v1 Pod"), "{e}");
    }
}
