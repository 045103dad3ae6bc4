//! `encryption-at-rest`: objects at the head that are not stored the way
//! the cluster's EncryptionConfiguration writes them now: in plaintext
//! though their resource is encrypted (`medium`), encrypted though the
//! config has no provider that reads them (`medium`: the apiserver cannot
//! read them), under a key the config's providers do not have (`high`:
//! every read fails, and only restoring the key helps), or under a provider
//! or key other than the write key, i.e. not re-written since a key
//! rotation (`low`). Judged against the policy
//! the newest run with `--encryption-config` recorded, at its head.

use super::detector::{Detector, Findings, KeyInput, Reads, Make, Registration, Whole};
use crate::source::Revision;
use crate::decode::key::COMPACT_REV_KEY;
use crate::decrypt::label::IDENTITY;
use crate::decrypt::policy::Policy;
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;
use crate::store::StoreError;
use std::collections::BTreeMap;

pub const NAME: &str = "encryption-at-rest";

/// Audits each key's head revision against the newest recorded policy.
pub const DETECTOR: Registration = Registration {
    name: NAME,
    reads: Reads::KeyHistory,
    severity: Severity::Medium,
    topic: None,
    make: Make::With(|setup| match setup.store.encryption_policy(setup.cluster)? {
        Some((policy, head)) => Ok(Box::new(Audit::new(policy, head))),
        None => Ok(Box::new(Unconfigured)),
    }),
};

/// No run recorded an encryption configuration: nothing to judge by.
struct Unconfigured;

impl Detector for Unconfigured {}

impl Detector for Audit {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, _: &mut Findings) -> Result<(), StoreError> {
        self.push(input.history);
        Ok(())
    }

    fn finish(self: Box<Self>, _: &Whole<'_>, out: &mut Findings) {
        out.extend((*self).into_findings());
    }
}

/// Objects shown by name in a finding's summary and commands.
const SHOWN: usize = 10;

/// One object stored otherwise than the policy writes.
struct Stale {
    key: String,
    object: String,
    namespace: Option<String>,
    name: Option<String>,
    revision: Revision,
}

/// What sets a group of stale objects apart.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Group {
    group: String,
    resource: String,
    /// `identity` for plaintext.
    stored: String,
    /// `None`: the config names no provider for the resource.
    write: Option<String>,
    /// The config's providers have no key for what is stored.
    key_missing: bool,
}

/// Collects, key by key, the objects live at `head` that are not stored
/// under their resource's write key.
pub struct Audit {
    policy: Policy,
    head: Revision,
    groups: BTreeMap<Group, Vec<Stale>>,
}

impl Audit {
    pub fn new(policy: Policy, head: Revision) -> Audit {
        Audit {
            policy,
            head,
            groups: BTreeMap::new(),
        }
    }

