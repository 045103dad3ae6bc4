//! The documentation's links hold: every link in README.md and docs/*.md
//! that is not a web or mail address names a file that exists (relative to
//! the linking file), and its `#anchor`, if any, is the GitHub anchor of a
//! heading of that file; every docs/*.md page is linked from docs/README.md.
//! Markdown is read by pulldown-cmark, so code is never mistaken for a link.

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// README.md and every docs/*.md, in a fixed order.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("the docs/ folder")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    std::iter::once(root.join("README.md")).chain(docs).collect()
}

/// GitHub's anchor of a heading: lower-cased, every character but letters,
/// digits, spaces, hyphens and underscores dropped, spaces made hyphens.
fn github_anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A page's link targets (with their line) and its headings' anchors (a
/// repeated one gets `-1`, `-2`, ... as GitHub numbers them).
struct Page {
    links: Vec<(usize, String)>,
    anchors: BTreeSet<String>,
}

fn read_page(path: &Path) -> Page {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let line = |offset: usize| text[..offset].lines().count().max(1);
    let (mut links, mut anchors, mut seen) = (Vec::new(), BTreeSet::new(), BTreeMap::new());
    let mut heading: Option<String> = None;
    for (event, range) in Parser::new(&text).into_offset_iter() {
        match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                links.push((line(range.start), dest_url.to_string()));
            }
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = &mut heading {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let anchor = github_anchor(&heading.take().unwrap_or_default());
                let n: &mut usize = seen.entry(anchor.clone()).or_default();
                anchors.insert(match *n {
                    0 => anchor,
                    k => format!("{anchor}-{k}"),
                });
                *n += 1;
            }
            _ => {}
        }
    }
    Page { links, anchors }
}

#[test]
fn links_between_documentation_pages_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = markdown_files(root);
    let pages: BTreeMap<PathBuf, Page> = files
        .iter()
        .map(|f| (f.canonicalize().unwrap(), read_page(f)))
        .collect();
    let mut broken = Vec::new();
    for file in &files {
        let here = file.canonicalize().unwrap();
        let shown = file.strip_prefix(root).unwrap().display().to_string();
        for (line, target) in &pages[&here].links {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let linked = match path {
                "" => here.clone(),
                _ => match here.parent().unwrap().join(path).canonicalize() {
                    Ok(p) => p,
                    Err(_) => {
                        broken.push(format!("{shown}:{line}: {target}: no such file"));
                        continue;
                    }
                },
            };
            if anchor.is_empty() {
                continue;
            }
            match pages.get(&linked) {
                Some(page) if page.anchors.contains(anchor) => {}
                Some(_) => broken.push(format!("{shown}:{line}: {target}: no such heading")),
                None => broken.push(format!(
                    "{shown}:{line}: {target}: an anchor into a file that is not a page"
                )),
            }
        }
    }
    let index = root.join("docs/README.md").canonicalize().unwrap();
    let indexed: BTreeSet<PathBuf> = pages[&index]
        .links
        .iter()
        .filter_map(|(_, t)| {
            index
                .parent()
                .unwrap()
                .join(t.split('#').next().unwrap())
                .canonicalize()
                .ok()
        })
        .collect();
    for file in files.iter().skip(1) {
        let page = file.canonicalize().unwrap();
        if page != index && !indexed.contains(&page) {
            broken.push(format!("{}: not linked from docs/README.md", file.display()));
        }
    }
    assert!(
        broken.is_empty(),
        "broken documentation links:\n{}",
        broken.join("\n")
    );
}
