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
        let rows = self.query(UNAUDITED_CREATES, &[&cluster])?;
        Ok(once(rows.iter().map(|r| {
            let key: Vec<u8> = r.get(0);
            UnauditedCreate {
                key: String::from_utf8_lossy(&key).into_owned(),
                revision: r.get(1),
                log: r.get(2),
                from: r.get(3),
                to: r.get(4),
            }
        })))
    }
}
