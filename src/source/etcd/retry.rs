//! Which failures of a read-only call are transient (etcd's client retries
//! the same ones: a member gone or restarting, an election, an overloaded
//! member), and the loop that repeats such a call with backoff, on another
//! member where there is one, within `--command-timeout`.

use super::members::{self, Member};
use super::{is_denied, reason, Etcd, EtcdError, Reading};
use etcd_client::Client;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The first wait before a retry; each next one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// What etcd says when a request may succeed if repeated, here or on
/// another member (`rpctypes` in etcd: ErrLeaderChanged, ErrNoLeader,
/// ErrTimeout..., ErrTooManyRequests), and what a lost connection looks
/// like through tonic.
const TRANSIENT: [&str; 11] = [
    "leader changed",
    "no leader",
    "request timed out",
    "too many requests",
    "timeout expired",
    "transport error",
    "tcp connect error",
    "connection refused",
    "connection reset",
    "broken pipe",
    "h2 protocol error",
];

/// Whether repeating a read-only call that failed with `e` may succeed.
pub(super) fn is_transient(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::GRpcStatus(status) => {
            matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
            ) || words_are_transient(status.message())
        }
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        _ => words_are_transient(&reason(e)),
    }
}

/// Whether a failure's words are one of the transient ones.
pub(super) fn words_are_transient(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    TRANSIENT.iter().any(|w| text.contains(w))
}

/// The retries of one call or stream: backoff doubling from
/// [`FIRST_BACKOFF`] to [`MAX_BACKOFF`], for up to `--command-timeout` after
/// the first failure since the last progress.
pub(super) struct Retries {
    timeout: Duration,
    until: Option<Instant>,
    backoff: Duration,
}

impl Retries {
    pub fn new(timeout: Duration) -> Retries {
        Retries {
            timeout,
            until: None,
            backoff: FIRST_BACKOFF,
        }
    }

    /// Until when the next attempt may run: `--command-timeout` from now,
    /// or what is left of the retries.
    pub fn attempt_until(&self) -> Instant {
        self.until.unwrap_or_else(|| Instant::now() + self.timeout)
    }

    /// After a transient failure: waits out the backoff and returns `true`,
    /// or `false` when the time for retries is up.
    pub async fn wait(&mut self) -> bool {
        let until = *self.until.get_or_insert_with(|| Instant::now() + self.timeout);
        if Instant::now() + self.backoff >= until {
            return false;
        }
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        true
    }

    /// The stream made progress: the next failure starts afresh.
    pub fn reset(&mut self) {
        self.until = None;
        self.backoff = FIRST_BACKOFF;
    }
}

impl Etcd {
    /// Runs the read-only call `call` on the serving member, allowing it
    /// `--command-timeout`; a transient failure is retried with backoff,
    /// after moving to another healthy member where one is given, for up to
    /// `--command-timeout` more. Other failures, and the last transient one,
    /// are returned as the request's error; a refusal says which permission
    /// `reading` lacks.
    pub(super) async fn call<T, F, Fut>(&self, reading: Reading<'_>, call: F) -> Result<T, EtcdError>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let timeout = self.connection.command_timeout;
        let mut retries = Retries::new(timeout);
        loop {
            let member = self.member();
            let failed =
                match tokio::time::timeout_at(retries.attempt_until(), call(member.client.clone())).await {
                    Ok(Ok(answer)) => return Ok(answer),
                    Ok(Err(e)) if is_transient(&e) => reason(&e),
                    Ok(Err(e)) if is_denied(&e) => {
                        return Err(reading.denied(&member.endpoint, self.connection.user.as_deref()))
                    }
                    Ok(Err(e)) => return Err(self.request_err(e)),
                    Err(_) => format!("no answer within {timeout:?}"),
                };
            if !retries.wait().await {
                return Err(self.failure(failed));
            }
            self.fail_over(&member, failed).await;
        }
    }

    /// After `failed` failed with `why`: serve from another healthy member
    /// (or the same one, answering again) when there is one, else stay.
    pub(super) async fn fail_over(&self, failed: &Arc<Member>, why: String) {
        let Some(next) = members::replacement(&self.connection, failed).await else {
            return;
        };
        if next.endpoint == failed.endpoint && next.id == failed.id {
            // The same member answers again: a fresh connection, no move.
            *self.serving.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
            return;
        }
        let why = format!("{} (member {:x}) failed: {why}", failed.endpoint, failed.id);
        self.note(members::serving(&next, Some(why)));
        *self.serving.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
    }
}

#[cfg(test)]
mod tests {
    use super::is_transient;
    use etcd_client::Error;
    use tonic::{Code, Status};

    fn status(code: Code, message: &str) -> Error {
        Error::GRpcStatus(Status::new(code, message))
    }

    #[test]
    fn elections_lost_members_and_overload_are_transient() {
        for e in [
            status(Code::Unavailable, "etcdserver: leader changed"),
            status(Code::Unavailable, "etcdserver: no leader"),
            status(Code::Unavailable, "etcdserver: request timed out"),
            status(Code::ResourceExhausted, "etcdserver: too many requests"),
            status(Code::Cancelled, "Timeout expired"),
            status(Code::Unknown, "transport error"),
            status(
                Code::Unknown,
                "h2 protocol error: error reading a body from connection",
            ),
            status(Code::DeadlineExceeded, "context deadline exceeded"),
        ] {
            assert!(is_transient(&e), "{e}");
        }
    }

    #[test]
    fn refusals_and_compaction_are_not() {
        for e in [
            status(Code::PermissionDenied, "etcdserver: permission denied"),
            status(
                Code::OutOfRange,
                "etcdserver: mvcc: required revision has been compacted",
            ),
            status(Code::InvalidArgument, "etcdserver: user name is empty"),
            status(Code::ResourceExhausted, "grpc: received message larger than max"),
            Error::InvalidArgs("bad".into()),
        ] {
            assert!(!is_transient(&e), "{e}");
        }
    }
}
