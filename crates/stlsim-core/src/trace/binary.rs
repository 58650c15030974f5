//! stlsim's binary trace form (`.stlt`), written by `stlsim convert` and read
//! by every command much faster than text.
//!
//! Layout (all integers little-endian; CRC-32 is the IEEE polynomial, as
//! gzip's):
//!
//! ```text
//! "STLSIMT2"                      8 bytes of magic
//! u32 H, then H bytes of JSON     the header: the source's provenance
//! u32 CRC-32 of H and the JSON
//! blocks:                         u32 n | M (n: 1 ..= 65,536 records; M:
//!                                 bit 31, set when the block has the measured
//!                                 column), then the columns of n records,
//!                                 each contiguous:
//!   time     n x u64              nanoseconds, as the source gave them
//!   offset   n x u64              bytes
//!   len      n x u64              bytes
//!   line     n x u64              the record's line (or record) in the source
//!   device   n x u64              its disk / device, u64::MAX for none
//!   op       n x u8               0 read, 1 write
//!   measured n x u64              only with M: the response time the source
//!                                 measured, ns, u64::MAX for none
//!   u32 CRC-32 of the block from its count on
//! u32 0                           end of the blocks
//! u64 N                           the number of records, as a check
//! u32 CRC-32 of the end marker and N
//! ```
//!
//! A checksum per block, not one for the file: a reader checks each block
//! as it streams it (about 3 MB, a few hundred microseconds), and a damaged
//! file is refused at the block that is damaged, naming its records, before
//! any of them reaches a simulation. Flipped bits would otherwise pass
//! unseen wherever they leave a valid value (a read turned into a write).
//! Files of the first version (`STLSIMT1`, no checksums) are refused with
//! a line saying to convert the source again: they are caches of a text
//! trace, and a file that cannot be checked is not worth a silent misread.
//!
//! The measured column ([`RawTraceReader::measured`]) is carried by a block
//! only when one of its records has a value, so a trace without measured
//! responses costs nothing for it.
//!
//! Columns, not rows, so that a block decodes with straight loads. Records
//! keep their source line numbers: an error about a converted request (one
//! beyond the drive, say) names the line of the original file. The header
//! holds what `stlsim convert` read (path, size, SHA-256, format, filters);
//! the core does not interpret it.

use crate::error::{Location, SimError, SimResult};
use crate::trace::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::{Read, Write};

/// The first eight bytes of every binary trace this version writes.
pub const MAGIC: &[u8; 8] = b"STLSIMT2";

/// The first seven bytes of every version's magic: the opener hands any
/// version to [`BinaryReader`], which names an old one.
pub const MAGIC_STEM: &[u8; 7] = b"STLSIMT";

/// Records per block (the last block may be shorter).
pub const BLOCK: usize = 1 << 16;

/// Bytes per record in a block (without the measured column).
const RECORD_BYTES: usize = 5 * 8 + 1;

/// The bit of a block's record count that says it has the measured column.
const MEASURED_FLAG: u32 = 1 << 31;

/// The measured column's value for a record without one.
const NO_MEASURE: u64 = u64::MAX;

/// The largest header a reader accepts.
const MAX_HEADER: u32 = 1 << 24;

/// Writes records as a binary trace.
pub struct BinaryWriter<W: Write> {
    out: W,
    time: Vec<u64>,
    offset: Vec<u64>,
    len: Vec<u64>,
    line: Vec<u64>,
    device: Vec<u64>,
    op: Vec<u8>,
    measured: Vec<u64>,
    /// Whether a record of the current block has a measured response.
    any_measured: bool,
    written: u64,
    bytes: Vec<u8>,
}

