//! The source tree's layer rule, checked on the source itself: a stage
//! imports only the stages before it, the leaves (decode, canon, decrypt)
//! import no other stage but for decrypt's use of decode's keys, and no
//! command imports another.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The stages in import order, leaves first.
const STAGES: [&str; 10] = [
    "decode",
    "canon",
    "decrypt",
    "source",
    "ingest",
    "store",
    "analyze",
    "report",
    "lifecycle",
    "cmd",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its test module (tests may build fixtures
/// from any stage).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// The crate modules `code` names (`crate::store::...` gives `store`), and
/// the command modules it names (`super::history`, `crate::cmd::diff`).
fn named(code: &str, prefix: &str) -> BTreeSet<String> {
    code.match_indices(prefix)
        .map(|(at, _)| {
            code[at + prefix.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

#[test]
fn a_stage_imports_only_the_stages_before_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    for (rank, stage) in STAGES.iter().enumerate() {
        let mut files = Vec::new();
        rust_files(&src.join(stage), &mut files);
        assert!(!files.is_empty(), "src/{stage} has no files");
        for file in files {
            for used in named(&code(&file), "crate::") {
                let Some(used_rank) = STAGES.iter().position(|s| *s == used) else {
                    continue;
                };
                if used_rank == rank {
                    continue;
                }
                let leaf = rank < 3 && used_rank < 3;
                let allowed = match leaf {
                    true => *stage == "decrypt" && used == "decode",
                    false => used_rank <= rank,
                };
                if !allowed {
                    broken.push(format!("{} imports {used}", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn no_command_imports_another() {
    let cmd = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
    let mut files = Vec::new();
    rust_files(&cmd, &mut files);
    // A command is a file directly in src/cmd; what they share lives in
    // `common` (with its submodules) and `output`.
    let commands: BTreeSet<String> = files
        .iter()
        .filter(|f| f.parent() == Some(cmd.as_path()))
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|name| !matches!(name.as_str(), "mod" | "common" | "output"))
        .collect();
    let mut broken = Vec::new();
    for file in &files {
        let code = code(file);
        let mine = file.file_stem().unwrap().to_string_lossy().into_owned();
        for used in named(&code, "super::")
            .into_iter()
            .chain(named(&code, "crate::cmd::"))
        {
            if commands.contains(&used) && used != mine {
                broken.push(format!("{} imports the command {used}", file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// Each backend is one module: no other file names its crate (rusqlite,
/// postgres), so a backend is a module beside the others, not a rewrite.
#[test]
fn only_each_backend_names_its_crate() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for (module, names) in [
        ("sqlite", &["rusqlite"][..]),
        ("postgres", &["postgres::", "tokio_postgres"][..]),
    ] {
        let backend = src.join("store").join(module);
        let outside: Vec<String> = files
            .iter()
            .filter(|f| !f.starts_with(&backend))
            .filter(|f| {
                let code = std::fs::read_to_string(f).unwrap();
                names
                    .iter()
                    .any(|n| code.contains(&format!("use {n}")) || code.contains(&format!(" {n}")))
            })
            .map(|f| f.display().to_string())
            .collect();
        assert!(
            outside.is_empty(),
            "{names:?} outside src/store/{module}: {outside:?}"
        );
    }
}
