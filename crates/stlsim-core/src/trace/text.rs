//! Shared plumbing of the text readers: a line splitter that hands out
//! trimmed fields of non-blank lines with their line numbers, and number
//! parsers that never panic.

use crate::error::{Location, SimError, SimResult};
use std::io::Read;

/// The longest line a text trace may have. Real trace lines are well
/// under 200 bytes; without a bound, one giant line (a 600 MB line in a
/// small `.gz`, 100 million delimiters) would be held whole in memory.
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// The most fields a line may have (a generic CSV names columns up to
/// [`crate::trace::generic_csv::MAX_CSV_COLUMN`]).
pub const MAX_FIELDS: usize = 1 << 16;

/// The end of every unknown-operation error: the way out of it.
pub(crate) const SKIP_HINT: &str = "(--skip-unknown skips such records)";

/// "line longer than ..." for a line over [`MAX_LINE_BYTES`].
pub(crate) fn too_long_msg() -> String {
    format!("line longer than 1 MiB ({MAX_LINE_BYTES} bytes): not a trace in this format, or a damaged file")
}

/// Bytes read from the input at a time.
const CHUNK: usize = 1 << 18;

/// A stream of text lines split into fields, over one reused buffer.
/// Lines end with `\n` (a `\r` before it is trimmed with the last
/// field); blank lines are skipped but counted. In whitespace mode
/// ([`CsvLines::words`]) fields are separated by runs of spaces and tabs
/// instead of one delimiter. Hand-written rather than the `csv` crate's
/// reader: trace text has no quoting to honour, and splitting with
/// `memchr` reads several times as many lines a second.
pub(crate) struct CsvLines {
    input: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// The unread bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
    eof: bool,
    delimiter: u8,
    whitespace: bool,
    /// The current line is `buf[line_at..line_at + line_len]`, its fields these ranges of it.
    line_at: usize,
    line_len: usize,
    fields: Vec<(u32, u32)>,
    file: String,
    /// 1-based number of the current line, and of lines consumed.
    line: u64,
    lines: u64,
    /// Whether [`Self::next_line`] marks each line's delimiters as it
    /// looks for its end (for a [`Columns`] plan, which reads them).
    marking: bool,
    marks: Marks,
    /// Tests read a text both ways, with and without the readers' fast
    /// paths, and compare.
    #[cfg(test)]
    pub(crate) general_only: bool,
}

impl CsvLines {
    /// Fields separated by runs of spaces and tabs (blkparse, DiskSim,
    /// MQSim, fio logs), leading and trailing ones ignored.
    pub(crate) fn words(input: Box<dyn Read + Send>, file: &str) -> Self {
        let mut s = CsvLines::new(input, file, b' ');
        s.whitespace = true;
        s
    }

    pub(crate) fn new(input: Box<dyn Read + Send>, file: &str, delimiter: u8) -> Self {
        CsvLines {
            input,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            eof: false,
            delimiter,
            whitespace: false,
            line_at: 0,
            line_len: 0,
            fields: Vec::with_capacity(16),
            file: file.to_string(),
            line: 0,
            lines: 0,
            marking: false,
            marks: Marks::default(),
            #[cfg(test)]
            general_only: false,
        }
    }

    /// Mark each line's first `up_to` delimiters (at least) from now on,
    /// as [`Columns::read_current`] reads them (comma mode only:
    /// whitespace mode has no plan).
    pub(crate) fn mark_delimiters(&mut self, up_to: usize) {
        self.marking = !self.whitespace;
        self.marks.limit = up_to.min(PLANNED_COLUMNS);
    }

    /// Whether a reader may try its one-pass fast path on a line (always,
    /// but in the tests that read a text the general way to compare).
    #[inline(always)]
    pub(crate) fn fast_paths(&self) -> bool {
        #[cfg(test)]
        return !self.general_only;
        #[cfg(not(test))]
        true
    }

