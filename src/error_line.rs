//! An error and its causes as the one line a user reads.

/// The error's message and each cause's, joined by `: `, leaving out a
/// cause whose text the line already holds (errors that quote their
/// source would otherwise say everything twice).
pub fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_quoted_cause_is_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such database");
        #[derive(Debug, thiserror::Error)]
        #[error("database x: {source}")]
        struct Quoting {
            source: std::io::Error,
        }
        let e = anyhow::Error::new(Quoting { source: io }).context("run 1 failed");
        assert_eq!(one_line(&e), "run 1 failed: database x: no such database");
    }
}
