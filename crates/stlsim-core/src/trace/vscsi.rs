//! CloudPhysics vscsi binary traces: little-endian fixed-size records, as
//! read by libCacheSim (`libCacheSim/traceReader/customizedReader/vscsi.h`).
//!
//! Version 1, 32 bytes:
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0  | u32 | sequence number |
//! | 4  | u32 | length in bytes |
//! | 8  | u32 | number of scatter-gather elements |
//! | 12 | u16 | SCSI command (opcode in the low byte) |
//! | 14 | u16 | version (`ver >> 8 == 1`) |
//! | 16 | u64 | LBN, 512-byte sectors |
//! | 24 | u64 | timestamp, microseconds |
//!
//! Version 2, 40 bytes:
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0  | u16 | SCSI command (opcode in the low byte) |
//! | 2  | u16 | version (`ver >> 8 == 2`) |
//! | 4  | u32 | sequence number |
//! | 8  | u32 | length in bytes |
//! | 12 | u32 | number of scatter-gather elements |
//! | 16 | u64 | LBN, 512-byte sectors |
//! | 24 | u64 | timestamp, microseconds |
//! | 32 | u64 | response time |
//!
//! The version is detected as libCacheSim does: the first two records must
//! both carry it (version 2 is tried first). Every later record must carry
//! it too: one that does not is an error naming it (a damaged file, or one
//! that lost or gained bytes, whose later records would all be misread).
//!
//! Reads are SCSI READ(6/10/12/16) (0x08, 0x28, 0xa8, 0x88), writes
//! WRITE(6/10/12/16) (0x0a, 0x2a, 0xaa, 0x8a); records of any other command
//! are skipped and counted ([`VscsiReader::skipped`]). A record's `line` is
//! its 1-based record number in the file.

use crate::error::{Location, SimError, SimResult};
use crate::trace::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::{self, Read};

/// Record layout version of a vscsi file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VscsiVersion {
    /// 32-byte records.
    V1,
    /// 40-byte records.
    V2,
}

impl VscsiVersion {
    /// The version byte every record carries (`ver >> 8`).
    pub fn byte(self) -> u8 {
        match self {
            VscsiVersion::V1 => 1,
            VscsiVersion::V2 => 2,
        }
    }

    /// Size of one record in bytes.
    pub fn record_size(self) -> usize {
        match self {
            VscsiVersion::V1 => 32,
            VscsiVersion::V2 => 40,
        }
    }
}

/// Direction of a SCSI command, `None` for commands that are not reads or writes.
#[inline]
pub fn scsi_op(cmd: u8) -> Option<Op> {
    match cmd {
        0x08 | 0x28 | 0xa8 | 0x88 => Some(Op::Read),
        0x0a | 0x2a | 0xaa | 0x8a => Some(Op::Write),
        _ => None,
    }
}

const BUF_SIZE: usize = 1 << 17;

/// Reader of CloudPhysics vscsi binary traces.
pub struct VscsiReader {
    input: Box<dyn Read + Send>,
    file: String,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    eof: bool,
    version: VscsiVersion,
    rec_size: usize,
    /// Records consumed so far (including skipped ones).
    records: u64,
    skipped: u64,
}

#[inline(always)]
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

#[inline(always)]
fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

impl VscsiReader {
    /// A reader over a decompressed vscsi stream; reads the first records to
    /// detect the version. `file` labels error messages. An empty stream is an
    /// empty trace.
    pub fn new(input: Box<dyn Read + Send>, file: &str) -> SimResult<Self> {
        let mut r = VscsiReader {
            input,
            file: file.to_string(),
            buf: vec![0u8; BUF_SIZE].into_boxed_slice(),
            pos: 0,
            end: 0,
            eof: false,
            version: VscsiVersion::V1,
            rec_size: 32,
            records: 0,
            skipped: 0,
        };
        r.fill(80)?;
        let avail = &r.buf[..r.end];
        let all_have = |size: usize, byte: usize, want: u8| {
            let n = (avail.len() / size).min(2);
            n > 0 && (0..n).all(|i| avail[i * size + byte] == want)
        };
        if all_have(40, 3, 2) {
            r.version = VscsiVersion::V2;
        } else if all_have(32, 15, 1) {
            r.version = VscsiVersion::V1;
        } else if !avail.is_empty() {
            let msg = if avail.len() < 32 {
                format!(
                    "not a vscsi trace: only {} bytes, shorter than one record",
                    avail.len()
                )
            } else {
                format!(
                    "not a vscsi trace: the first records carry neither version 1 (byte 15 = 1, 32-byte records) \
                     nor version 2 (byte 3 = 2, 40-byte records); found byte 15 = {}, byte 3 = {}",
                    avail[15], avail[3]
                )
            };
            return Err(SimError::TraceFormat {
                at: Location {
                    file: r.file.clone(),
                    line: 1,
                },
                msg,
            });
        }
        r.rec_size = r.version.record_size();
        Ok(r)
    }

