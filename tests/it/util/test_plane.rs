//! The control-plane tier's cluster: the demo's real control plane
//! ([`ControlPlane`]) over a test etcd ([`TestEtcd`], so the etcd matrix
//! applies), in a temporary folder. The binaries come from the folder
//! `ETCD_INSPECTOR_CONTROL_PLANE` names, which `.ci/control-plane` builds
//! from the Go module proxy; without it the tier skips, saying how to run
//! it.

use super::control_plane::{ControlPlane, Options};
use super::etcd::TestEtcd;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;

/// The environment variable naming the folder of built binaries.
pub const ENV: &str = "ETCD_INSPECTOR_CONTROL_PLANE";

/// A control plane and the etcd under it; the components stop before etcd.
pub struct TestPlane {
    plane: ControlPlane,
    pub etcd: TestEtcd,
    _dir: tempfile::TempDir,
}

impl TestPlane {
    /// Starts etcd and the control plane; `None` (with a message) without
    /// binaries.
    pub fn start(options: Options) -> Option<TestPlane> {
        let Some(bin) = std::env::var_os(ENV).map(PathBuf::from) else {
            eprintln!(
                "skipping: no real control plane ({ENV} is unset); build one with Go and run \
                 `{ENV}=$(.ci/control-plane 1.37.2 | cut -d' ' -f2) cargo test --test it -- control_plane::`"
            );
            return None;
        };
        let etcd = TestEtcd::start();
        let dir = tempfile::tempdir().unwrap();
        let plane = ControlPlane::start(&bin, &etcd.endpoint, dir.path(), options)
            .unwrap_or_else(|e| panic!("the control plane starts: {e:#}"));
        Some(TestPlane {
            plane,
            etcd,
            _dir: dir,
        })
    }
}

impl Deref for TestPlane {
    type Target = ControlPlane;
    fn deref(&self) -> &ControlPlane {
        &self.plane
    }
}

impl DerefMut for TestPlane {
    fn deref_mut(&mut self) -> &mut ControlPlane {
        &mut self.plane
    }
}
