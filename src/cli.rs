//! Command-line definitions (clap). No logic lives here.

use crate::moment::Moment;
use crate::source::Revision;
use crate::store::cluster::ClusterName;
use crate::store::finding::Severity;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// `--fail-on` and `--severity` take a severity's name; clap stays here,
/// out of the domain type.
fn severity() -> impl TypedValueParser<Value = Severity> {
    PossibleValuesParser::new(Severity::ALL.map(Severity::as_str))
        .map(|name| Severity::parse(&name).expect("a listed severity"))
}

/// `--cluster NAME` on a writing command.
fn cluster_name() -> impl TypedValueParser<Value = ClusterName> {
    clap::builder::NonEmptyStringValueParser::new().try_map(|text| ClusterName::parse(&text))
}

/// A registered detector's name.
fn detector() -> PossibleValuesParser {
    PossibleValuesParser::new(crate::analyze::names())
}

/// Reads the raw keys and revisions kube-apiserver stores in etcd, decodes
/// every object and finds what the Kubernetes API hides.
#[derive(Parser, Debug)]
#[command(name = "etcd-inspector", version, about, long_about = None)]
pub struct Cli {
    /// The SQLite database runs are recorded in.
    #[arg(long, global = true, env = "ETCD_INSPECTOR_DB", default_value = crate::store::DEFAULT_DB)]
    pub db: PathBuf,
    /// How log lines (warnings, notices) are written to standard error:
    /// `text`, or `json`, one object a line with its time, level and
    /// fields, for a log collector (as Kubernetes components offer).
    #[arg(
        long,
        global = true,
        env = "ETCD_INSPECTOR_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,
    /// Print times in tables and report text in the local time zone, with
    /// its offset (`2026-11-29T10:00:01+01:00`, which --since, --until and
    /// --at take back), instead of UTC; `TZ` names the zone as usual. JSON
    /// and YAML stay in UTC.
    #[arg(long, global = true, env = "ETCD_INSPECTOR_LOCAL")]
    pub local: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decode one raw value as stored in etcd and print the object.
    ///
    /// Recognises protobuf (k8s\0 envelope), JSON, CBOR, YAML and values
    /// encrypted at rest (k8s:enc:...). Exit status: 0 decoded, 1 error or
    /// undecodable value, 2 usage error, 3 value is encrypted.
    Decode(DecodeArgs),
    /// Fetch one key from a live etcd (read-only) and print the decoded
    /// object, with `metadata.resourceVersion` set to the key's mod_revision
    /// as kube-apiserver does.
    ///
    /// Exit status: 0 decoded, 1 error (unreachable etcd, TLS or
    /// authentication failure, key not found, undecodable value), 2 usage
    /// error, 3 value is encrypted.
    Get(GetArgs),
    /// Read a live etcd (read-only), an etcd data file (--file), a member's
    /// data dir with its write-ahead log (--data-dir) or a downloaded
    /// snapshot (--fetch snapshot) into the database: the full state under
    /// the prefix and every revision etcd still retains since its last
    /// compaction (with --data-dir, every write the log still holds). Later
    /// runs add only what is new and record revisions lost to compaction in
    /// between as a history gap.
    ///
    /// Exit status: 0 complete, 1 failed (the run is recorded as failed), 4
    /// complete with findings at or above --fail-on, 130 interrupted by
    /// Ctrl-C or SIGTERM (recorded as interrupted).
    Snapshot(SnapshotArgs),
    /// Record a live etcd continuously: start as `snapshot` does, then
    /// watch and store every revision as it happens, committing every few
    /// seconds. For clusters that compact more often than a CronJob could
    /// snapshot. Resumes after a disconnect, recording a history gap if
    /// compaction overtook it.
    ///
    /// Exit status: 0 after --duration (run complete), 1 failed, 4 with
    /// --fail-on findings, 130 stopped by SIGTERM or Ctrl-C (run
    /// interrupted; everything received is kept and the next run continues
    /// from it).
    Follow(FollowArgs),
    /// Remove old runs and the revisions only they needed, keeping each
    /// remaining run's state and history (so `diff` between remaining runs
    /// is unchanged) and always the newest complete run of each cluster.
    Prune(PruneArgs),
    /// Copy runs from one database into another: a SQLite file taken on a
    /// laptop into the fleet's PostgreSQL (or back), with what they stored
    /// and what was learnt of their clusters (findings, audit requests,
    /// the clock). What the target holds already is left as it is, so a
    /// second copy adds nothing; --db is not used.
    Copy(CopyArgs),
    /// List the runs recorded in the database.
    Runs(RunsArgs),
    /// Every stored revision of one object, oldest first, across deletes
    /// and recreates, with its change class.
    History(HistoryArgs),
    /// One object as it was stored at a revision, a time or a run, from
    /// the database (also long after etcd compacted it away), as YAML (the
    /// default, as kubectl prints it) or JSON; with --for-apply, as a
    /// manifest `kubectl apply -f` takes to recreate it.
    Show(ShowArgs),
    /// Classify new revisions and run the detectors, storing their
    /// findings. `snapshot` runs it at its end unless given --no-analyze.
    ///
    /// Exit status: 0, or 4 when --fail-on finds findings at or above it.
    Analyze(AnalyzeArgs),
    /// List the stored findings, most severe first.
    Findings(FindingsArgs),
    /// Write a post-mortem report: the runs covered, gaps, summary tables,
    /// every finding with its evidence and a timeline of each key involved.
    ///
    /// Exit status: 0, or 4 when --fail-on finds findings at or above it.
    Report(ReportArgs),
    /// What the database holds of each resource, key, field manager and
    /// namespace: live objects, stored revisions, bytes (live and of every
    /// revision), encodings, encryption, writes per change class, the
    /// largest and busiest keys and who writes what. For a cluster near its
    /// quota or a controller that rewrites objects without changing them.
    Stats(StatsArgs),
    /// Compare the live objects at two runs' head revisions (or at two
    /// revisions): added, removed, recreated (same name, new UID) and changed
    /// objects, with each changed field's old → new value (sensitive values
    /// redacted) and the managers that wrote it.
    Diff(DiffArgs),
    /// Join kube-apiserver audit logs to the stored revisions: who wrote
    /// each revision (user, groups, user agent, source IPs, verb) and when.
    /// Exact where the log has the response (level RequestResponse), by
    /// order per object where it has only metadata; a revision the order
    /// cannot tell stays unattributed and is counted. Reads logs as often
    /// as given: each request is stored once. Never stores a body.
    Attribute(AttributeArgs),
    /// Print a shell completion script, e.g. `etcd-inspector completion
    /// bash > /etc/bash_completion.d/etcd-inspector`.
    Completion(CompletionArgs),
    /// Print the manual page (roff), e.g. `etcd-inspector man >
    /// /usr/local/share/man/man1/etcd-inspector.1`; with a command, its own
    /// page (`etcd-inspector man show > etcd-inspector-show.1`).
    Man(ManArgs),
}

