//! [`RevisionRows`] over PostgreSQL: revisions go in by binary `COPY` in
//! pages of [`COPY_PAGE`] rows, inside the writer's transactions; what the
//! writer asks about keys this run created is answered from memory (no
//! round trip per revision), and anything else is read for a window's keys
//! at once, after the pending page is copied in, so reads see every row
//! written before them.

use super::Store;
use crate::canon::facts::{FactType, ObjectFacts, STORED_FACTS};
use crate::canon::path::FieldPath;
use crate::decode::key::ParsedKey;
use crate::ingest::base::{Base, BaseBlob};
use crate::ingest::revision::Described;
use crate::store::rows::{ContentRow, KeyId, RevisionRow, RevisionRows};
use crate::store::ClusterId;
use crate::store::StoreError;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::LazyLock;

/// Revisions held before they are copied in.
const COPY_PAGE: usize = 5000;
/// Keys whose stored revisions are remembered; past this, what is
/// remembered is dropped and read again when needed (bounds memory).
const KNOWN_KEYS: usize = 200_000;

/// The types of [`RevisionRow::COLUMNS`], in their order.
const OWN_TYPES: [Type; RevisionRow::COLUMNS.len()] = [
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::BOOL,
    Type::INT8,
    Type::BYTEA,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::BYTEA,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
];

/// The column type a fact of `kind` is stored in.
fn fact_type(kind: FactType) -> Type {
    match kind {
        FactType::Int => Type::INT8,
        FactType::Text => Type::TEXT,
        FactType::Bytes => Type::BYTEA,
    }
}

/// How revisions are copied in: the statement, and each column's type, its
/// own columns and then its facts'.
static COPY_REVISIONS: LazyLock<(String, Vec<Type>)> = LazyLock::new(|| {
    let facts = ObjectFacts::COLUMNS.iter().zip(ObjectFacts::stored_types());
    let own = RevisionRow::COLUMNS.iter().zip(OWN_TYPES);
    let columns: Vec<(&str, Type)> = own
        .chain(facts.map(|(c, t)| (c, fact_type(t))))
        .map(|(c, t)| (*c, t))
        .collect();
    let names: Vec<&str> = columns.iter().map(|(c, _)| *c).collect();
    (
        format!("COPY revisions ({}) FROM STDIN (FORMAT binary)", names.join(", ")),
        columns.into_iter().map(|(_, t)| t).collect(),
    )
});

/// A revision waiting for the next copy.
struct PendingRevision {
    key_id: i64,
    cluster: ClusterId,
    mod_revision: i64,
    create_revision: i64,
    version: i64,
    lease: i64,
    deleted: bool,
    value_size: i64,
    value_sha256: Option<Vec<u8>>,
    value_hash: Option<String>,
    described: Described,
    run: i64,
    semantic: Option<Vec<u8>>,
    facts: ObjectFacts,
    duplicates: Option<String>,
    hash_key: Option<String>,
}

impl PendingRevision {
    /// Writes the row, its values in the order of [`COPY_REVISIONS`].
    fn write(&self, writer: &mut BinaryCopyInWriter) -> Result<(), postgres::Error> {
        let d = &self.described;
        let own: [&(dyn ToSql + Sync); RevisionRow::COLUMNS.len()] = [
            &self.key_id,
            &self.mod_revision,
            &self.create_revision,
            &self.version,
            &self.lease,
            &self.deleted,
            &self.value_size,
            &self.value_sha256,
            &self.value_hash,
            &d.encoding,
            &d.encryption,
            &d.api_version,
            &d.kind,
            &d.namespace,
            &d.name,
            &d.uid,
            &d.generation,
            &d.error,
            &self.run,
            &self.semantic,
            &self.duplicates,
            &self.hash_key,
            &self.cluster,
        ];
        let facts = self.facts.stored();
        let values: [&(dyn ToSql + Sync); RevisionRow::COLUMNS.len() + STORED_FACTS] =
            std::array::from_fn(|i| own.get(i).copied().unwrap_or_else(|| &facts[i - own.len()]));
        writer.write(&values)
    }
}

