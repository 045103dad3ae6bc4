//! The demo's incident played on a real control plane (`cargo run -p demo --
//! --control-plane`): each seed phenomenon made through the API the way it
//! happens in clusters, by the people and pipelines who make it, and the
//! findings it must produce. Shared by the demo and by the control-plane
//! test tier (`tests/it/util/mod.rs` includes this file by path), which
//! checks that every one is found at the severity a reader expects and
//! nothing else at `low` or above.

use super::control_plane::ControlPlane;
use anyhow::{ensure, Result};
use std::time::Duration;

/// A finding the incident must produce.
pub struct Expected {
    pub detector: &'static str,
    /// The key it names; one ending in `-` is a `generateName` prefix
    /// (the API picks the rest).
    pub key: &'static str,
    pub severity: &'static str,
}

impl Expected {
    /// Whether a finding's `key` is the one expected.
    pub fn matches(&self, key: &str) -> bool {
        match self.key.strip_suffix('-') {
            Some(_) => key.starts_with(self.key),
            None => key == self.key,
        }
    }
}

const fn expect(detector: &'static str, key: &'static str, severity: &'static str) -> Expected {
    Expected {
        detector,
        key,
        severity,
    }
}

/// Every finding the incident must produce.
pub const EXPECTED: &[Expected] = &[
    expect("flapping", "/registry/deployments/seeds/web", "medium"),
    expect(
        "duplicate-entries",
        "/registry/rolebindings/seeds/readers",
        "medium",
    ),
    expect("recreated", "/registry/deployments/seeds/recreated", "medium"),
    expect("stuck-deletion", "/registry/configmaps/seeds/held", "medium"),
    expect("excess-siblings", "/registry/configmaps/seeds/retry-", "low"),
    expect("generation-mismatch", "/registry/deployments/seeds/web", "high"),
    expect(
        "prunable-fields",
        "/registry/example.com/widgets/seeds/w",
        "medium",
    ),
    expect("dangling-owner", "/registry/configmaps/seeds/orphan", "medium"),
    expect("encoding-only", "/registry/secrets/planned/secret-", "info"),
    expect(
        "encoding-only",
        "/registry/example.com/gadgets/planned/gadget-",
        "info",
    ),
];

/// How many Secrets and Gadgets the planned operations rewrite.
pub const PLANNED: usize = 5;

/// One shop: two Deployments behind Services, a ConfigMap whose keys hold
/// dots, and a CronJob every minute whose Jobs complete and are cleaned up.
pub const SHOP: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: shop
  labels:
    app.kubernetes.io/name: web
data:
  app.properties: "color=blue"
  log.level: info
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels:
    app.kubernetes.io/name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: web
  template:
    metadata:
      labels:
        app.kubernetes.io/name: web
    spec:
      containers:
      - name: web
        image: registry.example.com/web:1.0
        ports:
        - containerPort: 8080
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: shop
spec:
  replicas: 1
  selector:
    matchLabels:
      app: api
  template:
    metadata:
      labels:
        app: api
    spec:
      containers:
      - name: api
        image: registry.example.com/api:1.0
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector:
    app.kubernetes.io/name: web
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: shop
spec:
  selector:
    app: api
  ports:
  - port: 80
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: tick
  namespace: shop
spec:
  schedule: "* * * * *"
  successfulJobsHistoryLimit: 1
  failedJobsHistoryLimit: 1
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: tick
            image: registry.example.com/tick:1.0
"#;

/// What the seed phenomena start from: a namespace and a Deployment
/// someone will delete and apply again.
const SEEDS: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: seeds
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: recreated
  namespace: seeds
spec:
  replicas: 0
  selector:
    matchLabels:
      app: recreated
  template:
    metadata:
      labels:
        app: recreated
    spec:
      containers:
      - name: app
        image: registry.example.com/app:1.0
"#;

