//! The password file as libpq reads it (`PGPASSFILE`, else `~/.pgpass`):
//! lines `host:port:database:username:password`, `*` matching anything in
//! the first four fields, `\:` and `\\` escaping, `#` starting a comment;
//! the first matching line wins. A file others may read is ignored, with a
//! warning, as libpq ignores it.

use std::path::Path;

/// What a password is looked up for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target<'a> {
    pub host: &'a str,
    pub port: &'a str,
    pub database: &'a str,
    pub user: &'a str,
}

/// The password `file` holds for `target`, if it can be read and has one.
pub fn lookup(file: &Path, target: &Target<'_>) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() {
        tracing::warn!("password file {} is not a plain file: ignored", file.display());
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                "password file {} has group or world access: ignored; permissions should be u=rw (0600) or less",
                file.display()
            );
            return None;
        }
    }
    find(&std::fs::read_to_string(file).ok()?, target)
}

/// The password of the first line of `text` that matches `target`.
pub fn find(text: &str, target: &Target<'_>) -> Option<String> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let (fields, password) = split(line)?;
        let wanted = [target.host, target.port, target.database, target.user];
        fields
            .iter()
            .zip(wanted)
            .all(|(field, value)| field == "*" || field == value)
            .then_some(password)
    })
}

/// A line's four matching fields and its password, escapes removed; `None`
/// for a line with fewer than five fields.
fn split(line: &str) -> Option<([String; 4], String)> {
    let mut fields: [String; 4] = Default::default();
    let mut at = 0;
    let mut chars = line.chars();
    while at < 4 {
        match chars.next()? {
            '\\' => fields[at].extend(chars.next()),
            ':' => at += 1,
            c => fields[at].push(c),
        }
    }
    let mut password = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' => password.extend(chars.next()),
            c => password.push(c),
        }
    }
    Some((fields, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: Target<'static> = Target {
        host: "db.example.com",
        port: "5432",
        database: "fleet",
        user: "inspector",
    };

    #[test]
    fn the_first_matching_line_wins_and_stars_match_anything() {
        let text = "# a comment:*:*:*:no\n\
                    other.example.com:5432:fleet:inspector:wrong-host\n\
                    db.example.com:5433:*:*:wrong-port\n\
                    db.example.com:*:fleet:inspector:first\n\
                    *:*:*:*:second\n";
        assert_eq!(find(text, &TARGET).as_deref(), Some("first"));
        let other = Target {
            database: "other",
            ..TARGET
        };
        assert_eq!(find(text, &other).as_deref(), Some("second"));
        assert_eq!(find("db.example.com:5432:fleet:someone:x\n", &TARGET), None);
    }

    #[test]
    fn escaped_colons_and_backslashes_are_part_of_a_field() {
        let ipv6 = Target {
            host: "::1",
            ..TARGET
        };
        let text = "\\:\\:1:5432:fleet:inspector:pa\\:ss\\\\word:with:colons\n";
        assert_eq!(find(text, &ipv6).as_deref(), Some("pa:ss\\word:with:colons"));
        assert_eq!(find(text, &TARGET), None);
    }

    #[test]
    fn a_line_with_too_few_fields_is_skipped() {
        assert_eq!(
            find("db.example.com:5432:fleet\n*:*:*:*:ok\n", &TARGET).as_deref(),
            Some("ok")
        );
        assert_eq!(find("*:*:*:*:\n", &TARGET).as_deref(), Some(""));
    }

    #[test]
    fn a_file_others_may_read_is_ignored() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "*:*:*:*:secret\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(lookup(&file, &TARGET).as_deref(), Some("secret"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(lookup(&file, &TARGET), None);
        assert_eq!(lookup(&dir.path().join("absent"), &TARGET), None);
    }
}