    /// Read more input behind the unread bytes (moved to the front);
    /// an error once a line without its end outgrows [`MAX_LINE_BYTES`].
    fn refill(&mut self) -> SimResult<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end as u64 > MAX_LINE_BYTES {
            self.line = self.lines + 1;
            return Err(self.err(too_long_msg()));
        }
        if self.end == self.buf.len() {
            let grown = (self.buf.len() * 2).min(MAX_LINE_BYTES as usize + CHUNK);
            self.buf.resize(grown, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(SimError::Io(format!(
                        "error reading trace '{}' after line {}: {e}",
                        self.file, self.lines
                    )))
                }
            }
        }
    }

    /// Move to the next non-blank line, split into fields; `false` at the end.
    pub(crate) fn advance(&mut self) -> SimResult<bool> {
        loop {
            if !self.next_line()? {
                return Ok(false);
            }
            if self.split_current()? {
                return Ok(true);
            }
        }
    }

    /// Make the line [`Self::next_line`] moved to the current record's
    /// (the line errors and [`Self::line`] name).
    #[inline]
    pub(crate) fn mark_record(&mut self) {
        self.line = self.lines;
    }

    /// Move to the next line, blank or not, without splitting it (a
    /// reader with a fast path parses [`Self::raw`] itself and calls
    /// [`Self::split_current`] only when that fails); `false` at the end.
    #[inline(always)]
    pub(crate) fn next_line(&mut self) -> SimResult<bool> {
        // A line ending in the buffer, in the reader's own loop; the
        // rest (refills, the input's end, errors) out of line: the call
        // and its result through memory were a tenth of a short line.
        match self.newline() {
            Some(i) if i as u64 <= MAX_LINE_BYTES => {
                self.lines += 1;
                self.line_at = self.pos;
                self.line_len = i;
                self.pos += i + 1;
                self.fields.clear();
                Ok(true)
            }
            _ => self.next_line_slow(),
        }
    }

    /// The next newline in the buffered bytes from the current
    /// position, the line's delimiters marked on the way when asked
    /// ([`Self::mark_delimiters`]).
    #[inline(always)]
    fn newline(&mut self) -> Option<usize> {
        let hay = &self.buf[self.pos..self.end];
        if self.marking {
            find_newline_marking(hay, self.delimiter, &mut self.marks)
        } else {
            find_newline(hay)
        }
    }

    /// [`Self::next_line`] the whole way.
    #[inline(never)]
    fn next_line_slow(&mut self) -> SimResult<bool> {
        loop {
            let (start, stop, next) = match self.newline() {
                Some(i) => (self.pos, self.pos + i, self.pos + i + 1),
                None if self.eof => {
                    if self.pos == self.end {
                        return Ok(false);
                    }
                    (self.pos, self.end, self.end) // a last line without its newline
                }
                None => {
                    self.refill()?;
                    continue;
                }
            };
            self.lines += 1;
            self.pos = next;
            if (stop - start) as u64 > MAX_LINE_BYTES {
                self.line = self.lines;
                return Err(self.err(too_long_msg()));
            }
            self.line_at = start;
            self.line_len = stop - start;
            self.fields.clear();
            return Ok(true);
        }
    }

    /// The current line's bytes, its newline excluded.
    #[inline]
    pub(crate) fn raw(&self) -> &[u8] {
        &self.buf[self.line_at..self.line_at + self.line_len]
    }

    /// Split the line [`Self::next_line`] moved to into fields; `false`
    /// when it is blank.
    pub(crate) fn split_current(&mut self) -> SimResult<bool> {
        self.split(self.line_len);
        if self.fields.len() > MAX_FIELDS {
            self.line = self.lines;
            return Err(self.err(format!(
                "line has {} fields, more than {MAX_FIELDS}: not a trace in this format, or a damaged file",
                self.fields.len()
            )));
        }
        let start = self.line_at;
        let blank = match self.fields.as_slice() {
            [] => true,
            [(a, b)] => trim(&self.buf[start + *a as usize..start + *b as usize]).is_empty(),
            _ => false,
        };
        if !blank {
            self.line = self.lines;
        }
        Ok(!blank)
    }

    /// Split the current line, `len` bytes, into [`Self::fields`].
    #[inline]
    fn split(&mut self, len: usize) {
        let line = &self.buf[self.line_at..self.line_at + len];
        self.fields.clear();
        if self.whitespace {
            // Words between runs of spaces and tabs; a word that is only
            // other white space (a `\r` before the newline) is none.
            let mut i = 0;
            while i < len {
                while i < len && (line[i] == b' ' || line[i] == b'\t') {
                    i += 1;
                }
                let from = i;
                while i < len && line[i] != b' ' && line[i] != b'\t' {
                    i += 1;
                }
                if from < i && !trim(&line[from..i]).is_empty() {
                    self.fields.push((from as u32, i as u32));
                }
            }
        } else {
            // Eight bytes at a time: a word's delimiters found at once
            // (trace lines are short, and memchr's set-up per call cost
            // more than it saved on them), the last few bytes one by one.
            let pat = 0x0101_0101_0101_0101u64 * u64::from(self.delimiter);
            let mut from = 0;
            let mut base = 0;
            let mut words = line.chunks_exact(8);
            for w in &mut words {
                let x = u64::from_le_bytes(w.try_into().unwrap_or([0; 8])) ^ pat;
                // High bit of each byte that is zero in x: exact per
                // byte (no carry crosses a byte).
                let nonzero = ((x & 0x7F7F_7F7F_7F7F_7F7F) + 0x7F7F_7F7F_7F7F_7F7F) | x;
                let mut hits = !nonzero & 0x8080_8080_8080_8080;
                while hits != 0 {
                    let d = base + (hits.trailing_zeros() / 8) as usize;
                    self.fields.push((from as u32, d as u32));
                    from = d + 1;
                    hits &= hits - 1;
                }
                base += 8;
            }
            for (k, &c) in words.remainder().iter().enumerate() {
                if c == self.delimiter {
                    self.fields.push((from as u32, (base + k) as u32));
                    from = base + k + 1;
                }
            }
            self.fields.push((from as u32, len as u32));
        }
    }

    /// 1-based line number of the current record.
    pub(crate) fn line(&self) -> u64 {
        self.line
    }

    /// Number of fields of the current record.
    pub(crate) fn len(&self) -> usize {
        self.fields.len()
    }

    /// Field `i` (0-based) of the current record, trimmed of whitespace
    /// and of one pair of surrounding double quotes; empty if absent.
    #[inline]
    pub(crate) fn field(&self, i: usize) -> &[u8] {
        match self.fields.get(i) {
            Some(&(a, b)) => {
                let t = trim(&self.buf[self.line_at + a as usize..self.line_at + b as usize]);
                if t.len() >= 2 && t[0] == b'"' && t[t.len() - 1] == b'"' {
                    trim(&t[1..t.len() - 1])
                } else {
                    t
                }
            }
            None => &[],
        }
    }

    /// The unknown-operation policy every reader shares: with `skip`,
    /// count the record in `skipped` (the caller moves on to the next);
    /// without it, the error `what` says, ending with the way out.
    pub(crate) fn unknown_op(
        &self,
        skip: bool,
        skipped: &mut u64,
        what: impl FnOnce() -> String,
    ) -> SimResult<()> {
        if skip {
            *skipped += 1;
            Ok(())
        } else {
            Err(self.err(format!("{} {SKIP_HINT}", what())))
        }
    }

    /// A format error at the current line.
    pub(crate) fn err(&self, msg: impl Into<String>) -> SimError {
        SimError::TraceFormat {
            at: Location {
                file: self.file.clone(),
                line: self.line,
            },
            msg: msg.into(),
        }
    }

    /// Error unless the record has exactly `n` fields.
    pub(crate) fn expect_fields(&self, n: usize, layout: &str) -> SimResult<()> {
        if self.len() == n {
            Ok(())
        } else {
            Err(self.err(format!(
                "expected {n} fields ({layout}), found {}",
                self.len()
            )))
        }
    }

    /// Field `i` as a non-negative integer, or an error naming `name`.
    pub(crate) fn u64_field(&self, i: usize, name: &str) -> SimResult<u64> {
        let f = self.field(i);
        parse_u64(f).ok_or_else(|| {
            let digits = f.strip_prefix(b"+").unwrap_or(f);
            if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
                self.err(format!(
                    "{name} (field {}) overflows 64 bits: '{}'",
                    i + 1,
                    show(f)
                ))
            } else {
                self.err(format!(
                    "{name} (field {}) is not a non-negative integer: '{}'",
                    i + 1,
                    show(f)
                ))
            }
        })
    }

    /// Field `i`, a non-negative decimal number, times `scale`, rounded.
    pub(crate) fn scaled_field(&self, i: usize, scale: u64, name: &str) -> SimResult<u64> {
        let f = self.field(i);
        parse_scaled(f, scale).ok_or_else(|| {
            // A well-formed non-negative number that is too large once scaled.
            let number = std::str::from_utf8(f)
                .ok()
                .and_then(|s| s.parse::<f64>().ok());
            let digits = f.strip_prefix(b"+").unwrap_or(f);
            let well_formed = digits
                .iter()
                .all(|c| c.is_ascii_digit() || b".eE+".contains(c));
            match number {
                Some(v) if v >= 0.0 && well_formed && !digits.is_empty() => self.err(format!(
                    "{name} (field {}) overflows: '{}' x {scale} is past 2^64",
                    i + 1,
                    show(f)
                )),
                _ => self.err(format!(
                    "{name} (field {}) is not a valid non-negative number: '{}'",
                    i + 1,
                    show(f)
                )),
            }
        })
    }
}

/// The first newline in `hay`: sixteen bytes at a time over the first
/// 256 (a trace line's length; memchr's set-up per call cost as much
/// as its search on them), then memchr.
#[inline(always)]
fn find_newline(hay: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(c) = hay.get(at..).and_then(|r| r.first_chunk::<16>()) {
        let hits = Separators::hits16(c, b'\n', false);
        if hits != 0 {
            return Some(at + hits.trailing_zeros() as usize);
        }
        at += 16;
        if at >= Separators::MAX_LINE {
            break;
        }
    }
    memchr::memchr(b'\n', &hay[at..]).map(|i| at + i)
}

/// [`Marks::starts`]'s slots: one past any byte's value.
const MARK_SLOTS: usize = 257;

/// A line's delimiters, marked by [`find_newline_marking`] while it
/// looks for the line's end: what [`field_starts`] finds, without a
/// second pass over the line.
pub(crate) struct Marks {
    /// Whether the rest holds for the current line (its end was found
    /// within [`Separators::MAX_LINE`] bytes, in whole 64-byte stretches).
    ok: bool,
    /// The line's first `found` field starts after the first,
    /// `starts[1..=found]` (`starts[0]` is 0), at most
    /// [`PLANNED_COLUMNS`]; `starts[found + 1]` is one past the line's
    /// end (its `\r` excluded), as if a delimiter ended the line.
    /// Room for a whole stretch past the last one kept (the stretch
    /// is stored before it is counted), indexed by a byte.
    starts: [u16; MARK_SLOTS],
    found: usize,
    /// Delimiters are marked until `found` reaches this (at most
    /// [`PLANNED_COLUMNS`]): the layout's width, where a reader's
    /// columns end; the ones past it cost a tenth of a Thesios line.
    limit: usize,
}

impl Default for Marks {
    fn default() -> Self {
        Marks {
            ok: false,
            starts: [0; MARK_SLOTS],
            found: 0,
            limit: PLANNED_COLUMNS,
        }
    }
}

/// [`find_newline`], marking the delimiters `d` before the newline in
/// `marks` in the same pass: each 64-byte stretch compared once for
/// both bytes, where finding the end and then the fields read a line
/// twice. `marks.ok` is false where the newline is not within the
/// first [`Separators::MAX_LINE`] bytes in whole stretches (the input's
/// last bytes, a long line): then it is [`find_newline`]'s search.
#[inline(always)]
fn find_newline_marking(hay: &[u8], d: u8, marks: &mut Marks) -> Option<usize> {
    marks.ok = false;
    let mut found = 0;
    let mut base = 0;
    while let Some(b) = hay.get(base..).and_then(|r| r.first_chunk::<64>()) {
        let hits = |k: usize, c: u8| {
            let q = b[16 * k..].first_chunk::<16>().expect("16 of 64");
            Separators::hits16(q, c, false) << (16 * k)
        };
        let nl = hits(0, b'\n') | hits(1, b'\n') | hits(2, b'\n') | hits(3, b'\n');
        let mut m = hits(0, d) | hits(1, d) | hits(2, d) | hits(3, d);
        // Only the delimiters before the newline are the line's.
        m &= nl.wrapping_sub(1) & !nl;
        if found < marks.limit {
            // At most 64 in a stretch, after fewer than 64 kept: a
            // byte's index stays within the room, so no check per
            // delimiter (the index masked to the room took one more
            // instruction, of nine).
            let mut k = found;
            while m != 0 {
                marks.starts[usize::from(k as u8) + 1] =
                    (base + m.trailing_zeros() as usize + 1) as u16;
                k += 1;
                m &= m - 1;
            }
            found = k.min(PLANNED_COLUMNS);
        }
        if nl != 0 {
            let end = base + nl.trailing_zeros() as usize;
            let plain = end - usize::from(end > 0 && hay[end - 1] == b'\r');
            marks.starts[found + 1] = plain as u16 + 1;
            marks.found = found;
            marks.ok = true;
            return Some(end);
        }
        base += 64;
        if base >= Separators::MAX_LINE {
            break;
        }
    }
    find_newline(hay)
}