/// The shop's web Deployment, in the seeds namespace: what a pipeline
/// applies.
fn pipeline_deployment() -> String {
    SHOP.split("---\n")
        .find(|doc| doc.starts_with("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"))
        .expect("the shop has a web Deployment")
        .replace("namespace: shop", "namespace: seeds")
}

/// A CRD for Widgets whose schema declares `spec.size` and the `extra`
/// properties given.
fn widget_crd(extra: &str) -> String {
    crd("widgets", "Widget", extra)
}

/// A CRD `PLURAL.example.com` of kind `kind`, served and stored as `v1`,
/// whose schema declares `spec.size` and the `extra` properties given.
fn crd(plural: &str, kind: &str, extra: &str) -> String {
    let singular = kind.to_lowercase();
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: {plural}, singular: {singular}, kind: {kind}}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: integer}}{extra}
"#
    )
}

/// Waits until the CRD `name` is established, then applies `object` (of
/// its kind), retrying while the new resource is not yet served.
fn apply_custom(plane: &ControlPlane, name: &str, object: &str) -> Result<()> {
    plane.kubectl(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{name}"),
        "--timeout=60s",
    ])?;
    plane.wait_for(Duration::from_secs(30), "a custom resource created", |cp| {
        cp.try_apply(object)
    })
}

/// Applies the shop and waits until both Deployments are rolled out.
pub fn shop(plane: &ControlPlane) -> Result<()> {
    plane.apply(SHOP)?;
    for deployment in ["deploy/web", "deploy/api"] {
        plane.kubectl(&["rollout", "status", "-n", "shop", deployment, "--timeout=120s"])?;
    }
    Ok(())
}

/// What the incident starts from, to be read before it is played: the
/// `seeds` namespace, and in `planned` [`PLANNED`] Secrets and Gadgets of
/// a CRD stored as `v1`.
pub fn prepare(plane: &ControlPlane) -> Result<()> {
    plane.apply(SEEDS)?;
    plane.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: planned\n")?;
    for i in 0..PLANNED {
        plane.kubectl(&[
            "create",
            "secret",
            "generic",
            &format!("secret-{i}"),
            "-n",
            "planned",
            &format!("--from-literal=password=p4ss-{i}"),
        ])?;
    }
    plane.apply(&crd("gadgets", "Gadget", ""))?;
    for i in 0..PLANNED {
        let gadget = format!(
            "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: gadget-{i}\n  namespace: planned\nspec:\n  size: {i}\n"
        );
        apply_custom(plane, "gadgets.example.com", &gadget)?;
    }
    Ok(())
}

/// Planned operations that rewrite every object of a kind, each done the
/// documented way (`kubectl get -o json | kubectl replace -f -`): the
/// Secrets' encryption key rotated, and the Gadgets' storage version moved
/// from `v1` to `v2`. Each is one `info` finding, not one per object.
fn planned_operations(plane: &mut ControlPlane) -> Result<()> {
    plane.rotate_encryption_key()?;
    let replace_all = |plane: &ControlPlane, resource: &str| -> Result<()> {
        let all = plane.kubectl(&["get", resource, "-n", "planned", "-o", "json"])?;
        let all = String::from_utf8_lossy(&all.stdout);
        plane
            .kubectl_as("admin", &["replace", "-f", "-"], Some(&all))
            .map(drop)
    };
    replace_all(plane, "secrets")?;
    plane.apply(&crd("gadgets", "Gadget", "").replace(
        "  - name: v1\n    served: true\n    storage: true\n",
        "  - name: v1\n    served: true\n    storage: false\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size: {type: integer}\n  - name: v2\n    served: true\n    storage: true\n",
    ))?;
    replace_all(plane, "gadgets.example.com")
}

