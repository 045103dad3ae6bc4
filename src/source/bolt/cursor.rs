//! Walks a bucket's B+tree depth first, yielding leaf entries in key order.
//! Each page may be visited once per walk; the depth is bounded. A visit
//! returns [`ControlFlow::Break`] to end the walk early.

use super::page::{Page, BRANCH, LEAF};
use super::{BoltDb, BoltError, Bucket};
use std::collections::HashSet;
use std::ops::ControlFlow;

/// Deeper than any real bbolt tree (fan-out is in the hundreds).
const MAX_DEPTH: usize = 64;

pub fn walk<'a>(
    db: &'a BoltDb,
    bucket: Bucket<'a>,
    visit: &mut dyn FnMut(&'a [u8], &'a [u8], u32) -> Result<ControlFlow<()>, BoltError>,
) -> Result<ControlFlow<()>, BoltError> {
    let mut seen = HashSet::new();
    match bucket {
        Bucket::Paged(id) => walk_page(db, id, 0, &mut seen, visit),
        Bucket::Inline(bytes) => {
            let page = Page { bytes, id: None };
            if page.flags() & LEAF == 0 {
                return Err(BoltError::BadPage {
                    page: None,
                    problem: format!("inline bucket page has flags {:#x}", page.flags()),
                });
            }
            visit_leaf(&page, visit)
        }
    }
}

fn visit_leaf<'a>(
    page: &Page<'a>,
    visit: &mut dyn FnMut(&'a [u8], &'a [u8], u32) -> Result<ControlFlow<()>, BoltError>,
) -> Result<ControlFlow<()>, BoltError> {
    for i in 0..page.count() {
        let e = page.leaf(i)?;
        if visit(e.key, e.value, e.flags)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(()))
}

fn walk_page<'a>(
    db: &'a BoltDb,
    id: u64,
    depth: usize,
    seen: &mut HashSet<u64>,
    visit: &mut dyn FnMut(&'a [u8], &'a [u8], u32) -> Result<ControlFlow<()>, BoltError>,
) -> Result<ControlFlow<()>, BoltError> {
    if !seen.insert(id) {
        return Err(BoltError::Cycle { page: id });
    }
    if depth > MAX_DEPTH {
        return Err(BoltError::BadPage {
            page: Some(id),
            problem: format!("tree deeper than {MAX_DEPTH} levels"),
        });
    }
    let page = db.page(id)?;
    let flags = page.flags();
    if flags & BRANCH != 0 {
        for i in 0..page.count() {
            let (_, child) = page.branch(i)?;
            if walk_page(db, child, depth + 1, seen, visit)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    } else if flags & LEAF != 0 {
        visit_leaf(&page, visit)
    } else {
        Err(BoltError::BadPage {
            page: Some(id),
            problem: format!("flags {flags:#x} are neither branch nor leaf"),
        })
    }
}
