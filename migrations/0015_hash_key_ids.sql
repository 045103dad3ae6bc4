-- The key of keyed hashes (Secret values) no longer lives in the database
-- but in a key file beside it (<db>.key) or one named on the command line;
-- the first writing run moves an older database's key there and deletes
-- its `settings` row. What the database keeps is the key's id, an HMAC of
-- a fixed label under the key, which tells keys apart and reveals nothing:
-- per run, the key it hashed with; per revision that holds keyed hashes,
-- the key they are under, so that comparisons across a new key
-- (--new-hash-key) know they are none.
ALTER TABLE runs ADD COLUMN hash_key TEXT;
ALTER TABLE revisions ADD COLUMN hash_key TEXT;
