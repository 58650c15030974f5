//! Static LBA-to-track mappings of shingled bands, in the notation of He &
//! Du, "Novel Address Mappings for Shingled Write Disks" (paper 002, section 4).
//!
//! A band's data tracks are numbered 1..N in shingling order: writing track p
//! overlaps track p+1 (and up to p+W-1). A mapping says in which order the
//! host's LBAs fill the tracks of all bands:
//!
//! * a run of plain positions (`124`) is laid *sequentially*: band 0's tracks
//!   1, 2, 4, then band 1's tracks 1, 2, 4, and so on;
//! * each position inside `R(...)` is laid *round-robin* across the bands on
//!   its own: `R(23)` puts the next LBAs on track 2 of band 0, track 2 of band
//!   1, ... and after the last band's track 2, on track 3 of band 0, ....
//!
//! So `1234` is the conventional map, `R(4123)` fills the 4th tracks of all
//! bands first, `124R(3)` and `14R(23)` are the paper's other two.
//!
//! Choice where the paper is silent: round-robin is *track-granular* (one
//! whole track of each band in turn), which keeps a request's sectors on one
//! track as the sequential part does. The alternative, block- or
//! request-granular round-robin, would scatter every sequential run over all
//! bands and pay a seek per track-sized piece of it.
//!
//! Positions are single digits (`R(4123)`) or, for bands of more than nine
//! tracks, numbers separated by commas (`1,2,10,R(3,4)`).

use crate::error::{config_err, SimResult};

/// A parsed band mapping: groups of 1-based band positions, laid in turn.
/// Each group is laid band by band (sequential); a round-robin position is a
/// group of one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandMap {
    groups: Vec<Vec<u32>>,
}

impl BandMap {
    /// The conventional map of a band of `n` tracks: `12..n`.
    pub fn sequential(n: u64) -> BandMap {
        BandMap {
            groups: vec![(1..=n as u32).collect()],
        }
    }

