//! Amphisbaena's two-phase block classification (paper 004 section 5.1
//! and the role transitions of section 5.2.2).
//!
//! * **Phase 1** ([`Window`]): a write request is *hot* when its size is at
//!   most the mean size of the last `WINDOW_LENGTH` (1,024) write requests
//!   (equation 1). Choice: until the window has filled, the mean is over the
//!   writes seen so far (equation 1 divides by the window length, which for
//!   a full window is the same).
//! * **Phase 2** ([`Roles`]): a LIRS-like pair of recency lists over the
//!   high-frequency buffer (HFB) of `capacity` blocks. The *filter list*
//!   holds LUP blocks (resident, no short update period known yet), about
//!   `lambda` of the HFB; the *resident list* holds, by recency, SUP blocks
//!   (resident, short update period), LUP blocks still in it, and the
//!   non-resident *ghost* (evicted from the HFB) and *shadow* (written cold,
//!   never admitted) entries. Its bottom entry is always an SUP block: entries
//!   below the bottom SUP are pruned (a ghost or shadow entry is forgotten,
//!   an LUP block stays in the filter list only).
//!
//! Transitions (section 5.2.2), for a write of block b:
//! * b resident SUP: to the resident list's MRU end; if it was the bottom, prune.
//! * b resident LUP in both lists: to SUP at the resident list's MRU end
//!   (out of the filter list); the bottom SUP becomes LUP at the filter
//!   list's LRU end; prune.
//! * b resident LUP in the filter list only: to SUP at the resident list's
//!   MRU end, no prune.
//! * b ghost: to SUP at the resident list's MRU end (a ghost hit, counted
//!   for reallocation); admitted to the HFB.
//! * b shadow: to LUP at the MRU ends of both lists; admitted to the HFB.
//! * b unknown, hot: admitted as SUP while fewer than (1 - lambda) x
//!   capacity blocks are SUP ("added to the resident list as SUP blocks
//!   before the resident list is full"), else as LUP at both MRU ends.
//! * b unknown, cold: goes to the LFB; a shadow entry at the resident list's MRU end.
//! * Too many SUP blocks (after a ghost hit): the bottom SUP becomes LUP at
//!   the filter list's LRU end, then prune.
//! * Eviction takes the filter list's LRU end; an evicted block still in the
//!   resident list becomes a ghost there, else it is forgotten (as in LIRS).
//! * Choice where the paper is silent: non-resident entries are capped at
//!   `2 x capacity`; beyond that the oldest is forgotten.

use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Paper 004 section 6.1: the observation window of phase 1.
pub const WINDOW_LENGTH: usize = 1024;

/// Phase 1: the mean write size over the last [`WINDOW_LENGTH`] writes.
#[derive(Clone, Debug, Default)]
pub struct Window {
    sizes: VecDeque<u64>,
    sum: u64,
}

impl Window {
    /// The hot-write threshold (equation 1), in the unit sizes are pushed in.
    pub fn threshold(&self) -> f64 {
        if self.sizes.is_empty() {
            return f64::INFINITY;
        }
        self.sum as f64 / self.sizes.len() as f64
    }
    /// Whether a write of `size` is hot.
    pub fn is_hot(&self, size: u64) -> bool {
        size as f64 <= self.threshold()
    }
    /// Record a write request's size.
    pub fn push(&mut self, size: u64) {
        if self.sizes.len() == WINDOW_LENGTH {
            self.sum -= self.sizes.pop_front().unwrap_or(0);
        }
        self.sizes.push_back(size);
        self.sum += size;
    }
}

/// A block's role in phase 2's lists (paper 004 section 5.2.2): SUP and LUP
/// blocks are resident in the HFB; ghost and shadow entries remember blocks that are not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Resident, short update period.
    Sup,
    /// Resident, long (or unknown) update period.
    Lup,
    /// Non-resident: evicted from the HFB.
    Ghost,
    /// Non-resident: written cold, not admitted.
    Shadow,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    role: Role,
    /// Stamp in the resident list.
    s: Option<i64>,
    /// Stamp in the filter list.
    q: Option<i64>,
}

