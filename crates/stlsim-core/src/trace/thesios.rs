//! Google's Thesios I/O traces of storage servers with one HDD each
//! (google-research-datasets/thesios, README; ASPLOS '24): sharded CSV files
//! with a header naming the columns. The columns read, found by name so that
//! their order does not matter:
//!
//! * `start_time`: the request's arrival at the server, Unix seconds
//!   (decimals kept to the nanosecond);
//! * `op_type`: `READ` or `WRITE` (any case; anything else is an unknown
//!   operation: an error, or skipped and counted with `skip_unknown`);
//! * `filename` (hashed) and `file_offset` (bytes): where, in a file;
//! * `request_io_size_bytes`, `disk_io_size_bytes`: bytes;
//! * `cache_hit`: 1 when the server's buffer cache served the read.
//!
//! Choices where the dataset leaves the drive's view open, written down:
//! * **Addresses.** The traces name a file and an offset in it, not a disk
//!   address. Each file is given its own extent of `file_extent_mib` MiB
//!   (trace option, default [`DEFAULT_FILE_EXTENT_MIB`]), in the order the
//!   files first appear, and a request's address is its file's extent plus
//!   `file_offset`. A request reaching past its extent is an error naming the
//!   line and the option, never a silent overlap with the next file. The
//!   files' real placement on the platter is unknown, so seek distances
//!   between files are this layout's, not Google's.
//! * **Buffer-cache hits** (`cache_hit = 1`) never reached the disk and are
//!   left out (counted in [`ThesiosReader::cache_hits`]); the drive sees the
//!   reads that missed and the writes.
//! * **Sizes.** A read that missed is replayed with `disk_io_size_bytes`
//!   (what the disk read) when that is positive, else with
//!   `request_io_size_bytes`; a write with `request_io_size_bytes` (the
//!   dataset records 0 disk bytes for writes).
//! * One file holds one disk: there is no device column.

use crate::error::{SimError, SimResult};
use crate::trace::msr::parse_rw_word;
use crate::trace::text::{show, trim, Columns, CsvLines, Take};
use crate::trace::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::Read;

/// MiB of address space each file gets when the trace option is unset.
pub const DEFAULT_FILE_EXTENT_MIB: u64 = 64;

/// At most this many distinct files in one trace: each costs a map entry, and
/// a day's trace of one disk holds far fewer.
const MAX_FILES: usize = 50_000_000;

/// The columns this reader needs, by header name.
const NEEDED: [&str; 6] = [
    "start_time",
    "op_type",
    "filename",
    "file_offset",
    "request_io_size_bytes",
    "disk_io_size_bytes",
];

/// Each traced file's first address, by its (hashed) name. The dataset's
/// names are 16 hex digits: those of up to 16 bytes are keyed as one
/// 128-bit number and their length, which hashes and compares in a few
/// instructions where a byte-string key took an eighth of a line's time.
#[derive(Default)]
struct FileBases {
    short: rustc_hash::FxHashMap<(u128, u8), u64>,
    long: rustc_hash::FxHashMap<Box<[u8]>, u64>,
}

impl FileBases {
    /// `name` as a number and its length, if it has at most 16 bytes.
    #[inline]
    fn short_key(name: &[u8]) -> Option<(u128, u8)> {
        if let Ok(b) = <[u8; 16]>::try_from(name) {
            return Some((u128::from_le_bytes(b), 16)); // the dataset's names
        }
        let mut b = [0u8; 16];
        b.get_mut(..name.len())?.copy_from_slice(name);
        Some((u128::from_le_bytes(b), name.len() as u8))
    }

    #[inline(always)]
    fn get(&self, name: &[u8]) -> Option<u64> {
        match Self::short_key(name) {
            Some(k) => self.short.get(&k).copied(),
            None => self.long.get(name).copied(),
        }
    }

    fn insert(&mut self, name: &[u8], base: u64) {
        match Self::short_key(name) {
            Some(k) => self.short.insert(k, base),
            None => self.long.insert(name.into(), base),
        };
    }

    fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }
}

