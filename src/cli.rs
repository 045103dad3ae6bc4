//! Command-line definitions (clap). No logic lives here.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Reads the raw keys and revisions kube-apiserver stores in etcd, decodes
/// every object and finds what the Kubernetes API hides.
#[derive(Parser, Debug)]
#[command(name = "etcd-inspector", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decode one raw value as stored in etcd and print the object.
    ///
    /// Recognises protobuf (k8s\0 envelope), JSON, CBOR, YAML and values
    /// encrypted at rest (k8s:enc:...). Exit status: 0 decoded, 1 error or
    /// undecodable value, 2 usage error, 3 value is encrypted.
    Decode(DecodeArgs),
}

#[derive(clap::Args, Debug)]
pub struct DecodeArgs {
    /// File holding the raw value; `-` or nothing reads standard input.
    pub input: Option<PathBuf>,
    /// The etcd key the value was stored under; parsed into group,
    /// resource, namespace and name (shown on standard error).
    #[arg(long)]
    pub key: Option<String>,
    /// The apiserver's storage prefix (`--etcd-prefix`).
    #[arg(long, default_value = crate::decode::key::DEFAULT_PREFIX)]
    pub prefix: String,
    /// Output format of the object.
    #[arg(short, long, value_enum, default_value_t = Format::Json)]
    pub output: Format,
    /// Print the detected encoding, apiVersion, kind, protobuf message and
    /// unknown fields on standard error.
    #[arg(long)]
    pub show_envelope: bool,
}

/// How an object is printed.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    Json,
    Yaml,
}
