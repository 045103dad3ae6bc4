//! A schema from the cluster's own Kubernetes `.proto` files (`--proto-path
//! DIR`, compiled with protox) or a descriptor set (`--descriptor-set
//! FILE`), merged with the built-in one: their messages replace built-in
//! messages of the same full name, new messages and kinds become
//! decodable, and the JSON conventions the generator applies (JSON names
//! that differ from the proto names, inlined fields, one-field list
//! wrappers) carry over from the built-in schema by message and field name.

use super::schema::{built_in, Schema};
use prost::Message;
use prost_reflect::prost_types::{DescriptorProto, FileDescriptorProto, FileDescriptorSet};
use prost_reflect::DescriptorPool;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// Why the given schema could not be used: one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProtoError(String);

/// Every `.proto` file under `dir/k8s.io`, relative to `dir`.
fn kubernetes_protos(dir: &Path) -> Result<Vec<PathBuf>, ProtoError> {
    let root = dir.join("k8s.io");
    if !root.is_dir() {
        return Err(ProtoError(format!(
            "--proto-path {}: no k8s.io folder in it (give the folder that holds k8s.io/api, k8s.io/apimachinery, ... as a GOPATH/src does)",
            dir.display()
        )));
    }
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(at) = stack.pop() {
        let entries = std::fs::read_dir(&at).map_err(|e| {
            ProtoError(format!(
                "--proto-path {}: cannot read {}: {e}",
                dir.display(),
                at.display()
            ))
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "proto") {
                found.push(path.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    found.sort();
    if found.is_empty() {
        return Err(ProtoError(format!(
            "--proto-path {}: no .proto files under k8s.io/",
            dir.display()
        )));
    }
    Ok(found)
}

/// A compile error as `file:line:column: message`, on one line.
fn located(e: &protox::Error) -> String {
    use miette::Diagnostic;
    let message = e.to_string().replace('\n', " ");
    let at = e.labels().and_then(|mut labels| labels.next()).and_then(|label| {
        let span = e.source_code()?.read_span(label.inner(), 0, 0).ok()?;
        Some(format!("{}:{}", span.line() + 1, span.column() + 1))
    });
    match (e.file(), at) {
        (Some(file), Some(at)) => format!("{file}:{at}: {message}"),
        (Some(file), None) => format!("{file}: {message}"),
        _ => message,
    }
}

/// The files `proto_paths` hold, compiled, and those of `descriptor_sets`.
fn user_files(
    proto_paths: &[PathBuf],
    descriptor_sets: &[PathBuf],
) -> Result<Vec<FileDescriptorProto>, ProtoError> {
    let mut files = Vec::new();
    if !proto_paths.is_empty() {
        let mut compiler =
            protox::Compiler::new(proto_paths).map_err(|e| ProtoError(format!("--proto-path: {e}")))?;
        compiler.include_imports(true);
        for dir in proto_paths {
            for file in kubernetes_protos(dir)? {
                compiler
                    .open_file(&file)
                    .map_err(|e| ProtoError(format!("--proto-path {}: {}", dir.display(), located(&e))))?;
            }
        }
        files.extend(compiler.file_descriptor_set().file);
    }
    for path in descriptor_sets {
        let bytes = std::fs::read(path)
            .map_err(|e| ProtoError(format!("--descriptor-set {}: cannot read: {e}", path.display())))?;
        let set = FileDescriptorSet::decode(&bytes[..]).map_err(|e| {
            ProtoError(format!(
                "--descriptor-set {}: not a FileDescriptorSet ({e}); write one with protoc --include_imports --descriptor_set_out",
                path.display()
            ))
        })?;
        files.extend(set.file);
    }
    Ok(files)
}

fn full_name(package: &str, name: &str) -> String {
    match package {
        "" => name.to_string(),
        p => format!("{p}.{name}"),
    }
}

/// Gives the fields of `m` their JSON names: the built-in message's for a
/// field it has, found by number (Kubernetes never reuses a field number,
/// while a few upstream proto names differ from the JSON name: `Webhooks`,
/// `Expression`, `uID`, `aPIGroup`), else the proto name (for fields newer
/// than the built-in schema, Kubernetes' proto names are its JSON names).
fn name_fields(m: &mut DescriptorProto, package: &str, built: &DescriptorPool) {
    let known = built.get_message_by_name(&full_name(package, m.name()));
    for f in &mut m.field {
        let json = known
            .as_ref()
            .and_then(|k| k.get_field(u32::try_from(f.number()).ok()?))
            .map(|k| k.json_name().to_string())
            .unwrap_or_else(|| f.name().to_string());
        f.json_name = Some(json);
    }
    let nested = format!("{}.{}", package, m.name());
    for n in &mut m.nested_type {
        name_fields(n, &nested, built);
    }
}

/// The built-in files with the given files' messages taking the place of
/// built-in messages of the same full name.
fn merge(user: Vec<FileDescriptorProto>) -> Result<Vec<FileDescriptorProto>, ProtoError> {
    let builtin =
        FileDescriptorSet::decode(Schema::built_in_descriptors()).expect("the built-in set decodes");
    let built = &built_in().pool;
    let mut given: BTreeMap<String, FileDescriptorProto> = BTreeMap::new();
    let mut defined: HashSet<String> = HashSet::new();
    for mut f in user {
        let package = f.package().to_string();
        for m in &mut f.message_type {
            defined.insert(full_name(&package, m.name()));
            name_fields(m, &package, built);
        }
        for e in &f.enum_type {
            defined.insert(full_name(&package, e.name()));
        }
        given.insert(f.name().to_string(), f);
    }
    let mut merged = Vec::new();
    for mut f in builtin.file {
        let package = f.package().to_string();
        let kept: Vec<DescriptorProto> = f
            .message_type
            .drain(..)
            .filter(|m| !defined.contains(&full_name(&package, m.name())))
            .collect();
        match given.get_mut(f.name()) {
            // The same file: what the given one lacks stays, in it.
            Some(g) => {
                g.message_type.extend(kept);
                for dep in f.dependency {
                    if !g.dependency.contains(&dep) {
                        g.dependency.push(dep);
                    }
                }
            }
            None => {
                f.message_type = kept;
                merged.push(f);
            }
        }
    }
    merged.extend(given.into_values());
    // Dependencies the merged files no longer need (or that do not exist) go.
    let names: HashSet<String> = merged.iter().map(|f| f.name().to_string()).collect();
    for f in &mut merged {
        let me = f.name().to_string();
        f.dependency.retain(|d| names.contains(d) && *d != me);
        f.public_dependency.clear();
        f.weak_dependency.clear();
    }
    Ok(merged)
}

/// The schema the given files make, merged with the built-in one.
pub fn load(proto_paths: &[PathBuf], descriptor_sets: &[PathBuf]) -> Result<Schema, ProtoError> {
    let user = user_files(proto_paths, descriptor_sets)?;
    if !user.iter().any(|f| f.package().starts_with("k8s.io.")) {
        return Err(ProtoError(
            "the given schema defines no Kubernetes package (k8s.io.*)".to_string(),
        ));
    }
    let files = merge(user)?;
    let set = FileDescriptorSet { file: files };
    let digest = crate::hex::hex(&Sha256::digest(set.encode_to_vec()));
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_set(set).map_err(|e| {
        ProtoError(format!(
            "the given schema does not merge with the built-in one: {e}"
        ))
    })?;
    let mut sources: Vec<String> = proto_paths
        .iter()
        .map(|p| format!("--proto-path {}", p.display()))
        .collect();
    sources.extend(
        descriptor_sets
            .iter()
            .map(|p| format!("--descriptor-set {}", p.display())),
    );
    let origin = format!("{} (sha256 {})", sources.join(" "), &digest[..16]);
    Ok(Schema::with_facts(pool, origin, Some(built_in())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_field_keeps_its_json_name_whatever_its_proto_name() {
        let built = &built_in().pool;
        let package = "k8s.io.api.admissionregistration.v1";
        let mut m = DescriptorProto {
            name: Some("MutatingWebhookConfiguration".into()),
            field: vec![
                prost_reflect::prost_types::FieldDescriptorProto {
                    name: Some("Webhooks".into()),
                    number: Some(2),
                    ..Default::default()
                },
                prost_reflect::prost_types::FieldDescriptorProto {
                    name: Some("newerField".into()),
                    number: Some(99),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        name_fields(&mut m, package, built);
        let names: Vec<&str> = m.field.iter().map(|f| f.json_name()).collect();
        assert_eq!(names, ["webhooks", "newerField"]);
    }

    #[test]
    fn a_folder_without_kubernetes_protos_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let e = load(&[dir.path().to_path_buf()], &[]).err().unwrap().to_string();
        assert!(e.contains("no k8s.io folder"), "{e}");
    }
}
