//! The start of a text trace: refused when it is binary data, and its first
//! line skipped when it names the format's published columns.
//!
//! MSR, SPC, Alibaba, Tencent and FIU traces have no header as their
//! publishers describe them, but users' copies often carry one (a
//! spreadsheet's export, a conversion script's first line). A first
//! non-blank line whose fields are the published column names (compared
//! without case and punctuation; SPC may list its optional fields after
//! them) is blanked rather than removed, so every later line keeps its
//! number in messages. Formats whose files have a header of their own
//! (CloudPhysics CSV, SYSTOR '17, Thesios, a `csv` layout with `header`)
//! read it themselves.

use crate::error::{SimError, SimResult};
use crate::trace::{Format, FORMATS};
use std::io::{self, Read};

/// How far into a file its first non-blank line is looked for: a header is
/// short, and a file without a line end this early has none.
const PEEK_BYTES: usize = 64 << 10;

/// A field reduced to what a header's spelling keeps: lower-case letters
/// and digits (`device_id`, `Device ID` and `DeviceId` agree).
fn squeeze(field: &str) -> String {
    field
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Whether `line` names `format`'s published columns.
pub fn names_columns(line: &str, format: Format) -> bool {
    let Some(info) = FORMATS.iter().find(|f| f.format == format) else {
        return false;
    };
    if info.columns.is_empty() {
        return false;
    }
    let fields: Vec<String> = if line.contains(',') {
        line.split(',').map(squeeze).collect()
    } else {
        line.split_ascii_whitespace().map(squeeze).collect()
    };
    // SPC's specification allows fields past the fifth; the others' lists are whole.
    let count_ok = if format == Format::Spc {
        fields.len() >= info.columns.len()
    } else {
        fields.len() == info.columns.len()
    };
    count_ok
        && info
            .columns
            .iter()
            .zip(&fields)
            .all(|(c, f)| squeeze(c) == *f)
}

/// The format whose published column list `line` is, if any.
pub fn header_format(line: &str) -> Option<Format> {
    FORMATS
        .iter()
        .map(|f| f.format)
        .find(|&f| names_columns(line, f))
}

/// Whether the start of a file is binary data rather than text: a NUL byte
/// (no text trace has one; a binary file of any size almost surely does),
/// or more than three bytes in ten control characters other than tab and
/// line ends. A stray control character in a text line is shown escaped by
/// the reader's own message instead.
pub fn looks_binary(start: &[u8]) -> bool {
    let control = start
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'))
        .count();
    start.contains(&0) || control * 10 > start.len() * 3
}

/// "trace 'x' holds binary data (first bytes ...)": the error for a binary
/// file read as text, showing bytes as hexadecimal rather than echoing them.
pub fn binary_error(path: &str, start: &[u8], format: Option<Format>) -> SimError {
    let shown: Vec<String> = start.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let what = match format {
        Some(f) => format!("not text as format {} is", f.name()),
        None => "neither stlsim's binary form (.stlt) nor text; a CloudPhysics vscsi file needs --format vscsi".to_string(),
    };
    SimError::Config(format!(
        "trace '{path}' holds binary data (first bytes {}), {what}",
        shown.join(" ")
    ))
}

/// The span of the first non-blank line of `bytes`, its line end excluded
/// (`None` while no line end follows it, unless `at_end`).
fn first_line(bytes: &[u8], at_end: bool) -> Option<(usize, usize)> {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            if !bytes[start..i].iter().all(u8::is_ascii_whitespace) {
                return Some((start, i));
            }
            start = i + 1;
        }
    }
    (at_end && !bytes[start..].iter().all(u8::is_ascii_whitespace)).then_some((start, bytes.len()))
}