impl<W: Write> BinaryWriter<W> {
    /// Start a binary trace on `out` with this header (JSON text).
    pub fn new(mut out: W, header_json: &str) -> std::io::Result<Self> {
        out.write_all(MAGIC)?;
        let h = header_json.as_bytes();
        let n = u32::try_from(h.len())
            .ok()
            .filter(|&n| n <= MAX_HEADER)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "binary trace header larger than 16 MiB",
                )
            })?;
        out.write_all(&n.to_le_bytes())?;
        out.write_all(h)?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&n.to_le_bytes());
        crc.update(h);
        out.write_all(&crc.finalize().to_le_bytes())?;
        Ok(BinaryWriter {
            out,
            time: Vec::with_capacity(BLOCK),
            offset: Vec::with_capacity(BLOCK),
            len: Vec::with_capacity(BLOCK),
            line: Vec::with_capacity(BLOCK),
            device: Vec::with_capacity(BLOCK),
            op: Vec::with_capacity(BLOCK),
            measured: Vec::with_capacity(BLOCK),
            any_measured: false,
            written: 0,
            bytes: Vec::with_capacity(BLOCK * (RECORD_BYTES + 8) + 8),
        })
    }

    /// Append one record and its device.
    pub fn push(&mut self, rec: &TraceRecord, device: Option<u64>) -> std::io::Result<()> {
        self.push_measured(rec, device, None)
    }

    /// Append one record, its device and its measured response time. A
    /// measured response of `u64::MAX` ns (585 years) is stored as none.
    pub fn push_measured(
        &mut self,
        rec: &TraceRecord,
        device: Option<u64>,
        measured: Option<Nanos>,
    ) -> std::io::Result<()> {
        let m = measured.map_or(NO_MEASURE, |m| m.0);
        self.any_measured |= m != NO_MEASURE;
        self.measured.push(m);
        self.time.push(rec.time.0);
        self.offset.push(rec.offset.0);
        self.len.push(rec.len.0);
        self.line.push(rec.line);
        self.device.push(device.unwrap_or(u64::MAX));
        self.op.push(u8::from(rec.op == Op::Write));
        if self.time.len() == BLOCK {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> std::io::Result<()> {
        let n = self.time.len();
        if n == 0 {
            return Ok(());
        }
        let b = &mut self.bytes;
        b.clear();
        let flag = if self.any_measured { MEASURED_FLAG } else { 0 };
        b.extend_from_slice(&(n as u32 | flag).to_le_bytes());
        for col in [
            &self.time,
            &self.offset,
            &self.len,
            &self.line,
            &self.device,
        ] {
            for v in col.iter() {
                b.extend_from_slice(&v.to_le_bytes());
            }
        }
        b.extend_from_slice(&self.op);
        if self.any_measured {
            for v in &self.measured {
                b.extend_from_slice(&v.to_le_bytes());
            }
        }
        let crc = crc32fast::hash(b);
        b.extend_from_slice(&crc.to_le_bytes());
        self.out.write_all(b)?;
        self.written += n as u64;
        for col in [
            &mut self.time,
            &mut self.offset,
            &mut self.len,
            &mut self.line,
            &mut self.device,
            &mut self.measured,
        ] {
            col.clear();
        }
        self.op.clear();
        self.any_measured = false;
        Ok(())
    }

    /// Write the last block and the end marker; returns the records written
    /// and the output.
    pub fn finish(mut self) -> std::io::Result<(u64, W)> {
        self.flush_block()?;
        let mut end = [0u8; 12];
        end[4..].copy_from_slice(&self.written.to_le_bytes());
        self.out.write_all(&end)?;
        self.out.write_all(&crc32fast::hash(&end).to_le_bytes())?;
        self.out.flush()?;
        Ok((self.written, self.out))
    }
}

/// Reads a binary trace.
pub struct BinaryReader {
    input: Box<dyn Read + Send>,
    file: String,
    header: String,
    block: Vec<u8>,
    n: usize,
    next: usize,
    /// The current block has the measured column.
    has_measured: bool,
    blocks: u64,
    records: u64,
    done: bool,
}

fn read_exact_or(input: &mut dyn Read, buf: &mut [u8], file: &str, what: &str) -> SimResult<()> {
    input.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            SimError::Io(format!("binary trace '{file}' is truncated ({what})"))
        } else {
            SimError::Io(format!("error reading binary trace '{file}': {e}"))
        }
    })
}