#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// A command, for its own page (every flag it takes).
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct CompletionArgs {
    /// The shell the script is for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// One object, as kubectl names it or by its etcd key.
#[derive(clap::Args, Debug)]
pub struct TargetArgs {
    /// TYPE/NAME as kubectl takes it (`deploy/web`, `deployments.apps/web`,
    /// `cm/app.config`, a custom resource as `gizmos.example.com/g1` or by
    /// its CRD's short name), TYPE alone with NAME after it, or the etcd
    /// key (`/registry/deployments/shop/web`).
    #[arg(value_name = "OBJECT")]
    pub object: String,
    /// The object's name, when OBJECT is only its type (`cm app.config`).
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// The object's namespace (default `default`, as kubectl; cluster-scoped
    /// kinds ignore it).
    #[arg(short, long)]
    pub namespace: Option<String>,
}

/// Which stored revision of an object.
#[derive(clap::Args, Debug)]
#[group(multiple = false)]
pub struct WhenArgs {
    /// As stored at revision N: its newest stored revision at or before N.
    #[arg(long, value_name = "N")]
    pub rev: Option<Revision>,
    /// As stored at TIME (RFC 3339 as the tables print it, in UTC or with
    /// an offset; `2026-12-05 00:22:52` in UTC; or ago: `2h`; or `rev:N`):
    /// its newest revision the cluster's clock says was certainly written
    /// before then (without a clock: by the head of the last complete run
    /// started by then).
    #[arg(long, value_name = "TIME")]
    pub at: Option<Moment>,
    /// As stored at run N's head revision.
    #[arg(long, value_name = "N")]
    pub run: Option<i64>,
}

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Which revision (default: the newest stored).
    #[command(flatten)]
    pub when: WhenArgs,
    /// How the object is printed: YAML as `kubectl get -o yaml`, or JSON.
    #[arg(short, long, value_enum, default_value_t = Format::Yaml)]
    pub output: Format,
    /// Print a manifest that `kubectl apply -f` or `kubectl create -f`
    /// takes to recreate the object: without resourceVersion, uid,
    /// creationTimestamp, generation, managedFields, selfLink,
    /// deletionTimestamp, status, the last-applied-configuration annotation
    /// and ownerReferences to owners that no longer exist.
    #[arg(long)]
    pub for_apply: bool,
    /// With --for-apply: keep every ownerReference.
    #[arg(long, requires = "for_apply")]
    pub keep_owner_references: bool,
    /// With --for-apply: keep the `kubectl.kubernetes.io/last-applied-configuration`
    /// annotation (the manifest last applied, the user's intent).
    #[arg(long, requires = "for_apply")]
    pub keep_last_applied: bool,
    /// Include metadata.managedFields (hidden by default, as kubectl does).
    #[arg(long, conflicts_with = "for_apply")]
    pub show_managed_fields: bool,
}