/// The stream of a text trace in `format`, checked to be text and with a
/// first line naming the published columns blanked (see the module's doc).
pub(crate) fn open_text(
    mut input: Box<dyn Read + Send>,
    format: Format,
    path: &str,
) -> SimResult<Box<dyn Read + Send>> {
    let mut prefix: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    let line = loop {
        if let Some(span) = first_line(&prefix, false) {
            break Some(span);
        }
        if prefix.len() >= PEEK_BYTES {
            break None;
        }
        let n = match input.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(SimError::Io(format!("error reading trace '{path}': {e}"))),
        };
        if n == 0 {
            break first_line(&prefix, true);
        }
        prefix.extend_from_slice(&chunk[..n]);
    };
    if looks_binary(&prefix[..prefix.len().min(8192)]) {
        return Err(binary_error(path, &prefix, Some(format)));
    }
    if let Some((s, e)) = line {
        if names_columns(&String::from_utf8_lossy(&prefix[s..e]), format) {
            prefix[s..e].fill(b' ');
        }
    }
    Ok(Box::new(io::Cursor::new(prefix).chain(input)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_headers_are_recognised_in_any_spelling() {
        assert!(names_columns(
            "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
            Format::Msr
        ));
        assert!(names_columns(
            " timestamp , hostname,disk_number,TYPE,offset,size,response_time\r",
            Format::Msr
        ));
        assert!(names_columns(
            "ASU,LBA,Size,Opcode,Timestamp,extra",
            Format::Spc
        ));
        assert!(names_columns(
            "device_id,opcode,offset,length,timestamp",
            Format::Alibaba
        ));
        assert!(names_columns(
            "Timestamp,Offset,Size,IOType,VolumeID",
            Format::Tencent
        ));
        assert!(names_columns(
            "ts pid process lba size op major minor md5",
            Format::Fiu
        ));
        // A record, a partial list, another format's list: no header.
        assert!(!names_columns(
            "128166372003061629,src1,0,Read,0,4096,0",
            Format::Msr
        ));
        assert!(!names_columns(
            "Timestamp,Hostname,DiskNumber,Type,Offset,Size",
            Format::Msr
        ));
        assert!(!names_columns(
            "Timestamp,Offset,Size,IOType,VolumeID",
            Format::Msr
        ));
        assert!(!names_columns(
            "version,time,op,size,lbn",
            Format::CloudphysicsCsv
        ));
        assert_eq!(
            header_format("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"),
            Some(Format::Msr)
        );
        assert_eq!(header_format("1,2,3"), None);
    }

    fn read_all(r: &mut dyn Read) -> Vec<u8> {
        let mut v = Vec::new();
        r.read_to_end(&mut v).unwrap();
        v
    }

    #[test]
    fn a_header_is_blanked_in_place_and_other_lines_kept() {
        let text = b"\nTimestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\r\n1,h,0,Read,0,512,0\n";
        let mut r = open_text(
            Box::new(io::Cursor::new(text.to_vec())),
            Format::Msr,
            "t.csv",
        )
        .unwrap();
        let out = read_all(&mut r);
        assert_eq!(out.len(), text.len());
        let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
        assert!(lines[1].iter().all(|&b| b == b' '));
        assert_eq!(lines[2], b"1,h,0,Read,0,512,0");
        // Not a header: unchanged, even with no line end at all.
        for text in [&b"1,h,0,Read,0,512,0"[..], b"", b"Timestamp,Hostname"] {
            let mut r = open_text(
                Box::new(io::Cursor::new(text.to_vec())),
                Format::Msr,
                "t.csv",
            )
            .unwrap();
            assert_eq!(read_all(&mut r), text);
        }
    }

    #[test]
    fn binary_data_is_refused_in_hexadecimal() {
        let elf = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00".to_vec();
        let e = open_text(Box::new(io::Cursor::new(elf)), Format::Msr, "a.out")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("binary data (first bytes 7f 45 4c 46 02 01 01 00)"),
            "{e}"
        );
        assert!(!e.contains("ELF"), "{e}");
        assert!(!looks_binary(b"1,h,0,Read,0,512,0\r\n\t"));
    }

    #[test]
    fn every_format_with_published_columns_reads_past_its_header() {
        use crate::trace::test_util::{read_all, spec, write_temp};
        let cases: [(Format, &str, &str); 5] = [
            (
                Format::Msr,
                "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
                "128166372003061629,src1,0,Read,0,4096,0",
            ),
            (
                Format::Spc,
                "ASU,LBA,Size,Opcode,Timestamp",
                "0,1,512,w,0.5",
            ),
            (
                Format::Alibaba,
                "device_id,opcode,offset,length,timestamp",
                "419,W,8111259648,4096,1577808000000171",
            ),
            (
                Format::Tencent,
                "Timestamp,Offset,Size,IOType,VolumeID",
                "1538323200,12058624,8,1,1283",
            ),
            (
                Format::Fiu,
                "ts pid process lba size op major minor md5",
                "89967404324372 4485 syslogd 32632 8 W 8 0 ff0fcb9f",
            ),
        ];
        for (format, header, record) in cases {
            let text = format!("{header}\n{record}\n");
            let p = write_temp("header", &format!("{}.txt", format.name()), text.as_bytes());
            // Named, and (but for Tencent, all numbers) guessed from the header.
            let mut named = spec(&p);
            named.format = Some(format);
            let mut specs = vec![named];
            if format != Format::Tencent {
                specs.push(spec(&p));
            }
            for s in specs {
                let recs = read_all(&s).unwrap_or_else(|e| panic!("{format:?}: {e}"));
                assert_eq!(recs.len(), 1, "{format:?}");
                assert_eq!(
                    recs[0].line, 2,
                    "{format:?}: the record keeps its line number"
                );
            }
        }
    }
}
