//! The integration tests, built as one binary: a module per area, the
//! helpers they share once in `util`. The live modules start a real etcd;
//! `.ci/run` runs them once per etcd release with
//! `cargo test --test it -- snapshot:: scheduled:: …`.

mod util;

mod attribute;
mod changes;
mod clock;
mod cluster;
mod control_plane;
mod copy;
mod decode_cli;
mod decode_every_kind;
mod decode_fixtures;
mod detectors;
mod drift;
mod encode_roundtrip;
mod encryption;
mod fetch_choice;
mod field_paths;
mod fleet;
mod foreign_writes;
mod formats;
mod get_cli;
mod hash_key;
mod invariants;
mod kms_client;
mod lifecycle;
mod offline;
mod postgres;
mod postgres_fleet;
mod proto_path;
mod read_only;
mod report;
mod restore;
mod salvage;
mod scheduled;
mod semantic_property;
mod show;
mod snapshot;
mod stats;
mod store_contract;
mod tables;
mod wal;
