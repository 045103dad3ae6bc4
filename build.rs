//! Compiles the generated Kubernetes schema in `proto/` into a descriptor
//! set with protox (no `protoc` needed). The decoder loads it at run time
//! with prost-reflect.

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

fn main() {
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
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("k8s_descriptors.bin");
    std::fs::write(&out, descriptors).expect("writing descriptor set");
}
