//! "Did you mean": the closest known name to a mistyped one, for the
//! messages that refuse an unknown layer, parameter or trace format. A list
//! of nineteen names hides the one the user meant; one suggestion does not.

/// Edit distance (insertions, deletions, substitutions; a swap of two
/// neighbours counts one) between two short ASCII-ish names.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the optimal-string-alignment table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            row[j] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
}

/// The known name closest to `given`, if it is close enough to be a slip:
/// at most one edit in four characters (at least one), compared without
/// case, `_` and `-` told apart by nothing. Ties go to the first listed.
pub fn closest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let norm = |s: &str| s.to_ascii_lowercase().replace('_', "-");
    let g = norm(given);
    let most = (g.chars().count() / 4).max(1);
    known
        .into_iter()
        .map(|k| (distance(&g, &norm(k)), k))
        .filter(|&(d, _)| d <= most)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// `"; did you mean 'x'?"` when a known name is close to `given`, else "".
pub fn did_you_mean<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(given, known).map_or_else(String::new, |k| format!("; did you mean '{k}'?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slip_finds_its_name_and_a_stranger_finds_none() {
        let layers = [
            "cmr",
            "imr-rmw",
            "imr-flip",
            "imr-cache",
            "imr-dtm",
            "hm-fluid",
            "hm-fluid-loop",
        ];
        assert_eq!(closest("imr-dmt", layers), Some("imr-dtm"));
        assert_eq!(closest("imr_flip", layers), Some("imr-flip"));
        assert_eq!(closest("IMR-CACHE", layers), Some("imr-cache"));
        assert_eq!(closest("hm-fluid-lop", layers), Some("hm-fluid-loop"));
        assert_eq!(closest("cmr", layers), Some("cmr"));
        assert_eq!(closest("zoned", layers), None);
        assert_eq!(closest("xyz", layers), None);
        assert_eq!(did_you_mean("smr", ["cmr"]), "; did you mean 'cmr'?");
        assert_eq!(did_you_mean("nothing-like", ["cmr"]), "");
    }

    #[test]
    fn distance_counts_edits_and_swaps() {
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", "abc"), 0);
        assert_eq!(distance("abc", "acb"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
