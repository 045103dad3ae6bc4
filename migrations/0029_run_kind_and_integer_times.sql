-- A run's kind gets a column of its own (it was a prefix of `source`:
-- `file:`, `follow:` and `fetch-snapshot:`), and the times this tool
-- writes (a run's start and end, when a member began serving it, a
-- cluster first seen, an analysis) become integers: microseconds since
-- 1970-01-01 UTC. They were RFC 3339 text, which only compared in order
-- because every one was written in UTC to the second.
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'live'
    CHECK (kind IN ('live', 'follow', 'fetch-snapshot', 'file'));
UPDATE runs SET kind = 'file', source = substr(source, 6) WHERE source LIKE 'file:%';
UPDATE runs SET kind = 'follow', source = substr(source, 8) WHERE source LIKE 'follow:%';
UPDATE runs SET kind = 'fetch-snapshot', source = substr(source, 16)
    WHERE source LIKE 'fetch-snapshot:%';

ALTER TABLE runs ADD COLUMN started INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN finished INTEGER;
UPDATE runs SET
    started = CAST(round(unixepoch(started_at, 'subsec') * 1000000) AS INTEGER),
    finished = CAST(round(unixepoch(finished_at, 'subsec') * 1000000) AS INTEGER);
ALTER TABLE runs DROP COLUMN started_at;
ALTER TABLE runs DROP COLUMN finished_at;
ALTER TABLE runs RENAME COLUMN started TO started_at;
ALTER TABLE runs RENAME COLUMN finished TO finished_at;

ALTER TABLE clusters ADD COLUMN first INTEGER NOT NULL DEFAULT 0;
UPDATE clusters SET first = CAST(round(unixepoch(first_seen, 'subsec') * 1000000) AS INTEGER);
ALTER TABLE clusters DROP COLUMN first_seen;
ALTER TABLE clusters RENAME COLUMN first TO first_seen;

ALTER TABLE findings ADD COLUMN analyzed INTEGER NOT NULL DEFAULT 0;
UPDATE findings SET analyzed = CAST(round(unixepoch(analyzed_at, 'subsec') * 1000000) AS INTEGER);
ALTER TABLE findings DROP COLUMN analyzed_at;
ALTER TABLE findings RENAME COLUMN analyzed TO analyzed_at;

ALTER TABLE run_members ADD COLUMN at_us INTEGER NOT NULL DEFAULT 0;
UPDATE run_members SET at_us = CAST(round(unixepoch(at, 'subsec') * 1000000) AS INTEGER);
ALTER TABLE run_members DROP COLUMN at;
ALTER TABLE run_members RENAME COLUMN at_us TO at;