/// Reader of Thesios CSV shards.
pub struct ThesiosReader {
    src: CsvLines,
    /// Column index of each of [`NEEDED`], and of `cache_hit` if present.
    cols: Option<([usize; 6], Option<usize>)>,
    extent: u64,
    files: FileBases,
    /// The one-pass fast path, once the header has named the columns, and
    /// where it puts each column among its numbers (start_time,
    /// file_offset, request_io_size_bytes, disk_io_size_bytes) and words
    /// (op_type, filename, cache_hit).
    fast: Option<(Columns, [usize; 4], [usize; 3])>,
    skip_unknown: bool,
    skipped: u64,
    cache_hits: u64,
}

impl ThesiosReader {
    /// A reader over a decompressed shard; `file` labels error messages;
    /// each traced file gets `extent_mib` MiB of addresses.
    pub fn new(
        input: Box<dyn Read + Send>,
        file: &str,
        extent_mib: Option<u64>,
        skip_unknown: bool,
    ) -> SimResult<Self> {
        let mib = extent_mib.unwrap_or(DEFAULT_FILE_EXTENT_MIB);
        if !(1..=1 << 30).contains(&mib) {
            return Err(SimError::Config(format!(
                "trace option 'file_extent_mib' is {mib}: expected 1 to 2^30 MiB of addresses per traced file"
            )));
        }
        Ok(ThesiosReader {
            src: CsvLines::new(input, file, b','),
            cols: None,
            extent: mib << 20,
            files: Default::default(),
            fast: None,
            skip_unknown,
            skipped: 0,
            cache_hits: 0,
        })
    }

    /// Reads left out because the server's buffer cache served them.
    pub fn cache_hits(&self) -> u64 {
        self.cache_hits
    }

    /// The column indices from the header line (the current line).
    fn header(&self) -> SimResult<([usize; 6], Option<usize>)> {
        let s = &self.src;
        let find = |name: &str| {
            (0..s.len()).find(|&i| trim(s.field(i)).eq_ignore_ascii_case(name.as_bytes()))
        };
        let mut cols = [0; 6];
        for (slot, name) in cols.iter_mut().zip(NEEDED) {
            *slot = find(name).ok_or_else(|| {
                s.err(format!(
                    "a Thesios trace starts with a header naming its columns, and this one has no '{name}' (first field: '{}')",
                    show(s.field(0))
                ))
            })?;
        }
        Ok((cols, find("cache_hit")))
    }
}

/// The fast path for the columns the header named (`c` as [`NEEDED`]).
fn fast_layout(
    src: &CsvLines,
    c: [usize; 6],
    hit_col: Option<usize>,
) -> Option<(Columns, [usize; 4], [usize; 3])> {
    let numeric = [
        (c[0], Take::Scaled(1_000_000_000)),
        (c[3], Take::Int),
        (c[4], Take::Int),
        (c[5], Take::Int),
    ];
    // Without a cache_hit column, the op_type column stands in for it (it
    // is never "1", so no read is taken for a hit).
    let words = [c[1], c[2], hit_col.unwrap_or(c[1])];
    let width = c.iter().copied().chain(hit_col).max()? + 1;
    let mut takes = vec![Take::Skip; width];
    for (col, take) in numeric {
        takes[col] = take;
    }
    for col in words {
        takes[col] = Take::Word;
    }
    let word_cols: Vec<usize> = (0..width).filter(|&k| takes[k] == Take::Word).collect();
    let num_slots = numeric.map(|(col, _)| numeric.iter().filter(|(k, _)| *k < col).count());
    let word_slots = words.map(|col| word_cols.iter().position(|&k| k == col).unwrap_or(0));
    Some((Columns::new(takes, src, false)?, num_slots, word_slots))
}