/// Trim ASCII whitespace at both ends.
pub(crate) fn trim(s: &[u8]) -> &[u8] {
    let mut a = 0;
    let mut b = s.len();
    while a < b && s[a].is_ascii_whitespace() {
        a += 1;
    }
    while b > a && s[b - 1].is_ascii_whitespace() {
        b -= 1;
    }
    &s[a..b]
}

/// A field for an error message: lossy UTF-8, at most 60 characters,
/// control characters escaped (see [`printable`]).
pub(crate) fn show(s: &[u8]) -> String {
    printable(&String::from_utf8_lossy(s), 60)
}

/// At most `max` characters of `s` (then `...`), with control characters
/// and Unicode line separators escaped (`\r`, `\u{1b}`), so that a
/// message quoting trace text stays on one line: a lone carriage return,
/// a vertical tab or a terminal escape in a damaged field would otherwise
/// break or overwrite the line it is printed on.
pub(crate) fn printable(s: &str, max: usize) -> String {
    let mut t = String::with_capacity(s.len().min(4 * max) + 3);
    for (i, c) in s.chars().enumerate() {
        if i == max {
            t.push_str("...");
            break;
        }
        if c.is_control() || c == '\u{2028}' || c == '\u{2029}' {
            t.extend(c.escape_debug());
        } else {
            t.push(c);
        }
    }
    t
}

/// A non-negative decimal integer (an optional leading `+`), without overflow.
#[inline]
pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
    parse_digits(s.strip_prefix(b"+").unwrap_or(s))
}

/// Whether the eight bytes of `w` (little-endian) are all ASCII digits.
#[inline]
pub(crate) fn eight_digits(w: u64) -> bool {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    ((w & HIGH) | ((w.wrapping_add(0x0606_0606_0606_0606) & HIGH) >> 4)) == 0x3333_3333_3333_3333
}

/// The value of eight ASCII digits in `w` (little-endian, first digit
/// in the lowest byte), by pairing neighbours in three multiplications.
#[inline]
pub(crate) fn parse_eight(w: u64) -> u64 {
    digit_values(w - 0x3030_3030_3030_3030)
}

/// [`parse_eight`] of the digits' values (each byte 0 to 9).
#[inline(always)]
fn digit_values(v: u64) -> u64 {
    const MASK: u64 = 0x0000_00FF_0000_00FF;
    const MUL1: u64 = 100 + (1_000_000 << 32);
    const MUL2: u64 = 1 + (10_000 << 32);
    let v = v * 10 + (v >> 8);
    ((v & MASK)
        .wrapping_mul(MUL1)
        .wrapping_add(((v >> 16) & MASK).wrapping_mul(MUL2)))
        >> 32
}

/// How many of the eight bytes of `w` (little-endian), from the first,
/// are ASCII digits before the first byte that is not.
#[inline(always)]
pub(crate) fn digit_prefix(w: u64) -> u32 {
    // Each byte's value as a digit: one that is not a digit has its
    // value, or its value plus 0x76, at 0x80 or above. A borrow or a
    // carry between bytes only goes up from such a byte, so the first
    // byte marked is the first that is not a digit (as in
    // [`leading_digits`]; the bytes' nibbles tested took twice the
    // instructions).
    let v = w.wrapping_sub(0x3030_3030_3030_3030);
    ((v | v.wrapping_add(0x7676_7676_7676_7676)) & 0x8080_8080_8080_8080).trailing_zeros() / 8
}

/// The value of the first `n` (1 to 7) digits of `w`: moved up to the
/// word's top, with '0's filled in below them.
#[inline(always)]
pub(crate) fn parse_prefix(w: u64, n: u32) -> u64 {
    // The values shifted up bring zeros (the value of '0') in below; a
    // borrow from a byte past the digits goes up, out with it.
    digit_values(w.wrapping_sub(0x3030_3030_3030_3030) << (64 - 8 * n))
}

/// Digits from `*i` up to `stop` (consumed), at least one and at most 18
/// (so none overflows), eight bytes at a time where the line has them:
/// the number step of the readers' one-pass fast paths, which leave any
/// line it refuses to the general, field-by-field way.
#[inline(always)]
pub(crate) fn digits_then(line: &[u8], i: &mut usize, stop: u8) -> Option<u64> {
    let v = digit_run(line, i)?;
    if line.get(*i) != Some(&stop) {
        return None;
    }
    *i += 1;
    Some(v)
}

/// [`digits_then`] for the last field of a line: the digits must run to
/// its end (a `\r` before the newline already stripped).
#[inline(always)]
pub(crate) fn digits_to_end(line: &[u8], i: &mut usize) -> Option<u64> {
    let from = *i;
    let n = line.get(from..)?.len();
    if n == 0 || n > 18 {
        return None;
    }
    let mut v = 0u64;
    for &c in &line[from..] {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u64;
    }
    *i = line.len();
    Some(v)
}

/// What a [`Columns`] fast path takes from one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Take {
    /// Not read (in whitespace mode it must still be one word).
    Skip,
    /// Digits (at most 18), as [`CsvLines::u64_field`] reads them.
    Int,
    /// Digits, then optionally a point and digits (at most 18 each side),
    /// times the scale and rounded as [`parse_scaled`] rounds.
    Scaled(u64),
    /// The bytes themselves, for the reader to judge: no white space or
    /// quote at either end, so the general way's trimming leaves them be.
    Word,
}

/// A one-pass fast path over lines of a fixed column layout: each
/// column taken as [`Take`] says, in one walk along the line, without
/// splitting it first. A line it refuses (`None`) goes the general way,
/// which also words every error, so it only has to be right about the
/// lines it takes: it takes one only where the general way would read
/// the same values.
pub(crate) struct Columns {
    takes: Vec<Step>,
    delimiter: u8,
    whitespace: bool,
    /// The layout has exactly these columns (more is an error the
    /// general way words); otherwise later ones are not read.
    exact: bool,
    /// Lines are walked by their separators found first
    /// ([`Columns::walk_marked`]) rather than field by field: where
    /// enough columns are text (skipped or words), which the
    /// field-by-field walk must scan byte by byte, while it reads a
    /// number and finds its end in one step. Finding the separators
    /// costs one compare per 16 bytes (two in whitespace mode), which
    /// two text columns repay; in whitespace mode, only a majority of
    /// text columns did. Measured on the readers' samples (`cargo bench
    /// --bench engine -- trace/`): Thesios (10 text columns of 14) 8.8
    /// -> 11.8 M records/s, SYSTOR'17 (2 of 6) 19.4 -> 20.4, FIU 21.0
    /// -> 21.3; SPC (1 text column) and DiskSim validate (2 of 6,
    /// whitespace) 4-10 % slower marked, so walked field by field.
    marked: bool,
    /// Comma mode's marked walk, compiled: the columns taken, by index
    /// (a skipped column needs no check there, so it is only a
    /// separator found), or empty where that walk does not apply.
    plan: Vec<(u32, Step)>,
}

/// The most columns [`Columns::walk_planned`] reads (wider layouts are
/// walked by [`Columns::walk_marked`]): its fields' starts fit a small
/// array on the stack.
const PLANNED_COLUMNS: usize = 64;

/// A [`Take`] as [`Columns::read`] performs it: a scale that is a power
/// of ten kept as its exponent, known before any line is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Skip,
    Int,
    Scaled(u64),
    /// Scaled by 10^k.
    Decimal(usize),
    Word,
}

