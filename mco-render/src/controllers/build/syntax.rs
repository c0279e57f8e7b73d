//! The Containerfile check upstream runs before a build: every instruction known, those
//! that need arguments given them. Lines are read as the Dockerfile parser reads them:
//! comments and blank lines skipped, `\` continuations joined, heredocs (`<<EOF`,
//! `<<-'EOF'`) consumed as the instruction's body.

/// Instructions the Dockerfile parser knows (lower case).
const KNOWN: [&str; 18] = [
    "add",
    "arg",
    "cmd",
    "copy",
    "entrypoint",
    "env",
    "expose",
    "from",
    "healthcheck",
    "label",
    "maintainer",
    "onbuild",
    "run",
    "shell",
    "stopsignal",
    "user",
    "volume",
    "workdir",
];

/// What an instruction needs when it is given no arguments.
fn requirement(instruction: &str) -> Option<&'static str> {
    Some(match instruction {
        "add" | "copy" => "source and destination paths",
        "arg" => "a variable name",
        "cmd" | "entrypoint" => "a command or arguments",
        "env" | "label" => "key=value pairs",
        "expose" => "a port",
        "from" => "a base image",
        "onbuild" => "an instruction to execute",
        "run" => "a command",
        "shell" => "a shell command array",
        "stopsignal" => "a signal",
        "user" => "a username or UID",
        "volume" => "a mount point",
        "workdir" => "a directory path",
        _ => return None,
    })
}

/// The heredoc terminators an instruction line opens, in order, and whether tabs are
/// stripped before comparing (`<<-`).
fn heredocs(line: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("<<") {
        rest = &rest[i + 2..];
        let strip = rest.starts_with('-');
        let body = rest.strip_prefix('-').unwrap_or(rest);
        let (quote, body) = match body.chars().next() {
            Some(q @ ('\'' | '"')) => (Some(q), &body[1..]),
            _ => (None, body),
        };
        let word: String = body
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if word.is_empty() {
            continue;
        }
        let after = &body[word.len()..];
        if let Some(q) = quote {
            if !after.starts_with(q) {
                continue;
            }
        }
        out.push((word, strip));
        rest = after;
    }
    out
}

/// Checks `text`; the error is upstream's message.
pub fn check(text: &str) -> Result<(), String> {
    let meaningful = text.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    });
    if !meaningful {
        return Ok(());
    }
    if !text
        .lines()
        .any(|l| l.trim_start().to_ascii_lowercase().starts_with("from"))
    {
        return Err("Containerfile must contain at least one FROM instruction".to_string());
    }
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let mut joined = t.to_string();
        while joined.ends_with('\\') {
            joined.pop();
            match lines.by_ref().find(|l| !l.trim_start().starts_with('#')) {
                Some(next) => joined.push_str(next.trim()),
                None => break,
            }
        }
        let (word, args) = joined
            .split_once(char::is_whitespace)
            .unwrap_or((&joined, ""));
        let instruction = word.to_ascii_lowercase();
        if !KNOWN.contains(&instruction.as_str()) {
            return Err(format!("unknown Dockerfile instruction: {instruction}"));
        }
        if matches!(instruction.as_str(), "run" | "copy" | "add") {
            for (end, strip) in heredocs(args) {
                for body in lines.by_ref() {
                    let b = if strip {
                        body.trim_start_matches('\t')
                    } else {
                        body
                    };
                    if b == end {
                        break;
                    }
                }
            }
        }
        if args.trim().is_empty() {
            if let Some(req) = requirement(&instruction) {
                return Err(format!(
                    "{} instruction requires {req}",
                    instruction.to_uppercase()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn heredoc_bodies_are_not_instructions() {
        assert_eq!(
            check("FROM a\nRUN bash <<'EOF'\nset -x\nEOF\nRUN true\n"),
            Ok(())
        );
    }

    #[test]
    fn unknown_and_empty_instructions_fail() {
        assert_eq!(
            check("FROM a\nFOOBAR x\n"),
            Err("unknown Dockerfile instruction: foobar".to_string())
        );
        assert_eq!(
            check("FROM a\nRUN\n"),
            Err("RUN instruction requires a command".to_string())
        );
    }
}