    /// Looks at one key's history (oldest first).
    pub fn push(&mut self, history: &[ObjectRevision]) {
        let Some(r) = history.iter().rev().find(|r| r.mod_revision <= self.head) else {
            return;
        };
        let Some(resource) = r.resource.as_deref() else {
            return;
        };
        // Not objects the apiserver's storage transforms.
        if r.deleted
            || resource == COMPACT_REV_KEY
            || r.key.contains("/masterleases/")
            || r.key.contains("/ranges/")
        {
            return;
        }
        let group = r.group.clone().unwrap_or_default();
        let rule = self.policy.rule_for(&group, resource);
        let stored = r.encryption.as_deref();
        let (write, key_missing) = match rule {
            Some(rule) if rule.is_current(stored) => return,
            None if stored.is_none() => return,
            Some(rule) => (Some(rule.write.clone()), !rule.can_read(stored)),
            None => (None, false),
        };
        let group = Group {
            group,
            resource: resource.to_string(),
            stored: stored.unwrap_or(IDENTITY).to_string(),
            write,
            key_missing,
        };
        self.groups.entry(group).or_default().push(Stale {
            key: r.key.clone(),
            object: r.object(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            revision: r.mod_revision,
        });
    }

    /// One finding per resource and stored provider/key.
    pub fn into_findings(self) -> Vec<Finding> {
        self.groups
            .into_iter()
            .map(|(g, objects)| finding(&g, &objects))
            .collect()
    }
}

fn finding(g: &Group, objects: &[Stale]) -> Finding {
    let resource = match g.group.as_str() {
        "" => g.resource.clone(),
        group => format!("{}.{group}", g.resource),
    };
    let n = objects.len();
    let shown: Vec<&str> = objects.iter().take(SHOWN).map(|o| o.object.as_str()).collect();
    let more = if n > SHOWN {
        format!(", … {} more", n - SHOWN)
    } else {
        String::new()
    };
    let restore = format!(
        "restore key {} to the encryption config's {resource} providers (and restart the apiservers)",
        g.stored
    );
    let (severity, what) = match &g.write {
        Some(_) if g.key_missing => (
            Severity::High,
            format!(
                "stored under {}, a key the encryption config does not have: the apiserver cannot read {} (every read fails, so re-writing is no fix)",
                g.stored,
                if n == 1 { "it" } else { "them" }
            ),
        ),
        None => (
            Severity::Medium,
            format!(
                "stored encrypted under {}, but the encryption config has no provider for {resource}: the apiserver cannot read {}",
                g.stored,
                if n == 1 { "it" } else { "them" }
            ),
        ),
        Some(write) if g.stored == IDENTITY => (
            Severity::Medium,
            format!("stored in plaintext, though the encryption config writes {resource} with {write}"),
        ),
        Some(write) => (
            Severity::Low,
            format!("stored under {}, not the current write key {write}: not re-written since the rotation", g.stored),
        ),
    };
    let replace = |o: &Stale| {
        let name = o.name.as_deref().unwrap_or("<name>");
        match &o.namespace {
            Some(ns) => format!("kubectl get {resource} -n {ns} {name} -o json | kubectl replace -f -"),
            None => format!("kubectl get {resource} {name} -o json | kubectl replace -f -"),
        }
    };
    let all = format!("kubectl get {resource} --all-namespaces -o json | kubectl replace -f -");
    let fix = match (g.key_missing, n) {
        (true, _) => restore.clone(),
        (false, 1) => replace(&objects[0]),
        (false, _) => all.clone(),
    };
    Finding {
        detector: NAME,
        severity,
        keys: objects.iter().map(|o| o.key.clone()).collect(),
        revisions: objects.iter().map(|o| o.revision).collect(),
        summary: format!("{n} {resource} {what} ({}{more}); fix: {fix}", shown.join(", ")),
        details: serde_json::json!({
            "resource": resource,
            "stored": g.stored,
            "write": g.write,
            "count": n,
            "objects": objects.iter().map(|o| o.object.as_str()).collect::<Vec<_>>(),
            "fix": fix,
            "key_missing": g.key_missing,
            "commands": match g.key_missing {
                true => Vec::new(),
                false => objects.iter().take(100).map(replace).collect::<Vec<_>>(),
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decrypt::policy::PolicyRule;

    fn policy() -> Policy {
        Policy {
            rules: vec![
                PolicyRule {
                    resources: vec!["secrets".into()],
                    write: "aesgcm:key2".into(),
                    reads: Some(vec!["aesgcm:key2".into(), "aescbc:key1".into(), IDENTITY.into()]),
                },
                PolicyRule {
                    resources: vec!["*.apps".into()],
                    write: IDENTITY.into(),
                    reads: Some(vec![IDENTITY.into()]),
                },
            ],
        }
    }

    fn object(
        group: &str,
        resource: &str,
        name: &str,
        revision: i64,
        encryption: Option<&str>,
    ) -> ObjectRevision {
        ObjectRevision {
            key: format!("/registry/{resource}/shop/{name}"),
            group: Some(group.into()),
            resource: Some(resource.into()),
            mod_revision: Revision(revision),
            create_revision: Revision(revision),
            kind: Some("Secret".into()),
            namespace: Some("shop".into()),
            name: Some(name.into()),
            encryption: encryption.map(str::to_string),
            ..Default::default()
        }
    }

    fn audit(histories: &[Vec<ObjectRevision>], head: i64) -> Vec<Finding> {
        let policy = policy();
        let mut audit = Audit::new(policy, Revision(head));
        histories.iter().for_each(|h| audit.push(h));
        audit.into_findings()
    }

    #[test]
    fn plaintext_and_old_keys_are_found_current_ones_are_not() {
        let findings = audit(
            &[
                vec![object("", "secrets", "ok", 2, Some("aesgcm:key2"))],
                vec![object("", "secrets", "plain", 3, None)],
                vec![object("", "secrets", "old", 4, Some("aescbc:key1"))],
                vec![object("apps", "deployments", "web", 5, None)],
                vec![object("", "configmaps", "c", 6, None)],
            ],
            10,
        );
        assert_eq!(findings.len(), 2, "{findings:#?}");
        let plain = findings.iter().find(|f| f.severity == Severity::Medium).unwrap();
        assert_eq!(plain.keys, ["/registry/secrets/shop/plain"]);
        assert!(plain.summary.contains("plaintext"), "{}", plain.summary);
        assert!(
            plain
                .summary
                .contains("kubectl get secrets -n shop plain -o json | kubectl replace -f -"),
            "{}",
            plain.summary
        );
        let old = findings.iter().find(|f| f.severity == Severity::Low).unwrap();
        assert_eq!(old.details["stored"], "aescbc:key1");
        assert_eq!(old.details["write"], "aesgcm:key2");
    }

    #[test]
    fn judged_at_the_policy_head_and_deleted_objects_are_not() {
        // Re-written with the new key after the head: still stale at the head.
        let rewritten = vec![
            object("", "secrets", "s", 2, None),
            object("", "secrets", "s", 20, Some("aesgcm:key2")),
        ];
        assert_eq!(audit(std::slice::from_ref(&rewritten), 10).len(), 1);
        assert!(audit(&[rewritten], 30).is_empty());
        let mut gone = object("", "secrets", "g", 4, None);
        gone.deleted = true;
        assert!(audit(&[vec![object("", "secrets", "g", 2, None), gone]], 10).is_empty());
    }

    #[test]
    fn a_key_the_config_lacks_is_high_with_the_fix_that_works() {
        let f = audit(&[vec![object("", "secrets", "lost", 2, Some("aesgcm:keyX"))]], 10);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].severity, Severity::High);
        assert!(f[0].summary.contains("a key the encryption config does not have"), "{}", f[0].summary);
        assert!(f[0].summary.contains("fix: restore key aesgcm:keyX"), "{}", f[0].summary);
        assert!(!f[0].summary.contains("kubectl replace"), "{}", f[0].summary);
        assert_eq!(f[0].details["commands"], serde_json::json!([]));
    }

    #[test]
    fn encrypted_without_a_provider_is_unreadable() {
        let f = audit(&[vec![object("", "configmaps", "c", 2, Some("aescbc:key1"))]], 10);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Medium);
        assert!(f[0].summary.contains("cannot read"), "{}", f[0].summary);
    }

    #[test]
    fn many_objects_make_one_finding_with_the_resource_wide_command() {
        let histories: Vec<Vec<ObjectRevision>> = (0..15)
            .map(|i| {
                vec![object(
                    "",
                    "secrets",
                    &format!("s{i}"),
                    i + 1,
                    Some("aescbc:key1"),
                )]
            })
            .collect();
        let f = audit(&histories, 100);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].keys.len(), 15);
        assert!(f[0].summary.contains("… 5 more"), "{}", f[0].summary);
        assert_eq!(
            f[0].details["fix"],
            "kubectl get secrets --all-namespaces -o json | kubectl replace -f -"
        );
    }
}
