//! Names as users write them (system names of imported answers and judgments, docs/systems.md):
//! two spellings of one name are two systems, so what they differ in is said. The one place
//! that reads Unicode normal forms (the `icu_normalizer` crate).

use icu_normalizer::ComposingNormalizerBorrowed;
use std::collections::BTreeMap;

/// `s` without the characters that print as nothing ([`crate::domain::fmt::ignorable`]: the
/// soft hyphen, zero-width spaces and joiners, word joiners, direction marks, byte-order marks, …).
fn visible(s: &str) -> String {
    s.chars().filter(|&c| !crate::domain::fmt::ignorable(c)).collect()
}

/// The key under which spellings of one name meet: without characters that print as nothing,
/// compatibility-composed (NFKC, so `café` written with a combining accent and full-width
/// letters meet their plain forms), without surrounding white space, in lower case.
pub fn fold(name: &str) -> String {
    ComposingNormalizerBorrowed::new_nfkc().normalize(visible(name).trim()).to_lowercase()
}

/// `text` as two prompts that are one would share it: NFKC form, without characters that print
/// as nothing (zero-width characters, the soft hyphen, byte-order marks, …), without
/// surrounding white space.
pub fn fold_text(text: &str) -> String {
    ComposingNormalizerBorrowed::new_nfkc().normalize(visible(text).trim()).trim().to_owned()
}

/// The first two of `names` that are one text in two Unicode forms (canonically equivalent:
/// `café` as U+00E9 and as `e` + U+0301), which print alike in every table and report; `None`
/// when no two are. Letter case and compatibility forms (full-width letters) print apart and are
/// [`near_duplicates`]' warning instead.
pub fn same_text_in_two_forms<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<(&'a str, &'a str)> {
    let nfc = ComposingNormalizerBorrowed::new_nfc();
    let mut seen: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for n in names {
        match seen.entry(nfc.normalize(n).into_owned()) {
            std::collections::hash_map::Entry::Occupied(e) if *e.get() != n => return Some((e.get(), n)),
            std::collections::hash_map::Entry::Occupied(_) => {}
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(n);
            }
        }
    }
    None
}

/// The names a user's selection `wanted` picks: the one spelled exactly so, else every name that
/// starts with it (a unique prefix picks one; several are the caller's error to say). The rule of
/// `fit --judge` and of a replay config's `judge:` (docs/replay.md).
pub fn exact_or_prefix<'a>(names: impl IntoIterator<Item = &'a str> + Clone, wanted: &str) -> Vec<&'a str> {
    let exact: Vec<&str> = names.clone().into_iter().filter(|n| *n == wanted).collect();
    if exact.is_empty() { names.into_iter().filter(|n| n.starts_with(wanted)).collect() } else { exact }
}

/// When `wanted` is not among `names`: a hint naming the one it is spelled like (one
/// [`fold`] key: letter case, Unicode form, surrounding spaces, invisible characters), as
/// `; … has "b", spelled alike (…)`; empty when none is. `whose` names the holder (`the pool`).
pub fn spelled_alike_hint<'a>(wanted: &str, names: impl IntoIterator<Item = &'a str>, whose: &str) -> String {
    let key = fold(wanted);
    names
        .into_iter()
        .find(|n| *n != wanted && fold(n) == key)
        .map(|n| {
            format!(
                "; {whose} has {n:?}, spelled alike (they differ only in letter case, surrounding spaces, Unicode form or invisible characters): give both files one spelling"
            )
        })
        .unwrap_or_default()
}