/// Key ids taken from the sequence at a time.
const KEY_IDS: i64 = 1000;

/// A key waiting for the next copy.
struct PendingKey {
    id: i64,
    group: Option<String>,
    resource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
}

/// A content waiting for the next copy.
struct PendingContent {
    hash: Vec<u8>,
    keyed: bool,
    codec: String,
    base: Option<i64>,
    canonical: Option<Vec<u8>>,
    fields: Vec<u8>,
    managed: Option<Vec<u8>>,
    redacted: Option<Vec<u8>>,
}

/// What this run knows of a key without asking the database.
#[derive(Default)]
struct KnownKey {
    /// Every stored revision of the key, when all are known.
    revisions: HashSet<i64>,
    /// The newest stored revision and its generation.
    newest: Option<(i64, i64)>,
}

/// The rows of one run.
pub(in crate::store) struct PgRows<'s> {
    store: &'s Store,
    pending: Vec<PendingRevision>,
    /// Contents waiting for the next copy: those the writer needs no
    /// answer about (it only ever compresses against a content stored in
    /// full, answered at once by [`RevisionRows::insert_contents`]).
    pending_contents: Vec<PendingContent>,
    /// Their hashes.
    pending_hashes: HashSet<Vec<u8>>,
    /// Whether this session has the staging table of contents.
    staging: bool,
    /// Per cluster: whether it held no keys when this run began, so that a
    /// key this run has not inserted is new without asking (the cluster's
    /// lock keeps other runs out).
    fresh: HashMap<ClusterId, bool>,
    /// Hashes of the keys this run inserted into fresh clusters.
    inserted_keys: HashSet<u64>,
    /// Keys waiting for the next copy, by name.
    pending_keys: HashMap<(ClusterId, Vec<u8>), PendingKey>,
    /// Key ids taken from the sequence, not used yet.
    key_ids: Vec<i64>,
    /// Keys whose stored revisions are all known: those this run created,
    /// and those read once.
    known: HashMap<i64, KnownKey>,
}

impl<'s> PgRows<'s> {
    pub(in crate::store) fn new(store: &'s Store) -> Self {
        PgRows {
            store,
            pending: Vec::new(),
            pending_contents: Vec::new(),
            pending_hashes: HashSet::new(),
            staging: false,
            fresh: HashMap::new(),
            inserted_keys: HashSet::new(),
            pending_keys: HashMap::new(),
            key_ids: Vec::new(),
            known: HashMap::new(),
        }
    }

    /// Copies the pending contents in (through a staging table, since a
    /// content another run stored meanwhile is left as it is).
    fn copy_contents(&mut self) -> Result<(), StoreError> {
        if self.pending_contents.is_empty() {
            return Ok(());
        }
        if !self.staging {
            let exists: Option<String> = self
                .store
                .query_opt("SELECT to_regclass('pg_temp.staged_contents')::text", &[])?
                .and_then(|r| r.get(0));
            if exists.is_none() {
                self.store.execute(
                    "CREATE TEMP TABLE staged_contents (hash BYTEA, keyed BOOLEAN, codec TEXT, base BIGINT, \
                     canonical BYTEA, fields BYTEA, managed BYTEA, redacted BYTEA) ON COMMIT DELETE ROWS",
                    &[],
                )?;
            }
            self.staging = true;
        }
        let pending = &self.pending_contents;
        self.store.with_client(|client| {
            let sink = client.copy_in(
                "COPY staged_contents (hash, keyed, codec, base, canonical, fields, managed, redacted) \
                 FROM STDIN (FORMAT binary)",
            )?;
            let mut writer = BinaryCopyInWriter::new(
                sink,
                &[
                    Type::BYTEA,
                    Type::BOOL,
                    Type::TEXT,
                    Type::INT8,
                    Type::BYTEA,
                    Type::BYTEA,
                    Type::BYTEA,
                    Type::BYTEA,
                ],
            );
            for c in pending {
                writer.write(&[
                    &c.hash,
                    &c.keyed,
                    &c.codec,
                    &c.base,
                    &c.canonical,
                    &c.fields,
                    &c.managed,
                    &c.redacted,
                ])?;
            }
            writer.finish()?;
            client.batch_execute(
                "INSERT INTO semantic_values (hash, keyed, codec, base, canonical, fields, managed, redacted) \
                 SELECT hash, keyed, codec, base, canonical, fields, managed, redacted FROM staged_contents \
                 ON CONFLICT (hash) DO NOTHING; DELETE FROM staged_contents",
            )
        })?;
        self.pending_contents.clear();
        self.pending_hashes.clear();
        Ok(())
    }