impl BinaryReader {
    /// Open a binary trace over `input` (its magic first); `file` labels errors.
    pub fn new(mut input: Box<dyn Read + Send>, file: &str) -> SimResult<Self> {
        let mut magic = [0u8; 8];
        read_exact_or(&mut *input, &mut magic, file, "in its magic")?;
        if &magic == b"STLSIMT1" {
            return Err(SimError::Io(format!(
                "'{file}' is a binary trace of an older stlsim, without checksums; convert its source again (stlsim convert)"
            )));
        }
        if &magic != MAGIC {
            return Err(SimError::Io(format!(
                "'{file}' is not an stlsim binary trace (its first bytes are not {MAGIC:?})"
            )));
        }
        let mut n = [0u8; 4];
        read_exact_or(&mut *input, &mut n, file, "in its header")?;
        let size = u32::from_le_bytes(n);
        if size > MAX_HEADER {
            return Err(SimError::Io(format!(
                "binary trace '{file}' is corrupt: a header of {size} bytes"
            )));
        }
        let mut h = vec![0u8; size as usize];
        read_exact_or(&mut *input, &mut h, file, "in its header")?;
        let mut crc = [0u8; 4];
        read_exact_or(&mut *input, &mut crc, file, "in its header")?;
        let mut sum = crc32fast::Hasher::new();
        sum.update(&n);
        sum.update(&h);
        if sum.finalize() != u32::from_le_bytes(crc) {
            return Err(SimError::Io(format!(
                "binary trace '{file}' is corrupt: its header fails its checksum"
            )));
        }
        let header = String::from_utf8(h).map_err(|_| {
            SimError::Io(format!(
                "binary trace '{file}' is corrupt: its header is not UTF-8"
            ))
        })?;
        Ok(BinaryReader {
            input,
            file: file.to_string(),
            header,
            block: Vec::new(),
            n: 0,
            next: 0,
            has_measured: false,
            blocks: 0,
            records: 0,
            done: false,
        })
    }

    /// The header's JSON text (the source's provenance).
    pub fn header(&self) -> &str {
        &self.header
    }

    fn corrupt(&self, what: String) -> SimError {
        SimError::Io(format!(
            "binary trace '{}' is corrupt: {what} (block {}, after record {})",
            self.file, self.blocks, self.records
        ))
    }

    /// Load the next block; `false` at the end marker.
    fn load(&mut self) -> SimResult<bool> {
        let mut n = [0u8; 4];
        read_exact_or(&mut *self.input, &mut n, &self.file, "no end marker")?;
        let raw_n = n;
        let n = u32::from_le_bytes(n);
        let has_measured = n & MEASURED_FLAG != 0;
        let n = (n & !MEASURED_FLAG) as usize;
        self.blocks += 1;
        if n == 0 && !has_measured {
            let mut end = [0u8; 12];
            read_exact_or(
                &mut *self.input,
                &mut end[4..],
                &self.file,
                "no record count after the end marker",
            )?;
            let mut crc = [0u8; 4];
            read_exact_or(
                &mut *self.input,
                &mut crc,
                &self.file,
                "no checksum after the record count",
            )?;
            if crc32fast::hash(&end) != u32::from_le_bytes(crc) {
                return Err(self.corrupt("its end fails its checksum".to_string()));
            }
            let total = u64::from_le_bytes(end[4..].try_into().expect("8 bytes"));
            if total != self.records {
                return Err(self.corrupt(format!(
                    "it says {total} records but holds {}",
                    self.records
                )));
            }
            return Ok(false);
        }
        if n > BLOCK || n == 0 {
            return Err(self.corrupt(format!("a block of {n} records, not 1 to {BLOCK}")));
        }
        self.block
            .resize(n * (RECORD_BYTES + if has_measured { 8 } else { 0 }), 0);
        let what = format!(
            "inside block {}, records {} to {}",
            self.blocks,
            self.records + 1,
            self.records + n as u64
        );
        read_exact_or(&mut *self.input, &mut self.block, &self.file, &what)?;
        let mut crc = [0u8; 4];
        read_exact_or(&mut *self.input, &mut crc, &self.file, &what)?;
        let mut sum = crc32fast::Hasher::new();
        sum.update(&raw_n);
        sum.update(&self.block);
        if sum.finalize() != u32::from_le_bytes(crc) {
            return Err(self.corrupt(format!(
                "records {} to {} fail their block's checksum",
                self.records + 1,
                self.records + n as u64
            )));
        }
        if let Some(i) = self.block[5 * 8 * n..RECORD_BYTES * n]
            .iter()
            .position(|&o| o > 1)
        {
            // A malformed record: named by its number, as a text line is.
            return Err(SimError::TraceFormat {
                at: Location { file: self.file.clone(), line: self.records + i as u64 + 1 },
                msg: format!(
                    "record {} has operation code {} (0 read, 1 write): the binary trace is corrupt (block {})",
                    self.records + i as u64 + 1,
                    self.block[5 * 8 * n + i],
                    self.blocks
                ),
            });
        }
        self.n = n;
        self.next = 0;
        self.has_measured = has_measured;
        Ok(true)
    }

