//! `etcd-inspector decode`: one raw stored value → the object it holds.

use super::Status;
use crate::canon::sensitive::{is_secret, redact_secret};
use crate::cli::{DecodeArgs, Format, ViewArgs};
use crate::decode::key::SpecialKey;
use crate::decode::{self, Outcome};
use anyhow::{bail, Context, Result};
use std::io::{Read, Write};

/// Exit status when the value is encrypted and no key was given.
pub const EXIT_ENCRYPTED: u8 = 3;

pub fn run(args: &DecodeArgs) -> Result<Status> {
    let (label, value) = read_input(args.input.as_deref())?;
    show(&label, &value, args.key.as_deref(), None, &args.view)
}

/// Decodes `value` (stored under `key`, at `mod_revision` when known) and
/// prints it as `view` asks; shared by `decode` and `get`.
pub fn show(
    label: &str,
    value: &[u8],
    key: Option<&str>,
    mod_revision: Option<i64>,
    view: &ViewArgs,
) -> Result<Status> {
    let args = view;
    let mut err = std::io::stderr().lock();
    let mut special = None;
    if let Some(key) = key {
        let parsed = decode::parse_key(key, &args.prefix)?;
        writeln!(
            err,
            "key: {key}\n  group: {:?}\n  resource: {}\n  namespace: {}\n  name: {}{}",
            parsed.group,
            parsed.resource,
            parsed.namespace.as_deref().unwrap_or("-"),
            parsed.name.as_deref().unwrap_or("-"),
            parsed
                .special
                .map(|s| format!("\n  special: {}", serde_json::to_value(s).unwrap_or_default()))
                .unwrap_or_default()
        )?;
        special = parsed.special;
    }
    if special == Some(SpecialKey::CompactRevision) {
        let text = String::from_utf8_lossy(value);
        let rev: i64 = text
            .trim()
            .parse()
            .with_context(|| format!("{label}: compact_rev_key value {text:?} is not a revision"))?;
        print_object(&serde_json::json!({ "compactRevision": rev }), args.output)?;
        return Ok(0);
    }
    match decode::decode_value(value) {
        Ok(Outcome::Decoded(mut d)) => {
            // kube-apiserver fills resourceVersion from the key's mod_revision.
            if let (Some(rev), Some(meta)) = (
                mod_revision,
                d.object.get_mut("metadata").and_then(|m| m.as_object_mut()),
            ) {
                meta.insert(
                    "resourceVersion".into(),
                    serde_json::Value::String(rev.to_string()),
                );
            }
            if args.show_envelope {
                writeln!(
                    err,
                    "encoding: {}{}",
                    d.encoding.as_str(),
                    if d.base64_wrapped { " (base64-wrapped)" } else { "" }
                )?;
                writeln!(err, "apiVersion: {}\nkind: {}", d.api_version, d.kind)?;
                if let Some(m) = &d.message {
                    writeln!(err, "message: {m}")?;
                }
                match &d.resolution {
                    Some(decode::Resolution::OtherVersion(v)) => writeln!(
                        err,
                        "schema: {} {} not in the schema; decoded with {v}",
                        d.api_version, d.kind
                    )?,
                    Some(decode::Resolution::Unknown) => writeln!(
                        err,
                        "schema: kind not in the schema; only metadata decoded by name"
                    )?,
                    Some(decode::Resolution::Schemaless) => writeln!(
                        err,
                        "schema: kind not in the schema and its field 1 is not an ObjectMeta; every field decoded by number"
                    )?,
                    _ => {}
                }
                if d.unknown_fields.is_empty() {
                    writeln!(err, "unknown fields: none")?;
                } else {
                    writeln!(err, "unknown fields: {}", d.unknown_fields.join(", "))?;
                }
            }
            for w in &d.warnings {
                writeln!(err, "warning: {w}")?;
            }
            if !args.show_secrets && is_secret(&d.object) {
                let n = redact_secret(&mut d.object);
                if n > 0 {
                    writeln!(
                        err,
                        "note: {n} Secret value(s) redacted; --show-secrets prints them"
                    )?;
                }
            }
            print_object(&d.object, args.output)?;
            Ok(0)
        }
        Ok(Outcome::Encrypted(info)) => {
            writeln!(
                err,
                "{label}: value is encrypted at rest (provider {} {}, key {:?}); decoding it needs the apiserver's EncryptionConfiguration",
                info.provider, info.version, info.key_name
            )?;
            Ok(EXIT_ENCRYPTED)
        }
        Err(e) => bail!("{label}: {e}"),
    }
}

fn read_input(path: Option<&std::path::Path>) -> Result<(String, Vec<u8>)> {
    match path {
        None => read_stdin(),
        Some(p) if p.as_os_str() == "-" => read_stdin(),
        Some(p) => {
            let label = p.display().to_string();
            let value = std::fs::read(p).with_context(|| format!("cannot read {label}"))?;
            Ok((label, value))
        }
    }
}

fn read_stdin() -> Result<(String, Vec<u8>)> {
    let mut value = Vec::new();
    std::io::stdin()
        .read_to_end(&mut value)
        .context("cannot read standard input")?;
    Ok(("<stdin>".into(), value))
}

fn print_object(object: &serde_json::Value, format: Format) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, object)?;
            writeln!(out)?;
        }
        Format::Yaml => serde_yaml_ng::to_writer(&mut out, object)?,
    }
    out.flush()?;
    Ok(())
}
