//! The schema generator: writes `proto/` (the Kubernetes protobuf schema and
//! the apiVersion/kind table) from facts in the `k8s-pb` and `k8s-openapi`
//! crates' sources. Same crate versions in, identical files out.

mod emit;
pub mod naming;
mod openapi;
mod pb;
mod schema;

use anyhow::{anyhow, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The k8s-openapi version module matching k8s-pb's Kubernetes release.
pub const OPENAPI_VERSION: &str = "v1_35";

/// Where the two crates' sources are, and their versions.
pub struct Sources {
    pub pb_src: PathBuf,
    pub pb_version: String,
    pub openapi_src: PathBuf,
    pub openapi_version: String,
}

/// Finds the crates' sources through `cargo metadata` (they are this
/// package's dependencies, so cargo has them).
pub fn locate_sources() -> Result<Sources> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let meta = cargo_metadata::MetadataCommand::new()
        .manifest_path(&manifest)
        .exec()
        .context("running cargo metadata")?;
    let find = |name: &str| {
        meta.packages
            .iter()
            .find(|p| p.name.as_str() == name)
            .map(|p| {
                (
                    p.manifest_path
                        .parent()
                        .expect("manifest has a parent")
                        .join("src")
                        .into_std_path_buf(),
                    p.version.to_string(),
                )
            })
            .ok_or_else(|| anyhow!("cargo metadata does not list {name}"))
    };
    let (pb_src, pb_version) = find("k8s-pb")?;
    let (openapi_src, openapi_version) = find("k8s-openapi")?;
    Ok(Sources {
        pb_src,
        pb_version,
        openapi_src,
        openapi_version,
    })
}

/// What the generator inferred, for a human to review.
pub struct Report {
    pub files: BTreeMap<PathBuf, String>,
    pub summary: String,
}

/// Generates every file of `proto/`, keyed by path below `proto/`.
pub fn generate(src: &Sources) -> Result<Report> {
    let pb = pb::read(&src.pb_src).context("reading k8s-pb")?;
    let oa = openapi::read(&src.openapi_src.join(OPENAPI_VERSION)).context("reading k8s-openapi")?;
    let schema = schema::build(&pb, &oa);
    let sources = format!(
        "k8s-pb {} and k8s-openapi {} ({OPENAPI_VERSION})",
        src.pb_version, src.openapi_version
    );
    let files = emit::files(&schema, &sources);
    let st = &schema.stats;
    let mut summary = format!(
        "{} packages, {} messages, {} kinds\n",
        schema.packages.len(),
        schema.packages.iter().map(|p| p.messages.len()).sum::<usize>(),
        schema.kinds.len()
    );
    summary.push_str(&format!("inlined fields ({}):\n", st.inlined.len()));
    for i in &st.inlined {
        summary.push_str(&format!("  {i}\n"));
    }
    summary.push_str(&format!(
        "list wrappers ({}): {}\n",
        st.list_wrappers.len(),
        st.list_wrappers.join(", ")
    ));
    summary.push_str(&format!(
        "JSON names from the acronym rule ({}):\n",
        st.rule_named.len()
    ));
    for i in &st.rule_named {
        summary.push_str(&format!("  {i}\n"));
    }
    Ok(Report { files, summary })
}

/// Every file below `dir`, sorted, recursively.
pub(crate) fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let path = e.path();
        if e.file_type()?.is_dir() {
            collect_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Every file currently below `dir`, keyed by path relative to it.
pub fn read_tree(dir: &Path) -> Result<BTreeMap<PathBuf, String>> {
    let mut files = Vec::new();
    if dir.exists() {
        collect_files(dir, &mut files)?;
    }
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            Ok((f.strip_prefix(dir)?.to_path_buf(), text))
        })
        .collect()
}