/// Plays the incident in the `seeds` namespace, each phenomenon the way it
/// happens in clusters, and the planned operations in `planned`. Ends with
/// the controller manager stopped (an owner was deleted while no garbage
/// collector ran).
pub fn incident(plane: &mut ControlPlane) -> Result<()> {
    // Two writers fight over one field: a pipeline's server-side apply sets
    // replicas to 2, a person's `kubectl scale` to 5, three times over.
    for _ in 0..3 {
        plane.kubectl_as(
            "ci-pipeline",
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=ci-pipeline",
                "-f",
                "-",
            ],
            Some(&pipeline_deployment()),
        )?;
        plane.kubectl_as(
            "alice@example.com",
            &["scale", "-n", "seeds", "deploy/web", "--replicas=5"],
            None,
        )?;
    }
    // A RoleBinding whose subject is listed twice: the API accepts it.
    plane.apply(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: readers
  namespace: seeds
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: view
subjects:
- kind: User
  name: bob@example.com
  apiGroup: rbac.authorization.k8s.io
- kind: User
  name: bob@example.com
  apiGroup: rbac.authorization.k8s.io
"#,
    )?;
    // Deleted and created again under the same name, the same content.
    plane.kubectl(&["delete", "deployment", "-n", "seeds", "recreated"])?;
    plane.apply(SEEDS)?;
    // A deletion held by a finalizer nobody removes.
    plane.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: seeds\n  finalizers: [example.com/hold]\ndata:\n  a: b\n",
    )?;
    plane.kubectl(&["delete", "configmap", "-n", "seeds", "held", "--wait=false"])?;
    // A create retried after the client timed out: the same object posted
    // twice with generateName.
    let retried = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: retry-\n  namespace: seeds\ndata:\n  job: nightly\n";
    for _ in 0..2 {
        plane.kubectl_as("ci-pipeline", &["create", "-f", "-"], Some(retried))?;
    }
    // A status write that loses to a newer one: an old controller writes
    // the observedGeneration it last saw over the newer status.
    plane.wait_for(
        Duration::from_secs(60),
        "the Deployment's status observed",
        |cp| {
            Ok(
                cp.jsonpath(&["deploy", "-n", "seeds", "web"], "{.status.observedGeneration}")?
                    == cp.jsonpath(&["deploy", "-n", "seeds", "web"], "{.metadata.generation}")?,
            )
        },
    )?;
    plane.kubectl_as(
        "ci-pipeline",
        &[
            "patch",
            "deploy",
            "-n",
            "seeds",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"observedGeneration":1}}"#,
        ],
        None,
    )?;
    // Duplicate ownerReferences cannot reach etcd through a current
    // apiserver: it stores one of two identical references (only old
    // releases and writes around it store both).
    plane.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\n  namespace: seeds\n")?;
    let uid = plane.jsonpath(&["configmap", "-n", "seeds", "owner"], "{.metadata.uid}")?;
    let reference = format!("  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}}}\n");
    plane.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned\n  namespace: seeds\n  ownerReferences:\n{reference}{reference}"
    ))?;
    let stored = plane.jsonpath(
        &["configmap", "-n", "seeds", "owned"],
        "{.metadata.ownerReferences[*].uid}",
    )?;
    ensure!(
        stored.split_whitespace().count() == 1,
        "kube-apiserver {} stored both of two identical ownerReferences: {stored}",
        plane.version
    );
    // A CRD whose schema is tightened after a custom resource was written:
    // the field stays stored until the next write drops it.
    plane.apply(&widget_crd("\n              colour: {type: string}"))?;
    let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: seeds\nspec:\n  size: 1\n  colour: red\n";
    apply_custom(plane, "widgets.example.com", widget)?;
    plane.apply(&widget_crd(""))?;
    planned_operations(plane)?;
    // An owner deleted while the garbage collector is not running (the
    // controller manager down): its dependent stays, pointing at nothing.
    plane.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: parent\n  namespace: seeds\n")?;
    let uid = plane.jsonpath(&["configmap", "-n", "seeds", "parent"], "{.metadata.uid}")?;
    plane.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: orphan\n  namespace: seeds\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: parent, uid: {uid}}}\n"
    ))?;
    plane.stop("kube-controller-manager")?;
    plane.kubectl(&["delete", "configmap", "-n", "seeds", "parent"])?;
    Ok(())
}
