//! kube-apiserver's EncryptionConfiguration (reference §2.5): which
//! providers, in which order, read each resource's values.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

/// A parsed, validated EncryptionConfiguration.
#[derive(Debug)]
pub struct EncryptionConfig {
    /// The file it was read from, for messages.
    pub path: PathBuf,
    /// `resources[]`, in file order.
    pub rules: Vec<Rule>,
}

/// One `resources[]` entry: the resources it names and their providers.
#[derive(Debug)]
pub struct Rule {
    /// As written: `secrets`, `deployments.apps`, `*.apps`, `*.`, `*.*`.
    pub resources: Vec<String>,
    /// In order; the first one writes.
    pub providers: Vec<Provider>,
}

/// One entry of `providers[]`.
#[derive(Debug)]
pub enum Provider {
    Identity,
    AesCbc(Vec<LocalKey>),
    AesGcm(Vec<LocalKey>),
    Secretbox(Vec<LocalKey>),
    Kms(KmsProvider),
}

/// A named key of a local provider. `Debug` never prints the secret.
pub struct LocalKey {
    pub name: String,
    pub secret: Vec<u8>,
}

impl std::fmt::Debug for LocalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LocalKey({:?}, {} bytes)", self.name, self.secret.len())
    }
}

/// KMS plugin API version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KmsVersion {
    V1,
    V2,
}

/// A `kms` provider.
#[derive(Clone, Debug)]
pub struct KmsProvider {
    pub version: KmsVersion,
    pub name: String,
    /// The plugin's unix socket (the endpoint without `unix://`).
    pub socket: PathBuf,
    /// Per call; the apiserver's default is 3 s.
    pub timeout: Duration,
}

/// Why a config file was refused: one line naming the file and the entry.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// The apiserver's `kms.timeout` when none is written.
const DEFAULT_KMS_TIMEOUT: Duration = Duration::from_secs(3);

/// The (apiVersion, kind) pairs accepted: the current one and the legacy
/// one of Kubernetes ≤ 1.13.
const KINDS: [(&str, &str); 2] = [
    ("apiserver.config.k8s.io/v1", "EncryptionConfiguration"),
    ("v1", "EncryptionConfig"),
];

/// Only `apiVersion` and `kind`, read leniently before the strict parse,
/// so that another kind of file is named as such rather than by its first
/// unknown field.
#[derive(Deserialize)]
#[serde(expecting = "an EncryptionConfiguration mapping")]
struct Header {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(expecting = "an EncryptionConfiguration mapping", deny_unknown_fields)]
struct RawConfig {
    #[serde(rename = "apiVersion")]
    #[allow(dead_code)] // checked through `Header`
    api_version: String,
    #[allow(dead_code)] // checked through `Header`
    kind: String,
    resources: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(expecting = "a mapping of resources and providers", deny_unknown_fields)]
struct RawRule {
    resources: Vec<String>,
    providers: Vec<RawProvider>,
}

#[derive(Deserialize)]
#[serde(
    expecting = "a mapping of one of aesgcm, aescbc, secretbox, identity, kms",
    deny_unknown_fields
)]
struct RawProvider {
    aesgcm: Option<RawKeys>,
    aescbc: Option<RawKeys>,
    secretbox: Option<RawKeys>,
    identity: Option<RawIdentity>,
    kms: Option<RawKms>,
}

#[derive(Deserialize)]
#[serde(expecting = "a mapping of keys", deny_unknown_fields)]
struct RawKeys {
    keys: Vec<RawKey>,
}

#[derive(Deserialize)]
#[serde(expecting = "a mapping of name and secret", deny_unknown_fields)]
struct RawKey {
    name: String,
    secret: String,
}

#[derive(Deserialize)]
#[serde(expecting = "an empty mapping", deny_unknown_fields)]
struct RawIdentity {}

#[derive(Deserialize)]
#[serde(
    expecting = "a mapping of apiVersion, name, endpoint, timeout, cachesize",
    deny_unknown_fields
)]
struct RawKms {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    name: String,
    endpoint: String,
    timeout: Option<String>,
    #[allow(dead_code)] // accepted, not used
    cachesize: Option<i64>,
}

