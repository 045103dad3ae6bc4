//! Reading what survives of a damaged file: a walk of a bucket's tree that
//! records each subtree it cannot read (with the key range that subtree
//! held, from its parent's keys) and goes on, and a scan of every page for
//! leaves the broken tree no longer reaches.

use super::page::{Page, BRANCH, LEAF};
use super::{BoltDb, BoltError, Bucket};
use std::collections::HashSet;

/// Deeper than any real bbolt tree (fan-out is in the hundreds).
const MAX_DEPTH: usize = 64;

/// A subtree the walk could not read.
#[derive(Clone, Debug)]
pub struct Unreadable<'a> {
    pub page: u64,
    pub problem: String,
    /// The first key the subtree held (its parent's key for it), when known.
    pub from_key: Option<&'a [u8]>,
    /// The first key after the subtree (the parent's next key), when known.
    pub to_key: Option<&'a [u8]>,
}

/// What a salvaging walk saw.
#[derive(Debug, Default)]
pub struct Walked<'a> {
    /// The leaf pages it read.
    pub leaves: HashSet<u64>,
    /// Leaf entries it skipped, with why.
    pub skipped: Vec<String>,
    pub unreadable: Vec<Unreadable<'a>>,
}

impl BoltDb {
    /// Calls `visit(key, value, flags)` for every entry of `bucket` that can
    /// be read, in key order, recording what cannot instead of failing.
    pub fn salvage_walk<'a>(
        &'a self,
        bucket: Bucket<'a>,
        visit: &mut dyn FnMut(&'a [u8], &'a [u8], u32),
    ) -> Walked<'a> {
        let mut walked = Walked::default();
        let mut seen = HashSet::new();
        match bucket {
            Bucket::Paged(id) => self.salvage_page(id, 0, (None, None), &mut seen, &mut walked, visit),
            Bucket::Inline(bytes) => {
                let page = Page { bytes, id: None };
                leaf_entries(&page, &mut walked.skipped, visit);
            }
        }
        walked
    }

    fn salvage_page<'a>(
        &'a self,
        id: u64,
        depth: usize,
        range: (Option<&'a [u8]>, Option<&'a [u8]>),
        seen: &mut HashSet<u64>,
        walked: &mut Walked<'a>,
        visit: &mut dyn FnMut(&'a [u8], &'a [u8], u32),
    ) {
        let unreadable = |problem: String| Unreadable {
            page: id,
            problem,
            from_key: range.0,
            to_key: range.1,
        };
        if !seen.insert(id) {
            walked
                .unreadable
                .push(unreadable("reached twice: the tree has a cycle".into()));
            return;
        }
        if depth > MAX_DEPTH {
            walked
                .unreadable
                .push(unreadable(format!("tree deeper than {MAX_DEPTH} levels")));
            return;
        }
        let page = match self.page(id) {
            Ok(p) => p,
            Err(e) => {
                walked.unreadable.push(unreadable(e.to_string()));
                return;
            }
        };
        let flags = page.flags();
        if flags & BRANCH != 0 {
            let children: Vec<Result<(&'a [u8], u64), BoltError>> =
                (0..page.count()).map(|i| page.branch(i)).collect();
            for (i, child) in children.iter().enumerate() {
                let next = children
                    .get(i + 1)
                    .and_then(|c| c.as_ref().ok())
                    .map(|(k, _)| *k)
                    .or(range.1);
                match child {
                    Ok((key, child)) => {
                        self.salvage_page(*child, depth + 1, (Some(key), next), seen, walked, visit)
                    }
                    Err(e) => walked.unreadable.push(Unreadable {
                        page: id,
                        problem: e.to_string(),
                        from_key: None,
                        to_key: next,
                    }),
                }
            }
        } else if flags & LEAF != 0 {
            walked.leaves.insert(id);
            leaf_entries(&page, &mut walked.skipped, visit);
        } else {
            walked.unreadable.push(unreadable(format!(
                "flags {flags:#x} are neither branch nor leaf"
            )));
        }
    }

    /// Every page of the file that reads as a leaf (its header names its own
    /// id), with its entries, except those in `skip`.
    pub fn leaf_pages<'a>(
        &'a self,
        skip: &HashSet<u64>,
        visit: &mut dyn FnMut(u64, &'a [u8], &'a [u8], u32),
    ) {
        let size = self.meta.page_size as u64;
        let limit = self.meta.pgid.min(self.len as u64 / size);
        let mut ignored = Vec::new();
        for id in 2..limit {
            if skip.contains(&id) {
                continue;
            }
            let Ok(page) = self.page(id) else { continue };
            if page.flags() & LEAF == 0 || page.flags() & BRANCH != 0 {
                continue;
            }
            leaf_entries(&page, &mut ignored, &mut |k, v, f| visit(id, k, v, f));
            ignored.clear();
        }
    }
}

/// The entries of a leaf page that can be read; the rest noted in `skipped`.
fn leaf_entries<'a>(
    page: &Page<'a>,
    skipped: &mut Vec<String>,
    visit: &mut dyn FnMut(&'a [u8], &'a [u8], u32),
) {
    for i in 0..page.count() {
        match page.leaf(i) {
            Ok(e) => visit(e.key, e.value, e.flags),
            Err(e) => skipped.push(e.to_string()),
        }
    }
}
