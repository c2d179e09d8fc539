//! Paths as users write them in a config: `~` (the home folder) at the start and `${VAR}` (or
//! `$VAR`, or `${VAR:-default}`) anywhere are expanded from the environment, as a shell would, so
//! `out_dir: ~/runs` never creates a folder named `~`. What cannot be expanded (an unset or empty
//! variable without a default, `~user`, another shell form such as `${VAR:?}`) is an error naming
//! the setting, never a literal folder.

use std::path::{Path, PathBuf};

/// `p` with a leading `~` and every `${VAR}` / `$VAR` expanded, and `${VAR:-default}` as the
/// shell does (`default`, taken as written, when VAR is unset or empty); `env` reads a variable
/// (`HOME` for `~`). `field` names the setting in the error.
///
/// # Errors
/// A message naming `field` and the variable: unset or empty variable, `~user`, an unclosed `${`,
/// a `${…}` that is neither a name nor `NAME:-default`.
pub fn expand(p: &Path, field: &str, env: impl Fn(&str) -> Option<String>) -> Result<PathBuf, String> {
    let Some(s) = p.to_str() else { return Ok(p.to_owned()) };
    if !s.contains(['~', '$']) {
        return Ok(p.to_owned());
    }
    let var = |name: &str| match env(name) {
        Some(v) if !v.is_empty() => Ok(v),
        Some(_) => Err(format!(
            "{field}: {s:?} uses ${name}, which is set but empty; give it a value, write the path out, or give a default as `${{{name}:-default}}`"
        )),
        None => Err(format!(
            "{field}: {s:?} uses ${name}, which is not set in the environment; set it, write the path out, or give a default as `${{{name}:-default}}`"
        )),
    };
    let is_name = |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
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
            let inner = &b[..end];
            if let Some((name, default)) = inner.split_once(":-")
                && is_name(name)
            {
                // Taken as written: a variable inside (`${A:-${B:-x}}`) would be cut at its
                // first `}` and leave the rest in the path (hunt 53).
                if default.contains(['$', '{']) {
                    return Err(format!(
                        "{field}: {s:?} has `${{{inner}…`: a default is taken as written, without `$` or braces inside; write it out"
                    ));
                }
                out.push_str(&env(name).filter(|v| !v.is_empty()).unwrap_or_else(|| default.to_owned()));
                rest = &b[end + 1..];
                continue;
            }
            if !is_name(inner) {
                return Err(format!(
                    "{field}: {s:?} has `${{{inner}}}`: only `${{NAME}}`, `$NAME` and `${{NAME:-default}}` are expanded (NAME of letters, digits and `_`)"
                ));
            }
            (inner, &b[end + 1..])
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
            "out_dir: \"${NOPE}/r\" uses $NOPE, which is not set in the environment; set it, write the path out, or give a default as `${NOPE:-default}`"
        );
        assert!(x("$EMPTY/r").unwrap_err().contains("$EMPTY, which is set but empty"));
        // `${VAR:-default}`: the variable when set and not empty, else the default (hunt 52: read
        // as a variable named "RUNS:-/tmp", said unset while RUNS was set).
        assert_eq!(x("${RUNS:-/tmp}/a").unwrap(), PathBuf::from("/data/runs/a"));
        assert_eq!(x("${NOPE:-/tmp/r}/a").unwrap(), PathBuf::from("/tmp/r/a"));
        assert_eq!(x("${EMPTY:-x}").unwrap(), PathBuf::from("x"));
        assert_eq!(x("http://h:${NOPE:-8088}/v1").unwrap(), PathBuf::from("http://h:8088/v1"));
        assert!(x("${NOPE:-${RUNS:-x}}/a").unwrap_err().contains("a default is taken as written"));
        // Other shell forms are refused, naming what is expanded.
        for odd in ["${RUNS:?}", "${RUNS:+y}", "${RUNS-y}", "${#RUNS}"] {
            let e = x(odd).unwrap_err();
            assert!(e.contains("only `${NAME}`, `$NAME` and `${NAME:-default}` are expanded"), "{odd}: {e}");
        }
        assert!(x("~bob/r").unwrap_err().contains("not `~user`"));
        assert!(x("${RUNS/r").unwrap_err().contains("without its closing"));
    }
}
