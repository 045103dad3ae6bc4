//! What an EncryptionConfiguration says about writes, by name only (never
//! a secret): recorded with each run, so `analyze` can tell which stored
//! values are not under their resource's current write key.

use super::config::{select, EncryptionConfig, KmsVersion, LocalKey, Provider};
use super::kms::KmsStatus;
use super::label::Label;
use super::label::IDENTITY;
use serde::{Deserialize, Serialize};

/// The write provider and key of each `resources[]` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub rules: Vec<PolicyRule>,
}

/// One `resources[]` entry: the resources it names and how they are written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRule {
    pub resources: Vec<String>,
    /// The label ([`Label`]) of the first provider's first key, or
    /// `identity`.
    pub write: String,
    /// The labels of every key the entry's providers read: `identity`,
    /// `aescbc:key1`, and for KMS the plugin (`kms-v2:plugin`: any key id it
    /// decrypts). `None` in a policy recorded before they were (any stored
    /// key then counts as readable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<Vec<String>>,
}

impl Policy {
    /// The policy of `config`; a KMS v2 plugin's current key id comes from
    /// `statuses` (without it, any key id of that plugin counts as current).
    pub fn of(config: &EncryptionConfig, statuses: &[(String, KmsStatus)]) -> Policy {
        let write = |p: &Provider| match p {
            Provider::Identity => Label::Identity,
            Provider::AesCbc(keys) => Label::local("aescbc", &keys[0].name),
            Provider::AesGcm(keys) => Label::local("aesgcm", &keys[0].name),
            Provider::Secretbox(keys) => Label::local("secretbox", &keys[0].name),
            Provider::Kms(k) => {
                let key_id = statuses
                    .iter()
                    .find(|(name, s)| *name == k.name && !s.key_id.is_empty())
                    .filter(|_| k.version == KmsVersion::V2)
                    .map(|(_, s)| s.key_id.as_str());
                Label::kms(k.version, &k.name, key_id)
            }
        };
        let reads = |p: &Provider| -> Vec<String> {
            let keys = |provider: &str, keys: &[LocalKey]| -> Vec<String> {
                keys.iter()
                    .map(|k| Label::local(provider, &k.name).to_string())
                    .collect()
            };
            match p {
                Provider::Identity => vec![IDENTITY.to_string()],
                Provider::AesCbc(k) => keys("aescbc", k),
                Provider::AesGcm(k) => keys("aesgcm", k),
                Provider::Secretbox(k) => keys("secretbox", k),
                Provider::Kms(k) => vec![Label::kms(k.version, &k.name, None).to_string()],
            }
        };
        Policy {
            rules: config
                .rules
                .iter()
                .map(|r| PolicyRule {
                    resources: r.resources.clone(),
                    write: r.providers.first().map_or(Label::Identity, write).to_string(),
                    reads: Some(r.providers.iter().flat_map(reads).collect()),
                })
                .collect(),
        }
    }

    /// How `resource` of `group` is written (`None`: identity, not listed).
    pub fn rule_for(&self, group: &str, resource: &str) -> Option<&PolicyRule> {
        let lists: Vec<&[String]> = self.rules.iter().map(|r| &r.resources[..]).collect();
        select(&lists, group, resource).map(|i| &self.rules[i])
    }
}

impl PolicyRule {
    /// Whether new writes are encrypted.
    pub fn encrypts(&self) -> bool {
        self.write != IDENTITY
    }

    /// Whether a value stored under `stored` (`None`: plaintext) can be
    /// read with one of the entry's keys; always, when the policy did not
    /// record them.
    pub fn can_read(&self, stored: Option<&str>) -> bool {
        let Some(reads) = &self.reads else { return true };
        let stored = stored_label(stored);
        reads.iter().any(|key| covers(key, &stored))
    }

    /// Whether a value stored under `stored` (`None`: plaintext) is what a
    /// write would store now. A KMS v2 write label without a key id
    /// accepts any key id of its plugin.
    pub fn is_current(&self, stored: Option<&str>) -> bool {
        covers(&self.write, &stored_label(stored))
    }
}

/// A stored value's label; one that does not read is no key's.
fn stored_label(stored: Option<&str>) -> Option<Label> {
    match stored {
        None => Some(Label::Identity),
        Some(text) => Label::parse(text).ok(),
    }
}

/// Whether the policy's label `key` covers the stored label.
fn covers(key: &str, stored: &Option<Label>) -> bool {
    match (Label::parse(key), stored) {
        (Ok(key), Some(stored)) => key.covers(stored),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(write: &str) -> PolicyRule {
        PolicyRule {
            resources: vec!["secrets".into()],
            write: write.into(),
            reads: None,
        }
    }

    #[test]
    fn readable_keys() {
        let r = PolicyRule {
            reads: Some(vec![
                "aesgcm:key2".into(),
                "aesgcm:key1".into(),
                "kms-v2:p".into(),
                IDENTITY.into(),
            ]),
            ..rule("aesgcm:key2")
        };
        for stored in [Some("aesgcm:key1"), Some("kms-v2:p:9"), None] {
            assert!(r.can_read(stored), "{stored:?}");
        }
        for stored in [Some("aesgcm:keyX"), Some("aescbc:key1"), Some("kms-v2:q:1")] {
            assert!(!r.can_read(stored), "{stored:?}");
        }
        assert!(
            rule("aesgcm:key2").can_read(Some("aesgcm:keyX")),
            "not recorded: readable"
        );
    }

    #[test]
    fn current_write_key() {
        assert!(rule("aesgcm:key1").is_current(Some("aesgcm:key1")));
        assert!(!rule("aesgcm:key1").is_current(Some("aescbc:key1")));
        assert!(!rule("aesgcm:key1").is_current(None));
        assert!(rule(IDENTITY).is_current(None));
        assert!(!rule(IDENTITY).is_current(Some("aesgcm:key1")));
        assert!(rule("kms-v2:p").is_current(Some("kms-v2:p:7")));
        assert!(!rule("kms-v2:p").is_current(Some("kms-v2:pq:7")));
        assert!(rule("kms-v2:p:7").is_current(Some("kms-v2:p:7")));
        assert!(!rule("kms-v2:p:8").is_current(Some("kms-v2:p:7")));
    }

    #[test]
    fn round_trips_as_json() {
        let p = Policy {
            rules: vec![rule("aesgcm:key1")],
        };
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Policy>(&json).unwrap(), p);
        assert!(!json.contains("secret\""), "{json}");
    }
}