/// Reads and validates the file at `path` (YAML or JSON).
pub fn load(path: &Path) -> Result<EncryptionConfig, ConfigError> {
    let fail = |msg: String| ConfigError(one_line(&format!("{}: {msg}", path.display())));
    let bytes = std::fs::read(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| fail(format!("not UTF-8 text: {e}")))?;
    let rules = parse(&text).map_err(fail)?;
    Ok(EncryptionConfig {
        path: path.to_path_buf(),
        rules,
    })
}

/// Joins a multi-line message into one line.
fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The rules of a config's text; errors name the entry, not the file.
fn parse(text: &str) -> Result<Vec<Rule>, String> {
    if text
        .lines()
        .all(|line| line.trim().is_empty() || line.trim_start().starts_with('#'))
    {
        return Err("the file is empty".to_string());
    }
    let header: Header = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    let api_version = header.api_version.unwrap_or_default();
    let kind = header.kind.unwrap_or_default();
    if !KINDS.contains(&(api_version.as_str(), kind.as_str())) {
        return Err(format!(
            "apiVersion {api_version:?} kind {kind:?} is not an EncryptionConfiguration \
             (want apiVersion {:?} kind {:?})",
            KINDS[0].0, KINDS[0].1
        ));
    }
    let raw: RawConfig = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    if raw.resources.is_empty() {
        return Err("resources is empty".to_string());
    }
    let mut kms_names = HashSet::new();
    raw.resources
        .into_iter()
        .enumerate()
        .map(|(i, rule)| validate_rule(&format!("resources[{i}]"), rule, &mut kms_names))
        .collect()
}

fn validate_rule(at: &str, raw: RawRule, kms_names: &mut HashSet<String>) -> Result<Rule, String> {
    if raw.resources.is_empty() {
        return Err(format!("{at}.resources is empty"));
    }
    for (j, resource) in raw.resources.iter().enumerate() {
        check_resource(resource).map_err(|why| format!("{at}.resources[{j}] {why}"))?;
    }
    if raw.providers.is_empty() {
        return Err(format!("{at}.providers is empty"));
    }
    let providers = raw
        .providers
        .into_iter()
        .enumerate()
        .map(|(j, provider)| validate_provider(&format!("{at}.providers[{j}]"), provider, kms_names))
        .collect::<Result<_, _>>()?;
    Ok(Rule {
        resources: raw.resources,
        providers,
    })
}

/// Why a written resource can never be what the apiserver accepts.
fn check_resource(resource: &str) -> Result<(), String> {
    if resource.is_empty() {
        return Err("is empty".to_string());
    }
    if resource == "*" {
        return Err(format!(
            "({resource:?}): use \"*.\" for every resource of the core group or \"*.*\" for all"
        ));
    }
    let (name, group) = split_resource(resource);
    if (name != "*" && name.contains('*')) || (group != "*" && group.contains('*')) {
        return Err(format!(
            "({resource:?}): a wildcard is written \"*.<group>\", \"*.\" or \"*.*\""
        ));
    }
    if resource.chars().any(char::is_uppercase) {
        return Err(format!("({resource:?}): resource names are lowercase"));
    }
    Ok(())
}

/// `deployments.apps` → (`deployments`, `apps`); `secrets` → (`secrets`,
/// ``): the group is everything after the first dot, as the apiserver
/// reads it.
fn split_resource(resource: &str) -> (&str, &str) {
    resource.split_once('.').unwrap_or((resource, ""))
}

fn validate_provider(
    at: &str,
    raw: RawProvider,
    kms_names: &mut HashSet<String>,
) -> Result<Provider, String> {
    let named: Vec<&str> = [
        ("aesgcm", raw.aesgcm.is_some()),
        ("aescbc", raw.aescbc.is_some()),
        ("secretbox", raw.secretbox.is_some()),
        ("identity", raw.identity.is_some()),
        ("kms", raw.kms.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, present)| present.then_some(name))
    .collect();
    if named.len() != 1 {
        let what = if named.is_empty() {
            "names no provider".to_string()
        } else {
            format!("names {} providers ({})", named.len(), named.join(", "))
        };
        return Err(format!(
            "{at} {what}; want exactly one of aesgcm, aescbc, secretbox, identity, kms"
        ));
    }
    if let Some(keys) = raw.aesgcm {
        return local_keys(&format!("{at}.aesgcm"), keys, "aesgcm", &[16, 24, 32]).map(Provider::AesGcm);
    }
    if let Some(keys) = raw.aescbc {
        return local_keys(&format!("{at}.aescbc"), keys, "aescbc", &[16, 24, 32]).map(Provider::AesCbc);
    }
    if let Some(keys) = raw.secretbox {
        return local_keys(&format!("{at}.secretbox"), keys, "secretbox", &[32]).map(Provider::Secretbox);
    }
    if let Some(kms) = raw.kms {
        return validate_kms(&format!("{at}.kms"), kms, kms_names).map(Provider::Kms);
    }
    Ok(Provider::Identity)
}

