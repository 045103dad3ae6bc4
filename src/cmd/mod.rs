//! One module per subcommand, each with a `run` that returns the exit status.

pub mod analyze;
pub mod attribute;
mod common;
pub mod completion;
pub mod copy;
pub mod decode;
pub mod diff;
pub mod findings;
pub mod follow;
pub mod get;
pub mod history;
pub mod log;
pub mod man;
mod output;
pub mod prune;
pub mod report;
pub mod runs;
pub mod show;
pub mod snapshot;
pub mod stats;

use crate::cli::{Cli, Command, EtcdArgs};
use crate::source::etcd::{Connection, Discovery};

/// Connection settings from the command line; a `--user` with no
/// password anywhere is a usage error.
fn connection(a: &EtcdArgs) -> Result<Connection, UsageError> {
    // etcdctl's `--user NAME:PASSWORD`, unless --password is given.
    let (user, password) = match (&a.user, &a.password) {
        (Some(user), None) => match user.split_once(':') {
            Some((name, password)) => (Some(name.to_string()), Some(password.to_string())),
            None => {
                return Err(UsageError(format!(
                    "--user {user} needs a password: --user {user}:PASSWORD, --password or ETCDCTL_PASSWORD"
                )))
            }
        },
        (user, password) => (user.clone(), password.clone()),
    };
    Ok(Connection {
        endpoints: a.endpoints.clone(),
        cacert: a.cacert.clone(),
        cert: a.cert.clone(),
        key: a.key.clone(),
        user,
        password,
        dial_timeout: a.dial_timeout,
        command_timeout: a.command_timeout,
        discovery: match (&a.discovery_srv, a.endpoints_from_members) {
            (Some(domain), _) => Discovery::Srv {
                domain: domain.clone(),
                name: a.discovery_srv_name.clone(),
            },
            (None, true) => Discovery::Members,
            (None, false) => Discovery::Given,
        },
    })
}

/// A command line that cannot work: exits 2, as clap's own usage errors
/// do, before anything runs or is recorded.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Exit status of a command that finished: 0 for success, or a documented
/// per-command status (errors are returned as `Err` and exit with 1).
pub type Status = u8;

/// Runs the command `cli` names. Called before any thread starts: it
/// chooses the zone times are shown in (`--local`).
pub fn dispatch(cli: &Cli) -> anyhow::Result<Status> {
    if cli.local {
        crate::human_time::use_local_zone()
            .map_err(|e| anyhow::anyhow!("--local: the local time zone is unknown: {e}"))?;
    }
    match &cli.command {
        Command::Decode(args) => decode::run(args),
        Command::Get(args) => get::run(args),
        Command::Snapshot(args) => snapshot::run(&cli.db, args),
        Command::Follow(args) => follow::run(&cli.db, args),
        Command::Prune(args) => prune::run(&cli.db, args),
        Command::Copy(args) => copy::run(args),
        Command::Runs(args) => runs::run(&cli.db, args),
        Command::History(args) => history::run(&cli.db, args),
        Command::Show(args) => show::run(&cli.db, args),
        Command::Analyze(args) => analyze::run(&cli.db, args),
        Command::Findings(args) => findings::run(&cli.db, args),
        Command::Diff(args) => diff::run(&cli.db, args),
        Command::Report(args) => report::run(&cli.db, args),
        Command::Stats(args) => stats::run(&cli.db, args),
        Command::Attribute(args) => attribute::run(&cli.db, args),
        Command::Completion(args) => completion::run(args),
        Command::Man(args) => man::run(args),
    }
}