#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The earlier run (its head revision is the "before" point).
    #[arg(value_name = "RUN_A")]
    pub run_a: Option<i64>,
    /// The later run.
    #[arg(value_name = "RUN_B")]
    pub run_b: Option<i64>,
    /// Compare at this revision instead of RUN_A's head.
    #[arg(long, value_name = "REV")]
    pub rev_a: Option<Revision>,
    /// Compare at this revision instead of RUN_B's head.
    #[arg(long, value_name = "REV")]
    pub rev_b: Option<Revision>,
    /// How the result is printed: table, wide, json, yaml, name (each
    /// differing object as `kubectl get -o name` names it,
    /// `deployment.apps/web`), or jsonpath=TEMPLATE (kubectl's template,
    /// applied to the JSON document `-o json` prints: `{.objects[*].key}`).
    #[arg(short, long, value_name = "FORMAT", default_value = "table", value_parser = list_format)]
    pub output: ListFormat,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub objects: ObjectArgs,
    /// With --object: a unified diff of the object's YAML at the two
    /// points, as `kubectl diff` prints it (sensitive values redacted).
    #[arg(long, requires = "object")]
    pub unified: bool,
}

/// Which cluster a reading command looks at.
#[derive(clap::Args, Debug)]
pub struct ClusterArgs {
    /// Only this cluster: its name (`snapshot --cluster`) or etcd's cluster
    /// id (hex). Default: every cluster the database holds.
    #[arg(long, value_name = "NAME|HEX")]
    pub cluster: Option<String>,
}

/// Which objects `diff`, `report`, `stats` and `findings` look at.
#[derive(clap::Args, Debug)]
pub struct ObjectArgs {
    /// Only this object: TYPE/NAME as kubectl takes it (`deploy/web`,
    /// `cm/app.config`, `gizmos.example.com/g1`) in --namespace, or its
    /// etcd key.
    #[arg(long, value_name = "OBJECT")]
    pub object: Option<String>,
    /// Only objects in this namespace.
    #[arg(short, long)]
    pub namespace: Option<String>,
    /// Only this resource (plural, e.g. `deployments`).
    #[arg(long)]
    pub resource: Option<String>,
    /// Only keys starting with this.
    #[arg(long)]
    pub key_prefix: Option<String>,
}

/// Which revisions `report` and `stats` cover.
#[derive(clap::Args, Debug)]
pub struct RangeArgs {
    /// Start: `rev:N`, or a time (RFC 3339 as the tables print it, in UTC
    /// or with an offset; `2026-12-05 00:22:52` in UTC; or ago: `2h`): the
    /// first revision the cluster's clock says may have been written then
    /// (without a clock, after the head of the last complete run started by
    /// then).
    #[arg(long, value_name = "TIME|rev:N")]
    pub since: Option<Moment>,
    /// End: `rev:N`, or a time as --since takes (without a clock, the head
    /// of the last complete run started by then).
    #[arg(long, value_name = "TIME|rev:N")]
    pub until: Option<Moment>,
}

/// How the detectors judge; shared by `analyze`, `snapshot` and `follow`.
#[derive(clap::Args, Debug, Clone)]
pub struct DetectorArgs {
    /// How long a deletion (a deletionTimestamp with the object still
    /// there) or the garbage collection of an object whose owner is gone
    /// may take before it is a finding, e.g. `15m`, `2h`.
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = crate::duration::parse)]
    pub stuck_after: std::time::Duration,
}

#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// Analyze only the cluster this run read (default: every cluster).
    #[arg(long, value_name = "N", conflicts_with = "cluster")]
    pub run: Option<i64>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub detectors: DetectorArgs,
    /// Exit with status 4 when findings at or above this severity exist.
    #[arg(long, value_parser = severity(), value_name = "SEVERITY")]
    pub fail_on: Option<Severity>,
}