    /// Copies the pending keys in.
    fn copy_keys(&mut self) -> Result<(), StoreError> {
        if self.pending_keys.is_empty() {
            return Ok(());
        }
        let pending = &self.pending_keys;
        self.store.with_client(|client| {
            let sink = client.copy_in(
                "COPY keys (id, cluster_id, key, api_group, resource, namespace, name) FROM STDIN (FORMAT binary)",
            )?;
            let mut writer = BinaryCopyInWriter::new(
                sink,
                &[Type::INT8, Type::INT8, Type::BYTEA, Type::TEXT, Type::TEXT, Type::TEXT, Type::TEXT],
            );
            for ((cluster, key), k) in pending {
                writer.write(&[&k.id, cluster, key, &k.group, &k.resource, &k.namespace, &k.name])?;
            }
            writer.finish()
        })?;
        self.pending_keys.clear();
        Ok(())
    }

    /// A key id from the sequence, taken [`KEY_IDS`] at a time.
    fn next_key_id(&mut self) -> Result<i64, StoreError> {
        if self.key_ids.is_empty() {
            self.key_ids = self
                .store
                .query(
                    "SELECT nextval(pg_get_serial_sequence('keys', 'id')) FROM generate_series(1, $1::bigint) ORDER BY 1 DESC",
                    &[&KEY_IDS],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
        }
        Ok(self.key_ids.pop().expect("the sequence gave ids"))
    }

    /// Whether `cluster` held no keys when this run first asked.
    fn fresh(&mut self, cluster: ClusterId) -> Result<bool, StoreError> {
        if let Some(&fresh) = self.fresh.get(&cluster) {
            return Ok(fresh);
        }
        let fresh: bool = self
            .store
            .query_opt(
                "SELECT NOT EXISTS (SELECT 1 FROM keys WHERE cluster_id = $1)",
                &[&cluster],
            )?
            .expect("a row")
            .get(0);
        self.fresh.insert(cluster, fresh);
        Ok(fresh)
    }

    /// Copies the pending keys, contents and revisions in.
    fn copy_pending(&mut self) -> Result<(), StoreError> {
        self.copy_keys()?;
        self.copy_contents()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = &self.pending;
        self.store.with_client(|client| {
            let (statement, types) = &*COPY_REVISIONS;
            let mut writer = BinaryCopyInWriter::new(client.copy_in(statement)?, types);
            for p in pending {
                p.write(&mut writer)?;
            }
            writer.finish()
        })?;
        self.pending.clear();
        Ok(())
    }

    /// Remembers the keys of `key_ids` not remembered yet, reading their
    /// stored revisions together.
    fn load_known(&mut self, key_ids: &[i64]) -> Result<(), StoreError> {
        let mut asked: Vec<i64> = key_ids
            .iter()
            .copied()
            .filter(|k| !self.known.contains_key(k))
            .collect();
        asked.sort_unstable();
        asked.dedup();
        if asked.is_empty() {
            return Ok(());
        }
        if self.known.len() + asked.len() > KNOWN_KEYS {
            self.known.clear();
        }
        self.copy_pending()?;
        let rows = self.store.query_prepared(
            "SELECT key_id, mod_revision, create_revision FROM revisions WHERE key_id = ANY($1) \
             ORDER BY key_id, mod_revision",
            &[&asked],
        )?;
        for id in asked {
            self.known.insert(id, KnownKey::default());
        }
        for r in rows {
            let (key_id, revision, generation): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
            let k = self.known.get_mut(&key_id).expect("asked");
            k.revisions.insert(revision);
            k.newest = Some((revision, generation));
        }
        Ok(())
    }
}

impl RevisionRows for PgRows<'_> {
    fn location(&self) -> &Path {
        &self.store.path
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        self.store.begin()
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.copy_pending()?;
        self.store.commit()
    }