impl ThesiosReader {
    /// The current line by the fast path, if it takes it (in the plain
    /// form, of a file seen before, within its extent): a read that missed
    /// the buffer cache or a write as a record, a read the cache served as
    /// `Some(None)` (counted).
    #[inline]
    fn fast_record(&mut self) -> Option<Option<(TraceRecord, Option<u64>)>> {
        let (fast, num_slots, word_slots) = self.fast.as_ref()?;
        if !self.src.fast_paths() {
            return None;
        }
        let (time, op, name, at, len);
        if let (Some(f), Some((c, hit_col))) = (fast.fields_current(&self.src), self.cols) {
            // Column by column, in the general way's order of judging: a
            // read the cache served needs only its time and operation
            // read (the general way reads no more of it), a write no disk
            // size.
            op = parse_rw_word(f.word(c[1])?)?;
            if op == Op::Read && hit_col.is_some_and(|h| f.word(h) == Some(b"1")) {
                f.decimal(c[0], 9)?;
                self.cache_hits += 1;
                return Some(None);
            }
            time = f.decimal(c[0], 9)?;
            at = f.int(c[3])?;
            let request = f.int(c[4])?;
            len = match op {
                Op::Read => match f.int(c[5])? {
                    0 => request,
                    disk => disk,
                },
                Op::Write => request,
            };
            name = f.word(c[2])?;
        } else {
            let mut nums = [0u64; 4];
            let mut words: [&[u8]; 3] = [&[]; 3];
            fast.read_current(&self.src, &mut nums, &mut words)?;
            let [t, a, request, disk] = num_slots.map(|k| nums[k]);
            let [o, n, hit] = word_slots.map(|k| words[k]);
            (time, op, name, at) = (t, parse_rw_word(o)?, n, a);
            len = match op {
                Op::Read if hit == b"1" => {
                    self.cache_hits += 1;
                    return Some(None);
                }
                Op::Read if disk > 0 => disk,
                _ => request,
            };
        }
        if at.checked_add(len)? > self.extent {
            return None;
        }
        let base = self.files.get(name)?;
        self.src.mark_record();
        let rec = TraceRecord {
            time: Nanos(time),
            op,
            offset: Bytes(base + at),
            len: Bytes(len),
            line: self.src.line(),
        };
        Some(Some((rec, None)))
    }
}

impl ThesiosReader {
    /// The current line the general way (the header, any line the fast
    /// path leaves): its record, or `None` to read on (a blank line, the
    /// header, a skipped operation, a buffer-cache hit). Out of the
    /// reader's loop, which it would only crowd.
    #[inline(never)]
    fn general_line(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        if !self.src.split_current()? {
            return Ok(None);
        }
        let Some((c, hit_col)) = self.cols else {
            let (c, hit_col) = self.header()?;
            self.cols = Some((c, hit_col));
            self.fast = fast_layout(&self.src, c, hit_col);
            if let Some(up_to) = self.fast.as_ref().and_then(|f| f.0.marks_wanted()) {
                self.src.mark_delimiters(up_to);
            }
            return Ok(None);
        };
        let s = &self.src;
        let width = c.iter().copied().chain(hit_col).max().unwrap_or(0) + 1;
        if s.len() < width {
            return Err(s.err(format!(
                "expected at least {width} fields (the header's columns), found {}",
                s.len()
            )));
        }
        let time = s.scaled_field(c[0], 1_000_000_000, "start_time (Unix seconds)")?;
        let opf = trim(s.field(c[1]));
        let op = if let Some(op) = parse_rw_word(opf) {
            op
        } else {
            s.unknown_op(self.skip_unknown, &mut self.skipped, || {
                format!(
                    "op_type (field {}) is '{}', expected READ or WRITE",
                    c[1] + 1,
                    show(opf)
                )
            })?;
            return Ok(None);
        };
        if op == Op::Read && hit_col.is_some_and(|h| trim(s.field(h)) == b"1") {
            self.cache_hits += 1;
            return Ok(None);
        }
        let at = s.u64_field(c[3], "file_offset")?;
        let request = s.u64_field(c[4], "request_io_size_bytes")?;
        let len = match op {
            Op::Read => match s.u64_field(c[5], "disk_io_size_bytes")? {
                0 => request,
                disk => disk,
            },
            Op::Write => request,
        };
        if at.checked_add(len).is_none_or(|end| end > self.extent) {
            return Err(s.err(format!(
                "file_offset {at} plus {len} bytes passes the {} MiB each traced file is given: raise the trace option file_extent_mib (--file-extent-mib)",
                self.extent >> 20
            )));
        }
        let name = s.field(c[2]);
        let next = self.files.len() as u64;
        let base = match self.files.get(name) {
            Some(b) => b,
            None => {
                if self.files.len() >= MAX_FILES {
                    return Err(s.err(format!("more than {MAX_FILES} distinct files in one trace")));
                }
                let b = next.checked_mul(self.extent).ok_or_else(|| {
                    s.err(format!("file number {next} at {} MiB each passes 2^64 bytes: lower file_extent_mib", self.extent >> 20))
                })?;
                self.files.insert(name, b);
                b
            }
        };
        let rec = TraceRecord {
            time: Nanos(time),
            op,
            offset: Bytes(base + at),
            len: Bytes(len),
            line: s.line(),
        };
        Ok(Some((rec, None)))
    }
}

