//! Creates no audited request explains (see [`crate::store::unaudited`]).

use super::Store;
use crate::store::unaudited::{Once, UnauditedCreate, UNAUDITED_CREATES};
use crate::store::StoreError;

impl crate::store::reader::UnauditedReads for Store {
    fn unaudited_creates(
        &self,
        cluster: i64,
        visit: &mut dyn FnMut(UnauditedCreate),
    ) -> Result<(), StoreError> {
        let mut once = Once::new(visit);
        for r in self.query(UNAUDITED_CREATES, &[&cluster])? {
            let key: Vec<u8> = r.get(0);
            once.push(UnauditedCreate {
                key: String::from_utf8_lossy(&key).into_owned(),
                revision: r.get(1),
                log: r.get(2),
                from: r.get(3),
                to: r.get(4),
            });
        }
        Ok(())
    }
}
