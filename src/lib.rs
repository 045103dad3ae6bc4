//! etcd-inspector: reads the raw keys and revision history kube-apiserver
//! keeps in etcd, decodes every object, and finds what the Kubernetes API
//! hides.
//!
//! The crate follows the data, one module per stage: `source` (live etcd,
//! data files) → `decrypt`, `decode` and `canon` (values encrypted at rest,
//! objects, canonical form, hashes) → `ingest` (one path through those for
//! every stored value) → `store` (SQLite) → `analyze` (detectors) → `report` (formats) →
//! `lifecycle` (a recorded run from start to finish) → `cmd` (commands).

pub mod analyze;
pub mod canon;
pub mod cli;
pub mod cmd;
pub mod decode;
pub mod decrypt;
pub mod duration;
pub mod error_line;
pub mod hex;
pub mod human_time;
pub mod ingest;
pub mod json_sink;
pub mod jsonpath;
pub mod lifecycle;
pub mod moment;
pub mod report;
pub mod source;
pub mod stop;
pub mod store;
pub mod unknown;
