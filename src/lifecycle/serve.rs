//! `follow --listen ADDR`: `/metrics` (Prometheus text format, the series
//! the metrics file has while follow runs) and `/healthz` (failing once
//! follow has been unable to watch for longer than the stall limit), for a
//! Deployment's scrapes and probes.

use crate::report::metrics::{render_following, Following};
use crate::source::Revision;
use anyhow::{Context, Result};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What follow is doing, as the endpoints show it.
pub(super) struct Health {
    state: Mutex<State>,
    stall_limit: Duration,
}

#[derive(Default)]
struct State {
    /// etcd's cluster id and the cluster's name, once the first read found
    /// them.
    cluster: Option<(String, String)>,
    complete_through: Revision,
    /// Since when no member delivers the watch.
    stalled_since: Option<Instant>,
}

impl Health {
    pub(super) fn new(stall_limit: Duration) -> Health {
        Health {
            state: Mutex::default(),
            stall_limit,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Follow stored everything through `complete_through` of `cluster`
    /// (etcd's id) named `name`, and records (`stalled` false) or waits for
    /// a member (true).
    pub(super) fn set(&self, cluster: &str, name: &str, complete_through: Revision, stalled: bool) {
        let mut s = self.state();
        s.cluster = Some((cluster.to_string(), name.to_string()));
        s.complete_through = complete_through;
        s.stalled_since = match stalled {
            true => s.stalled_since.or(Some(Instant::now())),
            false => None,
        };
    }

    /// The metrics text; empty until the first read found the cluster.
    fn metrics(&self) -> String {
        let s = self.state();
        s.cluster.as_ref().map_or_else(String::new, |(cluster, name)| {
            render_following(&Following {
                cluster,
                name,
                complete_through: s.complete_through,
                stalled: s.stalled_since.is_some(),
            })
        })
    }

    /// `Ok` with what follow is doing, or `Err` once it has been stalled
    /// longer than the limit.
    fn health(&self) -> Result<String, String> {
        let s = self.state();
        match (s.stalled_since, &s.cluster) {
            (Some(since), _) if since.elapsed() > self.stall_limit => Err(format!(
                "stalled: no etcd member has delivered the watch for {}s (limit {}s); everything through revision {} is stored",
                since.elapsed().as_secs(),
                self.stall_limit.as_secs(),
                s.complete_through
            )),
            (Some(since), _) => Ok(format!(
                "ok: waiting {}s for an etcd member (limit {}s)",
                since.elapsed().as_secs(),
                self.stall_limit.as_secs()
            )),
            (None, None) => Ok("ok: reading the cluster's state and history".into()),
            (None, Some(_)) => Ok(format!(
                "ok: everything through revision {} is stored",
                s.complete_through
            )),
        }
    }
}

fn respond(health: &Health, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let (status, kind, body) = match request.uri().path() {
        "/metrics" => (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            health.metrics(),
        ),
        "/healthz" => match health.health() {
            Ok(text) => (StatusCode::OK, "text/plain; charset=utf-8", text + "\n"),
            Err(text) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain; charset=utf-8",
                text + "\n",
            ),
        },
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: this server has /metrics and /healthz\n".into(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(kind),
    );
    response
}

/// The endpoints being served; they stop when it is dropped.
pub(super) struct Server(tokio::task::JoinHandle<()>);

impl Drop for Server {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Listens on `addr` (failing at once when it cannot) and serves `health`.
pub(super) async fn serve(addr: SocketAddr, health: Arc<Health>) -> Result<Server> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (--listen)"))?;
    tracing::info!("serving /metrics and /healthz on {}", listener.local_addr()?);
    Ok(Server(tokio::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!("accepting a connection on {addr}: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let health = health.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let response = respond(&health, &request);
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })))
}
