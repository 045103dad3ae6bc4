//! What a live run says about the etcd members it read from: a warning for
//! each endpoint skipped and each move away from a member that failed, and
//! a record with the run of every member that served it.

use crate::source::etcd::{Etcd, MemberEvent};
use crate::store::{Backend, RunFact, RunId, ServedBy, StoreError};

/// Reports what happened to `etcd`'s choice of member since the last call.
pub(super) fn report(store: &dyn Backend, run: RunId, etcd: &Etcd) -> Result<(), StoreError> {
    for event in etcd.take_events() {
        if let Some(warning) = event.warning() {
            tracing::warn!("{warning}");
        }
        if let MemberEvent::Serving {
            endpoint,
            member_id,
            at,
            moved_because,
        } = event
        {
            let by = ServedBy {
                at,
                endpoint,
                member_id: format!("{member_id:x}"),
                moved_because,
            };
            store.record(run, RunFact::Served(&by))?;
        }
    }
    Ok(())
}