    fn rollback(&mut self) {
        self.pending.clear();
        self.pending_contents.clear();
        self.pending_hashes.clear();
        self.pending_keys.clear();
        // Keys rolled back are new again; the cluster may hold others now.
        self.inserted_keys.clear();
        self.fresh.clear();
        // What was remembered may be rolled back with it.
        self.known.clear();
        self.store.rollback();
    }

    fn key_id(
        &mut self,
        cluster: ClusterId,
        key: &[u8],
        names: Option<&ParsedKey>,
    ) -> Result<KeyId, StoreError> {
        if self.fresh(cluster)? {
            let hash = {
                use std::hash::{BuildHasher, BuildHasherDefault};
                BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                    .hash_one((cluster, key))
            };
            let name = (cluster, key.to_vec());
            if let Some(k) = self.pending_keys.get(&name) {
                return Ok(KeyId(k.id));
            }
            if self.inserted_keys.insert(hash) {
                let id = self.next_key_id()?;
                self.pending_keys.insert(
                    name,
                    PendingKey {
                        id,
                        group: names.map(|p| p.group.clone()),
                        resource: names.map(|p| p.resource.clone()),
                        namespace: names.and_then(|p| p.namespace.clone()),
                        name: names.and_then(|p| p.name.clone()),
                    },
                );
                if self.known.len() >= KNOWN_KEYS {
                    self.known.clear();
                }
                self.known.insert(id, KnownKey::default());
                if self.pending_keys.len() >= COPY_PAGE {
                    self.copy_keys()?;
                }
                return Ok(KeyId(id));
            }
            // Inserted before by this run (or a hash shared with one that
            // was): the database knows.
            self.copy_keys()?;
        }
        let inserted = self.store.query_opt_prepared(
            "INSERT INTO keys (cluster_id, key, api_group, resource, namespace, name) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (cluster_id, key) DO NOTHING RETURNING id",
            &[
                &cluster,
                &key,
                &names.map(|p| p.group.as_str()),
                &names.map(|p| p.resource.as_str()),
                &names.and_then(|p| p.namespace.as_deref()),
                &names.and_then(|p| p.name.as_deref()),
            ],
        )?;
        if let Some(row) = inserted {
            let id: i64 = row.get(0);
            if self.known.len() >= KNOWN_KEYS {
                self.known.clear();
            }
            self.known.insert(id, KnownKey::default());
            return Ok(KeyId(id));
        }
        let id = self
            .store
            .query_opt(
                "SELECT id FROM keys WHERE cluster_id = $1 AND key = $2",
                &[&cluster, &key],
            )?
            .expect("the key conflicted, so it is there")
            .get(0);
        Ok(KeyId(id))
    }

    fn path_id(&mut self, path: &FieldPath) -> Result<i64, StoreError> {
        let inserted = self.store.query_opt_prepared(
            "INSERT INTO field_paths (path) VALUES ($1) ON CONFLICT (path) DO NOTHING RETURNING id",
            &[&path.as_str()],
        )?;
        if let Some(row) = inserted {
            return Ok(row.get(0));
        }
        Ok(self
            .store
            .query_opt_prepared("SELECT id FROM field_paths WHERE path = $1", &[&path.as_str()])?
            .expect("the path conflicted, so it is there")
            .get(0))
    }