/// One warning per group of `names` that [`fold`] to one key, naming what they differ in
/// (letter case, Unicode form, surrounding spaces); `what` is the plural noun (`systems`).
/// Empty when every name has its own key. Names are taken once each, in their order.
pub fn near_duplicates<'a>(names: impl IntoIterator<Item = &'a str>, what: &str) -> Vec<String> {
    let mut by_key: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for n in names {
        let group = by_key.entry(fold(n)).or_default();
        if !group.contains(&n) {
            group.push(n);
        }
    }
    let nf = |s: &str| ComposingNormalizerBorrowed::new_nfkc().normalize(s.trim()).into_owned();
    by_key
        .values()
        .filter(|g| g.len() > 1)
        .map(|g| {
            let pairs = || g.iter().enumerate().flat_map(|(i, a)| g[i + 1..].iter().map(move |b| (*a, *b)));
            // Each difference on its own: names of one group that still differ once the others
            // are set aside (`"x "` and `"X"` differ in letter case and surrounding spaces).
            let bare = |s: &str| visible(s).trim().to_owned();
            let mut kinds = Vec::new();
            if g.iter().any(|n| visible(n) != *n) {
                kinds.push("invisible characters");
            }
            if pairs().any(|(a, b)| nf(&bare(a)) != nf(&bare(b))) {
                kinds.push("letter case");
            }
            if pairs().any(|(a, b)| bare(a).to_lowercase() != bare(b).to_lowercase()) {
                kinds.push("Unicode form");
            }
            if g.iter().any(|n| bare(n) != visible(n)) {
                kinds.push("surrounding spaces");
            }
            format!(
                "warning: {what} {} differ only in {}: they are kept as {} {what}; if they are one, give them one name",
                g.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(" and "),
                kinds.join(" and "),
                g.len()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NFC `café` (U+00E9) and NFD `café` (e + U+0301) look alike and are two strings.
    #[test]
    fn spellings_of_one_name_are_said_with_what_they_differ_in() {
        let (nfc, nfd) = ("caf\u{e9}", "cafe\u{301}");
        assert_ne!(nfc, nfd);
        assert_eq!(fold(nfc), fold(nfd));
        assert_eq!(
            near_duplicates([nfc, "gpt", nfd], "systems"),
            [format!(
                "warning: systems {nfc:?} and {nfd:?} differ only in Unicode form: they are kept as 2 systems; if they are one, give them one name"
            )]
        );
        assert_eq!(
            near_duplicates(["llama", "Llama", "llama "], "systems"),
            [
                "warning: systems \"llama\" and \"Llama\" and \"llama \" differ only in letter case and surrounding spaces: they are kept as 3 systems; if they are one, give them one name"
            ]
        );
        // Names that print alike: a zero-width space, a word joiner, a soft hyphen.
        assert_eq!(
            near_duplicates(["llama", "lla\u{200b}ma", "lla\u{2060}ma", "lla\u{ad}ma", "mistral"], "systems"),
            [
                "warning: systems \"llama\" and \"lla\\u{200b}ma\" and \"lla\\u{2060}ma\" and \"lla\\u{ad}ma\" differ only in invisible characters: they are kept as 4 systems; if they are one, give them one name"
            ]
        );
        // Each difference is named, also where two differ in more than one (it said "letter
        // case" alone for these).
        assert_eq!(
            near_duplicates(["x ", "X"], "items"),
            [
                "warning: items \"x \" and \"X\" differ only in letter case and surrounding spaces: they are kept as 2 items; if they are one, give them one name"
            ]
        );
        assert_eq!(same_text_in_two_forms(["gpt", nfc, "x", nfd]), Some((nfc, nfd)));
        assert_eq!(same_text_in_two_forms(["gpt", "GPT", "\u{ff27}PT", "gpt"]), None);
        // Full-width letters are a compatibility form of the plain ones.
        assert_eq!(fold("\u{ff27}\u{ff30}\u{ff34}"), "gpt");
        assert!(near_duplicates(["gpt", "gpt", "claude"], "systems").is_empty());
    }

    /// A name missing from a list is told which name of it is spelled alike, if one is.
    #[test]
    fn a_missing_name_is_told_its_spelling_alike() {
        let pool = ["1/a", "1/b", "2/a"];
        assert_eq!(
            spelled_alike_hint("1/b ", pool, "the pool"),
            "; the pool has \"1/b\", spelled alike (they differ only in letter case, surrounding spaces, Unicode form or invisible characters): give both files one spelling"
        );
        assert!(spelled_alike_hint("1/B", pool, "the pool").contains("has \"1/b\""));
        assert_eq!(spelled_alike_hint("3/a", pool, "the pool"), "");
    }
}