fn local_keys(at: &str, raw: RawKeys, provider: &str, sizes: &[usize]) -> Result<Vec<LocalKey>, String> {
    if raw.keys.is_empty() {
        return Err(format!("{at}.keys is empty"));
    }
    let mut keys: Vec<LocalKey> = Vec::with_capacity(raw.keys.len());
    for (k, key) in raw.keys.into_iter().enumerate() {
        if key.name.is_empty() {
            return Err(format!("{at}.keys[{k}]: name is empty"));
        }
        let at = format!("{at}.keys[{k}] ({:?})", key.name);
        if let Some(first) = keys.iter().position(|seen| seen.name == key.name) {
            return Err(format!("{at}: name is used by keys[{first}] too"));
        }
        let secret = base64::engine::general_purpose::STANDARD
            .decode(key.secret.as_bytes())
            .map_err(|e| format!("{at}: secret is not standard base64: {e}"))?;
        if !sizes.contains(&secret.len()) {
            let want = match sizes {
                [one] => one.to_string(),
                [rest @ .., last] => format!(
                    "{} or {last}",
                    rest.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
                ),
                [] => unreachable!("every provider takes some key size"),
            };
            return Err(format!(
                "{at}: secret is {} bytes after base64 decoding; {provider} takes {want}",
                secret.len()
            ));
        }
        keys.push(LocalKey {
            name: key.name,
            secret,
        });
    }
    Ok(keys)
}

fn validate_kms(at: &str, raw: RawKms, kms_names: &mut HashSet<String>) -> Result<KmsProvider, String> {
    if raw.name.is_empty() {
        return Err(format!("{at}: name is empty"));
    }
    let at = format!("{at} ({:?})", raw.name);
    let version = match raw.api_version.as_deref() {
        None | Some("v1") => KmsVersion::V1,
        Some("v2") => KmsVersion::V2,
        Some(other) => return Err(format!("{at}: apiVersion {other:?} is not v1 or v2")),
    };
    if version == KmsVersion::V2 && raw.name.contains(':') {
        return Err(format!("{at}: a kms v2 name may not contain ':'"));
    }
    if !kms_names.insert(raw.name.clone()) {
        return Err(format!(
            "{at}: another kms provider has this name; names must be unique"
        ));
    }
    let socket = match raw.endpoint.strip_prefix("unix://") {
        Some(socket) if !socket.is_empty() => PathBuf::from(socket),
        _ => {
            return Err(format!(
                "{at}: endpoint {:?} is not unix://<socket path>",
                raw.endpoint
            ))
        }
    };
    let timeout = match raw.timeout {
        None => DEFAULT_KMS_TIMEOUT,
        Some(text) => match go_duration(&text) {
            Ok(nanos) if nanos > 0 => Duration::from_nanos(nanos as u64),
            Ok(_) => return Err(format!("{at}: timeout {text:?} is not positive")),
            Err(why) => {
                return Err(format!(
                    "{at}: timeout {text:?} is not a duration like 3s, 500ms or 1m30s: {why}"
                ))
            }
        },
    };
    Ok(KmsProvider {
        version,
        name: raw.name,
        socket,
        timeout,
    })
}

