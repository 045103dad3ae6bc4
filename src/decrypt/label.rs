//! The label of how a value is stored at rest: `identity` (plaintext),
//! `aescbc:key1`, `aesgcm:key:gcm` (a local key's name may hold `:`),
//! `secretbox:box`, `kms-v1:plugin`, `kms-v2:plugin:<key id>` (a KMS
//! provider's name holds no `:`), or `provider:version:name` for a layout
//! no provider here reads. Built here and read here, nowhere else; runs,
//! policies and reports carry its printed form.

use super::config::KmsVersion;
use std::fmt;

/// The label of a plaintext value.
pub const IDENTITY: &str = "identity";

/// The local providers, by the name their values' prefix carries.
const LOCAL: [&str; 3] = ["aescbc", "aesgcm", "secretbox"];

/// How a value is stored at rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Label {
    Identity,
    /// A local provider (`aescbc`, `aesgcm`, `secretbox`) and its key.
    Local {
        provider: &'static str,
        key: String,
    },
    /// A KMS plugin, and for v2 the key id its value names (a policy's write
    /// label may leave it out: any key id of the plugin).
    Kms {
        version: KmsVersion,
        plugin: String,
        key_id: Option<String>,
    },
    /// An encrypted layout no provider here reads.
    Other {
        provider: String,
        version: String,
        name: String,
    },
}

impl Label {
    /// A local provider's key; `provider` is one of `aescbc`, `aesgcm`,
    /// `secretbox`.
    pub fn local(provider: &str, key: &str) -> Label {
        match LOCAL.iter().find(|p| **p == provider) {
            Some(p) => Label::Local {
                provider: p,
                key: key.to_string(),
            },
            None => Label::Other {
                provider: provider.to_string(),
                version: "v1".into(),
                name: key.to_string(),
            },
        }
    }

    /// A KMS plugin's label.
    pub fn kms(version: KmsVersion, plugin: &str, key_id: Option<&str>) -> Label {
        Label::Kms {
            version,
            plugin: plugin.to_string(),
            key_id: key_id.map(str::to_string),
        }
    }

    /// Reads a printed label.
    pub fn parse(text: &str) -> Result<Label, String> {
        if text == IDENTITY {
            return Ok(Label::Identity);
        }
        let (head, rest) = text
            .split_once(':')
            .filter(|(h, r)| !h.is_empty() && !r.is_empty())
            .ok_or_else(|| format!("{text:?} is not an encryption label (provider:key)"))?;
        let kms = |version| {
            let (plugin, key_id) = match rest.split_once(':') {
                Some((p, id)) => (p, Some(id)),
                None => (rest, None),
            };
            Label::kms(version, plugin, key_id)
        };
        Ok(match head {
            "kms-v1" => kms(KmsVersion::V1),
            "kms-v2" => kms(KmsVersion::V2),
            p if LOCAL.contains(&p) => Label::local(p, rest),
            provider => {
                let (version, name) = rest
                    .split_once(':')
                    .ok_or_else(|| format!("{text:?} is not an encryption label (provider:key)"))?;
                Label::Other {
                    provider: provider.to_string(),
                    version: version.to_string(),
                    name: name.to_string(),
                }
            }
        })
    }

    /// The label of a stored value's envelope: `provider` and `version` as
    /// its prefix writes them, `name` the key or plugin name.
    pub fn of_envelope(provider: &str, version: &str, name: &str, key_id: Option<&str>) -> Label {
        match (provider, version) {
            ("kms", "v2") => Label::kms(KmsVersion::V2, name, key_id),
            ("kms", "v1") => Label::kms(KmsVersion::V1, name, None),
            (p, "v1") if LOCAL.contains(&p) => Label::local(p, name),
            _ => Label::Other {
                provider: provider.to_string(),
                version: version.to_string(),
                name: name.to_string(),
            },
        }
    }

    /// Whether a value stored under `stored` is what a write under this
    /// label stores: the same label, or for a KMS v2 label without a key id,
    /// any key id of its plugin.
    pub fn covers(&self, stored: &Label) -> bool {
        match (self, stored) {
            (
                Label::Kms {
                    version: KmsVersion::V2,
                    plugin,
                    key_id: None,
                },
                Label::Kms {
                    version: KmsVersion::V2,
                    plugin: other,
                    ..
                },
            ) => plugin == other,
            _ => self == stored,
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Identity => f.write_str(IDENTITY),
            Label::Local { provider, key } => write!(f, "{provider}:{key}"),
            Label::Kms {
                version,
                plugin,
                key_id: Some(id),
            } => write!(f, "kms-{}:{plugin}:{id}", version.as_str()),
            Label::Kms { version, plugin, .. } => write!(f, "kms-{}:{plugin}", version.as_str()),
            Label::Other {
                provider,
                version,
                name,
            } => write!(f, "{provider}:{version}:{name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_and_read_back() {
        for text in [
            "identity",
            "aescbc:key1",
            "aesgcm:key:gcm",
            "secretbox:box",
            "kms-v1:plugin",
            "kms-v2:plugin",
            "kms-v2:plugin:42:x",
            "foo:v9:bar",
        ] {
            assert_eq!(Label::parse(text).unwrap().to_string(), text, "{text}");
        }
        assert_eq!(
            Label::parse("aesgcm:key:gcm").unwrap(),
            Label::local("aesgcm", "key:gcm")
        );
        for bad in ["", "aescbc", "aescbc:", ":k", "foo:bar"] {
            assert!(Label::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_kms_v2_write_label_without_a_key_id_covers_every_key_id_of_its_plugin() {
        let any = Label::parse("kms-v2:p").unwrap();
        assert!(any.covers(&Label::parse("kms-v2:p:7").unwrap()));
        assert!(!any.covers(&Label::parse("kms-v2:pq:7").unwrap()));
        assert!(!any.covers(&Label::parse("kms-v1:p").unwrap()));
        let seven = Label::parse("kms-v2:p:7").unwrap();
        assert!(seven.covers(&seven));
        assert!(!seven.covers(&Label::parse("kms-v2:p:8").unwrap()));
        assert!(!Label::Identity.covers(&Label::parse("aesgcm:k").unwrap()));
    }
}