/// Where a written block goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Already resident in the HFB: updated in place.
    HfbResident,
    /// Newly admitted to the HFB (needs a slot).
    HfbNew,
    /// Not admitted: a block never seen before, written cold, goes to its chunk
    /// in the low-frequency buffer (LFB) and is remembered as a shadow entry.
    Lfb,
}

/// Counters of the transitions.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoleCounts {
    /// Ghost hits (all time).
    pub ghost_hits: u64,
    /// Writes of a shadow block (written cold before, never admitted), which
    /// then joins the HFB as LUP.
    pub shadow_hits: u64,
    /// LUP hits promoted to SUP.
    pub lup_to_sup: u64,
    /// Writes of a block already resident as SUP (it moves to the resident
    /// list's MRU end).
    pub sup_hits: u64,
    /// SUP blocks demoted to LUP.
    pub demotions: u64,
    /// Entries removed by pruning.
    pub pruned: u64,
    /// Blocks evicted from the HFB.
    pub evicted: u64,
}

/// A recency list: `(stamp, block)` entries in stamp order (entries join at
/// either end with a stamp beyond all others). An entry leaves lazily: it is
/// dead once its block's [`Entry`] no longer holds its stamp, dropped when it
/// reaches an end and compacted away when the dead outnumber the live.
/// Ordered maps keyed by stamp did the same with a node allocated every few
/// entries; this allocates nothing once its buffer has grown.
#[derive(Clone, Debug, Default)]
struct StampList {
    items: VecDeque<(i64, u64)>,
    live: usize,
}

impl StampList {
    /// Drop dead entries from both ends, and compact when they abound.
    fn tidy(&mut self, is_live: impl Fn(i64, u64) -> bool) {
        while self.items.front().is_some_and(|&(st, b)| !is_live(st, b)) {
            self.items.pop_front();
        }
        while self.items.back().is_some_and(|&(st, b)| !is_live(st, b)) {
            self.items.pop_back();
        }
        if self.items.len() > 2 * self.live + 64 {
            self.items.retain(|&(st, b)| is_live(st, b));
        }
    }
}

/// Phase 2: the filter list and the resident list.
#[derive(Clone, Debug)]
pub struct Roles {
    lambda: f64,
    capacity: u64,
    /// The resident list: live while the block's `Entry::s` holds the stamp.
    s: StampList,
    /// The filter list: live while the block's `Entry::q` holds the stamp.
    q: StampList,
    /// The resident list's non-resident (ghost and shadow) entries, oldest
    /// first: a min-heap whose entries leave lazily (live while the block
    /// is a ghost or shadow whose `Entry::s` holds the stamp), with the live
    /// count beside it.
    nonres: BinaryHeap<Reverse<(i64, u64)>>,
    nonres_live: usize,
    meta: FxHashMap<u64, Entry>,
    mru: i64,
    lru: i64,
    sup: u64,
    resident: u64,
    /// Ghost hits since the last sampling point.
    pub period_ghost_hits: u64,
    /// Role transitions since the run started (reported as `ghost_hits`,
    /// `shadow_hits`, `lup_to_sup`, `sup_hits`, `sup_demotions`, `pruned_entries`).
    pub counts: RoleCounts,
}

impl Roles {
    /// Lists for an HFB of `capacity` blocks with filter-list ratio `lambda`.
    pub fn new(lambda: f64, capacity: u64) -> Roles {
        Roles {
            lambda,
            capacity,
            s: StampList::default(),
            q: StampList::default(),
            nonres: BinaryHeap::new(),
            nonres_live: 0,
            meta: FxHashMap::default(),
            mru: 0,
            lru: 0,
            sup: 0,
            resident: 0,
            period_ghost_hits: 0,
            counts: RoleCounts::default(),
        }
    }