/// Report formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Md,
    Json,
    Html,
}

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// The format: by default the --output file's extension says (`.md`,
    /// `.json`, `.html`, `.htm`), else text.
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// The format, as `-o` is in every command (text, md, json, html).
    /// `-o FILE`, its old meaning, still writes FILE, with a warning.
    #[arg(short = 'o', id = "short_o", value_name = "FORMAT")]
    pub short_o: Option<String>,
    /// Write to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub range: RangeArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub objects: ObjectArgs,
    /// Only findings at or above this severity.
    #[arg(long, value_parser = severity(), value_name = "SEVERITY")]
    pub severity: Option<Severity>,
    /// Exit with status 4 when the report has findings at or above this
    /// severity.
    #[arg(long, value_parser = severity(), value_name = "SEVERITY")]
    pub fail_on: Option<Severity>,
}

#[derive(clap::Args, Debug)]
pub struct StatsArgs {
    /// Only the cluster this run read, up to its head revision.
    #[arg(long, value_name = "N", conflicts_with_all = ["since", "until", "cluster"])]
    pub run: Option<i64>,
    #[command(flatten)]
    pub range: RangeArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub objects: ObjectArgs,
    /// Rows of the largest, busiest and managers lists.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub top: u32,
    /// How the figures are printed: table, wide, json, yaml, or
    /// jsonpath=TEMPLATE (kubectl's template, applied to the JSON document
    /// `-o json` prints: `{.resources[*].resource}`). Not name: the
    /// figures name no objects.
    #[arg(short, long, value_name = "FORMAT", default_value = "table", value_parser = list_format)]
    pub output: ListFormat,
}

#[derive(clap::Args, Debug)]
pub struct FindingsArgs {
    /// How the findings are printed: table, wide, json, yaml, name (the
    /// objects of each finding as `kubectl get -o name` names them,
    /// `deployment.apps/web`, one a line), or jsonpath=TEMPLATE (kubectl's
    /// template, applied to the JSON array `-o json` prints: `{[*].summary}`,
    /// `{range [*]}{.detector}{"\n"}{end}`).
    #[arg(short, long, value_name = "FORMAT", default_value = "table", value_parser = list_format)]
    pub output: ListFormat,
    /// Print the table without its header line.
    #[arg(long)]
    pub no_headers: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub objects: ObjectArgs,
    /// Only this detector's findings.
    #[arg(long, value_parser = detector())]
    pub detector: Option<String>,
    /// Only findings at or above this severity.
    #[arg(long, value_parser = severity(), value_name = "SEVERITY")]
    pub severity: Option<Severity>,
}

/// How a run records what it reads; shared by `snapshot` and `follow`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// The file holding the key secrets are hashed with, instead of
    /// `<db>.key` (created beside the database by its first run). It is
    /// only read, never written or created, e.g. a mounted Kubernetes
    /// Secret. It holds 64 hex digits (`openssl rand -hex 32`) or 32 raw
    /// bytes.
    #[arg(long, env = "ETCD_INSPECTOR_HASH_KEY_FILE", value_name = "PATH")]
    pub hash_key_file: Option<PathBuf>,
    /// The name of the cluster the run reads (e.g. `prod-eu-1`), shown by
    /// every command instead of etcd's cluster id; one name per cluster in
    /// a database. A cluster named before keeps its name when none is
    /// given; a new name renames it (with a warning); a name another etcd
    /// cluster has fails the run (recorded as a restore of that cluster
    /// when it has a complete run and etcd's own id says so).
    #[arg(long, env = "ETCD_INSPECTOR_CLUSTER", value_name = "NAME", value_parser = cluster_name())]
    pub cluster: Option<ClusterName>,
    /// When the run ends, read these audit logs and attribute the stored
    /// revisions to their requests, as `attribute` does.
    #[command(flatten)]
    pub audit: AuditArgs,
    /// Storage prefix to read (kube-apiserver's `--etcd-prefix`).
    #[arg(long, default_value = crate::decode::key::DEFAULT_PREFIX)]
    pub prefix: String,
    /// Keys per range request.
    #[arg(long, default_value_t = 1000, hide = true)]
    pub page_size: i64,
    /// Depth of field paths hashed per revision (1: `spec`, 2:
    /// `spec.replicas`, ...). Fixed by the database's first run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=8))]
    pub field_depth: Option<u8>,
    /// A field path whose values are sensitive (hashed with the database's
    /// hash key, never stored), e.g. `spec.token`, or with a dotted key
    /// `data.app\.token` (also `data["app.token"]`); repeatable. Secret
    /// `data` and `stringData` always are. Fixed by the first run.
    #[arg(long, value_name = "PATH")]
    pub sensitive_path: Vec<crate::canon::path::FieldPath>,
    /// Record only this resource (`pods`, or with its group:
    /// `leases.coordination.k8s.io`); repeatable. Default: every resource
    /// not excluded.
    #[arg(long, value_name = "RESOURCE")]
    pub include_resource: Vec<String>,
    /// Do not record this resource; repeatable. Giving it replaces the
    /// default; `none` records every resource. Leases (node heartbeats and
    /// leader elections, renewed every few seconds) are excluded by default:
    /// they dominate a cluster's writes and hold no configuration.
    #[arg(long, value_name = "RESOURCE", default_value = crate::source::filter::DEFAULT_EXCLUDED)]
    pub exclude_resource: Vec<String>,
    /// Start a new hash key: a new random key in `<db>.key`, or the key a
    /// new --hash-key-file holds. For a database whose key file is lost or
    /// was replaced; the break is recorded, and keyed hashes (secrets) from
    /// before it are never compared with later ones (change class
    /// `unknown`, cause `hash-key`; `diff` shows `not-comparable`).
    #[arg(long)]
    pub new_hash_key: bool,
    /// Do not run `analyze` after recording.
    #[arg(long)]
    pub no_analyze: bool,
    /// Exit with status 4 when the analysis has findings at or above this
    /// severity (the run itself is still complete).
    #[arg(long, value_parser = severity(), value_name = "SEVERITY")]
    pub fail_on: Option<Severity>,
    /// When the run ends, write Prometheus metrics (text format, replaced
    /// atomically) to PATH, e.g. into a node-exporter textfile directory.
    #[arg(long, value_name = "PATH")]
    pub metrics_file: Option<PathBuf>,
    #[command(flatten)]
    pub encryption: EncryptionArgs,
    #[command(flatten)]
    pub detectors: DetectorArgs,
    #[command(flatten)]
    pub schema: SchemaArgs,
}