impl Columns {
    /// A fast path for lines split like `lines` is (its delimiter or
    /// whitespace mode); trailing `Skip`s are dropped. `None` where the
    /// delimiter is white space other than a space or a tab (trimming
    /// fields would then interact with splitting).
    pub(crate) fn new(mut takes: Vec<Take>, lines: &CsvLines, exact: bool) -> Option<Self> {
        let d = lines.delimiter;
        if !lines.whitespace && d.is_ascii_whitespace() && d != b' ' && d != b'\t' {
            return None;
        }
        if !exact {
            while takes.last() == Some(&Take::Skip) {
                takes.pop();
            }
        }
        let takes: Vec<Step> = takes
            .into_iter()
            .map(|t| match t {
                Take::Skip => Step::Skip,
                Take::Int => Step::Int,
                Take::Word => Step::Word,
                Take::Scaled(scale) => match POW10.iter().position(|&p| p == scale) {
                    Some(k) => Step::Decimal(k),
                    None => Step::Scaled(scale),
                },
            })
            .collect();
        let text = takes
            .iter()
            .filter(|t| matches!(t, Step::Skip | Step::Word))
            .count();
        let marked = if lines.whitespace {
            text > takes.len() - text
        } else {
            text >= 2
        };
        Some(Self::of_steps(takes, d, lines.whitespace, exact, marked))
    }

    /// The walker of `takes` (with its compiled plan).
    fn of_steps(
        takes: Vec<Step>,
        delimiter: u8,
        whitespace: bool,
        exact: bool,
        marked: bool,
    ) -> Self {
        // A digit delimiter would end a number where the field walk
        // reads on (and refuses the line).
        let planned = !whitespace
            && (1..=PLANNED_COLUMNS).contains(&takes.len())
            && !delimiter.is_ascii_digit();
        let plan = if planned {
            (0..takes.len() as u32)
                .zip(takes.iter().copied())
                .filter(|(_, t)| !matches!(t, Step::Skip))
                .collect()
        } else {
            vec![]
        };
        Columns {
            takes,
            delimiter,
            whitespace,
            exact,
            marked,
            plan,
        }
    }

    /// Whether [`Columns::read_current`] reads lines by the delimiters
    /// their [`CsvLines`] marks: then the reader should have it mark them.
    #[inline(always)]
    fn reads_marks(&self) -> bool {
        self.marked && !self.whitespace && !self.plan.is_empty()
    }

    /// How many of a line's delimiters to mark for this layout
    /// ([`CsvLines::mark_delimiters`]), if it reads marks.
    pub(crate) fn marks_wanted(&self) -> Option<usize> {
        self.reads_marks().then_some(self.takes.len())
    }

    /// Whether `c` ends a field (`WS`: whitespace mode).
    #[inline(always)]
    fn separates<const WS: bool>(&self, c: u8) -> bool {
        c == self.delimiter || (WS && c == b'\t')
    }

    /// Read `line`: the numbers of `Int` and `Scaled` columns into
    /// `nums`, the `Word`s into `words`, each in column order. `None`
    /// when the line is not in the plain form.
    #[inline]
    pub(crate) fn read<'a>(
        &self,
        line: &'a [u8],
        nums: &mut [u64],
        words: &mut [&'a [u8]],
    ) -> Option<()> {
        // One copy of the walk per mode: the mode's tests leave the loop.
        let plain = line.strip_suffix(b"\r").unwrap_or(line);
        let marked = self.marked && plain.len() <= Separators::MAX_LINE;
        match (self.whitespace, marked) {
            (true, true) => self.walk_marked::<true>(plain, nums, words),
            (false, true) if !self.plan.is_empty() => self.walk_planned(plain, nums, words),
            (false, true) => self.walk_marked::<false>(plain, nums, words),
            (true, false) => self.walk::<true>(line, nums, words),
            (false, false) => self.walk::<false>(line, nums, words),
        }
    }

    /// [`Columns::walk`] for a line of at most [`Separators::MAX_LINE`]
    /// bytes (its `\r` stripped): every separator found in one pass
    /// first, then each field's end is the next one, with no scan per
    /// field (the scans' branches, taken at a different byte on every
    /// line, were most of a long line's cost). It takes exactly the
    /// lines `walk::<WS>` takes, with the same values.
    #[inline(always)]
    fn walk_marked<'a, const WS: bool>(
        &self,
        line: &'a [u8],
        nums: &mut [u64],
        words: &mut [&'a [u8]],
    ) -> Option<()> {
        let mut ends = Separators::new(line, self.delimiter, WS);
        let (mut n, mut w) = (0, 0);
        let mut end = 0;
        for (k, take) in self.takes.iter().enumerate() {
            let from = if k == 0 {
                0
            } else if end < line.len() {
                end + 1
            } else {
                return None; // fewer fields than taken
            };
            end = ends.next();
            let mut i = from;
            match take {
                Step::Skip | Step::Word => {
                    let f = &line[from..end];
                    if !text_taken::<WS>(*take, f) {
                        return None;
                    }
                    if matches!(take, Step::Word) {
                        *words.get_mut(w)? = f;
                        w += 1;
                    }
                }
                Step::Int | Step::Scaled(_) | Step::Decimal(_) => {
                    *nums.get_mut(n)? = number(line, &mut i, *take)?;
                    n += 1;
                }
            }
            // A number fills its field (a digit that is the delimiter
            // is left to the general way too).
            if !matches!(take, Step::Skip | Step::Word) && i != end {
                return None;
            }
        }
        // An exact layout's last column ends the line (white space
        // after it aside, in whitespace mode).
        (!self.exact
            || end == line.len()
            || WS && line[end..].iter().all(|&c| c == b' ' || c == b'\t'))
        .then_some(())
    }

    /// [`Columns::walk_marked`] in comma mode, by the compiled plan:
    /// the same lines taken, with the same values, but the line's
    /// field starts found first in one tight loop, then each column
    /// taken read by its index (the skipped ones, most of a wide
    /// layout's, never looked at). Stepped field by field through the
    /// plan, its state kept spilling to the stack (callgrind, a Thesios
    /// line: 1,213 instructions in `Columns::read` then, 912 now).
    #[inline(always)]
    fn walk_planned<'a>(
        &self,
        line: &'a [u8],
        nums: &mut [u64],
        words: &mut [&'a [u8]],
    ) -> Option<()> {
        let width = self.takes.len();
        let mut starts = [0u16; PLANNED_COLUMNS + 1];
        let found = field_starts(line, self.delimiter, width, &mut starts);
        if !self.fields_found(found) {
            return None;
        }
        if found + 1 == width {
            // The last field ends the line.
            starts[width] = line.len() as u16 + 1;
        }
        self.take_planned(
            &Fields {
                line,
                starts: &starts,
            },
            nums,
            words,
        )
    }

    /// Whether a line with `found` delimiters (counted up to the
    /// layout's width at least) has the layout's columns: not fewer
    /// than taken, nor more than an exact layout has.
    #[inline(always)]
    fn fields_found(&self, found: usize) -> bool {
        let width = self.takes.len();
        let found = found.min(width);
        found + 1 >= width && !(self.exact && found == width)
    }

    /// [`Columns::read`] of the current line of `lines`, by the
    /// delimiters it marked while finding the line's end where it did
    /// ([`CsvLines::mark_delimiters`]): the same lines taken, with the
    /// same values.
    #[inline]
    pub(crate) fn read_current<'a>(
        &self,
        lines: &'a CsvLines,
        nums: &mut [u64],
        words: &mut [&'a [u8]],
    ) -> Option<()> {
        match self.fields_current(lines) {
            Some(fields) => self.take_planned(&fields, nums, words),
            None => self.read(lines.raw(), nums, words),
        }
    }

    /// The plan's columns of a line with the layout's fields.
    #[inline(always)]
    fn take_planned<'a, const N: usize>(
        &self,
        fields: &Fields<'a, '_, N>,
        nums: &mut [u64],
        words: &mut [&'a [u8]],
    ) -> Option<()> {
        let (mut n, mut w) = (0, 0);
        for &(col, take) in &self.plan {
            if let Step::Word = take {
                *words.get_mut(w)? = fields.word(col as usize)?;
                w += 1;
                continue;
            }
            *nums.get_mut(n)? = fields.number(col as usize, take)?;
            n += 1;
        }
        Some(())
    }

