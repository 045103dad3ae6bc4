//! What several commands share: turning recording flags into the run
//! lifecycle's options, the exit statuses, the lines a finished run and an
//! analysis print, and ([`object`]) objects found by their kubectl names.

pub mod object;

use super::output::print_document;
use super::Status;
use crate::analyze::Analysis;
use crate::canon::sensitive::{is_secret, redact_secret};
use crate::cli::{ClusterArgs, DetectorArgs, EncryptionArgs, FetchMode, RangeArgs, RecordArgs, SchemaArgs};
use crate::cli::{Format, ViewArgs};
use crate::decode;
use crate::decrypt::{self, config, Decryptor};
use crate::ingest::open::{open, KeyClass, Opened};
use crate::lifecycle::{Attributed, Fetch, Finished, RecordOptions};
use crate::moment::Moment;
use crate::report::escape;
use crate::source::audit::AuditInput;
use crate::source::filter::ResourceFilter;
use crate::source::Revision;
use crate::store::clock::ByClock;
use crate::store::cluster::{self, Cluster};
use crate::store::finding::Severity;
use crate::store::hash_key::HashKeyOptions;
use crate::store::ClusterId;
use crate::store::HistoryReader;
use crate::store::RunStatus;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::sync::Arc;

/// Exit status when `--fail-on` finds findings at or above its severity.
pub const EXIT_FINDINGS: Status = 4;

/// Exit status when a value is encrypted and no key was given.
pub const EXIT_ENCRYPTED: Status = 3;

/// Exit status of a run stopped by Ctrl-C or SIGTERM.
pub const EXIT_INTERRUPTED: Status = 130;

/// The status `--fail-on` asks for, given the severities found.
pub fn fail_on_status(fail_on: Option<Severity>, found: impl IntoIterator<Item = Severity>) -> Status {
    match fail_on {
        Some(level) if found.into_iter().any(|s| s >= level) => EXIT_FINDINGS,
        _ => 0,
    }
}

/// The cluster `--cluster` names (by name or etcd's cluster id), if given;
/// one that is not in the database is an error listing those that are.
pub fn chosen_cluster(store: &dyn HistoryReader, args: &ClusterArgs) -> Result<Option<Cluster>> {
    let Some(wanted) = &args.cluster else {
        return Ok(None);
    };
    let clusters = store.clusters()?;
    let database = store.location().display().to_string();
    Ok(Some(cluster::find(&clusters, wanted, &database)?.clone()))
}

/// How many clusters a list can span: one with `--cluster`, else every
/// cluster the database holds (a table shows its cluster column only for
/// more than one).
pub fn clusters_listed(store: &dyn HistoryReader, args: &ClusterArgs) -> Result<usize> {
    Ok(match args.cluster {
        Some(_) => 1,
        None => store.clusters()?.len(),
    })
}

impl From<FetchMode> for Fetch {
    fn from(m: FetchMode) -> Self {
        match m {
            FetchMode::Auto => Fetch::Auto,
            FetchMode::Watch => Fetch::Watch,
            FetchMode::Snapshot => Fetch::Snapshot,
        }
    }
}

impl From<&DetectorArgs> for crate::analyze::Options {
    fn from(a: &DetectorArgs) -> Self {
        crate::analyze::Options {
            stuck_after: a.stuck_after,
        }
    }
}

/// Installs the schema `--proto-path` and `--descriptor-set` give, if any,
/// for everything this process decodes.
pub fn install_schema(args: &SchemaArgs) -> Result<()> {
    if args.proto_path.is_empty() && args.descriptor_set.is_empty() {
        return Ok(());
    }
    let schema = decode::protos::load(&args.proto_path, &args.descriptor_set)?;
    decode::schema::install(schema).map_err(anyhow::Error::msg)
}

/// The decryptor `--encryption-config` and `--kms-socket` describe.
pub fn decryptor(args: &EncryptionArgs) -> Result<Option<Arc<Decryptor>>> {
    let Some(path) = &args.encryption_config else {
        return Ok(None);
    };
    let config = config::load(path)?;
    Ok(Some(Arc::new(Decryptor::new(config, &args.kms_socket)?)))
}

