//! Facts read from the `k8s-openapi` crate's source for one Kubernetes
//! version: each struct's exact JSON field names and each kind's plural and
//! scope.

use crate::naming::normalize;
use crate::pb::{ModulePath, Scope};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// One struct: its exact (Go) name and its JSON field names keyed by
/// [`normalize`]d name.
#[derive(Debug, Default)]
pub struct Struct {
    pub name: String,
    pub json_names: BTreeMap<String, String>,
}

/// A `Resource` impl: kind, plural and scope.
#[derive(Debug, Clone)]
pub struct Resource {
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub scope: Scope,
}

#[derive(Default)]
pub struct OpenApi {
    /// Keyed by module path and lower-cased struct name.
    pub structs: BTreeMap<(ModulePath, String), Struct>,
    pub resources: Vec<Resource>,
}

/// Reads every file under `version_dir` (e.g. k8s-openapi's `src/v1_35`).
pub fn read(version_dir: &Path) -> Result<OpenApi> {
    let mut out = OpenApi::default();
    let mut files = Vec::new();
    crate::collect_files(version_dir, &mut files)?;
    for file in files {
        let module: ModulePath = file
            .parent()
            .expect("file has a parent")
            .strip_prefix(version_dir)?
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        read_file(module, &text, &mut out);
    }
    Ok(out)
}

fn quoted(s: &str) -> Option<&str> {
    let start = s.find('"')? + 1;
    let end = start + s[start..].find('"')?;
    Some(&s[start..end])
}

fn read_file(module: ModulePath, text: &str, out: &mut OpenApi) {
    let mut current: Option<Struct> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("pub struct ") {
            if let Some(s) = current.take() {
                out.structs.insert((module.clone(), s.name.to_lowercase()), s);
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            current = Some(Struct {
                name,
                json_names: BTreeMap::new(),
            });
        } else if t.contains("=> Field::Key_") {
            if let (Some(json), Some(s)) = (quoted(t), current.as_mut()) {
                s.json_names.insert(normalize(json), json.to_string());
            }
        } else if t.starts_with("impl crate::Resource for ") {
            let mut fields = BTreeMap::new();
            for inner in lines.by_ref() {
                let inner = inner.trim();
                if inner == "}" {
                    break;
                }
                if let Some(rest) = inner.strip_prefix("const ") {
                    let key = rest.split(':').next().unwrap_or_default().to_string();
                    if let Some(v) = quoted(rest) {
                        fields.insert(key, v.to_string());
                    }
                } else if let Some(rest) = inner.strip_prefix("type Scope = crate::") {
                    fields.insert("Scope".into(), rest.trim_end_matches(';').to_string());
                }
            }
            let scope = fields.get("Scope").and_then(|s| Scope::from_type_name(s).ok());
            if let (Some(group), Some(kind), Some(plural), Some(scope)) = (
                fields.get("GROUP"),
                fields.get("KIND"),
                fields.get("URL_PATH_SEGMENT"),
                scope,
            ) {
                out.resources.push(Resource {
                    group: group.clone(),
                    kind: kind.clone(),
                    plural: plural.clone(),
                    scope,
                });
            }
        }
    }
    if let Some(s) = current.take() {
        out.structs.insert((module, s.name.to_lowercase()), s);
    }
}