#[derive(clap::Args, Debug)]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub etcd: EtcdArgs,
    #[command(flatten)]
    pub record: RecordArgs,
    /// Read an etcd data file instead of a live server: a copied
    /// `member/snap/db` or an `etcdctl snapshot save` file (its SHA-256
    /// trailer is verified). No etcd needs to run; the file is only read.
    #[arg(long, value_name = "PATH", group = "offline", conflicts_with_all = ["fetch_snapshot", "fetch"])]
    pub file: Option<PathBuf>,
    /// Read a member's data dir instead of a live server: its
    /// `member/snap/db` and every WAL segment in `member/wal`, whose log
    /// holds every write since the member's last raft snapshot, values
    /// included, where the db holds only what compaction left. The writes
    /// are placed at the revisions etcd gave them, checked against the db,
    /// and history starts at the log's first entry. Copy the dir from a
    /// stopped member, or `member/snap/db` before `member/wal`.
    #[arg(long, value_name = "DIR", group = "offline", conflicts_with_all = ["fetch_snapshot", "fetch"])]
    pub data_dir: Option<PathBuf>,
    /// The member's WAL folder where it is not `DIR/member/wal` (etcd's
    /// --wal-dir); with --file, the WAL read beside that db.
    #[arg(long, value_name = "DIR", requires = "offline")]
    pub wal_dir: Option<PathBuf>,
    #[command(flatten)]
    pub fetch: FetchArgs,
    /// The same as --fetch snapshot.
    #[arg(long, hide = true, conflicts_with = "fetch")]
    pub fetch_snapshot: bool,
    /// Keep a downloaded snapshot at PATH (default: a temporary file next to
    /// the database, removed afterwards).
    #[arg(long, value_name = "PATH")]
    pub save: Option<PathBuf>,
    /// The cluster a --file belongs to (etcd's cluster id in hex, as
    /// `etcdctl endpoint status` shows it). By default it is derived from the
    /// file's members, which matches the live cluster unless its membership
    /// changed since it formed. (Its name is --cluster.)
    #[arg(long, value_name = "HEX", requires = "offline")]
    pub cluster_id: Option<String>,
    /// Read what survives of a damaged --file: every readable page, and
    /// leaf pages the broken tree no longer reaches, storing only records
    /// that parse whole and agree with their revision. The damage is
    /// recorded with the run (`runs`) and its revision ranges as history
    /// gaps; in a WAL, it skips to the next whole record. Without it, any
    /// damage fails the run.
    #[arg(long, requires = "offline")]
    pub salvage: bool,
}