/// The revision range `--since` and `--until` give in `cluster` (`None`:
/// the database's clusters together). A time selects the revisions the
/// cluster's clock says may have been written in the window; without a
/// clock (several clusters and none chosen, or never analyzed) it resolves
/// to the head of the last complete run started by then (`--since`
/// excludes it).
pub fn revision_range(
    store: &dyn HistoryReader,
    range: &RangeArgs,
    cluster: Option<ClusterId>,
) -> Result<(Option<Revision>, Option<Revision>)> {
    let from = match range.since {
        None => None,
        Some(Moment::Revision(r)) => Some(r),
        Some(Moment::Time(t)) => first_at_or_after(store, cluster, t)?,
    };
    let to = match range.until {
        None => None,
        Some(Moment::Revision(r)) => Some(r),
        Some(Moment::Time(t)) => match store.revision_by_clock(cluster, t, false)? {
            ByClock::Revision(r) => Some(r),
            ByClock::Unbounded => None,
            ByClock::NoClock => match store.revision_at_time(cluster, t)? {
                Some(r) => Some(r),
                None => bail!("--until {t}: no complete run started by then"),
            },
        },
    };
    Ok((from, to))
}

/// The first revision of `cluster` that may have been written at or after
/// `t` (`None`: any may have): by the cluster's clock, or without one the
/// revision after the head of the last complete run started by then.
fn first_at_or_after(
    store: &dyn HistoryReader,
    cluster: Option<ClusterId>,
    t: jiff::Timestamp,
) -> Result<Option<Revision>> {
    Ok(match store.revision_by_clock(cluster, t, true)? {
        ByClock::Revision(r) => Some(r),
        ByClock::Unbounded => None,
        ByClock::NoClock => store.revision_at_time(cluster, t)?.map(Revision::next),
    })
}

/// The revision `moment` (`flag` names it in errors) names in `cluster`:
/// for a time, the last revision certainly written before it (the one
/// before [`first_at_or_after`]).
pub fn revision_before(
    store: &dyn HistoryReader,
    cluster: Option<ClusterId>,
    moment: Moment,
    flag: &str,
) -> Result<Revision> {
    match moment {
        Moment::Revision(r) => Ok(r),
        Moment::Time(t) => match first_at_or_after(store, cluster, t)? {
            Some(first) => Ok(first.prev()),
            None => bail!("{flag} {t}: no stored revision is known to have been written by then"),
        },
    }
}

/// The lifecycle's options from the recording flags.
pub fn record_options(args: &RecordArgs) -> Result<RecordOptions> {
    install_schema(&args.schema)?;
    Ok(RecordOptions {
        prefix: args.prefix.clone(),
        page_size: args.page_size,
        field_depth: args.field_depth.map(usize::from),
        sensitive_paths: args.sensitive_path.clone(),
        filter: ResourceFilter::new(&args.include_resource, &args.exclude_resource),
        analyze: !args.no_analyze,
        metrics_file: args.metrics_file.clone(),
        decryptor: decryptor(&args.encryption)?,
        detectors: (&args.detectors).into(),
        hash_key: HashKeyOptions {
            file: args.hash_key_file.clone(),
            new: args.new_hash_key,
        },
        audit_logs: audit_logs(&args.audit)?,
        cluster_name: args.cluster.clone(),
    })
}

/// The audit logs a command reads, each checked before a run begins.
pub fn audit_logs(args: &crate::cli::AuditArgs) -> Result<Vec<AuditInput>> {
    for input in &args.audit_log {
        if let AuditInput::Path(path) = input {
            std::fs::metadata(path).with_context(|| format!("audit log {}", path.display()))?;
        }
    }
    Ok(args.audit_log.clone())
}

