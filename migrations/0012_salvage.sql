-- A run of a damaged data file read with --salvage: the damage it found and
-- worked around, as JSON ({pages_unreadable: [...], records_skipped,
-- records_recovered, ranges: [[from, to], ...]}); NULL for other runs. The
-- ranges are also recorded as history gaps.
ALTER TABLE runs ADD COLUMN salvage TEXT;