impl RawTraceReader for ThesiosReader {
    /// Inlined into the selection's loop: the fast path's records are
    /// handed on without a call, and its result through memory, each.
    #[inline(always)]
    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            if !self.src.next_line()? {
                return Ok(None);
            }
            match self.fast_record() {
                Some(Some(rec)) => return Ok(Some(rec)),
                Some(None) => continue, // a buffer-cache hit
                None => {}
            }
            if let Some(rec) = self.general_line()? {
                return Ok(Some(rec));
            }
        }
    }

    fn skipped_unknown(&self) -> u64 {
        self.skipped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::test_util::*;
    use crate::trace::{Format, TraceSpec};

    /// `text` read with the fast path and the general way only: what each
    /// gave and the buffer-cache hits it counted.
    fn both_ways(
        text: &str,
        skip: bool,
        extent_mib: Option<u64>,
    ) -> ((Drained, u64), (Drained, u64)) {
        let make = || ThesiosReader::new(text_input(text), "t.csv", extent_mib, skip).unwrap();
        let mut fast = make();
        let mut general = make();
        general.src.general_only = true;
        (
            (drain(&mut fast), fast.cache_hits),
            (drain(&mut general), general.cache_hits),
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1500, ..Default::default() })]
        /// The fast path reads every shard as the general way does: the same
        /// records, the same error on the same line, the same skips (with
        /// and without a cache_hit column, columns in two orders).
        #[test]
        fn the_fast_path_reads_what_the_general_way_reads(
            body in mutated_lines(&[
                &["f1", "f2", "1818e811892f902b"], &["spanner"], &["4096", "0", "1048000", "2000000"], &["1705300000"], &["WARM"],
                &["REPLICATED"], &["READ", "WRITE", "write", "TRIM"], &["OTHER"], &["0"], &["0", "1", "-1"], &["8192", "4096"],
                &["8192"], &["16384", "0", "-1"], &["1705312800.000001", "1705312801", "1705312800.0029871234"], &["0.004"],
                &["0"], &["0.005"],
            ], ","),
            header in proptest::sample::select(&[0usize, 1, 2][..]),
            skip in proptest::bool::ANY,
        ) {
            let headers = [
                SAMPLE.lines().next().unwrap().to_string(),
                SAMPLE.lines().next().unwrap().replace("cache_hit", "cache_hit_not"),
                // The same columns named in another order: start_time first, filename last.
                "start_time,application,file_offset,c_time,io_zone,redundancy_type,op_type,service_class,from_flash_cache,cache_hit,request_io_size_bytes,response_io_size_bytes,disk_io_size_bytes,filename,disk_time,simulated_disk_start_time,simulated_latency".to_string(),
            ];
            let text = format!("{}\n{body}", headers[header]);
            let (fast, general) = both_ways(&text, skip, Some(1));
            proptest::prop_assert_eq!(fast, general, "{:?}", text);
        }
    }

    #[test]
    fn the_fast_path_takes_the_samples_lines() {
        let text = std::fs::read_to_string(data("thesios/data-00000-of-00001")).unwrap();
        let (fast, general) = both_ways(&text, false, None);
        assert_eq!(fast, general);
        assert_eq!(fast.1, 7, "the sample's reads served by the cache");
        let (fast, general) = (fast.0, general.0);
        assert!(fast.0.len() > 20, "{:?}", fast.1);
        assert_eq!(fast, general);
        // Every line of a file seen before is the fast path's: read again,
        // each is taken.
        let mut r = ThesiosReader::new(
            Box::new(std::io::Cursor::new(text.clone().into_bytes())),
            "t",
            None,
            false,
        )
        .unwrap();
        while r.next_raw().unwrap().is_some() {}
        let mut taken = 0;
        r.src = CsvLines::new(Box::new(std::io::Cursor::new(text.into_bytes())), "t", b',');
        r.src.next_line().unwrap();
        while r.src.next_line().unwrap() {
            taken += usize::from(r.fast_record().is_some());
        }
        assert_eq!(taken, 40);
    }

    /// The README's columns, in its order, and a few requests.
    const SAMPLE: &str = "filename,application,file_offset,c_time,io_zone,redundancy_type,op_type,service_class,from_flash_cache,cache_hit,request_io_size_bytes,response_io_size_bytes,disk_io_size_bytes,start_time,disk_time,simulated_disk_start_time,simulated_latency\n\
        f1,bigtable,4096,1705300000,WARM,REPLICATED,READ,LATENCY_SENSITIVE,0,0,8192,8192,16384,1705312800.000001,0.004,1705312800.0001,0.005\n\
        f2,spanner,0,1705300000,COLD,ERASURE_CODED,WRITE,THROUGHPUT_ORIENTED,0,-1,1048576,0,0,1705312800.5,0,0,0.002\n\
        f1,bigtable,0,1705300000,WARM,REPLICATED,READ,OTHER,0,1,4096,4096,0,1705312801,0,0,0.0001\n\
        f1,bigtable,65536,1705300000,WARM,REPLICATED,READ,OTHER,0,0,4096,4096,0,1705312802.25,0.003,1705312802.26,0.004\n";

    fn read(text: &str, spec: TraceSpec) -> SimResult<Vec<TraceRecord>> {
        // A folder per content: the tests run in parallel and share names.
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        let p = write_temp(
            &format!("thesios-{:x}", h.finish()),
            "data-00000-of-00001",
            text.as_bytes(),
        );
        read_all(&TraceSpec {
            path: p,
            format: Some(Format::Thesios),
            ..spec
        })
    }

    #[test]
    fn files_get_extents_hits_are_left_out_and_sizes_follow_the_disk() {
        let r = read(SAMPLE, TraceSpec::default()).unwrap();
        let mib = 1 << 20;
        let got: Vec<_> = r
            .iter()
            .map(|r| (r.time.0, r.op, r.offset.0, r.len.0, r.line))
            .collect();
        assert_eq!(
            got,
            vec![
                (1_705_312_800_000_001_000, Op::Read, 4096, 16384, 2), // the disk read 16 KiB
                (1_705_312_800_500_000_000, Op::Write, 64 * mib, 1_048_576, 3), // f2: the second extent
                (1_705_312_802_250_000_000, Op::Read, 65536, 4096, 5), // line 4, a cache hit, is left out
            ]
        );
        let r = read(
            SAMPLE,
            TraceSpec {
                file_extent_mib: Some(1),
                ..TraceSpec::default()
            },
        )
        .unwrap();
        assert_eq!(r[1].offset.0, mib);
        // Found by name: another column order reads the same.
        let swapped = SAMPLE
            .replace(
                "filename,application,file_offset",
                "application,filename,file_offset",
            )
            .replace("f1,bigtable", "bigtable,f1")
            .replace("f2,spanner", "spanner,f2");
        assert_eq!(
            read(&swapped, TraceSpec::default()).unwrap(),
            read(SAMPLE, TraceSpec::default()).unwrap()
        );
        // Detected from the header.
        let p = write_temp("thesios-sniff", "data-00000", SAMPLE.as_bytes());
        assert_eq!(read_all(&spec(&p)).unwrap().len(), 3);
    }

    #[test]
    fn errors_name_the_line_and_the_way_out() {
        let e = read(&SAMPLE.replace("65536,", "67108864,"), TraceSpec::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(":5:") && e.contains("file_extent_mib"), "{e}");
        let e = read(&SAMPLE.replace("WRITE", "TRIM"), TraceSpec::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(":3:") && e.contains("op_type") && e.contains("--skip-unknown"),
            "{e}"
        );
        let p = write_temp(
            "thesios-skip",
            "d",
            SAMPLE.replace("WRITE", "TRIM").as_bytes(),
        );
        let spec = TraceSpec {
            path: p,
            format: Some(Format::Thesios),
            skip_unknown: true,
            ..TraceSpec::default()
        };
        let mut r = crate::trace::open::open_trace(&spec).unwrap();
        let mut n = 0;
        while r.next_record().unwrap().is_some() {
            n += 1;
        }
        assert_eq!((n, r.skipped_unknown()), (2, 1));
        let e = read(&SAMPLE.replace("op_type", "kind"), TraceSpec::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(":1:") && e.contains("'op_type'"), "{e}");
        let e = read(
            SAMPLE,
            TraceSpec {
                file_extent_mib: Some(0),
                ..TraceSpec::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("file_extent_mib"), "{e}");
    }
}