    /// The fields of the current line of `lines`, for a reader that
    /// takes its columns itself (in the order its own checks want),
    /// where it was marked ([`CsvLines::mark_delimiters`]) and has the
    /// layout's columns; `None` leaves the line to
    /// [`Columns::read_current`]. A column of the layout, read as the
    /// layout takes it, is what `read_current` reads.
    #[inline(always)]
    pub(crate) fn fields_current<'a>(
        &self,
        lines: &'a CsvLines,
    ) -> Option<Fields<'a, 'a, MARK_SLOTS>> {
        let marks = &lines.marks;
        if !(marks.ok && self.reads_marks() && self.fields_found(marks.found)) {
            return None;
        }
        let line = lines.raw();
        Some(Fields {
            line: line.strip_suffix(b"\r").unwrap_or(line),
            starts: &marks.starts,
        })
    }

    #[inline(always)]
    fn walk<'a, const WS: bool>(
        &self,
        line: &'a [u8],
        nums: &mut [u64],
        words: &mut [&'a [u8]],
    ) -> Option<()> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !self.exact && line.len() > MAX_FIELDS {
            // It might hold more fields than the general way allows,
            // beyond the columns read here.
            return None;
        }
        let (mut n, mut w) = (0, 0);
        let mut i = 0;
        for (k, take) in self.takes.iter().enumerate() {
            if k > 0 {
                // One separator between fields (a run in whitespace mode
                // is left to the general way).
                if !self.separates::<WS>(*line.get(i)?) {
                    return None;
                }
                i += 1;
            }
            let from = i;
            match take {
                Step::Skip | Step::Word => {
                    if !WS {
                        // Eight bytes at a time: text columns are long.
                        let pat = 0x0101_0101_0101_0101u64 * u64::from(self.delimiter);
                        while let Some(chunk) = line.get(i..).and_then(|r| r.first_chunk::<8>()) {
                            let x = u64::from_le_bytes(*chunk) ^ pat;
                            let hits = !(((x & 0x7F7F_7F7F_7F7F_7F7F) + 0x7F7F_7F7F_7F7F_7F7F) | x)
                                & 0x8080_8080_8080_8080;
                            if hits != 0 {
                                i += (hits.trailing_zeros() / 8) as usize;
                                break;
                            }
                            i += 8;
                        }
                    }
                    while let Some(&c) = line.get(i) {
                        if self.separates::<WS>(c) {
                            break;
                        }
                        i += 1;
                    }
                    let f = &line[from..i];
                    if !text_taken::<WS>(*take, f) {
                        return None;
                    }
                    if matches!(take, Step::Word) {
                        *words.get_mut(w)? = f;
                        w += 1;
                    }
                }
                Step::Int | Step::Scaled(_) | Step::Decimal(_) => {
                    *nums.get_mut(n)? = number(line, &mut i, *take)?;
                    n += 1;
                }
            }
        }
        // The last column taken ends its field; in an exact layout it
        // ends the line (white space after it aside, in whitespace mode).
        match line.get(i) {
            None => Some(()),
            Some(_) if self.exact => {
                (WS && line[i..].iter().all(|&c| c == b' ' || c == b'\t')).then_some(())
            }
            Some(&c) => self.separates::<WS>(c).then_some(()),
        }
    }
}

/// A line's fields by their starts (`starts[k]` the start of field k,
/// one past the delimiter ending the field before, for every field
/// asked for and the one after it), each read as a planned walk takes
/// it: `None` where the general way might read it otherwise.
pub(crate) struct Fields<'a, 's, const N: usize> {
    line: &'a [u8],
    starts: &'s [u16; N],
}

impl<'a, const N: usize> Fields<'a, '_, N> {
    /// Field `col`'s bounds.
    #[inline(always)]
    fn bounds(&self, col: usize) -> (usize, usize) {
        // A layout's columns are below PLANNED_COLUMNS: the mask only
        // spares the bounds checks.
        const { assert!(N > PLANNED_COLUMNS) };
        let col = col & (PLANNED_COLUMNS - 1);
        let from = usize::from(self.starts[col]);
        (from, usize::from(self.starts[col + 1]) - 1)
    }

    /// Field `col` as a `Word` column takes it.
    #[inline(always)]
    pub(crate) fn word(&self, col: usize) -> Option<&'a [u8]> {
        let (from, to) = self.bounds(col);
        let f = &self.line[from..to];
        text_taken::<false>(Step::Word, f).then_some(f)
    }

    /// Field `col` as an `Int` column takes it.
    #[inline(always)]
    pub(crate) fn int(&self, col: usize) -> Option<u64> {
        self.number(col, Step::Int)
    }

    /// Field `col` as a `Scaled(10^k)` column takes it.
    #[inline(always)]
    pub(crate) fn decimal(&self, col: usize, k: usize) -> Option<u64> {
        self.number(col, Step::Decimal(k))
    }

    #[inline(always)]
    fn number(&self, col: usize, take: Step) -> Option<u64> {
        let (from, to) = self.bounds(col);
        number_in(self.line, from, to, take)
    }
}

/// Where a line's delimiters are, found sixteen bytes at a time (a
/// 64-byte stretch of the line at once, as far as fields are asked
/// for), handed out in order.
pub(crate) struct Separators<'a> {
    line: &'a [u8],
    d: u8,
    /// Tabs separate too (whitespace mode, where `d` is a space).
    ws: bool,
    /// The delimiters not yet handed out among the 64 bytes from
    /// `base` on: bit k for byte `base + k`.
    cur: u64,
    base: usize,
}

impl<'a> Separators<'a> {
    /// The longest line it marks (longer ones are walked field by field).
    const MAX_LINE: usize = 256;

    #[inline(always)]
    pub(crate) fn new(line: &'a [u8], d: u8, ws: bool) -> Self {
        Separators {
            line,
            d,
            ws,
            cur: Self::stretch(line, 0, d, ws),
            base: 0,
        }
    }

    /// The delimiters among the (up to) 64 bytes of `line` from `from`.
    #[inline(always)]
    pub(crate) fn stretch(line: &[u8], from: usize, d: u8, ws: bool) -> u64 {
        if let Some(b) = line.get(from..).and_then(|r| r.first_chunk::<64>()) {
            // A whole stretch: four compares in a row, without the
            // loop's bookkeeping (a third of its instructions).
            let hits = |k: usize| {
                let c = b[16 * k..].first_chunk::<16>().expect("16 of 64");
                Self::hits16(c, d, ws) << (16 * k)
            };
            return hits(0) | hits(1) | hits(2) | hits(3);
        }
        let end = line.len().min(from + 64);
        let mut chunks = line[from..end].chunks_exact(16);
        let (mut m, mut at) = (0u64, 0);
        for c in &mut chunks {
            m |= Self::hits16(c.first_chunk::<16>().expect("a chunk of 16"), d, ws) << at;
            at += 16;
        }
        let rest = chunks.remainder().len();
        if rest > 0 {
            let tail = if let Some(last) = line[..end].last_chunk::<16>() {
                // The 16 bytes ending there, overlapping those before:
                // only the bits of the bytes not seen yet kept.
                Self::hits16(last, d, ws) >> (16 - rest)
            } else {
                // A line shorter than 16 bytes: padding that is never
                // the delimiter.
                let mut pad = [u8::from(d == 0); 16];
                pad[..rest].copy_from_slice(&line[from + at..end]);
                Self::hits16(&pad, d, ws)
            };
            m |= tail << at;
        }
        m
    }

    /// Bit k set where byte k of `c` is `d` (or, with `ws`, a tab):
    /// SSE2 compares.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn hits16(c: &[u8; 16], d: u8, ws: bool) -> u64 {
        #[target_feature(enable = "sse2")]
        fn compare(c: &[u8; 16], d: u8, ws: bool) -> u64 {
            use std::arch::x86_64::{
                _mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_set_epi64x,
            };
            let lo = u64::from_le_bytes(*c.first_chunk::<8>().expect("8 of 16"));
            let hi = u64::from_le_bytes(*c.last_chunk::<8>().expect("8 of 16"));
            let v = _mm_set_epi64x(hi as i64, lo as i64);
            let mut eq = _mm_cmpeq_epi8(v, _mm_set1_epi8(d as i8));
            if ws {
                eq = _mm_or_si128(eq, _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\t' as i8)));
            }
            u64::from(_mm_movemask_epi8(eq) as u16)
        }
        // SAFETY: SSE2 is part of the x86-64 baseline: every x86-64
        // processor has it, and Rust's x86_64 targets assume it.
        unsafe { compare(c, d, ws) }
    }

