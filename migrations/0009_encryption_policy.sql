-- Decryption with the cluster's EncryptionConfiguration.

-- The write provider and key of each of the config's resources[] entries,
-- by name only (JSON: {"rules": [{"resources": [...], "write": "aesgcm:key1"}]});
-- NULL when the run had no config.
ALTER TABLE runs ADD COLUMN encryption_policy TEXT;

-- Encrypted values are labelled `<provider>:<key>` (`aescbc:key1`,
-- `kms-v2:<plugin>:<key id>`) instead of the prefix's
-- `<provider>:<version>:<key>`, so that a label is what the config names.
UPDATE revisions SET encryption = CASE
    WHEN encryption LIKE 'kms:v1:%' THEN 'kms-v1:' || substr(encryption, 8)
    WHEN encryption LIKE 'kms:v2:%' THEN 'kms-v2:' || substr(encryption, 8)
    WHEN encryption LIKE 'aescbc:v1:%' THEN 'aescbc:' || substr(encryption, 11)
    WHEN encryption LIKE 'aesgcm:v1:%' THEN 'aesgcm:' || substr(encryption, 11)
    WHEN encryption LIKE 'secretbox:v1:%' THEN 'secretbox:' || substr(encryption, 14)
    ELSE encryption
END
WHERE encryption IS NOT NULL;