/// How a live run fetches history.
#[derive(clap::Args, Debug)]
pub struct FetchArgs {
    /// `watch` replays history through the Watch API; `snapshot` downloads
    /// the server's snapshot (every retained revision, as its data file
    /// holds it; needs etcd's root role) and reads it as a file; `auto`
    /// downloads when that is expected to be faster (a first run, a long
    /// catch-up) and the server allows it, else watches.
    #[arg(long, value_enum, default_value_t = FetchMode::Auto)]
    pub fetch: FetchMode,
}

/// `--fetch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FetchMode {
    Auto,
    Watch,
    Snapshot,
}

#[derive(clap::Args, Debug)]
pub struct FollowArgs {
    #[command(flatten)]
    pub etcd: EtcdArgs,
    #[command(flatten)]
    pub record: RecordArgs,
    #[command(flatten)]
    pub fetch: FetchArgs,
    /// Stop after this long (e.g. `50m`, `12h`) and end the run as
    /// complete; without it, follow until SIGTERM or Ctrl-C.
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    pub duration: Option<std::time::Duration>,
    /// Commit what was received at least this often; a killed process
    /// loses at most this much.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::duration::parse)]
    pub commit_every: std::time::Duration,
    /// Serve `/metrics` (Prometheus text format: the series of
    /// --metrics-file) and `/healthz` on this address, e.g. `0.0.0.0:9090`
    /// for a Deployment's probes and scrapes.
    #[arg(long, value_name = "ADDR", env = "ETCD_INSPECTOR_LISTEN")]
    pub listen: Option<std::net::SocketAddr>,
    /// `/healthz` fails once follow has been unable to watch (no member
    /// delivers, catching up fails) for longer than this.
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::duration::parse)]
    pub stall_limit: std::time::Duration,
}

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("which").required(true).multiple(true).args(["older_than", "keep_runs"])))]
pub struct PruneArgs {
    /// Remove runs that started longer ago than this (e.g. `30d`, `12h`).
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    pub older_than: Option<std::time::Duration>,
    /// Keep only the newest N runs of each cluster (with --older-than too,
    /// a run must be both older and beyond the newest N to go).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub keep_runs: Option<u32>,
    /// Give the freed space back to the file system (rewrites the file).
    #[arg(long)]
    pub vacuum: bool,
}

#[derive(clap::Args, Debug)]
pub struct CopyArgs {
    /// The database to copy from: a SQLite file or a PostgreSQL URI.
    #[arg(long, value_name = "DB")]
    pub from: PathBuf,
    /// The database to copy into (created when it does not exist).
    #[arg(long, value_name = "DB")]
    pub to: PathBuf,
    /// Only the runs of this cluster (its name or etcd's cluster id, hex).
    #[arg(long, value_name = "NAME|HEX", conflicts_with = "run")]
    pub cluster: Option<String>,
    /// Only this run (its id in the source, as `runs` shows); repeatable.
    #[arg(long, value_name = "N")]
    pub run: Vec<i64>,
}

/// Aligned columns for people (`table`: the columns a person needs;
/// `wide`: every column), JSON or YAML for programs, or as kubectl's `-o`
/// takes it: `name`, one name a line, and `jsonpath=TEMPLATE`, the
/// template applied to the JSON document `json` prints.
#[derive(Clone, Debug, PartialEq)]
pub enum ListFormat {
    Table,
    Wide,
    Json,
    Yaml,
    Name,
    JsonPath(crate::jsonpath::Template),
}

/// `-o` of a listing command: `table`, `wide`, `json`, `yaml`, `name`, or
/// `jsonpath=TEMPLATE` (the template also in quotes, `jsonpath='{...}'`, as
/// kubectl takes it when a shell left them).
fn list_format(text: &str) -> Result<ListFormat, String> {
    Ok(match text {
        "table" => ListFormat::Table,
        "wide" => ListFormat::Wide,
        "json" => ListFormat::Json,
        "yaml" => ListFormat::Yaml,
        "name" => ListFormat::Name,
        _ => {
            let Some(template) = text.strip_prefix("jsonpath=") else {
                return Err(format!(
                    "{text:?} is not a format: give table, wide, json, yaml, name or jsonpath=TEMPLATE"
                ));
            };
            let unquoted = ['\'', '"']
                .iter()
                .find_map(|q| template.strip_prefix(*q).and_then(|t| t.strip_suffix(*q)));
            let template = unquoted.unwrap_or(template);
            ListFormat::JsonPath(
                template
                    .parse()
                    .map_err(|fault| format!("jsonpath template {template:?}: {fault}"))?,
            )
        }
    })
}

/// The audit logs a command reads.
#[derive(clap::Args, Debug, Clone)]
pub struct AuditArgs {
    /// A kube-apiserver audit log: a file (JSON lines, an EventList, a GKE
    /// or CloudWatch export; gzip too), a folder of rotated files, or `-`
    /// for standard input. Repeatable.
    #[arg(long = "audit-log", value_name = "PATH")]
    pub audit_log: Vec<crate::source::audit::AuditInput>,
}

