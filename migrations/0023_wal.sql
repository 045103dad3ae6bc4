-- A run that read a member's WAL beside its db (snapshot --data-dir,
-- --wal-dir): what it took from the log, as JSON ({dir, segments, first:
-- [index, term], last, applied, beyond_db, writes, added: [from, to],
-- compactions, undecided, cut, gaps, not_placed}); NULL for other runs.
ALTER TABLE runs ADD COLUMN wal TEXT;
