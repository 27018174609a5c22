//! "Did you mean" hints: the known name closest to a misspelt one.

/// Edit distance between two short names.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `name`, if it is close enough to be a plausible typo.
pub(crate) fn closest<'s>(name: &str, candidates: impl Iterator<Item = &'s str>) -> Option<&'s str> {
    let lname = name.to_ascii_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c.starts_with('%') {
            continue;
        }
        let d = distance(&lname, &c.to_ascii_lowercase());
        let limit = (name.len().max(c.len()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::language::functions::TL_FUNCS;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(closest("arang", TL_FUNCS.iter().copied()), Some("arange"));
        assert_eq!(closest("progam_id", TL_FUNCS.iter().copied()), Some("program_id"));
        assert_eq!(closest("atomic_ad", TL_FUNCS.iter().copied()), Some("atomic_add"));
        assert_eq!(closest("frobnicate", TL_FUNCS.iter().copied()), None);
    }
}
