//! Worker threads that prepare chunks of records (decode, hash) while the
//! writer's thread inserts earlier chunks, so decoding runs on every core
//! and overlaps reading the source and writing the database.

use super::base::Base;
use super::prepare::{prepare, Dict, KeyInfo, PlainBlobs, Prepared};
use crate::canon::keyed_hash::ValueHasher;
use crate::canon::semantic::FieldConfig;
use crate::decrypt::Decryptor;
use crate::source::Record;
use std::collections::BTreeMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Records, what their keys' names tell, and the keys' bases.
pub(super) type Chunk = Vec<(Record, KeyInfo, Option<Arc<Base>>)>;
/// A prepared chunk, or what a worker panicked with.
type Done = Result<Vec<Prepared>, String>;

/// Worker threads and the chunks in flight, returned in the order sent.
pub(super) struct Pipeline {
    jobs: Option<Sender<(u64, Chunk)>>,
    results: Receiver<(u64, Done)>,
    workers: Vec<JoinHandle<()>>,
    sent: u64,
    returned: u64,
    early: BTreeMap<u64, Done>,
}

fn work(
    jobs: &Mutex<Receiver<(u64, Chunk)>>,
    results: &Sender<(u64, Done)>,
    config: &FieldConfig,
    hasher: &ValueHasher,
    decryptor: Option<&Decryptor>,
) {
    loop {
        let job = jobs
            .lock()
            .map_err(|_| ())
            .and_then(|rx| rx.recv().map_err(|_| ()));
        let Ok((id, chunk)) = job else { return };
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            prepare_chunk(chunk, config, hasher, decryptor)
        }))
        .map_err(|panic| {
            panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into())
        });
        if results.send((id, done)).is_err() {
            return;
        }
    }
}

/// Prepares a chunk in order. A chunk holds each key's revisions together
/// (see the writer's window): a revision without a stored base is
/// compressed against the key's revision before it in the chunk that is
/// stored in full.
fn prepare_chunk(
    chunk: Chunk,
    config: &FieldConfig,
    hasher: &ValueHasher,
    decryptor: Option<&Decryptor>,
) -> Vec<Prepared> {
    let mut full: Option<(i64, Arc<PlainBlobs>)> = None;
    let mut out = Vec::with_capacity(chunk.len());
    for (record, key, base) in chunk {
        let dict = match (base, &full) {
            (Some(base), _) => Dict::Stored(base),
            (None, Some((id, plain))) if *id == key.id => Dict::Chunk(plain.clone()),
            (None, _) => Dict::None,
        };
        let prepared = prepare(record, key, dict, config, hasher, decryptor);
        if let Some(plain) = prepared.semantic.as_ref().and_then(|s| s.plain.clone()) {
            full = Some((key.id, plain));
        }
        out.push(prepared);
    }
    out
}

impl Pipeline {
    /// Starts one worker per core.
    pub(super) fn new(
        config: &FieldConfig,
        hasher: &ValueHasher,
        decryptor: Option<Arc<Decryptor>>,
    ) -> Pipeline {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        let (jobs, job_rx) = channel::<(u64, Chunk)>();
        let (result_tx, results) = channel();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let workers = (0..threads)
            .map(|i| {
                let (jobs, results) = (job_rx.clone(), result_tx.clone());
                let (config, hasher, decryptor) = (config.clone(), hasher.clone(), decryptor.clone());
                std::thread::Builder::new()
                    .name(format!("decode-{i}"))
                    .spawn(move || work(&jobs, &results, &config, &hasher, decryptor.as_deref()))
                    .expect("spawning a decode thread")
            })
            .collect();
        Pipeline {
            jobs: Some(jobs),
            results,
            workers,
            sent: 0,
            returned: 0,
            early: BTreeMap::new(),
        }
    }

    /// Chunks sent and not yet returned.
    pub(super) fn in_flight(&self) -> u64 {
        self.sent - self.returned
    }

    /// Most chunks worth having in flight: enough to keep every worker busy.
    pub(super) fn capacity(&self) -> u64 {
        2 * self.workers.len() as u64
    }

    /// Queues a chunk for the workers.
    pub(super) fn send(&mut self, chunk: Chunk) {
        if let Some(jobs) = &self.jobs {
            // The workers outlive the sender; a send fails only if all
            // panicked, which `next` reports.
            let _ = jobs.send((self.sent, chunk));
        }
        self.sent += 1;
    }

    /// The next chunk in order: waits for it when `wait`, else only returns
    /// one that is ready. `None` when nothing (ready) is in flight.
    pub(super) fn next(&mut self, wait: bool) -> Option<Result<Vec<Prepared>, String>> {
        while self.in_flight() > 0 {
            if let Some(done) = self.early.remove(&self.returned) {
                self.returned += 1;
                return Some(done);
            }
            let received = if wait {
                self.results.recv().map_err(|_| true)
            } else {
                self.results
                    .try_recv()
                    .map_err(|e| e == std::sync::mpsc::TryRecvError::Disconnected)
            };
            match received {
                Ok((id, done)) => {
                    self.early.insert(id, done);
                }
                Err(false) => return None,
                Err(true) => {
                    self.returned = self.sent;
                    return Some(Err("every decode thread stopped".into()));
                }
            }
        }
        None
    }

    /// Waits for the chunks in flight and drops them.
    pub(super) fn discard(&mut self) {
        while self.next(true).is_some() {}
        self.early.clear();
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.jobs = None;
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}
