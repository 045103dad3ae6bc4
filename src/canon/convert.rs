//! A manifest of a kind stored in a version clusters no longer serve,
//! converted to the version they do (`apps/v1beta2` Deployments became
//! `apps/v1`, served alone since Kubernetes 1.16), where the two differ
//! only in fields the older version had and the newer dropped.

use serde_json::{Map, Value};

/// Kinds and the versions they move from, to the served version, with the
/// `spec` fields only the older versions had. Versions whose conversion
/// changes the shape of what stays (an Ingress's backends, a
/// PodDisruptionBudget's empty selector) are not here.
const CONVERSIONS: [(&str, &[&str], &str, &[&str]); 8] = [
    (
        "Deployment",
        &["apps/v1beta1", "apps/v1beta2", "extensions/v1beta1"],
        "apps/v1",
        &["rollbackTo"],
    ),
    (
        "DaemonSet",
        &["apps/v1beta2", "extensions/v1beta1"],
        "apps/v1",
        &["templateGeneration"],
    ),
    (
        "ReplicaSet",
        &["apps/v1beta2", "extensions/v1beta1"],
        "apps/v1",
        &[],
    ),
    ("StatefulSet", &["apps/v1beta1", "apps/v1beta2"], "apps/v1", &[]),
    (
        "ControllerRevision",
        &["apps/v1beta1", "apps/v1beta2"],
        "apps/v1",
        &[],
    ),
    ("CronJob", &["batch/v1beta1"], "batch/v1", &[]),
    (
        "HorizontalPodAutoscaler",
        &["autoscaling/v2beta2"],
        "autoscaling/v2",
        &[],
    ),
    (
        "NetworkPolicy",
        &["extensions/v1beta1", "networking.k8s.io/v1beta1"],
        "networking.k8s.io/v1",
        &[],
    ),
];

/// Workloads whose selector `apps/v1` requires, where older versions
/// defaulted it from the template's labels.
const SELECTED: [&str; 4] = ["Deployment", "DaemonSet", "ReplicaSet", "StatefulSet"];

/// What [`to_served`] did, for the user to hear.
#[derive(Debug, PartialEq, Eq)]
pub struct Converted {
    pub from: String,
    pub to: &'static str,
    /// `spec` fields the served version does not have, dropped.
    pub dropped: Vec<&'static str>,
    /// The selector was missing and is now the template's labels.
    pub selector_from_labels: bool,
}

impl std::fmt::Display for Converted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "converted from {} to {}", self.from, self.to)?;
        for field in &self.dropped {
            write!(f, "; dropped spec.{field}, which {} does not have", self.to)?;
        }
        if self.selector_from_labels {
            write!(
                f,
                "; set spec.selector.matchLabels to the template's labels, as {} defaulted it",
                self.from
            )?;
        }
        Ok(())
    }
}

/// Converts `object` to the version clusters serve its kind in, when it is
/// stored in one they no longer serve and the conversion is a rename;
/// `None` when there is nothing to convert or no such conversion.
pub fn to_served(object: &mut Value) -> Option<Converted> {
    let map = object.as_object_mut()?;
    let kind = map.get("kind")?.as_str()?;
    let from = map.get("apiVersion")?.as_str()?;
    let &(_, _, to, only_older) = CONVERSIONS
        .iter()
        .find(|(k, older, _, _)| *k == kind && older.contains(&from))?;
    let mut converted = Converted {
        from: from.to_string(),
        to,
        dropped: Vec::new(),
        selector_from_labels: false,
    };
    let selected = SELECTED.contains(&kind);
    map.insert("apiVersion".into(), Value::String(to.into()));
    if let Some(Value::Object(spec)) = map.get_mut("spec") {
        for field in only_older {
            if spec.shift_remove(*field).is_some() {
                converted.dropped.push(field);
            }
        }
        if selected && !spec.contains_key("selector") {
            let labels = spec
                .get("template")
                .and_then(|t| t.get("metadata"))
                .and_then(|m| m.get("labels"))
                .cloned();
            if let Some(labels @ Value::Object(_)) = labels {
                let mut selector = Map::new();
                selector.insert("matchLabels".into(), labels);
                spec.insert("selector".into(), Value::Object(selector));
                converted.selector_from_labels = true;
            }
        }
    }
    Some(converted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_old_deployment_becomes_apps_v1() {
        let mut d = json!({"apiVersion": "extensions/v1beta1", "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"replicas": 2, "rollbackTo": {"revision": 3},
                "template": {"metadata": {"labels": {"app.kubernetes.io/name": "web"}}}}});
        let c = to_served(&mut d).unwrap();
        assert_eq!(d["apiVersion"], "apps/v1");
        assert!(d["spec"].get("rollbackTo").is_none());
        assert_eq!(
            d["spec"]["selector"],
            json!({"matchLabels": {"app.kubernetes.io/name": "web"}})
        );
        assert_eq!(d["spec"]["replicas"], 2);
        assert_eq!(
            c.to_string(),
            "converted from extensions/v1beta1 to apps/v1; dropped spec.rollbackTo, which apps/v1 \
             does not have; set spec.selector.matchLabels to the template's labels, as \
             extensions/v1beta1 defaulted it"
        );
    }

    #[test]
    fn a_served_version_or_a_reshaped_kind_is_left_alone() {
        let mut current = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {}});
        assert_eq!(to_served(&mut current), None);
        let mut ingress = json!({"apiVersion": "extensions/v1beta1", "kind": "Ingress",
            "spec": {"backend": {"serviceName": "web", "servicePort": 80}}});
        let before = ingress.clone();
        assert_eq!(to_served(&mut ingress), None);
        assert_eq!(ingress, before);
    }

    #[test]
    fn a_selector_that_is_there_is_kept() {
        let selector = json!({"matchLabels": {"app": "db"}});
        let mut s = json!({"apiVersion": "apps/v1beta2", "kind": "StatefulSet",
            "spec": {"selector": selector, "template": {"metadata": {"labels": {"app": "db", "tier": "x"}}}}});
        let c = to_served(&mut s).unwrap();
        assert_eq!(s["spec"]["selector"], selector);
        assert_eq!(c.to_string(), "converted from apps/v1beta2 to apps/v1");
    }
}