#[derive(clap::Args, Debug)]
pub struct AttributeArgs {
    #[command(flatten)]
    pub audit: AuditArgs,
    /// The cluster the logs are of: its name (`snapshot --cluster`) or
    /// etcd's cluster id (hex); needed when the database holds several.
    #[arg(
        long,
        env = "ETCD_INSPECTOR_CLUSTER",
        value_name = "NAME|HEX",
        alias = "cluster-id"
    )]
    pub cluster: Option<String>,
    /// Do not run `analyze` afterwards (the `no-op-writes` and
    /// `conflict-storms` detectors read what attribution found).
    #[arg(long)]
    pub no_analyze: bool,
    #[command(flatten)]
    pub detectors: DetectorArgs,
    /// How the counts are printed: table, wide, json, yaml, or
    /// jsonpath=TEMPLATE (kubectl's template, applied to the JSON document
    /// `-o json` prints). Not name: the counts name no objects.
    #[arg(short, long, value_name = "FORMAT", default_value = "table", value_parser = list_format)]
    pub output: ListFormat,
}

#[derive(clap::Args, Debug)]
pub struct RunsArgs {
    /// How the runs are printed: table, wide, json, yaml, name (`run/12`,
    /// one a line), or jsonpath=TEMPLATE (kubectl's template, applied to the
    /// JSON array `-o json` prints: `{[*].id}`,
    /// `{range [*]}{.id}{"\t"}{.status}{"\n"}{end}`).
    #[arg(short, long, value_name = "FORMAT", default_value = "table", value_parser = list_format)]
    pub output: ListFormat,
    /// Print the table without its header line.
    #[arg(long)]
    pub no_headers: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// How the revisions are printed: table, wide, json, yaml, name (the
    /// object as `kubectl get -o name` names it, `deployment.apps/web`, once
    /// a revision), or jsonpath=TEMPLATE (kubectl's template, applied to
    /// the JSON array `-o json` prints: `{[*].mod_revision}`).
    #[arg(short, long, value_name = "FORMAT", default_value = "table", value_parser = list_format)]
    pub output: ListFormat,
    /// Print the table without its header line.
    #[arg(long)]
    pub no_headers: bool,
    /// Show each revision's changed fields with old → new values (sensitive
    /// values as `<redacted>`).
    #[arg(long)]
    pub diff: bool,
    /// Only the revisions that changed this field path (or a field in it,
    /// or one it is in), e.g. `spec.replicas`, `data.app\.properties` or
    /// `data["app.properties"]`; with --diff, only those fields.
    #[arg(long, value_name = "PATH")]
    pub field: Option<crate::canon::path::FieldPath>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// How to reach etcd; flags and environment variables follow etcdctl.
#[derive(clap::Args, Debug)]
pub struct EtcdArgs {
    /// Comma-separated etcd endpoints: every member's client URL, as
    /// kube-apiserver's --etcd-servers lists them. Each is probed and the
    /// first healthy one serves; the run moves to another when it fails.
    #[arg(
        long,
        env = "ETCDCTL_ENDPOINTS",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:2379"
    )]
    pub endpoints: Vec<String>,
    /// CA certificate that signed etcd's serving certificate (PEM).
    #[arg(long, env = "ETCDCTL_CACERT")]
    pub cacert: Option<PathBuf>,
    /// Client certificate (PEM), e.g. /etc/kubernetes/pki/etcd/healthcheck-client.crt.
    #[arg(long, env = "ETCDCTL_CERT", requires = "key")]
    pub cert: Option<PathBuf>,
    /// Client key (PEM), e.g. /etc/kubernetes/pki/etcd/healthcheck-client.key.
    #[arg(long, env = "ETCDCTL_KEY", requires = "cert")]
    pub key: Option<PathBuf>,
    /// User for etcd authentication: NAME, with --password, or NAME:PASSWORD
    /// as etcdctl takes it.
    #[arg(long, env = "ETCDCTL_USER", hide_env_values = true)]
    pub user: Option<String>,
    /// Password for --user.
    #[arg(long, env = "ETCDCTL_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Time allowed to connect, e.g. 5s, 500ms.
    #[arg(long, default_value = "5s", value_parser = crate::duration::parse)]
    pub dial_timeout: std::time::Duration,
    /// Time allowed for each request, and again for retrying it (on another
    /// member) after a transient failure.
    #[arg(long, default_value = "30s", value_parser = crate::duration::parse)]
    pub command_timeout: std::time::Duration,
    /// Find the endpoints in DNS instead, as etcdctl does: the SRV records
    /// `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN`
    /// (http).
    #[arg(long, env = "ETCDCTL_DISCOVERY_SRV", value_name = "DOMAIN")]
    pub discovery_srv: Option<String>,
    /// With --discovery-srv: look up `_etcd-client-ssl-NAME._tcp.DOMAIN` and
    /// `_etcd-client-NAME._tcp.DOMAIN`.
    #[arg(
        long,
        env = "ETCDCTL_DISCOVERY_SRV_NAME",
        value_name = "NAME",
        requires = "discovery_srv"
    )]
    pub discovery_srv_name: Option<String>,
    /// Use every member's client URLs, read with MemberList from the first
    /// of --endpoints that answers (one member's URL is enough to start).
    #[arg(long, conflicts_with = "discovery_srv")]
    pub endpoints_from_members: bool,
}