    /// [`Separators::hits16`] without SSE2.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    fn hits16(c: &[u8; 16], d: u8, ws: bool) -> u64 {
        Self::hits16_swar(c, d, ws)
    }

    /// [`Separators::hits16`] eight bytes at a time in a word (compiled
    /// everywhere, so that x86-64 tests check it against SSE2).
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    #[inline(always)]
    fn hits16_swar(c: &[u8; 16], d: u8, ws: bool) -> u64 {
        let lo = u64::from_le_bytes(*c.first_chunk::<8>().expect("8 of 16"));
        let hi = u64::from_le_bytes(*c.last_chunk::<8>().expect("8 of 16"));
        let of = |d: u8| {
            let pat = 0x0101_0101_0101_0101u64 * u64::from(d);
            Self::zero_bytes(lo ^ pat) | Self::zero_bytes(hi ^ pat) << 8
        };
        if ws {
            of(d) | of(b'\t')
        } else {
            of(d)
        }
    }

    /// One bit per zero byte of `x` (bit k for byte k): exact (no false
    /// hits), the eight flags gathered by one multiplication.
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    #[inline(always)]
    fn zero_bytes(x: u64) -> u64 {
        let z =
            !(((x & 0x7F7F_7F7F_7F7F_7F7F) + 0x7F7F_7F7F_7F7F_7F7F) | x) & 0x8080_8080_8080_8080;
        (z >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
    }

    /// The next delimiter's position, or the line's length after the last.
    #[inline(always)]
    pub(crate) fn next(&mut self) -> usize {
        loop {
            if self.cur != 0 {
                let at = self.base + self.cur.trailing_zeros() as usize;
                self.cur &= self.cur - 1;
                return at;
            }
            self.base += 64;
            if self.base >= self.line.len() {
                return self.line.len();
            }
            self.cur = Self::stretch(self.line, self.base, self.d, self.ws);
        }
    }
}

/// Whether a fast path may take text field `f` (a `Word` or a `Skip`)
/// as the general way reads it: a word as it stands (no quote, no
/// white space at either end; empty only between two delimiters); in
/// whitespace mode, a skipped field that is one word to the general way
/// (not empty, nor white space it would drop).
#[inline(always)]
fn text_taken<const WS: bool>(take: Step, f: &[u8]) -> bool {
    if matches!(take, Step::Word) {
        match (f.first(), f.last()) {
            (Some(&a), Some(&z)) => a > b' ' && z > b' ' && a != b'"',
            _ => !WS,
        }
    } else {
        !(WS && f.first().is_none_or(|&a| a <= b' '))
    }
}

/// The start of each of `line`'s first `width` fields (at most
/// [`PLANNED_COLUMNS`]) in `starts[1..]`, each one past the separator
/// ending the field before, `starts[0]` being 0: the separators
/// found, at most `width` (a line of `width` fields has one less).
#[inline(always)]
fn field_starts(
    line: &[u8],
    d: u8,
    width: usize,
    starts: &mut [u16; PLANNED_COLUMNS + 1],
) -> usize {
    let width = width.min(PLANNED_COLUMNS);
    // Slot by slot: the slots' end is the only check per separator.
    let mut slots = starts[1..=width].iter_mut();
    let mut base = 0;
    while base < line.len() {
        let mut m = Separators::stretch(line, base, d, false);
        while m != 0 {
            let Some(slot) = slots.next() else {
                return width;
            };
            *slot = (base + m.trailing_zeros() as usize + 1) as u16;
            m &= m - 1;
        }
        base += 64;
    }
    width - slots.len()
}

/// A number column's value, the field `line[from..to]` (which it must
/// fill): an `Int` of up to eight digits read in one word, a `Decimal`
/// by [`decimal_in`], any other (or where the line ends too soon for
/// their words) as [`number`] reads it.
#[inline(always)]
fn number_in(line: &[u8], from: usize, to: usize, take: Step) -> Option<u64> {
    let n = to - from;
    match take {
        // The field's end is a separator (never a digit) or the
        // line's, as where the digits of `number` stop.
        Step::Int if (1..=8).contains(&n) => {
            if let Some(w) = word_at(line, from) {
                return leading_digits(w, n);
            }
        }
        Step::Decimal(k) => {
            if let Some(v) = decimal_in(line, from, to, k) {
                return v;
            }
        }
        _ => {}
    }
    let mut i = from;
    let v = number(line, &mut i, take)?;
    (i == to).then_some(v)
}

/// The eight bytes of `line` from `at`, if it has them, as a word.
#[inline(always)]
fn word_at(line: &[u8], at: usize) -> Option<u64> {
    let c = line.get(at..)?.first_chunk::<8>()?;
    Some(u64::from_le_bytes(*c))
}

/// The value of the first `n` (1 to 8) bytes of `w`, if all are digits.
#[inline(always)]
fn leading_digits(w: u64, n: usize) -> Option<u64> {
    // The bytes' values as digits, moved up to the word's top with
    // zeros (the value of '0') in below: a borrow from a byte past the
    // n goes up, out with it. Then a byte is a digit exactly when its
    // value and its value plus 0x76 are both below 0x80; a borrow or a
    // carry between bytes only follows a byte that fails that, so the
    // word fails too. Half the instructions of testing the bytes
    // themselves and filling in '0's.
    debug_assert!((1..=8).contains(&n));
    let v = w.wrapping_sub(0x3030_3030_3030_3030) << ((64 - 8 * n) & 63);
    ((v | v.wrapping_add(0x7676_7676_7676_7676)) & 0x8080_8080_8080_8080 == 0)
        .then(|| digit_values(v))
}

/// A `Decimal(k)` column's field `line[from..to]` in the form the
/// dataset writes it (up to 15 whole digits, then optionally a point
/// and up to eight digits to the field's end), in a few words: `Some`
/// of what [`number`] reads (with the field filled), `None` to leave
/// the field to it.
#[inline(always)]
fn decimal_in(line: &[u8], from: usize, to: usize, k: usize) -> Option<Option<u64>> {
    let w = word_at(line, from)?;
    let p = digit_prefix(w) as usize;
    let (whole, dot) = match p {
        0 => return None,
        1..=7 => (parse_prefix(w, p as u32), from + p),
        _ => {
            let w2 = word_at(line, from + 8)?;
            let q = digit_prefix(w2) as usize;
            let low = match q {
                0 => return Some(decimal_tail(line, parse_eight(w), from + 8, to, k)),
                8 => return None,
                _ => parse_prefix(w2, q as u32),
            };
            (parse_eight(w) * POW10[q] + low, from + 8 + q)
        }
    };
    Some(decimal_tail(line, whole, dot, to, k))
}

/// [`decimal_in`] past the whole digits (`whole`, ending at `dot`):
/// the value, or `None` where [`number`] refuses the field too.
#[inline(always)]
fn decimal_tail(line: &[u8], whole: u64, dot: usize, to: usize, k: usize) -> Option<u64> {
    let v = whole.checked_mul(*POW10.get(k)?)?;
    if dot == to {
        return Some(v);
    }
    if line.get(dot) != Some(&b'.') || dot > to {
        return None; // the field goes on past the digits
    }
    let n = to - dot - 1;
    if n == 0 {
        return Some(v); // "12.": a point without fraction digits
    }
    let frac = match (n, word_at(line, dot + 1)) {
        (1..=8, Some(w)) => leading_digits(w, n)?,
        _ => {
            // A long fraction, or near the line's end.
            let mut i = dot + 1;
            let f = digit_run(line, &mut i)?;
            if i != to {
                return None;
            }
            f
        }
    };
    v.checked_add(shift_fraction(frac, n, k)?)
}

/// A number column's value from `*i` (consumed): an `Int`'s digits, or
/// a `Scaled` or `Decimal` one's ([`scaled_number`]); the one number
/// step of every column walk.
#[inline(always)]
fn number(line: &[u8], i: &mut usize, take: Step) -> Option<u64> {
    match take {
        Step::Int => digit_run(line, i),
        _ => scaled_number(line, i, take),
    }
}

/// A `Scaled` or `Decimal` column's number from `*i` (consumed): whole
/// digits, then an optional `.` and fraction, times the scale.
#[inline(always)]
fn scaled_number(line: &[u8], i: &mut usize, take: Step) -> Option<u64> {
    let whole = digit_run(line, i)?;
    let mut v = match take {
        Step::Decimal(k) => whole.checked_mul(POW10[k])?,
        Step::Scaled(scale) => whole.checked_mul(scale)?,
        _ => return None,
    };
    if line.get(*i) == Some(&b'.') {
        *i += 1;
        let at = *i;
        let frac = if line.get(*i).is_some_and(u8::is_ascii_digit) {
            digit_run(line, i)?
        } else {
            0
        };
        let digits = *i - at;
        if digits > 0 {
            let part = match take {
                Step::Decimal(k) => shift_fraction(frac, digits, k)?,
                Step::Scaled(scale) => scale_fraction(frac, digits, scale)?,
                _ => return None,
            };
            v = v.checked_add(part)?;
        }
    }
    Some(v)
}