    /// The detected record layout.
    pub fn version(&self) -> VscsiVersion {
        self.version
    }

    /// Records skipped so far because their command was not a read or write.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Make at least `need` bytes available from `pos`, unless the input ends first.
    fn fill(&mut self, need: usize) -> SimResult<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        while self.end < need && !self.eof {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(SimError::Io(format!(
                        "error reading trace '{}' after record {}: {e}",
                        self.file, self.records
                    )))
                }
            }
        }
        Ok(())
    }

    /// Refill when fewer than a record's bytes are buffered; `false` at a clean end.
    #[cold]
    fn refill(&mut self) -> SimResult<bool> {
        self.fill(self.rec_size)?;
        let avail = self.end - self.pos;
        if avail >= self.rec_size {
            Ok(true)
        } else if avail == 0 {
            Ok(false)
        } else {
            Err(SimError::TraceFormat {
                at: Location {
                    file: self.file.clone(),
                    line: self.records + 1,
                },
                msg: format!(
                    "truncated record {}: the file ends after {avail} of its {} bytes",
                    self.records + 1,
                    self.rec_size
                ),
            })
        }
    }

    /// A record without the file's version byte: a damaged file, or bytes
    /// lost or added before it (every later record would be misread).
    #[cold]
    fn out_of_step(&self, ver: u8) -> SimError {
        let (byte, size) = match self.version {
            VscsiVersion::V1 => (15, 32),
            VscsiVersion::V2 => (3, 40),
        };
        SimError::TraceFormat {
            at: Location {
                file: self.file.clone(),
                line: self.records,
            },
            msg: format!(
                "record {} carries version {ver} (byte {byte}), not the file's {}: a damaged file, or its {size}-byte records are out of step",
                self.records,
                self.version.byte()
            ),
        }
    }

    #[cold]
    fn overflow(&self, what: &str, value: u64) -> SimError {
        SimError::TraceFormat {
            at: Location {
                file: self.file.clone(),
                line: self.records,
            },
            msg: format!("{what} {value} is too large to convert"),
        }
    }
}

