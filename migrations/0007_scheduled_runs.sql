-- Scheduled runs: which resources a run recorded, and how far it got.

-- The run's resource filter as text (`include:pods,...;exclude:leases`);
-- incremental runs continue only from runs with the same filter.
ALTER TABLE runs ADD COLUMN resource_filter TEXT;
-- Every revision up to this one (under the prefix, within the filter) is
-- stored. A complete snapshot run reaches its head; a `follow` run moves it
-- forward as it commits, so a follow stopped by a signal is still a base
-- for the next run.
ALTER TABLE runs ADD COLUMN complete_through INTEGER;
UPDATE runs SET complete_through = head_revision WHERE status = 'complete';