/// 10^k for k up to 18.
const POW10: [u64; 19] = {
    let mut p = [1u64; 19];
    let mut k = 1;
    while k < 19 {
        p[k] = p[k - 1] * 10;
        k += 1;
    }
    p
};

/// `0.FRAC` (`digits` digits, 1 to 18) times `scale`, rounded half up
/// exactly as [`parse_scaled`] rounds.
#[inline(always)]
fn scale_fraction(frac: u64, digits: usize, scale: u64) -> Option<u64> {
    let den = *POW10.get(digits)?;
    match frac.checked_mul(scale) {
        Some(x) => Some(x.checked_add(den / 2)? / den),
        None => u64::try_from(
            (u128::from(frac) * u128::from(scale) + u128::from(den / 2)) / u128::from(den),
        )
        .ok(),
    }
}

/// [`scale_fraction`] for a scale of 10^k (seconds, milli-, micro-,
/// nanoseconds): a shift up by whole digits, or down by e digits as
/// `(frac + 10^e / 2) / 10^e`, the same rounding as the general way's
/// `(frac * 10^k + 10^digits / 2) / 10^digits`, dividing by a constant
/// rather than a variable (a 64-bit division cost a validate line a
/// fifth of its time).
#[inline(always)]
pub(crate) fn shift_fraction(frac: u64, digits: usize, k: usize) -> Option<u64> {
    if digits <= k {
        return Some(frac * POW10[k - digits]);
    }
    macro_rules! down {
        ($($e:literal),*) => {
            match digits - k {
                $($e => (frac + POW10[$e] / 2) / POW10[$e],)*
                _ => return None,
            }
        };
    }
    Some(down!(
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18
    ))
}

/// A run of 1 to 18 digits from `*i` (consumed), eight bytes at a time
/// where the line has them; `None` for none or more than 18.
#[inline(always)]
pub(crate) fn digit_run(line: &[u8], i: &mut usize) -> Option<u64> {
    let from = *i;
    let mut v = 0u64;
    while let Some(chunk) = line.get(*i..).and_then(|r| r.first_chunk::<8>()) {
        let w = u64::from_le_bytes(*chunk);
        let n = digit_prefix(w);
        if n == 8 {
            v = v.wrapping_mul(100_000_000).wrapping_add(parse_eight(w));
            *i += 8;
            if *i - from > 18 {
                return None;
            }
            continue;
        }
        if n > 0 {
            const POW10: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];
            v = v
                .wrapping_mul(POW10[n as usize])
                .wrapping_add(parse_prefix(w, n));
            *i += n as usize;
        }
        let n = *i - from;
        return (n > 0 && n <= 18).then_some(v);
    }
    // The line's last bytes: one at a time.
    while let Some(&c) = line.get(*i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as u64);
        *i += 1;
    }
    let n = *i - from;
    (n > 0 && n <= 18).then_some(v)
}