/// One line: what attributing read and found.
pub fn attribution_summary(a: &Attributed) -> String {
    let (r, j) = (&a.read, &a.joined);
    format!(
        "attributed: {} audit events in {} files, {} write requests ({} new); of all {} requests stored: \
         {} revisions attributed exactly, {} by order, {} no-op writes, {} failed, {} not attributable \
         ({} revisions left unattributed), {} matching no stored key or revision; {} malformed lines{}",
        r.events,
        r.files,
        a.writes,
        a.staged,
        j.requests,
        j.exact,
        j.by_order,
        j.no_op,
        j.failed,
        j.ambiguous,
        j.unattributed_revisions,
        j.unmatched,
        r.malformed,
        r.first_malformed
            .first()
            .map(|m| format!(" (first: {m})"))
            .unwrap_or_default()
    )
}

/// One line: what was classified and found.
pub fn analysis_summary(a: &Analysis) -> String {
    let detail: Vec<String> = a
        .findings
        .by_detector
        .iter()
        .map(|(d, n)| format!("{d}: {n}"))
        .collect();
    format!(
        "analyzed: {} revisions classified (one pass over {} stored revisions), {} findings{}{}",
        a.classify.classified,
        a.classify.rows_read,
        a.findings.total,
        if detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", detail.join(", "))
        },
        match a.clock_left_out {
            0 => String::new(),
            n => format!("; the clock left out {n} time bounds that contradict the others"),
        }
    )
}

/// Prints how a run ended and returns its exit status: 0 complete (4 with
/// findings at or above `fail_on`), 130 interrupted; a failed run is an
/// error naming it.
pub fn report_finished(finished: Finished, fail_on: Option<Severity>) -> anyhow::Result<Status> {
    let run = finished.run.0;
    match finished.status {
        RunStatus::Complete => {
            if let Some(s) = &finished.summary {
                let gaps: String = s
                    .gaps
                    .iter()
                    .map(|g| format!(", history gap: revisions {g} lost to compaction"))
                    .collect();
                tracing::info!(
                    "run {run} complete: {} keys at revision {}, {} revisions added (history from revision {}){gaps}, {:.1}s",
                    s.keys,
                    s.head,
                    finished.added,
                    s.history_from,
                    finished.elapsed.as_secs_f64()
                );
            }
            if let Some(a) = &finished.attributed {
                tracing::info!("{}", escape::terminal(&attribution_summary(a)));
            }
            Ok(match &finished.analysis {
                Some(a) => {
                    tracing::info!("{}", escape::terminal(&analysis_summary(a)));
                    fail_on_status(fail_on, a.findings.by_severity.keys().copied())
                }
                None => 0,
            })
        }
        RunStatus::Interrupted | RunStatus::Running => {
            match finished.summary {
                // Stopped while analyzing: everything was read and stored.
                Some(_) => tracing::info!(
                    "run {run} interrupted while analyzing; the history it read is stored and complete: run `etcd-inspector analyze`"
                ),
                None => tracing::info!("run {run} interrupted; the revisions stored so far are kept"),
            }
            if let Some(a) = &finished.attributed {
                tracing::info!("{}", escape::terminal(&attribution_summary(a)));
            }
            Ok(EXIT_INTERRUPTED)
        }
        RunStatus::Failed => Err(finished
            .error
            .unwrap_or_else(|| anyhow::anyhow!("unknown failure"))
            .context(format!("run {run} failed"))),
    }
}