    fn stored_revisions(&mut self, revisions: &[(KeyId, i64)]) -> Result<Vec<bool>, StoreError> {
        let keys: Vec<i64> = revisions.iter().map(|&(k, _)| k.0).collect();
        self.load_known(&keys)?;
        Ok(revisions
            .iter()
            .map(|(k, r)| {
                self.known
                    .get(&k.0)
                    .is_some_and(|known| known.revisions.contains(r))
            })
            .collect())
    }

    fn generation_before(&mut self, key_id: KeyId, mod_revision: i64) -> Result<Option<i64>, StoreError> {
        let key_id = key_id.0;
        self.load_known(&[key_id])?;
        if let Some((newest, generation)) = self.known.get(&key_id).and_then(|k| k.newest) {
            if newest < mod_revision {
                return Ok(Some(generation));
            }
        }
        self.copy_pending()?;
        Ok(self
            .store
            .query_opt(
                "SELECT create_revision FROM revisions WHERE key_id = $1 AND mod_revision < $2 \
                 ORDER BY mod_revision DESC LIMIT 1",
                &[&key_id, &mod_revision],
            )?
            .map(|r| r.get(0)))
    }

    fn latest_bases(&mut self, key_ids: &[KeyId]) -> Result<Vec<Option<Base>>, StoreError> {
        // A key with no stored revision has none.
        let asked: Vec<i64> = key_ids
            .iter()
            .map(|k| k.0)
            .filter(|k| self.known.get(k).is_none_or(|known| known.newest.is_some()))
            .collect();
        if asked.is_empty() {
            return Ok(key_ids.iter().map(|_| None).collect());
        }
        self.copy_pending()?;
        let rows = self.store.query_prepared(
            "SELECT l.key_id, b.id, b.canonical, b.fields, b.managed FROM unnest($1::bigint[]) AS l (key_id) \
             CROSS JOIN LATERAL (SELECT b.id, b.canonical, b.fields, b.managed FROM revisions r \
               JOIN semantic_values s ON s.hash = r.semantic_sha256 \
               JOIN semantic_values b ON b.id = coalesce(s.base, s.id) \
               WHERE r.key_id = l.key_id AND b.codec = 'zstd' ORDER BY r.mod_revision DESC LIMIT 1) b",
            &[&asked],
        )?;
        let mut bases: HashMap<i64, Base> = rows
            .iter()
            .map(|r| {
                let blob = |i| BaseBlob::packed(r.get::<_, Option<Vec<u8>>>(i).unwrap_or_default());
                let base = Base {
                    id: r.get(1),
                    canonical: blob(2),
                    fields: blob(3),
                    managed: blob(4),
                };
                (r.get(0), base)
            })
            .collect();
        Ok(key_ids.iter().map(|k| bases.remove(&k.0)).collect())
    }

    fn insert_content(&mut self, c: &ContentRow<'_>) -> Result<(), StoreError> {
        self.pending_hashes.insert(c.hash.to_vec());
        self.pending_contents.push(PendingContent {
            hash: c.hash.to_vec(),
            keyed: c.keyed,
            codec: c.codec.to_string(),
            base: c.base,
            canonical: c.canonical.map(<[u8]>::to_vec),
            fields: c.fields.to_vec(),
            managed: c.managed.map(<[u8]>::to_vec),
            redacted: c.redacted.map(<[u8]>::to_vec),
        });
        if self.pending_contents.len() >= COPY_PAGE {
            self.copy_contents()?;
        }
        Ok(())
    }

