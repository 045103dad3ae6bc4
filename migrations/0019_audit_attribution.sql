-- Who wrote each revision: the kube-apiserver audit events `attribute`
-- read, one row per request (its ResponseComplete stage, once per
-- auditID), and the revisions they were joined to. Never a request or
-- response body: only who, when, what and how it ended.
CREATE TABLE audit_requests (
    id INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL REFERENCES clusters(id),
    audit_id TEXT NOT NULL,
    verb TEXT NOT NULL,
    api_group TEXT NOT NULL,
    resource TEXT NOT NULL,
    namespace TEXT,
    name TEXT,
    subresource TEXT,
    -- The stored key the request addressed; NULL when none matched.
    key_id INTEGER REFERENCES keys(id),
    username TEXT NOT NULL,
    -- JSON array of strings.
    groups TEXT NOT NULL,
    impersonated_user TEXT,
    user_agent TEXT,
    -- JSON array of strings.
    source_ips TEXT NOT NULL,
    -- The response's HTTP status; NULL when the event has none.
    code INTEGER,
    level TEXT NOT NULL CHECK (level IN ('Metadata', 'Request', 'RequestResponse')),
    -- metadata.resourceVersion of the response object (RequestResponse).
    response_revision INTEGER,
    -- objectRef.resourceVersion: a PUT's precondition, the old revision.
    precondition_revision INTEGER,
    -- stageTimestamp exactly as the event wrote it.
    time TEXT NOT NULL,
    -- What the join found, recomputed by every `attribute`:
    -- wrote (a revision is this request's), no-op (succeeded, wrote
    -- nothing), failed (4xx/5xx), ambiguous (the order could not tell),
    -- unmatched (no stored key or revision it could have written).
    outcome TEXT NOT NULL DEFAULT 'unmatched'
        CHECK (outcome IN ('wrote', 'no-op', 'failed', 'ambiguous', 'unmatched')),
    UNIQUE (cluster_id, audit_id)
);
CREATE INDEX audit_requests_by_key ON audit_requests (key_id, time);

-- The request that wrote a revision, and how the join knows.
CREATE TABLE revision_writers (
    key_id INTEGER NOT NULL REFERENCES keys(id),
    mod_revision INTEGER NOT NULL,
    request_id INTEGER NOT NULL REFERENCES audit_requests(id),
    match TEXT NOT NULL CHECK (match IN ('exact', 'by-order')),
    PRIMARY KEY (key_id, mod_revision)
) WITHOUT ROWID;
CREATE INDEX revision_writers_by_request ON revision_writers (request_id);
CREATE INDEX keys_by_object ON keys (cluster_id, resource, namespace, name);
CREATE INDEX audit_requests_by_object ON audit_requests (cluster_id, api_group, resource, namespace, name);