    /// Parse `text` for bands of `n` tracks; empty text is the conventional map.
    pub fn parse(text: &str, n: u64) -> SimResult<BandMap> {
        let (lo, hi) = super::config::int_range("layout.band_tracks");
        if !(lo..=hi).contains(&n) {
            return config_err(format!(
                "layout.band_tracks = {n} is outside the range {lo} to {hi}"
            ));
        }
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if t.is_empty() {
            return Ok(BandMap::sequential(n));
        }
        let commas = t.contains(',');
        let mut groups: Vec<Vec<u32>> = vec![];
        let mut plain: Vec<u32> = vec![];
        let mut rest = t.as_str();
        let bad = |why: &str| config_err(format!("smr mapping '{text}': {why}"));
        let number = |s: &str| -> Option<(u32, usize)> {
            let len = if commas {
                s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len())
            } else {
                1
            };
            s.get(..len)
                .filter(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
                .and_then(|d| d.parse().ok())
                .map(|v| (v, len))
        };
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix(',') {
                rest = r;
                continue;
            }
            if let Some(r) = rest.strip_prefix("R(").or_else(|| rest.strip_prefix("r(")) {
                let Some(close) = r.find(')') else {
                    return bad("'R(' without ')'");
                };
                if !plain.is_empty() {
                    groups.push(std::mem::take(&mut plain));
                }
                let mut inner = &r[..close];
                if inner.is_empty() {
                    return bad("empty R()");
                }
                while !inner.is_empty() {
                    if let Some(i) = inner.strip_prefix(',') {
                        inner = i;
                        continue;
                    }
                    let Some((v, len)) = number(inner) else {
                        return bad("R(...) holds track positions only");
                    };
                    groups.push(vec![v]);
                    inner = &inner[len..];
                }
                rest = &r[close + 1..];
                continue;
            }
            let Some((v, len)) = number(rest) else {
                return bad(
                    "expected track positions and R(...), as in 1234, R(4123), 124R(3), 14R(23)",
                );
            };
            plain.push(v);
            rest = &rest[len..];
        }
        if !plain.is_empty() {
            groups.push(plain);
        }
        let mut seen = vec![false; n as usize];
        for &p in groups.iter().flatten() {
            if p == 0 || p as u64 > n {
                return bad(&format!(
                    "track {p} is not in a band of {n} tracks (1..{n})"
                ));
            }
            if std::mem::replace(&mut seen[p as usize - 1], true) {
                return bad(&format!("track {p} is listed twice"));
            }
        }
        if let Some(i) = seen.iter().position(|s| !s) {
            return bad(&format!("track {} of the band of {n} is missing", i + 1));
        }
        Ok(BandMap { groups })
    }

    /// The groups, each a list of 1-based positions laid band by band.
    pub fn groups(&self) -> &[Vec<u32>] {
        &self.groups
    }

    /// The positions in the order they are first used.
    pub fn fill_order(&self) -> impl Iterator<Item = u32> + '_ {
        self.groups.iter().flatten().copied()
    }

    /// Whether this is the conventional map (one sequential group 1..N).
    pub fn is_sequential(&self) -> bool {
        self.groups.len() == 1
            && self.groups[0]
                .iter()
                .enumerate()
                .all(|(i, &p)| p == i as u32 + 1)
    }

    /// The paper's notation: plain positions for a sequential group,
    /// consecutive round-robin positions gathered in one `R(...)`.
    pub fn notation(&self) -> String {
        let wide = self.groups.iter().flatten().any(|&p| p > 9);
        let sep = if wide { "," } else { "" };
        let join = |ps: &[u32]| {
            ps.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(sep)
        };
        let mut out: Vec<String> = vec![];
        let mut rr: Vec<u32> = vec![];
        let n_groups = self.groups.len();
        for g in &self.groups {
            // A one-track group is round-robin unless it is the only group.
            if g.len() == 1 && n_groups > 1 {
                rr.push(g[0]);
                continue;
            }
            if !rr.is_empty() {
                out.push(format!("R({})", join(&std::mem::take(&mut rr))));
            }
            out.push(join(g));
        }
        if !rr.is_empty() {
            out.push(format!("R({})", join(&rr)));
        }
        out.join(sep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_four_mappings_parse_to_their_groups() {
        let g = |s: &str| BandMap::parse(s, 4).unwrap().groups().to_vec();
        assert_eq!(g("1234"), vec![vec![1, 2, 3, 4]]);
        assert_eq!(g("R(4123)"), vec![vec![4], vec![1], vec![2], vec![3]]);
        assert_eq!(g("124R(3)"), vec![vec![1, 2, 4], vec![3]]);
        assert_eq!(g("14R(23)"), vec![vec![1, 4], vec![2], vec![3]]);
        assert_eq!(g(""), vec![vec![1, 2, 3, 4]]);
        for s in ["1234", "R(4123)", "124R(3)", "14R(23)"] {
            assert_eq!(BandMap::parse(s, 4).unwrap().notation(), s);
        }
        assert!(BandMap::parse("1234", 4).unwrap().is_sequential());
        assert!(!BandMap::parse("R(4123)", 4).unwrap().is_sequential());
    }

    #[test]
    fn wide_bands_use_commas() {
        let m = BandMap::parse("1,2,3,4,5,6,7,8,9,11,R(10)", 11).unwrap();
        assert_eq!(m.groups()[1], vec![10]);
        assert_eq!(m.notation(), "1,2,3,4,5,6,7,8,9,11,R(10)");
    }

    #[test]
    fn malformed_mappings_say_what_is_wrong() {
        let e = |s: &str| BandMap::parse(s, 4).unwrap_err().to_string();
        assert!(
            e("1235").contains("track 5 is not in a band of 4"),
            "{}",
            e("1235")
        );
        assert!(e("1224").contains("listed twice"));
        assert!(e("124").contains("track 3 of the band of 4 is missing"));
        assert!(e("12R(34").contains("without ')'"));
        assert!(e("12x4").contains("expected track positions"));
    }
}