    #[inline]
    fn word(&self, col: usize, i: usize) -> u64 {
        let at = (col * self.n + i) * 8;
        u64::from_le_bytes(self.block[at..at + 8].try_into().expect("8 bytes"))
    }
}

impl RawTraceReader for BinaryReader {
    #[inline]
    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        if self.next == self.n && (self.done || !self.load()?) {
            self.done = true;
            return Ok(None);
        }
        let i = self.next;
        self.next += 1;
        self.records += 1;
        let op = if self.block[5 * 8 * self.n + i] == 1 {
            Op::Write
        } else {
            Op::Read
        };
        let device = self.word(4, i);
        let rec = TraceRecord {
            time: Nanos(self.word(0, i)),
            op,
            offset: Bytes(self.word(1, i)),
            len: Bytes(self.word(2, i)),
            line: self.word(3, i),
        };
        Ok(Some((rec, (device != u64::MAX).then_some(device))))
    }

    fn measured(&self) -> Option<Nanos> {
        // Read on demand from the block (still the last record's): a replay
        // that never asks pays nothing per record.
        if !self.has_measured || self.next == 0 {
            return None;
        }
        let at = RECORD_BYTES * self.n + 8 * (self.next - 1);
        let m = self
            .block
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(NO_MEASURE, u64::from_le_bytes);
        (m != NO_MEASURE).then_some(Nanos(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recs(n: u64) -> Vec<(TraceRecord, Option<u64>)> {
        (0..n)
            .map(|i| {
                let op = if i % 3 == 0 { Op::Read } else { Op::Write };
                let rec = TraceRecord {
                    time: Nanos(i * 1000),
                    op,
                    offset: Bytes(i * 4096),
                    len: Bytes(512 + i),
                    line: i + 2,
                };
                (rec, (i % 2 == 0).then_some(i % 5))
            })
            .collect()
    }

    fn write(records: &[(TraceRecord, Option<u64>)]) -> Vec<u8> {
        let mut w = BinaryWriter::new(Vec::new(), "{\"source\":\"x\"}").unwrap();
        for (r, d) in records {
            w.push(r, *d).unwrap();
        }
        let (n, bytes) = w.finish().unwrap();
        assert_eq!(n, records.len() as u64);
        bytes
    }

    fn read(bytes: Vec<u8>) -> SimResult<Vec<(TraceRecord, Option<u64>)>> {
        let mut r = BinaryReader::new(Box::new(std::io::Cursor::new(bytes)), "t.stlt")?;
        assert_eq!(r.header(), "{\"source\":\"x\"}");
        let mut v = vec![];
        while let Some(x) = r.next_raw()? {
            v.push(x);
        }
        Ok(v)
    }

    #[test]
    fn records_round_trip_across_blocks() {
        for n in [0, 1, BLOCK as u64 - 1, BLOCK as u64, BLOCK as u64 * 2 + 7] {
            let want = recs(n);
            assert_eq!(read(write(&want)).unwrap(), want, "{n} records");
        }
    }

    #[test]
    fn damage_is_an_error_naming_the_file_never_a_panic() {
        let good = write(&recs(1000));
        // Every truncation.
        for cut in [
            0,
            4,
            8,
            11,
            30,
            good.len() / 2,
            good.len() - 9,
            good.len() - 1,
        ] {
            let e = read(good[..cut].to_vec()).unwrap_err().to_string();
            assert!(
                e.contains("t.stlt")
                    && (e.contains("truncated") || e.contains("not an stlsim binary trace")),
                "{cut}: {e}"
            );
        }
        // A wrong record count (its checksum made right again, as a
        // writer's bug would), an op code out of range, a huge block.
        let mut bad = good.clone();
        let end = bad.len() - 16;
        bad[end + 4] ^= 1;
        let crc = crc32fast::hash(&bad[end..end + 12]);
        bad[end + 12..].copy_from_slice(&crc.to_le_bytes());
        assert!(read(bad)
            .unwrap_err()
            .to_string()
            .contains("says 1001 records"));
        let header_end = 8 + 4 + 14 + 4;
        let mut bad = good.clone();
        bad[header_end + 4 + 5 * 8 * 1000 + 3] = 7;
        let block_end = header_end + 4 + RECORD_BYTES * 1000;
        let crc = crc32fast::hash(&bad[header_end..block_end]);
        bad[block_end..block_end + 4].copy_from_slice(&crc.to_le_bytes());
        // A bad operation code names its record (the fourth).
        assert_eq!(read(bad).unwrap_err().to_string(), "t.stlt:4: record 4 has operation code 7 (0 read, 1 write): the binary trace is corrupt (block 1)");
        // Truncation inside a block names the records it cuts.
        let e = read(good[..header_end + 100].to_vec())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.stlt") && e.contains("truncated (inside block 1, records 1 to 1000)"),
            "{e}"
        );
        let mut bad = good;
        bad[header_end..header_end + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(read(bad)
            .unwrap_err()
            .to_string()
            .contains("not 1 to 65536"));
    }

    #[test]
    fn a_flipped_bit_anywhere_is_refused_by_a_checksum() {
        let good = write(&recs(300));
        // Every byte past the magic, one bit each (the magic has its own message).
        for at in 8..good.len() {
            for bit in [0u8, 7] {
                let mut bad = good.clone();
                bad[at] ^= 1 << bit;
                let e = match read(bad) {
                    Err(e) => e.to_string(),
                    Ok(_) => panic!("byte {at} bit {bit} flipped was read"),
                };
                assert!(e.contains("t.stlt"), "{at}: {e}");
            }
        }
        // Every record's op byte flipped (reads and writes swapped): the
        // block's checksum, not the op check, refuses it.
        let header_end = 8 + 4 + 14 + 4;
        let mut bad = good.clone();
        for i in 0..300 {
            bad[header_end + 4 + 5 * 8 * 300 + i] ^= 1;
        }
        let e = read(bad).unwrap_err().to_string();
        assert!(
            e.contains("records 1 to 300 fail their block's checksum"),
            "{e}"
        );
        // The first version's files are named as such.
        let mut old = good;
        old[..8].copy_from_slice(b"STLSIMT1");
        let e = read(old).unwrap_err().to_string();
        assert!(e.contains("older stlsim") && e.contains("convert"), "{e}");
    }

    #[test]
    fn measured_responses_round_trip_and_blocks_without_them_are_written_as_before() {
        let records = recs(BLOCK as u64 * 2 + 10);
        // The first block has no measured values, the second some, the third all.
        let measured = |i: usize| match i / BLOCK {
            0 => None,
            1 => i.is_multiple_of(3).then_some(Nanos(i as u64 * 7)),
            _ => Some(Nanos(i as u64)),
        };
        let mut w = BinaryWriter::new(Vec::new(), "{}").unwrap();
        for (i, (r, d)) in records.iter().enumerate() {
            w.push_measured(r, *d, measured(i)).unwrap();
        }
        let (_, bytes) = w.finish().unwrap();
        let size = bytes.len();
        let mut r = BinaryReader::new(Box::new(std::io::Cursor::new(bytes)), "m.stlt").unwrap();
        let mut i = 0;
        while let Some(x) = r.next_raw().unwrap() {
            assert_eq!((x, r.measured()), (records[i], measured(i)), "record {i}");
            i += 1;
        }
        assert_eq!(i, records.len());
        // Without measured values the file is byte for byte the first layout.
        let plain = write(&records);
        let mut w = BinaryWriter::new(Vec::new(), "{\"source\":\"x\"}").unwrap();
        for (r, d) in &records {
            w.push_measured(r, *d, None).unwrap();
        }
        assert_eq!(w.finish().unwrap().1, plain);
        // Only the second and third blocks carry the column (and the header here is 12 bytes shorter).
        assert_eq!(size, plain.len() - 12 + 8 * (BLOCK + 10));
    }

    #[test]
    fn convert_keeps_the_measured_responses() {
        use crate::trace::test_util::*;
        let dir = temp_dir("binary-measured");
        let out = dir.join("v.stlt");
        let mut s = spec(&data("disksim/hp_c3323a.trace"));
        s.limit = Some(100);
        let done = convert(&s, &out, serde_json::json!({})).unwrap();
        assert_eq!(done.records, 100);
        let (_, mut src) = crate::trace::open::open_selection(&s).unwrap();
        let (_, mut back) =
            crate::trace::open::open_selection(&spec(&out.to_string_lossy())).unwrap();
        while let Some((rec, _)) = src.next_record().unwrap() {
            let (again, _) = back.next_record().unwrap().unwrap();
            assert_eq!((again, back.measured()), (rec, src.measured()));
            assert!(back.measured().is_some());
        }
        assert!(back.next_record().unwrap().is_none());
    }
}

/// What [`convert`] wrote.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Converted {
    /// Records written: those left after `disk`, `start` and `limit`.
    pub records: u64,
    /// The source's format (as detected or named).
    pub format: &'static str,
    /// Bytes of the output file.
    pub bytes: u64,
}

/// Convert the trace `spec` names into a binary trace at `out`: its records
/// after `disk`, `start` and `limit`, each with its disk and source line;
/// `header` (a JSON object: the caller's provenance) gains the source's
/// `format`. Written to a temporary file beside `out`, renamed when complete.
pub fn convert(
    spec: &crate::trace::TraceSpec,
    out: &std::path::Path,
    header: serde_json::Value,
) -> SimResult<Converted> {
    use crate::trace::open::open_selection;
    if spec.repeat != 1 {
        return Err(SimError::Config("convert writes the trace once: leave 'repeat' at 1 (replay the converted file with --repeat)".into()));
    }
    let (format, mut sel) = open_selection(spec)?;
    let mut header = header;
    if let serde_json::Value::Object(m) = &mut header {
        m.insert("format".into(), format.name().into());
    }
    let tmp = out.with_file_name(format!(
        ".{}.tmp",
        out.file_name().and_then(|n| n.to_str()).unwrap_or("trace")
    ));
    let io_err = |e: std::io::Error| SimError::Io(format!("cannot write '{}': {e}", out.display()));
    let file = std::fs::File::create(&tmp).map_err(io_err)?;
    let result = (|| {
        let mut w = BinaryWriter::new(
            std::io::BufWriter::with_capacity(1 << 20, file),
            &header.to_string(),
        )
        .map_err(io_err)?;
        while let Some((rec, disk)) = sel.next_record()? {
            w.push_measured(&rec, disk, sel.measured())
                .map_err(io_err)?;
        }
        let (records, _) = w.finish().map_err(io_err)?;
        Ok(records)
    })();
    let records = match result {
        Ok(n) => n,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    std::fs::rename(&tmp, out).map_err(io_err)?;
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    Ok(Converted {
        records,
        format: format.name(),
        bytes,
    })
}
