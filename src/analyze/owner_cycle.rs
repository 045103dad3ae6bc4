//! `owner-cycle`: objects live at the newest stored revision whose
//! ownerReferences form a cycle (A owned by B, B owned by A; any length),
//! which the garbage collector cannot delete in foreground: each waits for
//! the other. Every member is named.

use super::detector::{Findings, Registration};
use super::objects::{Generation, Live, Objects};
use crate::store::finding::{Finding, Severity};

pub const NAME: &str = "owner-cycle";

/// Judges the owner graph of the object set at the head.
pub const DETECTOR: Registration =
    Registration::at_head(NAME, Severity::Medium, "owner problems", |objects, _, _, out| detect(objects, out));

/// One finding per cycle (strongly connected set of two or more objects, or
/// an object that owns itself).
pub fn detect(objects: &Objects, out: &mut Findings) {
    // Nodes: live objects; edges: to each owner live under the named UID.
    let nodes: Vec<(Generation, Live)> = objects.live().collect();
    let index: std::collections::HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, (g, _))| Some((g.uid()?, i)))
        .collect();
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|(_, live)| live.owners().filter_map(|o| index.get(o.uid()).copied()).collect())
        .collect();
    for mut members in strongly_connected(&edges) {
        if members.len() > 1 || edges[members[0]].contains(&members[0]) {
            members.sort_by(|a, b| nodes[*a].0.key().cmp(nodes[*b].0.key()));
            out.push(finding(&members.iter().map(|&i| nodes[i]).collect::<Vec<_>>()));
        }
    }
}

fn finding(members: &[(Generation, Live)]) -> Finding {
    let names: Vec<String> = members.iter().map(|(g, _)| g.object()).collect();
    let shape = match members {
        [(one, _)] => format!("{} owns itself", one.object()),
        _ => format!(
            "{} objects own each other in a cycle: {}",
            members.len(),
            names.join(" → ")
        ),
    };
    Finding {
        detector: NAME,
        severity: Severity::Medium,
        keys: members.iter().map(|(g, _)| g.key().to_string()).collect(),
        revisions: members.iter().map(|(_, live)| live.revision()).collect(),
        summary: format!("{shape}; a foreground (cascading) deletion of any of them never completes"),
        details: serde_json::json!({
            "members": members.iter().map(|(g, _)| serde_json::json!({"object": g.object(), "uid": g.uid(), "key": g.key()})).collect::<Vec<_>>(),
        }),
    }
}

/// Tarjan's strongly connected components, iteratively (a deep ownership
/// chain must not overflow the stack).
fn strongly_connected(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = edges.len();
    let (mut index, mut low, mut on_stack) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut out, mut next) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, next edge to look at)
        let mut work = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut e)) = work.last_mut() {
            if let Some(&w) = edges[v].get(*e) {
                *e += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(component);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::objects::tests::{owned_by, rev};

    fn object(name: &str, owners: &[&str]) -> Vec<crate::store::object::ObjectRevision> {
        let refs: Vec<(&str, &str, &str, &str)> =
            owners.iter().map(|o| ("v1", "ConfigMap", *o, *o)).collect();
        vec![owned_by(rev("ConfigMap", "shop", name, name, 2, 2), &refs)]
    }

    fn cycles(histories: &[Vec<crate::store::object::ObjectRevision>]) -> Vec<Finding> {
        let mut objects = Objects::default();
        histories.iter().for_each(|h| objects.push(h).unwrap());
        Findings::of(|out| detect(&objects, out))
    }

    #[test]
    fn cycles_of_every_length_and_no_false_ones() {
        assert_eq!(cycles(&[object("a", &["b"]), object("b", &["a"])]).len(), 1);
        let three = cycles(&[
            object("a", &["b"]),
            object("b", &["c"]),
            object("c", &["a"]),
            object("d", &["a"]),
        ]);
        assert_eq!(three.len(), 1);
        assert_eq!(three[0].keys.len(), 3, "d hangs off the cycle, not in it");
        assert!(
            three[0].summary.contains("3 objects own each other"),
            "{}",
            three[0].summary
        );
        assert_eq!(cycles(&[object("s", &["s"])]).len(), 1);
        assert!(cycles(&[object("a", &["b"]), object("b", &["c"]), object("c", &[])]).is_empty());
        // A long chain does not overflow, and closing it makes one cycle.
        let mut chain: Vec<_> = (0..5000)
            .map(|i| object(&format!("n{i}"), &[&format!("n{}", i + 1)]))
            .collect();
        chain.push(object("n5000", &[]));
        assert!(cycles(&chain).is_empty());
        chain.pop();
        chain.push(object("n5000", &["n0"]));
        assert_eq!(cycles(&chain)[0].keys.len(), 5001);
    }
}
