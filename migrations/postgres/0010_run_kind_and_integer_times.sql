-- A run's kind gets a column of its own (it was a prefix of `source`:
-- `file:`, `follow:` and `fetch-snapshot:`), and the times this tool
-- writes (a run's start and end, when a member began serving it, a
-- cluster first seen, an analysis) become integers: microseconds since
-- 1970-01-01 UTC, as in the SQLite schema. They were RFC 3339 text,
-- compared in byte order.
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'live'
    CHECK (kind IN ('live', 'follow', 'fetch-snapshot', 'file'));
UPDATE runs SET kind = 'file', source = substr(source, 6) WHERE source LIKE 'file:%';
UPDATE runs SET kind = 'follow', source = substr(source, 8) WHERE source LIKE 'follow:%';
UPDATE runs SET kind = 'fetch-snapshot', source = substr(source, 16)
    WHERE source LIKE 'fetch-snapshot:%';

ALTER TABLE runs
    ALTER COLUMN started_at TYPE BIGINT
        USING round(extract(epoch FROM CAST(started_at AS timestamptz)) * 1000000),
    ALTER COLUMN finished_at TYPE BIGINT
        USING round(extract(epoch FROM CAST(finished_at AS timestamptz)) * 1000000);
ALTER TABLE clusters ALTER COLUMN first_seen TYPE BIGINT
    USING round(extract(epoch FROM CAST(first_seen AS timestamptz)) * 1000000);
ALTER TABLE findings ALTER COLUMN analyzed_at TYPE BIGINT
    USING round(extract(epoch FROM CAST(analyzed_at AS timestamptz)) * 1000000);
ALTER TABLE run_members ALTER COLUMN at TYPE BIGINT
    USING round(extract(epoch FROM CAST(at AS timestamptz)) * 1000000);
