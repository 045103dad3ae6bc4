//! Compiles the generated Kubernetes schema in `proto/` into a descriptor
//! set with protox (no `protoc` needed); the decoder loads it at run time
//! with prost-reflect. Lists each backend's migrations, so that a new one
//! is its file alone.

use std::path::{Path, PathBuf};

fn proto_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            proto_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
}

/// Writes `{backend}_migrations.rs` into `out`: `MIGRATION_FILES`, each
/// `.sql` file of `dir` as its name and text, in name order (the order the
/// store applies them).
fn migration_list(dir: &str, backend: &str, out: &Path) {
    println!("cargo:rerun-if-changed={dir}");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("listing {dir}: {e}"))
        .map(|e| {
            e.expect("directory entry")
                .file_name()
                .into_string()
                .expect("a UTF-8 name")
        })
        .filter(|name| name.ends_with(".sql"))
        .collect();
    names.sort();
    let files: String = names
        .iter()
        .map(|name| {
            format!(
                "    ({name:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/{dir}/{name}\"))),\n"
            )
        })
        .collect();
    let list = format!("/// The migrations in `{dir}/`, by file name, in the order applied.\nconst MIGRATION_FILES: &[(&str, &str)] = &[\n{files}];\n");
    std::fs::write(out.join(format!("{backend}_migrations.rs")), list).expect("writing the migration list");
}

fn main() {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    migration_list("migrations", "sqlite", &out_dir);
    migration_list("migrations/postgres", "postgres", &out_dir);
    let root = Path::new("proto");
    println!("cargo:rerun-if-changed=proto");
    let mut files = Vec::new();
    proto_files(root, &mut files);
    // encode_file_descriptor_set keeps custom options (prost_types would drop them).
    let descriptors = protox::Compiler::new([root])
        .and_then(|mut c| {
            c.include_imports(true).open_files(&files)?;
            Ok(c.encode_file_descriptor_set())
        })
        .unwrap_or_else(|e| panic!("compiling proto/: {e:?}"));
    std::fs::write(out_dir.join("k8s_descriptors.bin"), descriptors).expect("writing descriptor set");
}
