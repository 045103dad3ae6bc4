//! Which files an input names, in the order they were written, and opening
//! one as a stream of (decompressed) bytes.
//!
//! A folder's audit files are grouped by log (name stem and extension); in
//! each group lumberjack's backups `NAME-2006-01-02T15-04-05.000.EXT[.gz]`
//! come first, oldest rotation first, then the active `NAME.EXT`. A backup
//! present both compressed and not is read once, uncompressed: lumberjack
//! removes the original only once the `.gz` is complete.

use super::AuditError;
use flate2::bufread::MultiGzDecoder;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The extensions of audit files in a folder (each also with `.gz`).
const EXTENSIONS: [&str; 3] = [".log", ".json", ".jsonl"];

/// What a folder entry's name says about it.
#[derive(Debug, PartialEq, Eq)]
struct AuditName<'a> {
    /// The name without the rotation time, the extension and `.gz`.
    stem: &'a str,
    ext: &'static str,
    /// A backup's rotation time; `None` for the active file.
    rotated: Option<jiff::civil::DateTime>,
    gz: bool,
}

fn audit_name(name: &str) -> Option<AuditName<'_>> {
    let (plain, gz) = match name.strip_suffix(".gz") {
        Some(plain) => (plain, true),
        None => (name, false),
    };
    let ext = EXTENSIONS.into_iter().find(|e| plain.ends_with(e))?;
    let base = &plain[..plain.len() - ext.len()];
    // `-` then `2006-01-02T15-04-05.000`: 24 bytes.
    let rotation = base
        .len()
        .checked_sub(24)
        .filter(|&at| base.is_char_boundary(at) && base.as_bytes()[at] == b'-')
        .and_then(|at| Some((&base[..at], rotation_time(&base[at + 1..])?)));
    let (stem, rotated) = match rotation {
        Some((stem, time)) => (stem, Some(time)),
        None => (base, None),
    };
    if stem.is_empty() {
        return None;
    }
    Some(AuditName {
        stem,
        ext,
        rotated,
        gz,
    })
}

/// Lumberjack's backup time, `2006-01-02T15-04-05.000` (UTC).
fn rotation_time(s: &str) -> Option<jiff::civil::DateTime> {
    let b = s.as_bytes();
    let shape = b"0000-00-00T00-00-00.000";
    if b.len() != shape.len() {
        return None;
    }
    for (&c, &want) in b.iter().zip(shape) {
        let ok = if want == b'0' {
            c.is_ascii_digit()
        } else {
            c == want
        };
        if !ok {
            return None;
        }
    }
    let n = |r: std::ops::Range<usize>| s[r].parse::<i32>().ok();
    jiff::civil::DateTime::new(
        n(0..4)? as i16,
        n(5..7)? as i8,
        n(8..10)? as i8,
        n(11..13)? as i8,
        n(14..16)? as i8,
        n(17..19)? as i8,
        n(20..23)? * 1_000_000,
    )
    .ok()
}

/// The audit files of `dir`, in write order.
pub(super) fn folder_files(dir: &Path) -> Result<Vec<PathBuf>, AuditError> {
    let io_err = |source| AuditError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        // Follows symbolic links: a linked file is read, a folder is not.
        if audit_name(&name).is_some() && entry.path().is_file() {
            names.push(name);
        }
    }
    let mut parsed: Vec<(AuditName<'_>, &str)> = names
        .iter()
        .map(|n| (audit_name(n).expect("kept above"), n.as_str()))
        .collect();
    // Backups before the active file (`None` sorts after every `Some`
    // with this key), the uncompressed copy of a backup first.
    parsed.sort_by(|(a, an), (b, bn)| {
        (a.stem, a.ext, a.rotated.is_none(), a.rotated, a.gz, an).cmp(&(
            b.stem,
            b.ext,
            b.rotated.is_none(),
            b.rotated,
            b.gz,
            bn,
        ))
    });
    parsed.dedup_by(|later, earlier| {
        let (l, e) = (&later.0, &earlier.0);
        (l.stem, l.ext, l.rotated) == (e.stem, e.ext, e.rotated) && l.gz && !e.gz
    });
    if parsed.is_empty() {
        return Err(AuditError::NoAuditFiles {
            path: dir.to_path_buf(),
        });
    }
    Ok(parsed.into_iter().map(|(_, n)| dir.join(n)).collect())
}

/// Wraps `raw` so that gzip data (recognised by its magic bytes, whatever
/// the name) is read decompressed.
pub(super) fn decompressed<'r>(mut raw: BufReader<Box<dyn Read + 'r>>) -> io::Result<Box<dyn BufRead + 'r>> {
    let head = raw.fill_buf()?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::with_capacity(
            256 * 1024,
            MultiGzDecoder::new(raw),
        )))
    } else {
        Ok(Box::new(raw))
    }
}

#[cfg(test)]
mod tests {
    use super::audit_name;

    #[test]
    fn names_of_lumberjack_backups_and_active_files() {
        let b = audit_name("audit-2026-11-29T09-02-00.000.log.gz").unwrap();
        assert_eq!((b.stem, b.ext, b.gz), ("audit", ".log", true));
        assert_eq!(b.rotated.unwrap().to_string(), "2026-11-29T09:02:00");
        let a = audit_name("kube-apiserver-audit.jsonl").unwrap();
        assert_eq!(
            (a.stem, a.ext, a.rotated, a.gz),
            ("kube-apiserver-audit", ".jsonl", None, false)
        );
        // Not a valid time: an active file whose stem holds the digits.
        let odd = audit_name("audit-2026-13-29T09-02-00.000.log").unwrap();
        assert_eq!((odd.stem, odd.rotated), ("audit-2026-13-29T09-02-00.000", None));
        assert_eq!(audit_name("notes.txt"), None);
        assert_eq!(audit_name("audit.log.1"), None);
        assert_eq!(audit_name(".log"), None);
    }
}