    fn insert_contents(&mut self, contents: &[ContentRow<'_>]) -> Result<Vec<Option<i64>>, StoreError> {
        let hashes: Vec<&[u8]> = contents.iter().map(|c| c.hash).collect();
        let keyed: Vec<bool> = contents.iter().map(|c| c.keyed).collect();
        let codecs: Vec<&str> = contents.iter().map(|c| c.codec).collect();
        let bases: Vec<Option<i64>> = contents.iter().map(|c| c.base).collect();
        let canonical: Vec<Option<&[u8]>> = contents.iter().map(|c| c.canonical).collect();
        let fields: Vec<&[u8]> = contents.iter().map(|c| c.fields).collect();
        let managed: Vec<Option<&[u8]>> = contents.iter().map(|c| c.managed).collect();
        let redacted: Vec<Option<&[u8]>> = contents.iter().map(|c| c.redacted).collect();
        // In order, so that of a hash repeated the first is stored, as one
        // at a time would.
        // A content held for the next copy comes first, as it would have
        // been inserted first.
        let held: Vec<bool> = contents
            .iter()
            .map(|c| self.pending_hashes.contains(c.hash))
            .collect();
        let contents: Vec<&ContentRow<'_>> = contents
            .iter()
            .zip(&held)
            .filter(|(_, &h)| !h)
            .map(|(c, _)| c)
            .collect();
        if contents.is_empty() {
            return Ok(vec![None; held.len()]);
        }
        let rows = self.store.query_prepared(
            "INSERT INTO semantic_values (hash, keyed, codec, base, canonical, fields, managed, redacted) \
             SELECT hash, keyed, codec, base, canonical, fields, managed, redacted \
             FROM unnest($1::bytea[], $2::boolean[], $3::text[], $4::bigint[], $5::bytea[], $6::bytea[], \
               $7::bytea[], $8::bytea[]) \
             WITH ORDINALITY AS c (hash, keyed, codec, base, canonical, fields, managed, redacted, n) ORDER BY n \
             ON CONFLICT (hash) DO NOTHING RETURNING hash, id",
            &[&hashes, &keyed, &codecs, &bases, &canonical, &fields, &managed, &redacted],
        )?;
        let mut ids: HashMap<Vec<u8>, i64> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let mut answers = contents.iter().map(|c| ids.remove(c.hash));
        Ok(held
            .iter()
            .map(|&h| if h { None } else { answers.next().flatten() })
            .collect())
    }

    fn insert_revision(&mut self, row: &RevisionRow<'_>) -> Result<(), StoreError> {
        let r = row.record;
        // A key not remembered is read whole when next asked about.
        if let Some(known) = self.known.get_mut(&row.key_id.0) {
            known.revisions.insert(r.mod_revision);
            if known.newest.is_none_or(|(newest, _)| newest < r.mod_revision) {
                known.newest = Some((r.mod_revision, row.create_revision));
            }
        }
        self.pending.push(PendingRevision {
            key_id: row.key_id.0,
            cluster: row.cluster,
            mod_revision: r.mod_revision,
            create_revision: row.create_revision,
            version: r.version,
            lease: r.lease,
            deleted: r.deleted,
            value_size: row.value_size,
            value_sha256: row.value_hash.map(|h| h.0.to_vec()),
            value_hash: row.value_hash.map(|h| h.1.to_string()),
            described: row.described.clone(),
            run: row.run.0,
            semantic: row.semantic_hash.map(<[u8]>::to_vec),
            facts: row.facts.clone(),
            duplicates: row.duplicates.map(str::to_string),
            hash_key: row.hash_key.map(str::to_string),
        });
        if self.pending.len() >= COPY_PAGE {
            self.copy_pending()?;
        }
        Ok(())
    }

    fn insert_clock_mark(&mut self, cluster: ClusterId, revision: i64, at: &str) -> Result<(), StoreError> {
        self.store.execute(
            "INSERT INTO clock_marks (cluster_id, revision, at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            &[&cluster, &revision, &at],
        )?;
        Ok(())
    }
}

impl crate::store::recorder::RowWrites for Store {
    fn revision_rows(
        &self,
    ) -> Result<(Box<dyn RevisionRows + '_>, &crate::canon::keyed_hash::HashKey), StoreError> {
        Ok((
            Box::new(PgRows::new(self)),
            crate::store::recorder::HashKeyLoad::hash_key(self)?,
        ))
    }
}