/// Nanoseconds of a Go `time.ParseDuration` string: an optional sign,
/// then one or more decimal numbers, each with an optional fraction and a
/// unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), or a bare `0`.
/// Fits in an `i64`, as in Go.
fn go_duration(text: &str) -> Result<i64, &'static str> {
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err("empty");
    }
    const LIMIT: u128 = 1 << 63;
    let mut total: u128 = 0;
    let mut rest = rest;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_digits, after) = rest.split_at(int_len);
        let (frac_digits, after) = match after.strip_prefix('.') {
            Some(after) => {
                let frac_len = after.bytes().take_while(u8::is_ascii_digit).count();
                after.split_at(frac_len)
            }
            None => ("", after),
        };
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err("expected a number");
        }
        let unit_len = after
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err("missing unit"),
            _ => return Err("unknown unit"),
        };
        let mut value: u128 = 0;
        for digit in int_digits.bytes() {
            value = value * 10 + u128::from(digit - b'0');
            if value > LIMIT {
                return Err("out of range");
            }
        }
        value *= scale;
        // Digits past nanosecond precision (or 20 of them) change nothing.
        let mut frac: u128 = 0;
        let mut denominator: u128 = 1;
        for digit in frac_digits.bytes().take(20) {
            frac = frac * 10 + u128::from(digit - b'0');
            denominator *= 10;
        }
        value += frac * scale / denominator;
        total += value;
        if total > LIMIT {
            return Err("out of range");
        }
        rest = after;
    }
    if negative {
        Ok((total as i128).wrapping_neg() as i64)
    } else if total == LIMIT {
        Err("out of range")
    } else {
        Ok(total as i64)
    }
}

impl EncryptionConfig {
    /// Index of the rule that chooses the providers of `resource` in
    /// `group` ("" for the core group), as the apiserver chooses: exact
    /// `resource.group`, then `*.group`, then `*.*`; `None` means identity.
    pub fn rule_for(&self, group: &str, resource: &str) -> Option<usize> {
        let lists: Vec<&[String]> = self.rules.iter().map(|r| &r.resources[..]).collect();
        select(&lists, group, resource)
    }
}

