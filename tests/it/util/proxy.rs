//! A TCP proxy in front of a test server that the test can cut, so a client
//! really loses its connection (and cannot reconnect until restored).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub struct Proxy {
    /// `http://127.0.0.1:<port>` of the proxy.
    pub endpoint: String,
    open: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    /// Bytes the server may still send before the proxy cuts every
    /// connection (`u64::MAX`: no limit).
    allowance: Arc<AtomicU64>,
}

/// Copies `from` into `to`; from the server, only while `allowance` lasts,
/// then cuts everything.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    allowance: Option<Arc<AtomicU64>>,
    open: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
) {
    let mut buf = vec![0; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(left) = &allowance {
            let now = left.load(Ordering::SeqCst);
            if now != u64::MAX {
                if now < n as u64 {
                    open.store(false, Ordering::SeqCst);
                    for s in streams.lock().unwrap().drain(..) {
                        let _ = s.shutdown(Shutdown::Both);
                    }
                    break;
                }
                left.fetch_sub(n as u64, Ordering::SeqCst);
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}

impl Proxy {
    /// Forwards a new loopback port to `target` (`http://host:port`).
    pub fn new(target: &str) -> Proxy {
        let target = target.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let open = Arc::new(AtomicBool::new(true));
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let allowance = Arc::new(AtomicU64::new(u64::MAX));
        let (accepting, tracked, budget) = (open.clone(), streams.clone(), allowance.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !accepting.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is closed at once
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let mut all = tracked.lock().unwrap();
                for (from, to, limited) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap(), None),
                    (
                        server.try_clone().unwrap(),
                        client.try_clone().unwrap(),
                        Some(budget.clone()),
                    ),
                ] {
                    let (open, streams) = (accepting.clone(), tracked.clone());
                    std::thread::spawn(move || pump(from, to, limited, open, streams));
                }
                all.extend([client, server]);
            }
        });
        Proxy {
            endpoint,
            open,
            streams,
            allowance,
        }
    }

    /// Cuts every connection once the server has sent `bytes` more bytes.
    pub fn cut_after(&self, bytes: u64) {
        self.allowance.store(bytes, Ordering::SeqCst);
    }

    /// Closes every connection and refuses new ones.
    pub fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for s in self.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Accepts connections again.
    pub fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}
