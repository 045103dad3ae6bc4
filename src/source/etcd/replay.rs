//! History by Watch: every revision of a scope from a start revision up to
//! the head (or onwards, for `follow`), ended on evidence.

use super::members::Member;
use super::record_of;
use super::retry::{is_transient, words_are_transient, Retries};
use super::{reason, Etcd, EtcdError, MAX_RESPONSE_BYTES};
use crate::decode::key::COMPACT_REV_KEY;
use crate::source::server_version::ServerVersion;
use crate::source::ReadError;
use crate::source::Revision;
use std::time::Duration;

/// What a replay records: every key under the prefix, and
/// `compact_rev_key` (the apiserver's compaction marker, outside any prefix).
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    pub prefix: &'a [u8],
}

impl Scope<'_> {
    /// Whether a key is recorded.
    pub fn keeps(&self, key: &[u8]) -> bool {
        key.starts_with(self.prefix) || key == COMPACT_REV_KEY.as_bytes()
    }
}

/// What a history replay found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replay {
    /// Every revision from the start up to the head was delivered.
    Complete,
    /// Compaction overtook the replay: revisions from `missing_from` (the
    /// first not delivered) were compacted; history is retained from
    /// `retained_from` on.
    Compacted {
        missing_from: Revision,
        retained_from: Revision,
    },
    /// The sink asked to stop.
    Stopped,
}

/// How one watch stream ended.
enum Stream {
    Ended(Replay),
    /// The member failed, stalled or lost its leader: worth watching again
    /// from the first revision not delivered, on any member.
    Cut(String),
}