impl RawTraceReader for VscsiReader {
    #[inline]
    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            if self.end - self.pos < self.rec_size && !self.refill()? {
                return Ok(None);
            }
            let r = &self.buf[self.pos..self.pos + self.rec_size];
            let (cmd, ver, len, lbn, ts) = match self.version {
                VscsiVersion::V1 => (r[12], r[15], u32_at(r, 4), u64_at(r, 16), u64_at(r, 24)),
                VscsiVersion::V2 => (r[0], r[3], u32_at(r, 8), u64_at(r, 16), u64_at(r, 24)),
            };
            self.pos += self.rec_size;
            self.records += 1;
            if ver != self.version.byte() {
                return Err(self.out_of_step(ver));
            }
            let Some(op) = scsi_op(cmd) else {
                self.skipped += 1;
                continue;
            };
            let Some(offset) = lbn.checked_mul(512) else {
                return Err(self.overflow("LBN", lbn));
            };
            let Some(time) = ts.checked_mul(1000) else {
                return Err(self.overflow("timestamp (us)", ts));
            };
            let rec = TraceRecord {
                time: Nanos(time),
                op,
                offset: Bytes(offset),
                len: Bytes(u64::from(len)),
                line: self.records,
            };
            return Ok(Some((rec, None)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::test_util::*;

    fn v1(cmd: u8, len: u32, lbn: u64, ts: u64) -> Vec<u8> {
        let mut b = vec![0u8; 32];
        b[0..4].copy_from_slice(&7u32.to_le_bytes());
        b[4..8].copy_from_slice(&len.to_le_bytes());
        b[8..12].copy_from_slice(&1u32.to_le_bytes());
        b[12..14].copy_from_slice(&u16::from(cmd).to_le_bytes());
        b[14..16].copy_from_slice(&0x0100u16.to_le_bytes());
        b[16..24].copy_from_slice(&lbn.to_le_bytes());
        b[24..32].copy_from_slice(&ts.to_le_bytes());
        b
    }

    fn v2(cmd: u8, len: u32, lbn: u64, ts: u64) -> Vec<u8> {
        let mut b = vec![0u8; 40];
        b[0..2].copy_from_slice(&u16::from(cmd).to_le_bytes());
        b[2..4].copy_from_slice(&0x0200u16.to_le_bytes());
        b[4..8].copy_from_slice(&7u32.to_le_bytes());
        b[8..12].copy_from_slice(&len.to_le_bytes());
        b[12..16].copy_from_slice(&1u32.to_le_bytes());
        b[16..24].copy_from_slice(&lbn.to_le_bytes());
        b[24..32].copy_from_slice(&ts.to_le_bytes());
        b[32..40].copy_from_slice(&99u64.to_le_bytes());
        b
    }

    fn read_bytes(bytes: Vec<u8>) -> (SimResult<Vec<TraceRecord>>, u64) {
        let mut r = VscsiReader::new(Box::new(io::Cursor::new(bytes)), "mem.vscsi").unwrap();
        let mut v = Vec::new();
        loop {
            match r.next_raw() {
                Ok(Some((rec, disk))) => {
                    assert_eq!(disk, None);
                    v.push(rec)
                }
                Ok(None) => return (Ok(v), r.skipped()),
                Err(e) => return (Err(e), r.skipped()),
            }
        }
    }

    #[test]
    fn cloudphysics_file() {
        let r = read_all(&spec(&data("cloudPhysicsIO.vscsi"))).unwrap();
        assert_eq!(r.len(), 113_872);
        assert_eq!(counts(&r), (46_974, 66_898));
        // First record: sn 0x800000f4, len 512, nSG 1, cmd 0x2a, ver 0x0100,
        // lbn 42932745, ts 5633898368802 us.
        assert_eq!(
            r[0],
            TraceRecord {
                time: Nanos(5_633_898_368_802_000),
                op: Op::Write,
                offset: Bytes(42_932_745 * 512),
                len: Bytes(512),
                line: 1
            }
        );
        assert_eq!(r[113_871].line, 113_872);
        assert!(r.windows(2).all(|w| w[0].time <= w[1].time));
        let f = std::fs::File::open(data("cloudPhysicsIO.vscsi")).unwrap();
        let v = VscsiReader::new(Box::new(f), "x").unwrap();
        assert_eq!(v.version(), VscsiVersion::V1);
    }

    #[test]
    fn synthetic_v1_and_v2_with_skipped_commands() {
        for make in [v1 as fn(u8, u32, u64, u64) -> Vec<u8>, v2] {
            let mut bytes = Vec::new();
            bytes.extend(make(0x28, 4096, 8, 1));
            bytes.extend(make(0x2a, 512, 16, 2));
            bytes.extend(make(0x12, 36, 0, 3)); // INQUIRY: skipped
            bytes.extend(make(0x88, 1024, 1, 4));
            bytes.extend(make(0x8a, 0, 2, 5));
            let (r, skipped) = read_bytes(bytes);
            let r = r.unwrap();
            assert_eq!(skipped, 1);
            assert_eq!(r.len(), 4);
            assert_eq!(
                r[0],
                TraceRecord {
                    time: Nanos(1000),
                    op: Op::Read,
                    offset: Bytes(4096),
                    len: Bytes(4096),
                    line: 1
                }
            );
            assert_eq!(
                (r[1].op, r[1].offset, r[1].len),
                (Op::Write, Bytes(8192), Bytes(512))
            );
            assert_eq!((r[2].op, r[2].line, r[2].time), (Op::Read, 4, Nanos(4000)));
            assert_eq!((r[3].op, r[3].len, r[3].line), (Op::Write, Bytes(0), 5));
        }
        // A single record is enough to detect the version.
        assert_eq!(read_bytes(v1(0x28, 1, 1, 1)).0.unwrap().len(), 1);
        assert_eq!(read_bytes(v2(0x28, 1, 1, 1)).0.unwrap().len(), 1);
        // Empty file: empty trace.
        assert_eq!(read_bytes(Vec::new()).0.unwrap().len(), 0);
    }

    #[test]
    fn truncated_final_record_names_its_number() {
        let mut bytes = Vec::new();
        for i in 0..3 {
            bytes.extend(v1(0x28, 512, i, i));
        }
        bytes.extend(&v1(0x2a, 512, 9, 9)[..20]);
        let p = write_temp("vscsi-trunc", "t.vscsi", &bytes);
        match read_err(&spec(&p)) {
            SimError::TraceFormat { at, msg } => {
                assert_eq!(
                    at,
                    Location {
                        file: p.clone(),
                        line: 4
                    }
                );
                assert!(
                    msg.contains("truncated record 4") && msg.contains("20 of its 32"),
                    "{msg}"
                );
            }
            e => panic!("{e:?}"),
        }
        // And the three whole records came first.
        let mut r = crate::trace::open_trace(&spec(&p)).unwrap();
        for _ in 0..3 {
            assert!(r.next_record().unwrap().is_some());
        }
        assert!(r.next_record().is_err());
    }

    #[test]
    fn not_vscsi_and_overflow_are_errors() {
        let p = write_temp("vscsi-bad", "text.vscsi", &[b'x'; 100]);
        match crate::trace::open_trace(&spec(&p)).err().unwrap() {
            SimError::TraceFormat { at, msg } => {
                assert_eq!(at.line, 1);
                assert!(msg.contains("not a vscsi trace"), "{msg}");
            }
            e => panic!("{e:?}"),
        }
        let p = write_temp("vscsi-short", "short.vscsi", &[0u8; 10]);
        assert!(matches!(
            crate::trace::open_trace(&spec(&p)).err().unwrap(),
            SimError::TraceFormat { .. }
        ));
        let mut bytes = v1(0x28, 1, 1, 1);
        bytes.extend(v1(0x28, 1, u64::MAX, 1));
        match read_bytes(bytes).0.unwrap_err() {
            SimError::TraceFormat { at, msg } => {
                assert_eq!(at.line, 2);
                assert!(msg.contains("LBN"), "{msg}");
            }
            e => panic!("{e:?}"),
        }
        let mut bytes = v1(0x28, 1, 1, 1);
        bytes.extend(v1(0x28, 1, 1, u64::MAX));
        assert!(read_bytes(bytes).0.is_err());
    }

    /// The largest LBN that converts to bytes, with a length past the end
    /// of 2^64 bytes, is an overflow error through the opener.
    #[test]
    fn a_request_ending_past_2_64_bytes_overflows() {
        let mut bytes = v1(0x2a, 4096, 1, 1);
        bytes.extend(v1(0x2a, 4096, u64::MAX / 512, 2));
        let p = write_temp("vscsi-end", "end.vscsi", &bytes);
        match crate::trace::test_util::read_err(&spec(&p)) {
            SimError::TraceFormat { at, msg } => {
                assert_eq!(at.line, 2);
                assert!(
                    msg.starts_with(&format!(
                        "offset {} plus length 4096 overflows",
                        u64::MAX / 512 * 512
                    )),
                    "{msg}"
                );
            }
            e => panic!("{e:?}"),
        }
    }

    /// Found while fuzzing the readers (tests/fuzz_readers.rs): a byte lost
    /// or added in the middle of a file put every later record out of step,
    /// and the reader read them all as garbage requests (or skipped them as
    /// unknown commands) without a word, until a short last record. Every
    /// record must carry the file's version byte.
    #[test]
    fn a_record_out_of_step_is_an_error_naming_it() {
        for (make, size) in [(v1 as fn(u8, u32, u64, u64) -> Vec<u8>, 32), (v2, 40)] {
            let mut bytes = Vec::new();
            for i in 0..6 {
                bytes.extend(make(0x28, 512, i, i));
            }
            // A byte lost at the start of record 3: it and the records after it are shifted by one.
            bytes.remove(2 * size + 1);
            let (r, _) = read_bytes(bytes.clone());
            match r.unwrap_err() {
                SimError::TraceFormat { at, msg } => {
                    assert_eq!(at.line, 3, "{msg}");
                    assert!(
                        msg.contains("record 3 carries version") && msg.contains("out of step"),
                        "{msg}"
                    );
                }
                e => panic!("{e:?}"),
            }
            // A damaged version byte in a later record.
            let mut bytes = Vec::new();
            for i in 0..6 {
                bytes.extend(make(0x2a, 512, i, i));
            }
            let at = if size == 32 { 4 * 32 + 15 } else { 4 * 40 + 3 };
            bytes[at] = 7;
            let e = read_bytes(bytes).0.unwrap_err().to_string();
            assert!(
                e.starts_with("mem.vscsi:5: record 5 carries version 7"),
                "{e}"
            );
        }
    }

    /// Byte-at-a-time input still parses (refill across record boundaries).
    #[test]
    fn tiny_reads() {
        struct OneByte(io::Cursor<Vec<u8>>);
        impl Read for OneByte {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(1);
                self.0.read(&mut buf[..n])
            }
        }
        let bytes = std::fs::read(data("cloudPhysicsIO.vscsi")).unwrap();
        let bytes = bytes[..32 * 1000 + 5].to_vec();
        let mut r = VscsiReader::new(Box::new(OneByte(io::Cursor::new(bytes))), "x").unwrap();
        let mut n = 0;
        let err = loop {
            match r.next_raw() {
                Ok(Some(_)) => n += 1,
                Ok(None) => panic!("expected truncation error"),
                Err(e) => break e,
            }
        };
        assert_eq!(n, 1000);
        assert!(matches!(
            err,
            SimError::TraceFormat {
                at: Location { line: 1001, .. },
                ..
            }
        ));
    }
}
