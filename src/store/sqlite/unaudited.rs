//! Creates no audited request explains (see [`crate::store::unaudited`]).

use super::Store;
use crate::store::unaudited::{once, UnauditedCreate, UNAUDITED_CREATES};
use crate::store::StoreError;

impl Store {
    /// See [`crate::store::HistoryReader::unaudited_creates`].
    pub(in crate::store) fn read_unaudited_creates(
        &self,
        cluster: i64,
    ) -> Result<Vec<UnauditedCreate>, StoreError> {
        let err = |e| self.err(e);
        let mut stmt = self.conn.prepare(UNAUDITED_CREATES).map_err(err)?;
        let rows = stmt
            .query_map([cluster], |r| {
                let key: Vec<u8> = r.get(0)?;
                Ok(UnauditedCreate {
                    key: String::from_utf8_lossy(&key).into_owned(),
                    revision: r.get(1)?,
                    log: r.get(2)?,
                    from: r.get(3)?,
                    to: r.get(4)?,
                })
            })
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        Ok(once(rows))
    }
}