/// A non-empty string of decimal digits, without overflow.
#[inline]
fn parse_digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    if s.len() <= 19 {
        // 19 digits stay below 2^64, so no overflow checks; eight digits
        // at a time in one word (the digit loop was a third of an MSR
        // line's cost: its timestamps have 18 digits).
        let mut v: u64 = 0;
        let mut rest = s;
        while let Some((chunk, tail)) = rest.split_first_chunk::<8>() {
            let word = u64::from_le_bytes(*chunk);
            if !eight_digits(word) {
                return None;
            }
            v = v * 100_000_000 + parse_eight(word);
            rest = tail;
        }
        for &c in rest {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + u64::from(d);
        }
        return Some(v);
    }
    let mut v: u64 = 0;
    for &c in s {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

/// A non-negative decimal number (`12`, `12.5`, `.5`, `1.5e3`) times
/// `scale`, rounded to the nearest integer; `None` if malformed, negative
/// or out of range.
pub(crate) fn parse_scaled(s: &[u8], scale: u64) -> Option<u64> {
    let s = s.strip_prefix(b"+").unwrap_or(s);
    if s.iter().any(|&c| c == b'e' || c == b'E') {
        let v: f64 = std::str::from_utf8(s).ok()?.parse().ok()?;
        let x = v * scale as f64;
        if !x.is_finite() || !(0.0..1.8e19).contains(&x) || s.first() == Some(&b'-') {
            return None;
        }
        return Some(x.round() as u64);
    }
    let (int, frac) = match s.iter().position(|&c| c == b'.') {
        Some(p) => (&s[..p], &s[p + 1..]),
        None => (s, &s[s.len()..]),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let i = if int.is_empty() {
        0
    } else {
        parse_digits(int)?
    };
    if frac.iter().any(|c| !c.is_ascii_digit()) {
        return None;
    }
    let mut v = i.checked_mul(scale)?;
    if !frac.is_empty() {
        // frac * scale, exact on the first 18 digits, rounded half up.
        let digits = &frac[..frac.len().min(18)];
        let num: u128 = digits
            .iter()
            .fold(0u128, |a, &c| a * 10 + u128::from(c - b'0'));
        let den: u128 = 10u128.pow(digits.len() as u32);
        let part = (num * u128::from(scale) + den / 2) / den;
        v = v.checked_add(u64::try_from(part).ok()?)?;
    }
    Some(v)
}

/// A hexadecimal byte (`2a`, `0x2A`).
pub(crate) fn parse_hex_u8(s: &[u8]) -> Option<u8> {
    let s = s
        .strip_prefix(b"0x")
        .or_else(|| s.strip_prefix(b"0X"))
        .unwrap_or(s);
    if s.is_empty() || s.len() > 2 {
        return None;
    }
    let mut v: u8 = 0;
    for &c in s {
        let d = (c as char).to_digit(16)? as u8;
        v = v * 16 + d;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        // Lines every column of which is in the plain form are a few in
        // a hundred of the generated ones: enough cases that each kind of
        // layout (exact ones with skipped columns at the end, say) meets
        // several.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

        /// The word-at-a-time digit parser agrees with the standard
        /// library's on digits, near-digits and every length around 8, 16, 19, 20.
        #[test]
        fn parse_u64_agrees_with_std(s in "[+]?[0-9:/ .a]{0,3}[0-9]{0,22}[0-9/:]{0,3}") {
            proptest::prop_assert_eq!(parse_u64(s.as_bytes()), s.parse::<u64>().ok(), "{:?}", s);
        }

        /// The separators of a line are every delimiter (and tab, in
        /// whitespace mode) in order, then the line's end; the SSE2 and
        /// word versions of the compare agree.
        #[test]
        fn separators_are_every_delimiter_in_order(
            line in proptest::collection::vec(proptest::prop_oneof![
                proptest::sample::select(b",; \t0a".to_vec()),
                proptest::num::u8::ANY,
            ], 0..=Separators::MAX_LINE),
            d in proptest::sample::select(b", ;\t\x00".to_vec()),
            ws in proptest::bool::ANY,
        ) {
            let want: Vec<usize> = (0..line.len())
                .filter(|&k| line[k] == d || ws && line[k] == b'\t')
                .collect();
            let mut s = Separators::new(&line, d, ws);
            let got: Vec<usize> = std::iter::from_fn(|| Some(s.next()).filter(|&p| p < line.len())).collect();
            proptest::prop_assert_eq!(&got, &want);
            proptest::prop_assert_eq!(s.next(), line.len());
            for c in line.chunks_exact(16) {
                let c = c.first_chunk::<16>().unwrap();
                proptest::prop_assert_eq!(Separators::hits16(c, d, ws), Separators::hits16_swar(c, d, ws));
            }
        }

        /// Both walks (the marked one by its plan in comma mode) take the
        /// same lines with the same values, for any
        /// layout (exact or not, comma or whitespace mode) and line:
        /// fields mostly of the kind each column takes, some junk, some
        /// columns more, doubled separators, lines past 64 bytes.
        #[test]
        fn the_marked_walk_reads_what_the_field_walk_reads(
            (takes, fields) in proptest::collection::vec(0usize..6, 1..9).prop_flat_map(|kinds| {
                let takes: Vec<Step> = kinds.iter().map(|&k| [Step::Skip, Step::Int, Step::Word, Step::Decimal(3), Step::Decimal(9), Step::Scaled(1_024)][k]).collect();
                let fields: Vec<proptest::strategy::BoxedStrategy<String>> = takes.iter().map(|t| {
                    let valid = match t {
                        Step::Skip | Step::Word => "[A-Za-z_]{1,18}",
                        Step::Int => "[0-9]{1,19}",
                        _ => "[0-9]{1,17}(\\.[0-9]{0,12})?",
                    };
                    proptest::prop_oneof![8 => valid, 1 => "[ \t\"x0-9.,-]{0,4}", 1 => "[0-9a-z]{0,3}"].boxed()
                }).chain(std::iter::repeat_n("[0-9a-z]{0,3}".boxed(), 2)).collect();
                (proptest::strategy::Just(takes), fields)
            }),
            more in 0usize..3,
            seps in proptest::collection::vec(proptest::sample::select(vec![",", ",", ",", " ", " ", " ", "\t", "  ", ",,", ";"]), 12),
            tail in proptest::sample::select(vec!["", "", "\r", " ", ",", "\t \r"]),
            exact in proptest::bool::ANY,
            ws in proptest::bool::ANY,
            long in proptest::bool::ANY,
        ) {
            let n = fields.len() - 2 + more;
            let mut line = String::new();
            for (k, f) in fields[..n].iter().enumerate() {
                if k > 0 {
                    line.push_str(if ws { seps[k].replace(',', " ") } else { seps[k].replace(' ', ",") }.as_str());
                }
                line.push_str(f);
                if long && k == 0 {
                    // A long first field: the others past byte 64.
                    line.push_str(&"y".repeat(70));
                }
            }
            line.push_str(tail);
            let line = line.as_bytes();
            let cols = Columns::of_steps(takes.clone(), if ws { b' ' } else { b',' }, ws, exact, false);
            let plain = line.strip_suffix(b"\r").unwrap_or(line);
            let run = |marked: bool| {
                let mut nums = [0u64; 9];
                let mut words: [&[u8]; 9] = [&[]; 9];
                let got = match (ws, marked) {
                    (true, true) => cols.walk_marked::<true>(plain, &mut nums, &mut words),
                    (false, true) => cols.walk_planned(plain, &mut nums, &mut words),
                    (true, false) => cols.walk::<true>(line, &mut nums, &mut words),
                    (false, false) => cols.walk::<false>(line, &mut nums, &mut words),
                };
                got.map(|()| (nums, words.map(<[u8]>::to_vec)))
            };
            proptest::prop_assert_eq!(run(true), run(false), "{:?}", String::from_utf8_lossy(line));
            if !ws {
                // Read by the delimiters marked with the line's end
                // (a next line behind it, as the stretches need).
                let cols = Columns::of_steps(takes.clone(), b',', false, exact, true);
                let mut text = line.to_vec();
                text.extend_from_slice(b"\n1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32\n");
                let mut lines = CsvLines::new(Box::new(std::io::Cursor::new(text)), "t", b',');
                if let Some(up_to) = cols.marks_wanted() {
                    lines.mark_delimiters(up_to);
                }
                proptest::prop_assert!(lines.next_line().unwrap());
                proptest::prop_assert!(lines.marks.ok || cols.marks_wanted().is_none() || line.len() >= Separators::MAX_LINE);
                let mut nums = [0u64; 9];
                let mut words: [&[u8]; 9] = [&[]; 9];
                let got = cols.read_current(&lines, &mut nums, &mut words).map(|()| (nums, words.map(<[u8]>::to_vec)));
                proptest::prop_assert_eq!(got, run(false), "{:?}", String::from_utf8_lossy(line));
            }
        }

        /// The newline search that marks delimiters finds memchr's
        /// newline, and where it marked the line, its delimiters in
        /// order (all of them, or at least as many as asked for) and
        /// then the line's end (its `\r` excluded).
        #[test]
        fn marking_finds_the_newline_and_the_delimiters_before_it(
            hay in proptest::collection::vec(proptest::prop_oneof![
                12 => proptest::num::u8::ANY,
                4 => proptest::sample::select(b",;\t ".to_vec()),
                1 => proptest::sample::select(b"\r\n".to_vec()),
            ], 0..600),
            d in proptest::sample::select(b",; \t".to_vec()),
            up_to in 1..=PLANNED_COLUMNS,
        ) {
            let mut marks = Marks { limit: up_to, ..Marks::default() };
            let end = find_newline_marking(&hay, d, &mut marks);
            proptest::prop_assert_eq!(end, memchr::memchr(b'\n', &hay));
            let Some(end) = end else {
                proptest::prop_assert!(!marks.ok);
                return Ok(());
            };
            // Marked wherever the stretches to the newline are whole
            // and within the marked length.
            let stretches = end / 64 + 1;
            proptest::prop_assert_eq!(marks.ok, end < Separators::MAX_LINE && hay.len() >= 64 * stretches);
            if marks.ok {
                let line = &hay[..end];
                let plain = line.strip_suffix(b"\r").unwrap_or(line);
                let want: Vec<u16> = (0..plain.len()).filter(|&k| plain[k] == d).map(|k| k as u16 + 1).collect();
                let found = marks.found;
                proptest::prop_assert!(found <= want.len().min(PLANNED_COLUMNS) && found >= want.len().min(up_to), "{} of {:?}", found, want);
                proptest::prop_assert_eq!(&marks.starts[1..=found], &want[..found]);
                if found == want.len() {
                    proptest::prop_assert_eq!(usize::from(marks.starts[found + 1]), plain.len() + 1);
                }
            }
        }

        /// The newline search finds memchr's newline, within the first
        /// 256 bytes and past them.
        #[test]
        fn find_newline_is_memchr(
            hay in proptest::collection::vec(proptest::prop_oneof![
                20 => proptest::num::u8::ANY,
                1 => proptest::strategy::Just(b'\n'),
            ], 0..600),
        ) {
            proptest::prop_assert_eq!(find_newline(&hay), memchr::memchr(b'\n', &hay));
        }

        /// The first n bytes of a word are read as digits exactly when
        /// a byte loop reads them so, to the same value.
        #[test]
        fn leading_digits_agree_with_a_byte_loop(
            b in proptest::array::uniform8(proptest::prop_oneof![4 => b'0'..=b'9', 1 => proptest::num::u8::ANY, 1 => proptest::sample::select(b"/:.,\x00\xff\xb0\xb9".to_vec())]),
            n in 1usize..=8,
        ) {
            let want = b[..n].iter().all(u8::is_ascii_digit).then(|| b[..n].iter().fold(0u64, |v, &c| v * 10 + u64::from(c - b'0')));
            proptest::prop_assert_eq!(leading_digits(u64::from_le_bytes(b), n), want);
        }

        /// The digit-prefix word tricks agree with a byte loop on any eight bytes.
        #[test]
        fn digit_prefix_and_parse_prefix_agree_with_a_byte_loop(b in proptest::array::uniform8(proptest::prop_oneof![b'0'..=b'9', proptest::num::u8::ANY])) {
            let w = u64::from_le_bytes(b);
            let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
            proptest::prop_assert_eq!(digit_prefix(w) as usize, n);
            let want = b[..n].iter().fold(0u64, |v, &c| v * 10 + u64::from(c - b'0'));
            let got = match n { 0 => 0, 8 => parse_eight(w), _ => parse_prefix(w, n as u32) };
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"1.0"), None);
        assert_eq!(parse_scaled(b"1.5", 1_000_000_000), Some(1_500_000_000));
        assert_eq!(parse_scaled(b"0.000000001", 1_000_000_000), Some(1));
        assert_eq!(parse_scaled(b".25", 100), Some(25));
        assert_eq!(parse_scaled(b"3.", 2), Some(6));
        assert_eq!(parse_scaled(b"1e3", 10), Some(10_000));
        assert_eq!(parse_scaled(b"-1", 10), None);
        assert_eq!(parse_scaled(b"-1e3", 10), None);
        assert_eq!(parse_scaled(b".", 10), None);
        assert_eq!(parse_scaled(b"1.2.3", 10), None);
        assert_eq!(parse_scaled(b"1.-3", 10), None);
        assert_eq!(parse_scaled(b"nan", 10), None);
        assert_eq!(parse_scaled(b"1e400", 10), None);
        assert_eq!(parse_scaled(b"99999999999999999999", 1), None);
        assert_eq!(parse_scaled(b"18446744073709551615", 2), None);
        assert_eq!(
            parse_scaled(b"0.99999999999999999999999", 1_000_000_000),
            Some(1_000_000_000)
        );
        assert_eq!(parse_hex_u8(b"2a"), Some(0x2a));
        assert_eq!(parse_hex_u8(b"0x2A"), Some(0x2a));
        assert_eq!(parse_hex_u8(b"zz"), None);
        assert_eq!(parse_hex_u8(b"123"), None);
        assert_eq!(parse_hex_u8(b""), None);
    }
}