/// Decodes `value` (stored under `key`, at `mod_revision` when known) and
/// prints it as `view` asks; shared by `decode` and `get`.
pub fn show(
    label: &str,
    value: &[u8],
    key: Option<&str>,
    mod_revision: Option<Revision>,
    view: &ViewArgs,
) -> Result<Status> {
    let args = view;
    let mut err = std::io::stderr().lock();
    install_schema(&args.schema)?;
    let decryptor = decryptor(&args.encryption)?;
    let parsed = match key {
        Some(key) => {
            let parsed = decode::parse_key(key, &args.prefix)?;
            writeln!(
                err,
                "key: {}\n  group: {:?}\n  resource: {}\n  namespace: {}\n  name: {}{}",
                escape::terminal(key),
                parsed.group,
                escape::terminal(&parsed.resource),
                escape::terminal(parsed.namespace.as_deref().unwrap_or("-")),
                escape::terminal(parsed.name.as_deref().unwrap_or("-")),
                parsed
                    .special
                    .map(|s| format!("\n  special: {}", serde_json::to_value(s).unwrap_or_default()))
                    .unwrap_or_default()
            )?;
            Some(parsed)
        }
        None => None,
    };
    let class = KeyClass::of(parsed.as_ref(), decryptor.as_deref());
    if let (Some(_), None, Some(stored)) = (&decryptor, key, decrypt::label(value)) {
        bail!("{label}: value is encrypted at rest ({stored}); decrypting it needs --key, the etcd key it is stored under (it chooses the providers and is the authenticated data)");
    }
    let etcd_key = key.unwrap_or_default().as_bytes();
    match open(&class, etcd_key, value, decryptor.as_deref()) {
        Opened::CompactRevision(text) => {
            let rev: Revision = text
                .trim()
                .parse()
                .with_context(|| format!("{label}: compact_rev_key value {text:?} is not a revision"))?;
            print_document(
                &serde_json::json!({ "compactRevision": rev }),
                matches!(args.output, Format::Yaml),
            )?;
            Ok(0)
        }
        Opened::Decoded { decoded, encryption } => {
            let mut d = *decoded;
            // kube-apiserver fills resourceVersion from the key's mod_revision.
            if let (Some(rev), Some(meta)) = (
                mod_revision,
                d.object.get_mut("metadata").and_then(|m| m.as_object_mut()),
            ) {
                meta.insert(
                    "resourceVersion".into(),
                    serde_json::Value::String(rev.to_string()),
                );
            }
            if args.show_envelope {
                if let Some(e) = &encryption {
                    writeln!(err, "encryption: {}", escape::terminal(e))?;
                }
                writeln!(
                    err,
                    "encoding: {}{}",
                    d.encoding.as_str(),
                    if d.base64_wrapped { " (base64-wrapped)" } else { "" }
                )?;
                writeln!(err, "apiVersion: {}\nkind: {}", d.api_version, d.kind)?;
                if let Some(m) = &d.message {
                    writeln!(err, "message: {m}")?;
                    writeln!(
                        err,
                        "schema: {}",
                        escape::terminal(&decode::schema::schema().origin)
                    )?;
                }
                match &d.resolution {
                    Some(decode::Resolution::OtherVersion(v)) => writeln!(
                        err,
                        "schema: {} {} not in the schema; decoded with {v}",
                        d.api_version, d.kind
                    )?,
                    Some(decode::Resolution::Unknown) => writeln!(
                        err,
                        "schema: kind not in the schema; only metadata decoded by name"
                    )?,
                    Some(decode::Resolution::Schemaless) => writeln!(
                        err,
                        "schema: kind not in the schema and its field 1 is not an ObjectMeta; every field decoded by number"
                    )?,
                    _ => {}
                }
                if d.unknown_fields.is_empty() {
                    writeln!(err, "unknown fields: none")?;
                } else {
                    writeln!(err, "unknown fields: {}", d.unknown_fields.join(", "))?;
                }
            }
            for w in &d.warnings {
                writeln!(err, "warning: {}", escape::terminal(w))?;
            }
            if !args.show_secrets && is_secret(&d.object) {
                let n = redact_secret(&mut d.object);
                if n > 0 {
                    writeln!(
                        err,
                        "note: {n} Secret value(s) redacted; --show-secrets prints them"
                    )?;
                }
            }
            print_document(&d.object, matches!(args.output, Format::Yaml))?;
            Ok(0)
        }
        Opened::Encrypted { error: Some(e), .. } => bail!("{label}: {e}"),
        Opened::Encrypted {
            info, label: stored, ..
        } => {
            let (provider, version, key_name) = match &info {
                Some(i) => (i.provider.as_str(), i.version.as_str(), i.key_name.as_str()),
                None => (stored.as_deref().unwrap_or("?"), "?", "?"),
            };
            writeln!(
                err,
                "{label}: value is encrypted at rest (provider {provider} {version}, key {key_name:?}); decoding it needs the apiserver's EncryptionConfiguration (--encryption-config)",
            )?;
            Ok(EXIT_ENCRYPTED)
        }
        Opened::Undecodable { error, .. } => bail!("{label}: {error}"),
    }
}
