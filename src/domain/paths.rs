//! Paths as users write them in a config: `~` (the home folder) at the start and `${VAR}` (or
//! `$VAR`) anywhere are expanded from the environment, as a shell would, so `out_dir: ~/runs`
//! never creates a folder named `~`. What cannot be expanded (an unset variable, `~user`) is an
//! error naming the setting, never a literal folder.

use std::path::{Path, PathBuf};

/// `p` with a leading `~` and every `${VAR}` / `$VAR` expanded; `env` reads a variable (`HOME`
/// for `~`). `field` names the setting in the error.
///
/// # Errors
/// A message naming `field` and the variable: unset or empty variable, `~user`, an unclosed `${`.
pub fn expand(p: &Path, field: &str, env: impl Fn(&str) -> Option<String>) -> Result<PathBuf, String> {
    let Some(s) = p.to_str() else { return Ok(p.to_owned()) };
    if !s.contains(['~', '$']) {
        return Ok(p.to_owned());
    }
    let var = |name: &str| {
        env(name).filter(|v| !v.is_empty()).ok_or_else(|| {
            format!("{field}: {s:?} uses ${name}, which is not set in the environment; set it, or write the path out")
        })
    };
    let mut out = String::new();
    let mut rest = s;
    if let Some(after) = s.strip_prefix('~') {
        if after.is_empty() || after.starts_with('/') || after.starts_with(std::path::MAIN_SEPARATOR) {
            out.push_str(&var("HOME")?);
            rest = after;
        } else {
            return Err(format!(
                "{field}: {s:?}: only `~` and `~/…` (your home folder) are expanded, not `~user`; write the path out"
            ));
        }
    }
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        let (name, next) = if let Some(b) = tail.strip_prefix('{') {
            let end = b.find('}').ok_or_else(|| format!("{field}: {s:?} has `${{` without its closing `}}`"))?;
            if end == 0 {
                return Err(format!(
                    "{field}: {s:?} has an empty `${{}}`; write a variable name inside, e.g. `${{HOME}}`"
                ));
            }
            (&b[..end], &b[end + 1..])
        } else {
            let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
            (&tail[..end], &tail[end..])
        };
        if name.is_empty() {
            out.push('$');
        } else {
            out.push_str(&var(name)?);
        }
        rest = next;
    }
    out.push_str(rest);
    Ok(PathBuf::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "HOME" => Some("/h/u".into()),
            "RUNS" => Some("/data/runs".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn home_and_variables_are_expanded_or_refused() {
        let x = |s: &str| expand(Path::new(s), "out_dir", env);
        assert_eq!(x("~/runs").unwrap(), PathBuf::from("/h/u/runs"));
        assert_eq!(x("~").unwrap(), PathBuf::from("/h/u"));
        assert_eq!(x("${RUNS}/a").unwrap(), PathBuf::from("/data/runs/a"));
        assert_eq!(x("$RUNS/a-$RUNS").unwrap(), PathBuf::from("/data/runs/a-/data/runs"));
        assert_eq!(x("runs/x").unwrap(), PathBuf::from("runs/x"));
        assert_eq!(x("a~b/$").unwrap(), PathBuf::from("a~b/$"), "a ~ inside a name and a lone $ stay");
        assert_eq!(
            x("${NOPE}/r").unwrap_err(),
            "out_dir: \"${NOPE}/r\" uses $NOPE, which is not set in the environment; set it, or write the path out"
        );
        assert!(x("$EMPTY/r").unwrap_err().contains("$EMPTY, which is not set"));
        assert!(x("~bob/r").unwrap_err().contains("not `~user`"));
        assert!(x("${RUNS/r").unwrap_err().contains("without its closing"));
    }
}
