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
        let err = |e| self.err(e);
        let mut stmt = self.conn.prepare(UNAUDITED_CREATES).map_err(err)?;
        let mut rows = stmt.query([cluster]).map_err(err)?;
        let mut once = Once::new(visit);
        while let Some(r) = rows.next().map_err(err)? {
            let key: Vec<u8> = r.get(0).map_err(err)?;
            once.push(UnauditedCreate {
                key: String::from_utf8_lossy(&key).into_owned(),
                revision: r.get(1).map_err(err)?,
                log: r.get(2).map_err(err)?,
                from: r.get(3).map_err(err)?,
                to: r.get(4).map_err(err)?,
            });
        }
        Ok(())
    }
}
