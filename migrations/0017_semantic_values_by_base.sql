-- A stored content's deltas, by the content they are compressed against:
-- deleting a content checks that none is compressed against it (the
-- foreign key), which without this index read every stored content, once
-- per content `prune` removed.
CREATE INDEX semantic_values_by_base ON semantic_values (base) WHERE base IS NOT NULL;
