//! etcd-inspector: reads the raw keys and revision history kube-apiserver
//! keeps in etcd, decodes every object, and finds what the Kubernetes API
//! hides.
//!
//! The crate follows the data: `decode` turns one stored value into the
//! Kubernetes object it holds.

pub mod analyze;
pub mod canon;
pub mod cli;
pub mod cmd;
pub mod decode;
pub mod report;
pub mod source;
pub mod store;