/// How to decrypt values kube-apiserver encrypted at rest.
#[derive(clap::Args, Debug, Clone)]
pub struct EncryptionArgs {
    /// kube-apiserver's EncryptionConfiguration (its
    /// --encryption-provider-config file, YAML or JSON): decrypts values
    /// stored under its aescbc, aesgcm, secretbox and kms providers. Only
    /// read; secrets from it never reach the database or any output.
    #[arg(long, env = "ETCD_INSPECTOR_ENCRYPTION_CONFIG", value_name = "FILE")]
    pub encryption_config: Option<PathBuf>,
    /// Reach the config's KMS provider NAME at socket PATH instead of its
    /// endpoint (a socket copied or forwarded from the control-plane node);
    /// repeatable.
    #[arg(long, value_name = "NAME=PATH", value_parser = parse_kms_socket, requires = "encryption_config")]
    pub kms_socket: Vec<(String, PathBuf)>,
}

/// Parses `NAME=PATH`.
fn parse_kms_socket(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), PathBuf::from(path)))
        }
        _ => Err(format!(
            "{text:?} is not NAME=PATH (a kms provider's name and a unix socket)"
        )),
    }
}

/// Which Kubernetes schema names the fields of protobuf objects.
#[derive(clap::Args, Debug, Clone)]
pub struct SchemaArgs {
    /// A folder holding the cluster's Kubernetes .proto files as the Go
    /// modules lay them out (`k8s.io/api/core/v1/generated.proto`, ...; a
    /// GOPATH/src, or checkouts of k8s.io/api and k8s.io/apimachinery);
    /// repeatable. Its messages replace the built-in ones (Kubernetes
    /// 1.35), so fields and kinds of a newer cluster decode by name.
    #[arg(
        long,
        value_name = "DIR",
        env = "ETCD_INSPECTOR_PROTO_PATH",
        value_delimiter = ':'
    )]
    pub proto_path: Vec<PathBuf>,
    /// A FileDescriptorSet (as `protoc --include_imports
    /// --descriptor_set_out` writes it) used as --proto-path's files are;
    /// repeatable.
    #[arg(long, value_name = "FILE")]
    pub descriptor_set: Vec<PathBuf>,
}

/// How a decoded object is shown.
#[derive(clap::Args, Debug, Clone)]
pub struct ViewArgs {
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
    /// Print Secret `data` values; by default they are replaced by a
    /// placeholder that keeps each key and the value's length.
    #[arg(long)]
    pub show_secrets: bool,
    #[command(flatten)]
    pub encryption: EncryptionArgs,
    #[command(flatten)]
    pub schema: SchemaArgs,
}

#[derive(clap::Args, Debug)]
pub struct GetArgs {
    /// A custom resource's names are read from the CRDs etcd holds.
    #[command(flatten)]
    pub target: TargetArgs,
    /// Read the key as of this revision instead of the current one.
    #[arg(long, default_value_t = Revision(0))]
    pub rev: Revision,
    #[command(flatten)]
    pub etcd: EtcdArgs,
    #[command(flatten)]
    pub view: ViewArgs,
}

#[derive(clap::Args, Debug)]
pub struct DecodeArgs {
    /// File holding the raw value; `-` or nothing reads standard input.
    pub input: Option<PathBuf>,
    /// The etcd key the value was stored under; parsed into group,
    /// resource, namespace and name (shown on standard error).
    #[arg(long)]
    pub key: Option<String>,
    #[command(flatten)]
    pub view: ViewArgs,
}

/// How an object is printed.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    Json,
    Yaml,
}

#[cfg(test)]
mod tests {
    #[test]
    fn arguments_are_consistent() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