/// The key range one watch covers.
#[derive(Clone, Copy, Debug)]
enum Watched<'a> {
    /// Every key. Every etcd revision belongs to a write, so the event at
    /// the head itself arrives and proves everything before it arrived.
    Everything,
    Prefix(&'a [u8]),
    Exact(&'a [u8]),
}

impl Etcd {
    /// Replays every revision in `scope` from `from` up to `head`: puts,
    /// deletes (as tombstones) and the earlier revision each one replaced.
    ///
    /// The replay ends on evidence: it watches every key, so the event at
    /// `head` (or a later one) arrives, and everything outside `scope` is
    /// dropped. Progress notifications never end it there. Credentials that
    /// may not watch every key fall back to watching `scope` alone, ended by
    /// a progress notification, which only etcd 3.4.25, 3.5.8 and later
    /// send after the events they cover; older servers are refused then.
    /// With `head = Revision(i64::MAX)` it follows until the stream fails, reporting
    /// through [`Sink::progress`](crate::source::Sink::progress) how far
    /// everything has arrived.
    pub async fn replay<S>(
        &self,
        scope: Scope<'_>,
        from: Revision,
        head: Revision,
        sink: &mut S,
    ) -> Result<Replay, ReadError<S::Error>>
    where
        S: crate::source::Sink,
        S::Error: std::error::Error + 'static,
    {
        if from > head || (from == head && !self.event_retained_at(head).await?) {
            return Ok(Replay::Complete);
        }
        match self.watch(Watched::Everything, scope, from, head, sink).await {
            Err(ReadError::Etcd(EtcdError::WatchDenied)) => {}
            done => return done,
        }
        let ordered = self
            .server_version()
            .is_some_and(ServerVersion::progress_is_ordered);
        if !ordered {
            let version = self.version();
            let server = match version.is_empty() {
                true => "did not tell its version to these credentials, so it may be one that may".into(),
                false => format!("is version {version}, which may",),
            };
            return Err(EtcdError::Unconfirmable {
                endpoints: self.endpoint(),
                server,
            }
            .into());
        }
        match self
            .watch(Watched::Prefix(scope.prefix), scope, from, head, sink)
            .await?
        {
            Replay::Complete => {}
            ended => return Ok(ended),
        }
        self.watch(
            Watched::Exact(COMPACT_REV_KEY.as_bytes()),
            scope,
            from,
            head,
            sink,
        )
        .await
    }

    /// Watches `watched` from `from`, recording what `scope` keeps, up to
    /// `head`. A stream that is cut (its member failed, stalled or lost its
    /// leader) is watched again from the first revision it did not deliver,
    /// on another member where one is given, so no revision is lost or
    /// delivered twice; only compaction in between loses any, and says so.
    async fn watch<S>(
        &self,
        watched: Watched<'_>,
        scope: Scope<'_>,
        from: Revision,
        head: Revision,
        sink: &mut S,
    ) -> Result<Replay, ReadError<S::Error>>
    where
        S: crate::source::Sink,
        S::Error: std::error::Error + 'static,
    {
        // Everything up to here has arrived, as the events prove.
        let mut proven = from.prev();
        let mut retries = Retries::new(self.connection.command_timeout);
        loop {
            let member = self.member();
            let before = proven;
            match self
                .watch_stream(&member, watched, scope, &mut proven, head, sink)
                .await?
            {
                Stream::Ended(replay) => return Ok(replay),
                Stream::Cut(why) => {
                    if proven > before {
                        retries.reset();
                    }
                    if !retries.wait().await {
                        return Err(self.failure(why).into());
                    }
                    self.fail_over(&member, why).await;
                }
            }
        }
    }

    /// One watch stream on `member` from `proven + 1`, moving `proven` as
    /// events arrive.
    #[allow(clippy::too_many_arguments)]
    async fn watch_stream<S>(
        &self,
        member: &Member,
        watched: Watched<'_>,
        scope: Scope<'_>,
        proven: &mut Revision,
        head: Revision,
        sink: &mut S,
    ) -> Result<Stream, ReadError<S::Error>>
    where
        S: crate::source::Sink,
        S::Error: std::error::Error + 'static,
    {
        let failed = |e: etcd_client::Error| -> Result<Stream, ReadError<S::Error>> {
            match is_transient(&e) {
                true => Ok(Stream::Cut(reason(&e))),
                false => Err(self.request_err(e).into()),
            }
        };
        let mut opts = etcd_client::WatchOptions::new()
            .with_start_revision(proven.next().0)
            .with_prev_key();
        let key: &[u8] = match watched {
            Watched::Everything => {
                opts = opts.with_all_keys();
                b"\0"
            }
            Watched::Prefix(p) => {
                opts = opts.with_prefix();
                p
            }
            Watched::Exact(k) => k,
        };
        // A stream silent this long (no event, no answer to a progress
        // request) has a member that stopped answering.
        let idle = self.connection.command_timeout;
        let version = ServerVersion::parse(&member.version);
        // Progress notifications count only where etcd sends them after the
        // events they cover (etcd issue 15220); they end a replay only when
        // no event at the head can be expected, i.e. not watching everything.
        let ordered = version.is_some_and(ServerVersion::progress_is_ordered);
        let ends_on_progress = ordered && !matches!(watched, Watched::Everything);
        // A progress request sent while the watch catches up may never be
        // answered on some releases (etcd issue 17507): ask only after a
        // quiet spell, by when a watch with nothing to send has caught up.
        let ask_after = match version.is_some_and(ServerVersion::defers_progress) {
            true => Duration::from_secs(1),
            false => Duration::from_millis(100),
        };
        let opened = tokio::time::timeout(
            self.connection.command_timeout,
            member
                .client
                .watch_client()
                .max_decoding_message_size(MAX_RESPONSE_BYTES)
                .watch(key, Some(opts)),
        )
        .await;
        let mut stream = match opened {
            Err(_) => return Ok(Stream::Cut("the watch was not opened in time".into())),
            Ok(Err(e)) => return failed(e),
            Ok(Ok(stream)) => stream,
        };
        let mut last_message = tokio::time::Instant::now();
        loop {
            let msg = match tokio::time::timeout(ask_after, stream.message()).await {
                Err(_) => {
                    // A quiet watch is normal (3.5 and later answer no
                    // progress request on a watch with nothing to send):
                    // a silent member is found out by asking it something.
                    if last_message.elapsed() > idle {
                        if !self.answers(member).await {
                            return Ok(Stream::Cut(format!(
                                "history replay stalled: nothing received for {idle:?}, and the member does \
                                 not answer"
                            )));
                        }
                        last_message = tokio::time::Instant::now();
                    }
                    // The answer keeps a quiet watch alive and, where etcd
                    // orders it, says how far the watch got.
                    if let Err(e) = stream.request_progress().await {
                        return failed(e);
                    }
                    continue;
                }
                Ok(Err(e)) => return failed(e),
                Ok(Ok(msg)) => msg,
            };
            last_message = tokio::time::Instant::now();
            let Some(resp) = msg else {
                return Ok(Stream::Cut("watch stream closed".into()));
            };
            if resp.canceled() {
                if resp.compact_revision() > 0 {
                    return Ok(Stream::Ended(Replay::Compacted {
                        missing_from: proven.next(),
                        retained_from: Revision(resp.compact_revision()),
                    }));
                }
                if resp.cancel_reason().contains("permission denied") {
                    return Err(EtcdError::WatchDenied.into());
                }
                // A member that lost its leader cancels watches that require
                // one ("etcdserver: no leader").
                if words_are_transient(resp.cancel_reason()) {
                    return Ok(Stream::Cut(format!("watch cancelled: {}", resp.cancel_reason())));
                }
                return Err(self
                    .failure(format!("watch cancelled: {}", resp.cancel_reason()))
                    .into());
            }
            if resp.created() {
                continue;
            }
            if resp.events().is_empty() {
                // A progress notification. Where etcd may send it early it
                // proves nothing beyond the events, but still lets the sink
                // act (commit) on what they proved.
                let through = match ordered {
                    true => Revision(resp.header().map_or(0, |h| h.revision())),
                    false => *proven,
                };
                if !sink.progress(through.min(head)).map_err(ReadError::Sink)? {
                    return Ok(Stream::Ended(Replay::Stopped));
                }
                if ends_on_progress && through >= head {
                    return Ok(Stream::Ended(Replay::Complete));
                }
                continue;
            }
            let Some(newest) = push_events(&resp, scope, head, sink)? else {
                return Ok(Stream::Ended(Replay::Stopped));
            };
            // A watch delivers revisions in order and never splits one
            // across responses: everything up to `newest` has arrived.
            *proven = (*proven).max(newest);
            if !sink.progress(newest.min(head)).map_err(ReadError::Sink)? {
                return Ok(Stream::Ended(Replay::Stopped));
            }
            if newest >= head {
                return Ok(Stream::Ended(Replay::Complete));
            }
        }
    }
}

impl Etcd {
    /// Whether `member` answers a cheap linearizable read (which, with
    /// `hasleader`, also proves it has a leader) within the command timeout.
    async fn answers(&self, member: &Member) -> bool {
        let mut kv = member.client.kv_client();
        let read = kv.get(
            COMPACT_REV_KEY,
            Some(etcd_client::GetOptions::new().with_count_only()),
        );
        matches!(
            tokio::time::timeout(self.connection.command_timeout, read).await,
            Ok(Ok(_))
        )
    }
}

/// Pushes the events of one watch response that `scope` keeps, up to
/// `head`, each preceded by the revision it replaced; returns the newest
/// revision the response holds, or `None` when the sink stopped.
fn push_events<S>(
    resp: &etcd_client::WatchResponse,
    scope: Scope<'_>,
    head: Revision,
    sink: &mut S,
) -> Result<Option<Revision>, ReadError<S::Error>>
where
    S: crate::source::Sink,
    S::Error: std::error::Error + 'static,
{
    let mut newest = Revision::default();
    for ev in resp.events() {
        let Some(kv) = ev.kv() else { continue };
        let revision = Revision(kv.mod_revision());
        newest = newest.max(revision);
        if revision > head || !scope.keeps(kv.key()) {
            continue;
        }
        let prev_create = ev.prev_kv().map(|p| p.create_revision()).unwrap_or(0);
        if let Some(prev) = ev.prev_kv() {
            if !sink.record(record_of(prev.clone())).map_err(ReadError::Sink)? {
                return Ok(None);
            }
        }
        let record = match ev.event_type() {
            etcd_client::EventType::Put => record_of(kv.clone()),
            etcd_client::EventType::Delete => crate::source::Record {
                key: kv.key().to_vec(),
                mod_revision: revision,
                create_revision: Revision(prev_create),
                version: 0,
                lease: 0,
                value: Vec::new(),
                deleted: true,
            },
        };
        if !sink.record(record).map_err(ReadError::Sink)? {
            return Ok(None);
        }
    }
    Ok(Some(newest))
}