/// Index of the list in `lists` (each a rule's `resources`, as written)
/// that chooses the providers of `resource` in `group`: the first naming it
/// exactly, else the first naming `*.<group>`, else the first naming `*.*`.
pub fn select(lists: &[&[String]], group: &str, resource: &str) -> Option<usize> {
    let first = |want: (&str, &str)| {
        lists
            .iter()
            .position(|list| list.iter().any(|written| split_resource(written) == want))
    };
    if resource != "*" {
        if let Some(i) = first((resource, group)) {
            return Some(i);
        }
    }
    first(("*", group)).or_else(|| first(("*", "*")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 16, 24 and 32 bytes, standard base64.
    const K16: &str = "c25vcmxheF9hd2Vzb21lcw==";
    const K24: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3";
    const K32: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    const HEAD: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n";

    fn write(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn load_text(text: &str) -> Result<EncryptionConfig, String> {
        let (_dir, path) = write("enc.yaml", text);
        load(&path).map_err(|e| {
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("{}: ", path.display())),
                "names the file: {msg}"
            );
            assert!(!msg.contains('\n'), "one line: {msg}");
            msg[path.display().to_string().len() + 2..].to_string()
        })
    }

    /// The error of a config of `HEAD` and `body`, without the file name.
    fn error(body: &str) -> String {
        match load_text(&format!("{HEAD}{body}")) {
            Ok(config) => panic!("accepted: {config:?}"),
            Err(msg) => msg,
        }
    }

    fn rules(specs: &[&[&str]]) -> EncryptionConfig {
        EncryptionConfig {
            path: PathBuf::from("test.yaml"),
            rules: specs
                .iter()
                .map(|resources| Rule {
                    resources: resources.iter().map(|r| r.to_string()).collect(),
                    providers: vec![Provider::Identity],
                })
                .collect(),
        }
    }

    #[test]
    fn rule_for_exact_beats_an_earlier_wildcard() {
        let config = rules(&[&["*.*"], &["*.apps", "*."], &["secrets"], &["deployments.apps"]]);
        assert_eq!(config.rule_for("", "secrets"), Some(2));
        assert_eq!(config.rule_for("apps", "deployments"), Some(3));
        // Group wildcards beat an earlier `*.*`.
        assert_eq!(config.rule_for("apps", "statefulsets"), Some(1));
        assert_eq!(config.rule_for("", "configmaps"), Some(1));
        assert_eq!(config.rule_for("batch", "jobs"), Some(0));
    }

    #[test]
    fn rule_for_takes_the_first_of_equals_and_none_without_a_match() {
        let config = rules(&[
            &["configmaps"],
            &["secrets", "*.apps"],
            &["secrets", "*.apps", "*.*"],
        ]);
        assert_eq!(config.rule_for("", "secrets"), Some(1));
        assert_eq!(config.rule_for("apps", "deployments"), Some(1));
        assert_eq!(config.rule_for("", "pods"), Some(2));
        let config = rules(&[&["secrets"], &["*."], &["deployments.apps"]]);
        assert_eq!(config.rule_for("", "pods"), Some(1));
        assert_eq!(config.rule_for("apps", "statefulsets"), None);
        // The core group's wildcard is not every group's.
        assert_eq!(config.rule_for("batch", "jobs"), None);
        // `secrets` is core only.
        assert_eq!(config.rule_for("example.com", "secrets"), None);
        let config = rules(&[&["widgets.example.com"], &["*.example.com"]]);
        assert_eq!(config.rule_for("example.com", "widgets"), Some(0));
        assert_eq!(config.rule_for("example.com", "gadgets"), Some(1));
        assert_eq!(config.rule_for("com", "widgets"), None);
        assert_eq!(rules(&[]).rule_for("", "secrets"), None);
    }

    #[test]
    fn loads_all_five_providers() {
        let text = format!(
            "{HEAD}resources:
  - resources: [secrets, configmaps, '*.apps']
    providers:
      - aesgcm:
          keys:
            - {{name: key1, secret: {K16}}}
            - {{name: key2, secret: {K32}}}
      - aescbc: {{keys: [{{name: cbc, secret: {K24}}}]}}
      - secretbox: {{keys: [{{name: box, secret: {K32}}}]}}
      - kms:
          apiVersion: v2
          name: myplugin
          endpoint: unix:///var/run/kms.sock
          timeout: 1m30s
          cachesize: 1000
      - kms: {{name: old, endpoint: 'unix:///tmp/old.sock', cachesize: -1}}
      - identity: {{}}
  - resources: ['*.', '*.*']
    providers: [{{identity: {{}}}}]
"
        );
        let config = load_text(&text).unwrap();
        assert_eq!(config.rules.len(), 2);
        let rule = &config.rules[0];
        assert_eq!(rule.resources, ["secrets", "configmaps", "*.apps"]);
        let [Provider::AesGcm(gcm), Provider::AesCbc(cbc), Provider::Secretbox(sbox), Provider::Kms(v2), Provider::Kms(v1), Provider::Identity] =
            rule.providers.as_slice()
        else {
            panic!("{:?}", rule.providers);
        };
        assert_eq!(gcm.len(), 2);
        assert_eq!(gcm[0].name, "key1");
        assert_eq!(gcm[0].secret, b"snorlax_awesomes");
        assert_eq!(gcm[1].name, "key2");
        assert_eq!(gcm[1].secret, b"0123456789abcdef0123456789abcdef");
        assert_eq!(cbc[0].name, "cbc");
        assert_eq!(cbc[0].secret, b"0123456789abcdef01234567");
        assert_eq!(sbox[0].name, "box");
        assert_eq!(sbox[0].secret.len(), 32);
        assert_eq!(v2.version, KmsVersion::V2);
        assert_eq!(v2.name, "myplugin");
        assert_eq!(v2.socket, Path::new("/var/run/kms.sock"));
        assert_eq!(v2.timeout, Duration::from_secs(90));
        assert_eq!(v1.version, KmsVersion::V1);
        assert_eq!(v1.name, "old");
        assert_eq!(v1.socket, Path::new("/tmp/old.sock"));
        assert_eq!(v1.timeout, Duration::from_secs(3));
        assert_eq!(config.rules[1].resources, ["*.", "*.*"]);
        assert!(matches!(
            config.rules[1].providers.as_slice(),
            [Provider::Identity]
        ));
        // Debug never shows a secret.
        let debug = format!("{config:?}");
        assert!(debug.contains("LocalKey(\"key1\", 16 bytes)"), "{debug}");
        assert!(!debug.contains("snorlax"), "{debug}");
    }

    #[test]
    fn loads_json_and_the_legacy_kind() {
        let json = format!(
            r#"{{
	"apiVersion": "apiserver.config.k8s.io/v1",
	"kind": "EncryptionConfiguration",
	"resources": [
		{{"resources": ["secrets"],
		 "providers": [{{"aescbc": {{"keys": [{{"name": "k", "secret": "{K32}"}}]}}}}, {{"identity": {{}}}}]}}
	]
}}"#
        );
        let (_dir, path) = write("enc.json", &json);
        let config = load(&path).unwrap();
        assert_eq!(config.path, path);
        assert!(matches!(
            config.rules[0].providers.as_slice(),
            [Provider::AesCbc(keys), Provider::Identity] if keys[0].secret.len() == 32
        ));

        let legacy = load_text(&format!(
            "kind: EncryptionConfig\napiVersion: v1\nresources:\n- resources: [secrets]\n  providers:\n  - secretbox:\n      keys:\n      - name: k\n        secret: {K32}\n"
        ))
        .unwrap();
        assert!(matches!(
            legacy.rules[0].providers.as_slice(),
            [Provider::Secretbox(_)]
        ));
    }

    #[test]
    fn refuses_other_kinds() {
        let body = "resources: [{resources: [secrets], providers: [{identity: {}}]}]\n";
        for head in [
            "apiVersion: v1\nkind: EncryptionConfiguration\n",
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfig\n",
            "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: EncryptionConfiguration\n",
            "apiVersion: v1\nkind: Pod\n",
            "kind: EncryptionConfiguration\n",
            "",
        ] {
            let msg = load_text(&format!("{head}{body}")).unwrap_err();
            assert!(msg.contains("is not an EncryptionConfiguration"), "{head}: {msg}");
        }
        let msg = load_text("apiVersion: v1\nkind: Pod\nspec: {containers: []}\n").unwrap_err();
        assert!(msg.contains(r#"apiVersion "v1" kind "Pod""#), "{msg}");
        assert_eq!(load_text("# nothing\n\n").unwrap_err(), "the file is empty");
    }

    #[test]
    fn reports_syntax_errors_with_line_and_column() {
        let msg = load_text(&format!("{HEAD}resources:\n  - resources: [secrets\n")).unwrap_err();
        assert!(msg.contains("line 4"), "{msg}");
        assert!(msg.contains("column"), "{msg}");
        let msg = load_text("{\"apiVersion\": \"v1\",, }").unwrap_err();
        assert!(msg.contains("line 1 column"), "{msg}");
        let msg = load_text("- a\n- b\n").unwrap_err();
        assert!(
            msg.starts_with("invalid type: sequence, expected an EncryptionConfiguration mapping"),
            "{msg}"
        );
        let msg = error("resources:\n- resources: [secrets]\n  providers: [aesgcm]\n");
        assert!(
            msg.starts_with(
                "resources[0].providers[0]: invalid type: string \"aesgcm\", expected a mapping of one of"
            ),
            "{msg}"
        );
    }

    #[test]
    fn reports_an_unreadable_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing.yaml");
        let msg = load(&path).unwrap_err().to_string();
        assert!(
            msg.starts_with(&format!("{}: cannot read: ", path.display())),
            "{msg}"
        );
    }

    #[test]
    fn refuses_unknown_and_missing_fields() {
        let msg = error("resources: [{resources: [secrets], providers: [{identity: {}}]}]\nextra: 1\n");
        assert!(msg.contains("unknown field `extra`"), "{msg}");
        let msg = error("resources:\n- resources: [secrets]\n  provider: [{identity: {}}]\n");
        assert!(msg.contains("resources[0]: unknown field `provider`"), "{msg}");
        let msg = error(
            "resources:\n- resources: [secrets]\n  providers:\n  - identity: {}\n    aesgcn: {keys: []}\n",
        );
        assert!(
            msg.contains("resources[0].providers[0]: unknown field `aesgcn`"),
            "{msg}"
        );
        let msg = error("resources:\n- resources: [secrets]\n  providers:\n  - identity: {x: 1}\n");
        assert!(msg.contains("providers[0].identity: unknown field `x`"), "{msg}");
        let msg = error(&format!("resources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {{keys: [{{name: k, secret: {K16}, note: x}}]}}\n"));
        assert!(msg.contains("aesgcm.keys[0]: unknown field `note`"), "{msg}");
        let msg = error("resources:\n- resources: [secrets]\n  providers:\n  - kms: {name: p, endpoint: 'unix:///s', cacheSize: 1}\n");
        assert!(
            msg.contains("providers[0].kms: unknown field `cacheSize`"),
            "{msg}"
        );

        let msg = error("resources:\n- providers: [{identity: {}}]\n");
        assert!(msg.contains("resources[0]: missing field `resources`"), "{msg}");
        let msg =
            error("resources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [{name: k}]}\n");
        assert!(msg.contains("aesgcm.keys[0]: missing field `secret`"), "{msg}");
        let msg = error("resources:\n- resources: [secrets]\n  providers:\n  - kms: {name: p}\n");
        assert!(
            msg.contains("providers[0].kms: missing field `endpoint`"),
            "{msg}"
        );
        assert!(error("").contains("missing field `resources`"));
    }

    #[test]
    fn refuses_empty_lists_and_resources() {
        assert_eq!(error("resources: []\n"), "resources is empty");
        assert_eq!(
            error("resources:\n- resources: []\n  providers: [{identity: {}}]\n"),
            "resources[0].resources is empty"
        );
        assert_eq!(
            error("resources:\n- resources: [secrets]\n  providers: []\n"),
            "resources[0].providers is empty"
        );
        assert_eq!(
            error("resources:\n- resources: [secrets]\n  providers: [{identity: {}}]\n- resources: [secrets, '']\n  providers: [{identity: {}}]\n"),
            "resources[1].resources[1] is empty"
        );
        let msg = error("resources:\n- resources: ['*']\n  providers: [{identity: {}}]\n");
        assert!(
            msg.starts_with("resources[0].resources[0] (\"*\"): use \"*.\""),
            "{msg}"
        );
        for bad in ["'sec*'", "'*apps'", "'*.app*'"] {
            let msg = error(&format!(
                "resources:\n- resources: [{bad}]\n  providers: [{{identity: {{}}}}]\n"
            ));
            assert!(msg.contains("a wildcard is written"), "{bad}: {msg}");
        }
        let msg = error("resources:\n- resources: [Secrets]\n  providers: [{identity: {}}]\n");
        assert!(
            msg.contains("resources[0].resources[0] (\"Secrets\"): resource names are lowercase"),
            "{msg}"
        );
        assert_eq!(
            error("resources:\n- resources: [secrets]\n  providers: [{aesgcm: {keys: []}}]\n"),
            "resources[0].providers[0].aesgcm.keys is empty"
        );
    }

    #[test]
    fn refuses_zero_or_two_provider_keys() {
        let msg = error("resources:\n- resources: [secrets]\n  providers: [{identity: {}}, {}]\n");
        assert!(
            msg.starts_with("resources[0].providers[1] names no provider; want exactly one"),
            "{msg}"
        );
        let msg = error(&format!("resources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {{keys: [{{name: k, secret: {K16}}}]}}\n    identity: {{}}\n"));
        assert!(
            msg.starts_with("resources[0].providers[0] names 2 providers (aesgcm, identity)"),
            "{msg}"
        );
    }

    /// The error of one provider item in rule 0, as written in `item`.
    fn provider_error(item: &str) -> String {
        error(&format!(
            "resources:\n- resources: [secrets]\n  providers:\n  - identity: {{}}\n  - {item}\n"
        ))
    }

    #[test]
    fn refuses_bad_keys() {
        assert_eq!(
            provider_error(&format!("aesgcm: {{keys: [{{name: '', secret: {K16}}}]}}")),
            "resources[0].providers[1].aesgcm.keys[0]: name is empty"
        );
        assert_eq!(
            provider_error(&format!(
                "aescbc: {{keys: [{{name: a, secret: {K16}}}, {{name: b, secret: {K16}}}, {{name: a, secret: {K32}}}]}}"
            )),
            "resources[0].providers[1].aescbc.keys[2] (\"a\"): name is used by keys[0] too"
        );
        let msg = provider_error("secretbox: {keys: [{name: k, secret: 'not base64!'}]}");
        assert!(
            msg.starts_with(
                "resources[0].providers[1].secretbox.keys[0] (\"k\"): secret is not standard base64"
            ),
            "{msg}"
        );
        // URL-safe base64 is not standard.
        let msg = provider_error("aesgcm: {keys: [{name: k, secret: '-_-_-_-_-_-_-_-_-_-_-w=='}]}");
        assert!(msg.contains("secret is not standard base64"), "{msg}");
        assert_eq!(
            provider_error("aesgcm: {keys: [{name: key1, secret: c25vcmxheF9hd2Vzb21l}]}"),
            "resources[0].providers[1].aesgcm.keys[0] (\"key1\"): secret is 15 bytes after base64 decoding; aesgcm takes 16, 24 or 32"
        );
        assert_eq!(
            provider_error(&format!("aescbc: {{keys: [{{name: k, secret: {K32}}}, {{name: j, secret: ''}}]}}")),
            "resources[0].providers[1].aescbc.keys[1] (\"j\"): secret is 0 bytes after base64 decoding; aescbc takes 16, 24 or 32"
        );
        assert_eq!(
            provider_error(&format!("secretbox: {{keys: [{{name: k, secret: {K16}}}]}}")),
            "resources[0].providers[1].secretbox.keys[0] (\"k\"): secret is 16 bytes after base64 decoding; secretbox takes 32"
        );
    }

    #[test]
    fn refuses_bad_kms_providers() {
        let kms = |fields: &str| provider_error(&format!("kms: {{{fields}}}"));
        let at = "resources[0].providers[1].kms";
        assert_eq!(
            kms("name: '', endpoint: 'unix:///s'"),
            format!("{at}: name is empty")
        );
        assert_eq!(
            kms("apiVersion: v2, name: 'a:b', endpoint: 'unix:///s'"),
            format!("{at} (\"a:b\"): a kms v2 name may not contain ':'")
        );
        // v1 names may.
        load_text(&format!(
            "{HEAD}resources:\n- resources: [secrets]\n  providers: [{{kms: {{name: 'a:b', endpoint: 'unix:///s'}}}}]\n"
        ))
        .unwrap();
        assert_eq!(
            kms("apiVersion: v3, name: p, endpoint: 'unix:///s'"),
            format!("{at} (\"p\"): apiVersion \"v3\" is not v1 or v2")
        );
        for endpoint in [
            "'tcp://127.0.0.1:80'",
            "'unix://'",
            "'/var/run/kms.sock'",
            "'unix:/s'",
            "''",
        ] {
            let msg = kms(&format!("name: p, endpoint: {endpoint}"));
            assert!(
                msg.starts_with(&format!("{at} (\"p\"): endpoint "))
                    && msg.ends_with("is not unix://<socket path>"),
                "{endpoint}: {msg}"
            );
        }
        for timeout in ["3", "3x", "", "s", "1.s5", "-", "3 s", "10000000000h"] {
            let msg = kms(&format!("name: p, endpoint: 'unix:///s', timeout: '{timeout}'"));
            assert!(
                msg.starts_with(&format!("{at} (\"p\"): timeout {timeout:?} is not a duration")),
                "{timeout}: {msg}"
            );
        }
        for timeout in ["0", "0s", "-3s", "0.0000000001s"] {
            assert_eq!(
                kms(&format!("name: p, endpoint: 'unix:///s', timeout: '{timeout}'")),
                format!("{at} (\"p\"): timeout {timeout:?} is not positive")
            );
        }
        let msg = error("resources:\n- resources: [secrets]\n  providers: [{kms: {apiVersion: v2, name: p, endpoint: 'unix:///a'}}]\n- resources: [configmaps]\n  providers: [{kms: {apiVersion: v2, name: p, endpoint: 'unix:///b'}}]\n");
        assert_eq!(
            msg,
            "resources[1].providers[0].kms (\"p\"): another kms provider has this name; names must be unique"
        );
    }

    #[test]
    fn parses_go_durations() {
        let s = 1_000_000_000i64;
        for (text, nanos) in [
            ("3s", 3 * s),
            ("500ms", s / 2),
            ("1m30s", 90 * s),
            ("1h", 3600 * s),
            ("1.5h", 5400 * s),
            (".5s", s / 2),
            ("1.s", s),
            ("+2m", 120 * s),
            ("-1.5s", -3 * s / 2),
            ("10us", 10_000),
            ("10\u{b5}s", 10_000),
            ("10\u{3bc}s", 10_000),
            ("7ns", 7),
            ("1h2m3s4ms5us6ns", 3_723_004_005_006),
            ("0", 0),
            ("2562047h47m16.854775807s", i64::MAX),
        ] {
            assert_eq!(go_duration(text), Ok(nanos), "{text}");
        }
        assert_eq!(go_duration("3"), Err("missing unit"));
        assert_eq!(go_duration("3d"), Err("unknown unit"));
        assert_eq!(go_duration("."), Err("expected a number"));
        assert_eq!(go_duration("2562047h47m16.854775808s"), Err("out of range"));
        assert_eq!(go_duration(""), Err("empty"));
    }
}