    /// The HFB's capacity in blocks (it changes with reallocation).
    pub fn set_capacity(&mut self, capacity: u64) {
        self.capacity = capacity;
    }
    /// Resident blocks (SUP + LUP).
    pub fn resident(&self) -> u64 {
        self.resident
    }
    /// Resident blocks in the SUP role now; a new hot block joins as SUP only
    /// while this is below (1 - lambda) x the HFB's capacity.
    pub fn sup_count(&self) -> u64 {
        self.sup
    }
    /// The role of a block, if it has one.
    pub fn role(&self, b: u64) -> Option<Role> {
        self.meta.get(&b).map(|e| e.role)
    }
    /// Whether block `b` is in the resident list.
    pub fn in_resident_list(&self, b: u64) -> bool {
        self.meta.get(&b).is_some_and(|e| e.s.is_some())
    }
    /// Whether block `b` is in the filter list.
    pub fn in_filter_list(&self, b: u64) -> bool {
        self.meta.get(&b).is_some_and(|e| e.q.is_some())
    }
    /// The resident list's bottom (LRU) block.
    pub fn bottom(&self) -> Option<u64> {
        // Its front is live: every change that kills entries tidies it.
        self.s.items.front().map(|&(_, b)| b)
    }
    /// Block `b`'s place in the filter list (smaller: nearer its LRU end), if it is there.
    pub fn filter_stamp(&self, b: u64) -> Option<i64> {
        self.meta.get(&b).and_then(|e| e.q)
    }
    /// The filter list from its LRU end (the tests' view; the layer asks
    /// [`filter_stamp`](Self::filter_stamp) of the blocks it has in hand).
    #[cfg(test)]
    pub fn filter_lru(&self) -> impl Iterator<Item = u64> + '_ {
        self.q
            .items
            .iter()
            .filter(|&&(st, b)| self.q_live(st, b))
            .map(|&(_, b)| b)
    }

    #[cfg(test)]
    fn q_live(&self, st: i64, b: u64) -> bool {
        self.meta.get(&b).is_some_and(|e| e.q == Some(st))
    }
    fn nonres_live(&self, st: i64, b: u64) -> bool {
        self.meta
            .get(&b)
            .is_some_and(|e| e.s == Some(st) && matches!(e.role, Role::Ghost | Role::Shadow))
    }
    /// Tidy the lists after entries died.
    fn tidy(&mut self) {
        let meta = &self.meta;
        self.s
            .tidy(|st, b| meta.get(&b).is_some_and(|e| e.s == Some(st)));
        self.q
            .tidy(|st, b| meta.get(&b).is_some_and(|e| e.q == Some(st)));
        while self
            .nonres
            .peek()
            .is_some_and(|&Reverse((st, b))| !self.nonres_live(st, b))
        {
            self.nonres.pop();
        }
        if self.nonres.len() > 2 * self.nonres_live + 64 {
            let meta = &self.meta;
            self.nonres.retain(|&Reverse((st, b))| {
                meta.get(&b).is_some_and(|e| {
                    e.s == Some(st) && matches!(e.role, Role::Ghost | Role::Shadow)
                })
            });
        }
    }

    fn sup_limit(&self) -> u64 {
        ((1.0 - self.lambda) * self.capacity as f64).floor() as u64
    }

    fn next_mru(&mut self) -> i64 {
        self.mru += 1;
        self.mru
    }

    fn next_lru(&mut self) -> i64 {
        self.lru -= 1;
        self.lru
    }

    fn s_remove(&mut self, b: u64) {
        if let Some(e) = self.meta.get_mut(&b) {
            if e.s.take().is_some() {
                self.s.live -= 1;
                if matches!(e.role, Role::Ghost | Role::Shadow) {
                    self.nonres_live -= 1;
                }
                self.tidy();
            }
        }
    }

    fn s_push_mru(&mut self, b: u64) {
        self.s_remove(b);
        let st = self.next_mru();
        self.s.items.push_back((st, b));
        self.s.live += 1;
        let e = self.meta.get_mut(&b).expect("entry");
        e.s = Some(st);
        if matches!(e.role, Role::Ghost | Role::Shadow) {
            self.nonres.push(Reverse((st, b)));
            self.nonres_live += 1;
        }
    }

    fn q_remove(&mut self, b: u64) {
        if let Some(e) = self.meta.get_mut(&b) {
            if e.q.take().is_some() {
                self.q.live -= 1;
                self.tidy();
            }
        }
    }

    fn q_push(&mut self, b: u64, mru: bool) {
        self.q_remove(b);
        let st = if mru {
            let st = self.next_mru();
            self.q.items.push_back((st, b));
            st
        } else {
            let st = self.next_lru();
            self.q.items.push_front((st, b));
            st
        };
        self.q.live += 1;
        self.meta.get_mut(&b).expect("entry").q = Some(st);
    }

    fn set_role(&mut self, b: u64, role: Role) {
        let old = self.meta.get(&b).map(|e| e.role);
        // A ghost or shadow in the resident list that stays one keeps its
        // non-resident entry; one that turns resident loses it (lazily).
        let nonres = |r: Role| matches!(r, Role::Ghost | Role::Shadow);
        let listed = self.meta.get(&b).and_then(|e| e.s).is_some();
        let was_nonres = listed && old.is_some_and(nonres);
        let is_nonres = listed && nonres(role);
        match old {
            Some(Role::Sup) => self.sup -= 1,
            Some(Role::Ghost | Role::Shadow) if was_nonres && !is_nonres => {
                self.nonres_live -= 1;
            }
            _ => {}
        }
        let was_res = matches!(old, Some(Role::Sup | Role::Lup));
        let is_res = matches!(role, Role::Sup | Role::Lup);
        match (was_res, is_res) {
            (false, true) => self.resident += 1,
            (true, false) => self.resident -= 1,
            _ => {}
        }
        if role == Role::Sup {
            self.sup += 1;
        }
        let e = self.meta.entry(b).or_insert(Entry {
            role,
            s: None,
            q: None,
        });
        e.role = role;
        if is_nonres && !was_nonres {
            let st = e.s.expect("listed");
            self.nonres.push(Reverse((st, b)));
            self.nonres_live += 1;
        }
        if was_nonres && !is_nonres {
            self.tidy();
        }
    }

    fn forget(&mut self, b: u64) {
        self.s_remove(b);
        self.q_remove(b);
        if let Some(e) = self.meta.remove(&b) {
            match e.role {
                Role::Sup => {
                    self.sup -= 1;
                    self.resident -= 1;
                }
                Role::Lup => self.resident -= 1,
                _ => {}
            }
        }
    }

    /// Remove entries at the resident list's bottom until it is an SUP block.
    fn prune(&mut self) {
        while let Some(b) = self.bottom() {
            let role = self.meta[&b].role;
            if role == Role::Sup {
                break;
            }
            self.counts.pruned += 1;
            self.s.live -= 1;
            self.meta.get_mut(&b).expect("entry").s = None;
            if matches!(role, Role::Ghost | Role::Shadow) {
                self.nonres_live -= 1;
                self.meta.remove(&b);
            }
            self.tidy();
        }
    }

    /// The bottom SUP becomes LUP at the filter list's LRU end, then prune.
    fn demote_bottom(&mut self) {
        self.prune();
        if let Some(b) = self.bottom() {
            if self.meta[&b].role == Role::Sup {
                self.s_remove(b);
                self.set_role(b, Role::Lup);
                self.q_push(b, false);
                self.counts.demotions += 1;
            }
        }
        self.prune();
    }

    fn cap_nonresident(&mut self) {
        while self.nonres_live as u64 > 2 * self.capacity.max(1) {
            // The heap's top is live: every change that kills entries tidies it.
            let Reverse((_, b)) = *self.nonres.peek().expect("entry");
            self.nonres_live -= 1;
            self.s.live -= 1;
            self.meta.remove(&b);
            self.tidy();
        }
    }

    /// Classify a write of block `b` from a request labelled `hot`, and
    /// apply the role transition. The caller must have room for an
    /// [`Admit::HfbNew`] block (see [`admits`](Self::admits)).
    pub fn on_write(&mut self, b: u64, hot: bool) -> Admit {
        let out = match self.role(b) {
            Some(Role::Sup) => {
                self.counts.sup_hits += 1;
                let was_bottom = self.bottom() == Some(b);
                self.s_push_mru(b);
                if was_bottom {
                    self.prune();
                }
                Admit::HfbResident
            }
            Some(Role::Lup) => {
                self.counts.lup_to_sup += 1;
                let in_s = self.in_resident_list(b);
                self.q_remove(b);
                self.set_role(b, Role::Sup);
                self.s_push_mru(b);
                if in_s {
                    self.demote_bottom();
                }
                Admit::HfbResident
            }
            Some(Role::Ghost) => {
                self.counts.ghost_hits += 1;
                self.period_ghost_hits += 1;
                self.set_role(b, Role::Sup);
                self.s_push_mru(b);
                if self.sup > self.sup_limit() {
                    self.demote_bottom();
                }
                Admit::HfbNew
            }
            Some(Role::Shadow) => {
                self.counts.shadow_hits += 1;
                self.set_role(b, Role::Lup);
                self.s_push_mru(b);
                self.q_push(b, true);
                Admit::HfbNew
            }
            None if hot => {
                if self.sup < self.sup_limit() {
                    self.set_role(b, Role::Sup);
                    self.s_push_mru(b);
                } else {
                    self.set_role(b, Role::Lup);
                    self.s_push_mru(b);
                    self.q_push(b, true);
                }
                Admit::HfbNew
            }
            None => {
                self.set_role(b, Role::Shadow);
                self.s_push_mru(b);
                Admit::Lfb
            }
        };
        self.cap_nonresident();
        out
    }

    /// Where a write of `b` would go, without changing anything.
    pub fn admits(&self, b: u64, hot: bool) -> Admit {
        match self.role(b) {
            Some(Role::Sup | Role::Lup) => Admit::HfbResident,
            Some(Role::Ghost | Role::Shadow) => Admit::HfbNew,
            None if hot => Admit::HfbNew,
            None => Admit::Lfb,
        }
    }

    /// The next eviction victim: the filter list's LRU end, or (an empty
    /// filter list) the bottom SUP demoted first.
    pub fn victim(&mut self) -> Option<u64> {
        if self.q.live == 0 {
            self.demote_bottom();
        }
        self.q.items.front().map(|&(_, b)| b)
    }

    /// Block `b` left the HFB (evicted into the LFB): a ghost if it is
    /// still in the resident list, else forgotten.
    pub fn evicted(&mut self, b: u64) {
        self.counts.evicted += 1;
        self.q_remove(b);
        if self.in_resident_list(b) {
            self.set_role(b, Role::Ghost);
            if self.bottom() == Some(b) {
                self.prune();
            }
        } else {
            self.forget(b);
        }
        self.cap_nonresident();
    }

    /// Block `b` left the buffer altogether (written back): forget any role.
    pub fn written_back(&mut self, b: u64) {
        if matches!(self.role(b), Some(Role::Sup | Role::Lup)) {
            self.forget(b);
        }
    }

    /// A block found resident after a crash (no history survives): SUP
    /// while the resident list has room, else LUP.
    pub fn restore(&mut self, b: u64) {
        self.on_write(b, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_1_threshold_is_the_mean_of_the_last_1024_writes() {
        let mut w = Window::default();
        // 1,024 writes averaging 18.4 sectors (paper 004 Table 3's hm_0): 40 % of 16, 60 % of 20.
        for i in 0..1024 {
            w.push(if i % 5 < 2 { 16 } else { 20 });
        }
        assert!((w.threshold() - 18.4).abs() < 0.01, "{}", w.threshold());
        assert!(w.is_hot(8));
        assert!(!w.is_hot(64));
        // The window slides: 1,024 writes of 64 make 64 hot, 65 cold.
        for _ in 0..1024 {
            w.push(64);
        }
        assert!(w.is_hot(64) && !w.is_hot(65));
    }

    /// Capacity 10, lambda 0.2: at most 8 SUP blocks.
    fn roles() -> Roles {
        Roles::new(0.2, 10)
    }

    #[test]
    fn hot_blocks_fill_the_resident_list_as_sup_then_enter_as_lup() {
        let mut r = roles();
        for b in 0..8 {
            assert_eq!(r.on_write(b, true), Admit::HfbNew);
            assert_eq!(r.role(b), Some(Role::Sup));
        }
        assert_eq!(r.on_write(8, true), Admit::HfbNew);
        assert_eq!(r.role(8), Some(Role::Lup));
        assert!(r.in_filter_list(8) && r.in_resident_list(8));
        assert_eq!((r.sup_count(), r.resident()), (8, 9));
    }

    #[test]
    fn a_cold_block_goes_to_the_lfb_as_a_shadow_and_a_shadow_hit_admits_it_as_lup() {
        let mut r = roles();
        r.on_write(1, true);
        assert_eq!(r.on_write(50, false), Admit::Lfb);
        assert_eq!(r.role(50), Some(Role::Shadow));
        assert_eq!(r.on_write(50, false), Admit::HfbNew);
        assert_eq!(r.role(50), Some(Role::Lup));
        assert!(r.in_filter_list(50) && r.in_resident_list(50));
        assert_eq!(r.counts.shadow_hits, 1);
    }

    #[test]
    fn an_lup_hit_in_both_lists_promotes_it_demotes_the_bottom_sup_and_prunes() {
        let mut r = roles();
        for b in 0..8 {
            r.on_write(b, true); // SUP 0..7, 0 at the bottom
        }
        r.on_write(100, false); // shadow above 7
        r.on_write(8, true); // LUP in both lists
        r.on_write(8, true); // LUP hit
        assert_eq!(r.role(8), Some(Role::Sup));
        assert!(!r.in_filter_list(8));
        // Block 0 (the bottom SUP) is now LUP at the filter list's LRU end.
        assert_eq!(r.role(0), Some(Role::Lup));
        assert_eq!(r.filter_lru().next(), Some(0));
        assert!(!r.in_resident_list(0));
        // Pruning stopped at the new bottom SUP, 1.
        assert_eq!(r.bottom(), Some(1));
        assert_eq!(r.sup_count(), 8);
    }

    #[test]
    fn an_lup_hit_in_the_filter_list_only_promotes_without_pruning() {
        let mut r = roles();
        for b in 0..8 {
            r.on_write(b, true);
        }
        r.on_write(8, true);
        r.on_write(8, true); // 0 demoted to the filter list only
        let pruned = r.counts.pruned;
        r.on_write(0, true); // LUP hit, filter list only
        assert_eq!(r.role(0), Some(Role::Sup));
        assert_eq!(r.counts.pruned, pruned);
        assert_eq!(r.counts.demotions, 1);
        assert_eq!(r.sup_count(), 9);
    }

    #[test]
    fn an_sup_hit_moves_it_up_and_a_bottom_hit_prunes() {
        let mut r = roles();
        r.on_write(0, true);
        r.on_write(77, false); // a shadow just above the bottom SUP
        for b in 1..4 {
            r.on_write(b, true);
        }
        r.on_write(2, true); // SUP hit in the middle
        assert_eq!(r.bottom(), Some(0));
        r.on_write(0, true); // SUP hit at the bottom: the shadow below the next SUP is pruned
        assert_eq!(r.bottom(), Some(1));
        assert_eq!(r.role(77), None);
        assert_eq!((r.counts.sup_hits, r.counts.pruned), (2, 1));
    }

    #[test]
    fn eviction_takes_the_filter_lru_and_leaves_a_ghost_whose_hit_makes_it_sup() {
        let mut r = roles();
        for b in 0..8 {
            r.on_write(b, true);
        }
        r.on_write(8, true);
        r.on_write(9, true); // LUP 8, 9 in both lists
        assert_eq!(r.victim(), Some(8));
        r.evicted(8);
        assert_eq!(r.role(8), Some(Role::Ghost));
        assert_eq!(r.resident(), 9);
        assert_eq!(r.on_write(8, false), Admit::HfbNew);
        assert_eq!(r.role(8), Some(Role::Sup));
        assert_eq!((r.counts.ghost_hits, r.period_ghost_hits), (1, 1));
        // Nine SUP exceed the limit of 8: the bottom SUP (0) was demoted.
        assert_eq!(r.sup_count(), 8);
        assert_eq!(r.role(0), Some(Role::Lup));
        // An evicted block no longer in the resident list is forgotten.
        assert_eq!(r.victim(), Some(0));
        r.evicted(0);
        assert_eq!(r.role(0), None);
    }
}
