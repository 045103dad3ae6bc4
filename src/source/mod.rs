//! Sources of stored records: a live etcd through its API.

pub mod etcd;
