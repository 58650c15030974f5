use super::*;
use crate::error::Location;
use crate::trace::test_util::*;
use crate::trace::GenericCsv;
use crate::trace::Op;
use std::fs::File;
use std::io::Write;

#[test]
fn missing_file_is_io_error() {
    let e = open_trace(&spec("/nonexistent/trace.csv")).err().unwrap();
    match e {
        SimError::Io(m) => assert!(
            m.starts_with("cannot open trace '/nonexistent/trace.csv': "),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn sniffing() {
    for (name, want) in [
        ("rsrch_1.csv", Format::Msr),
        ("cloudPhysicsIO.csv", Format::CloudphysicsCsv),
    ] {
        let f = File::open(data(name)).unwrap();
        let (got, mut rest) = sniff(Box::new(f), name).unwrap();
        assert_eq!(got, want, "{name}");
        // The sniffed stream still holds the whole file.
        let mut all = Vec::new();
        rest.read_to_end(&mut all).unwrap();
        assert_eq!(all, std::fs::read(data(name)).unwrap());
    }
    assert_eq!(sniff_line("0,20941264,8192,W,0.551706"), Some(Format::Spc));
    assert_eq!(sniff_line(" 1 , 2 , 3 , r , 0.5 "), Some(Format::Spc));
    assert_eq!(
        sniff_line("Version, Time,op,size,lbn"),
        Some(Format::CloudphysicsCsv)
    );
    assert_eq!(sniff_line("a,b,c"), None);
    // Whitespace-separated formats.
    assert_eq!(
        sniff_line("  8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]"),
        Some(Format::Blkparse)
    );
    assert_eq!(
        sniff_line("R Hit 265552 2 14901.000000 4757.708232"),
        Some(Format::DisksimValidate)
    );
    assert_eq!(
        sniff_line("W Miss\t4583176   4    663.00000  45422.00000"),
        Some(Format::DisksimValidate)
    );
    assert_eq!(sniff_line("12.5 0 1000 8 1"), Some(Format::Disksim));
    assert_eq!(sniff_line("11413000 0 657728 16 1"), Some(Format::Mqsim));
    assert_eq!(sniff_line("11413000 0 657728 16 7"), None); // integer time, flags not 0/1: ask
    assert_eq!(
        sniff_line("Timestamp,Response,IOType,LUN,Offset,Size"),
        Some(Format::Systor17)
    );
    assert_eq!(
        sniff_line("419,W,8111259648,4096,1577808000000171"),
        Some(Format::Alibaba)
    );
    assert_eq!(
        sniff_line("89967404324372 4485 syslogd 32632 8 W 8 0 ff0fcb9f"),
        Some(Format::Fiu)
    );
    assert_eq!(sniff_line("1538323200,12058624,8,1,1283"), None); // Tencent: all numbers, ask
    for (name, want, n) in [
        ("blktrace.txt.gz", Format::Blkparse, 15_524),
        ("wsrch-small.trace.gz", Format::Mqsim, 24_783),
        ("disksim/hp_c3323a.trace", Format::DisksimValidate, 9_074),
    ] {
        let got = read_all(&spec(&data(name))).unwrap();
        assert_eq!(got.len(), n, "{name} read as {want:?}");
    }
    // Leading blank lines are passed over.
    let (f, _) = sniff(Box::new(&b"\n\r\n  \n1,2,3,R,0.1\n"[..]), "x").unwrap();
    assert_eq!(f, Format::Spc);
    // A first line with control characters is quoted escaped, on one line.
    match sniff(Box::new(&b"time\x0bop\x1b[2J lba\n"[..]), "t.csv") {
        Err(SimError::Config(m)) => {
            assert!(m.contains("('time\\u{b}op\\u{1b}[2J lba')"), "{m}")
        }
        Err(e) => panic!("{e:?}"),
        Ok((f, _)) => panic!("{f:?}"),
    }
    // Undecidable and empty inputs ask for --format.
    for input in [&b"time op lba\n1 2 3\n"[..], b"", b"\n\n"] {
        match sniff(Box::new(input), "t.csv") {
            Err(SimError::Config(m)) => {
                assert!(m.contains("--format") && m.contains("t.csv"), "{m}")
            }
            Err(e) => panic!("{e:?}"),
            Ok((f, _)) => panic!("{f:?}"),
        }
    }
    // Through open_trace: names ending in .csv are sniffed.
    let r = read_all(&spec(&data("cloudPhysicsIO.csv"))).unwrap();
    assert_eq!(r.len(), 113_872);
    let r = read_all(&spec(&data("rsrch_1.csv"))).unwrap();
    assert_eq!(r.len(), 13_780);
}

#[test]
fn gzip_and_zstd_fixtures_match_plain() {
    let plain = read_all(&spec(&data("wdev_3.csv"))).unwrap();
    assert_eq!(plain.len(), 682);
    for name in ["wdev_3.csv.gz", "wdev_3.csv.zst"] {
        let got = read_all(&spec(&data(name))).unwrap();
        assert_eq!(got, plain, "{name}");
    }
}

#[test]
fn compressed_copies_in_temp_dir() {
    // gzip, two members; zstd, two frames with a skippable frame between.
    let text = std::fs::read(data("wdev_1.csv")).unwrap();
    let (a, b) = text.split_at(text.len() / 2);
    let mut gz = Vec::new();
    for part in [a, b] {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(part).unwrap();
        gz.extend(enc.finish().unwrap());
    }
    let mut zst = ruzstd::encoding::compress_to_vec(a, ruzstd::encoding::CompressionLevel::Fastest);
    zst.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
    zst.extend_from_slice(&3u32.to_le_bytes());
    zst.extend_from_slice(b"xyz");
    zst.extend(ruzstd::encoding::compress_to_vec(
        b,
        ruzstd::encoding::CompressionLevel::Fastest,
    ));
    let plain = read_all(&spec(&data("wdev_1.csv"))).unwrap();
    assert_eq!(plain.len(), 1_055);
    for (name, bytes) in [("wdev_1.csv.gz", gz), ("wdev_1.csv.zst", zst)] {
        let p = write_temp("compressed", name, &bytes);
        assert_eq!(read_all(&spec(&p)).unwrap(), plain, "{name}");
    }
    // The binary format compressed.
    let vs = std::fs::read(data("cloudPhysicsIO.vscsi")).unwrap();
    let zst =
        ruzstd::encoding::compress_to_vec(&vs[..], ruzstd::encoding::CompressionLevel::Fastest);
    let p = write_temp("compressed-vscsi", "cloudPhysicsIO.vscsi.zst", &zst);
    let got = read_all(&spec(&p)).unwrap();
    assert_eq!(got, read_all(&spec(&data("cloudPhysicsIO.vscsi"))).unwrap());
    assert_eq!(counts(&got), (46_974, 66_898));
}

#[test]
fn corrupt_compressed_input_is_io_error() {
    for name in ["bad.csv.gz", "bad.csv.zst"] {
        let p = write_temp("corrupt", name, b"this is not compressed at all\n");
        let mut s = spec(&p);
        s.format = Some(Format::Msr);
        match read_err(&s) {
            SimError::Io(m) => assert!(m.contains(&p), "{m}"),
            e => panic!("{name}: {e:?}"),
        }
    }
}

/// A zstd file whose frame checksum is wrong, or whose data is damaged or
/// cut short, is one line naming the file; the fixture is intact.
#[test]
fn binary_blktrace_is_refused_with_the_way_to_text() {
    // A blk_io_trace record: magic | version 7, then the rest.
    let mut rec = 0x6561_7407u32.to_le_bytes().to_vec();
    rec.extend([0u8; 60]);
    let p = write_temp("blktrace-bin", "sdb.blktrace.0", &rec);
    match open_trace(&spec(&p)).err() {
        Some(SimError::Io(m)) => assert!(
            m.contains("blkparse -i") && m.contains(&p) && !m.contains('\n'),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn corrupt_zstd_is_one_line_naming_the_file() {
    let good = std::fs::read(data("wdev_3.csv.zst")).unwrap();
    // The fixture's frame carries a content checksum (flag bit 2 of the descriptor).
    assert_eq!(good[..4], [0x28, 0xb5, 0x2f, 0xfd]);
    assert_ne!(good[4] & 0x04, 0);
    let n = good.len();
    let flip = |i: usize, x: u8| {
        let mut b = good.clone();
        b[i] ^= x;
        b
    };
    let cases: [(&str, Vec<u8>, &str); 5] = [
        (
            "sum.csv.zst",
            flip(n - 1, 0xff),
            "zstd frame 1 fails its checksum (stored 0x",
        ),
        ("mid.csv.zst", flip(n / 2, 0x55), "frame 1"),
        (
            "cut.csv.zst",
            good[..n / 2].to_vec(),
            "the zstd data ends inside frame 1 (truncated file?)",
        ),
        (
            "junk.csv.zst",
            b"hello, this is not zstd at all\n".to_vec(),
            "not zstd data (bad magic number)",
        ),
        (
            "tail.csv.zst",
            [&good[..], b"garbage!"].concat(),
            "garbage after zstd frame 1 (bad magic number)",
        ),
    ];
    for (name, bytes, needle) in cases {
        let p = write_temp("zstd-corrupt", name, &bytes);
        match read_err(&spec(&p)) {
            SimError::Io(m) => {
                assert!(m.contains(&p) && m.contains(needle), "{name}: {m}");
                assert!(
                    !m.contains('\n') && !m.contains('{') && !m.contains("Error("),
                    "{name}: {m}"
                );
            }
            e => panic!("{name}: {e:?}"),
        }
    }
    // Frames written by the project's own encoder verify too.
    let text = std::fs::read(data("wdev_3.csv")).unwrap();
    let zst =
        ruzstd::encoding::compress_to_vec(&text[..], ruzstd::encoding::CompressionLevel::Fastest);
    let p = write_temp("zstd-own", "own.csv.zst", &zst);
    assert_eq!(
        read_all(&spec(&p)).unwrap(),
        read_all(&spec(&data("wdev_3.csv"))).unwrap()
    );
}

/// A giant line (plain, inside a small .gz, a run of delimiters) is an
/// error naming the file and line in every text format, as is a line of
/// too many fields; the reader never holds more than a bounded line.
#[test]
fn giant_lines_and_field_counts_are_bounded_in_every_text_reader() {
    use super::text::{MAX_FIELDS, MAX_LINE_BYTES};
    let firsts: [(Format, &str); 6] = [
        (
            Format::Msr,
            "128166481075232275,rsrch,1,Write,281358336,45056,94872\n",
        ),
        (Format::Spc, "0,303567,3584,w,0.000000\n"),
        (
            Format::CloudphysicsCsv,
            "version,time,op,size,lbn\n1,5633898,2a,512,42932745\n",
        ),
        (Format::Csv, "0.5,r,8,8\n"),
        (Format::FioIolog, "fio version 2 iolog\n/dev/sda add\n"),
        (Format::Msr, "\n\n"),
    ];
    let giant_letters = vec![b'a'; MAX_LINE_BYTES as usize + 10];
    let giant_commas = vec![b','; 3 * MAX_LINE_BYTES as usize];
    for (i, (format, first)) in firsts.iter().enumerate() {
        let line = first.matches('\n').count() as u64 + 1;
        for (what, giant) in [("letters", &giant_letters), ("commas", &giant_commas)] {
            let mut text = first.as_bytes().to_vec();
            text.extend_from_slice(giant);
            text.extend_from_slice(b"\n0,r,0,1\n");
            for gz in [false, true] {
                let name = format!("giant{i}-{what}.txt{}", if gz { ".gz" } else { "" });
                let bytes = if gz {
                    use std::io::Write;
                    let mut enc =
                        flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                    enc.write_all(&text).unwrap();
                    enc.finish().unwrap()
                } else {
                    text.clone()
                };
                let p = write_temp("giant", &name, &bytes);
                let mut s = spec(&p);
                s.format = Some(*format);
                let msg = format_error_at(&s, line);
                assert!(
                    msg.starts_with("line longer than 1 MiB (1048576 bytes)"),
                    "{name}: {msg}"
                );
            }
        }
    }
    // Format guessing stops at the first giant line too (after blank lines).
    let mut text = b"\n\n".to_vec();
    text.extend_from_slice(&giant_letters);
    let p = write_temp("giant", "guess.csv", &text);
    assert!(format_error_at(&spec(&p), 3).starts_with("line longer than 1 MiB"));
    // A line just within the bound is read (and found malformed, not too long).
    let mut text = b"0.5,r,8,8\n".to_vec();
    text.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES as usize - 1));
    text.extend_from_slice(b"\n");
    let p = write_temp("giant", "edge.txt", &text);
    let mut s = spec(&p);
    s.format = Some(Format::Csv);
    assert!(!format_error_at(&s, 2).contains("longer"));
    // Many short fields on a short line.
    let mut text = b"0.5,r,8,8\n0,r,0,1".to_vec();
    text.extend(std::iter::repeat_n(b',', MAX_FIELDS + 5));
    text.extend_from_slice(b"\n");
    let p = write_temp("giant", "fields.txt", &text);
    s.path = p;
    let msg = format_error_at(&s, 2);
    assert!(
        msg.contains(&format!(
            "line has {} fields, more than {MAX_FIELDS}",
            MAX_FIELDS + 9
        )),
        "{msg}"
    );
}

/// An offset near 2^64 is an overflow in every text format, never "beyond
/// the drive": a field past 64 bits (or past it once scaled to bytes),
/// and a request whose end passes 2^64 bytes.
#[test]
fn offsets_near_2_64_overflow_in_every_text_reader() {
    let max = u64::MAX;
    let near = max - 100;
    let csv_bytes = GenericCsv {
        offset_unit_bytes: 1,
        size_unit_bytes: 1,
        ..GenericCsv::default()
    };
    let cases: Vec<(Format, GenericCsv, String, &str)> = vec![
        (
            Format::Msr,
            GenericCsv::default(),
            format!("1,h,0,Write,{near},4096,0\n"),
            "offset",
        ),
        (
            Format::Msr,
            GenericCsv::default(),
            "1,h,0,Write,18446744073709551616,512,0\n".into(),
            "Offset (field 5) overflows 64 bits",
        ),
        (
            Format::Spc,
            GenericCsv::default(),
            format!("0,{},4096,w,0.0\n", max / 512),
            "offset",
        ),
        (
            Format::Spc,
            GenericCsv::default(),
            format!("0,{},512,w,0.0\n", max / 256),
            "LBA (field 2) is too large",
        ),
        (
            Format::CloudphysicsCsv,
            GenericCsv::default(),
            format!("version,time,op,size,lbn\n1,1,2a,4096,{}\n", max / 512),
            "offset",
        ),
        (
            Format::Csv,
            csv_bytes.clone(),
            format!("0,w,{near},4096\n"),
            "offset",
        ),
        (
            Format::Csv,
            GenericCsv::default(),
            format!("0,w,{},8\n", max / 256),
            "offset (field 3) overflows",
        ),
        (
            Format::Csv,
            csv_bytes,
            "0,w,1e30,8\n".into(),
            "offset (field 3) overflows",
        ),
        (
            Format::FioIolog,
            GenericCsv::default(),
            format!("fio version 2 iolog\n/dev/a write {near} 4096\n"),
            "offset",
        ),
    ];
    for (format, csv, text, needle) in cases {
        let p = write_temp("near-2-64", "t.txt", text.as_bytes());
        let mut s = spec(&p);
        s.format = Some(format);
        s.csv = csv;
        let line = text.matches('\n').count() as u64;
        let msg = format_error_at(&s, line);
        assert!(msg.contains("overflow"), "{format:?} {text}: {msg}");
        assert!(
            msg.contains(needle) && !msg.contains("larger than") && !msg.contains("beyond"),
            "{format:?}: {msg}"
        );
    }
}

#[test]
fn disk_start_limit() {
    let text = "1,h,0,Read,0,512,1\n\
                2,h,1,Write,512,512,1\n\
                3,h,0,Write,1024,512,1\n\
                4,h,1,Read,1536,512,1\n\
                5,h,0,Read,2048,512,1\n\
                6,h,0,Write,2560,512,1\n";
    let p = write_temp("disk", "mixed.csv", text.as_bytes());
    let times = |s: &TraceSpec| {
        read_all(s)
            .unwrap()
            .iter()
            .map(|r| r.time.0 / 100)
            .collect::<Vec<_>>()
    };
    let mut s = spec(&p);
    assert_eq!(times(&s), vec![1, 2, 3, 4, 5, 6]);
    // Without a choice, a second device is an error naming both and the line.
    let one = TraceSpec {
        all_devices: false,
        ..s.clone()
    };
    let e = read_err(&one).to_string();
    assert!(
        e.contains("mixed.csv:2") && e.contains("0 and 1") && e.contains("--device all"),
        "{e}"
    );
    s.disk = Some(0);
    assert_eq!(times(&s), vec![1, 3, 5, 6]);
    s.start = 1;
    assert_eq!(times(&s), vec![3, 5, 6]);
    s.limit = Some(2);
    assert_eq!(times(&s), vec![3, 5]);
    s.disk = Some(1);
    s.limit = Some(5);
    assert_eq!(times(&s), vec![4]);
    s.disk = Some(7);
    assert_eq!(times(&s), Vec::<u64>::new());
    s.disk = None;
    s.start = 4;
    assert_eq!(times(&s), vec![5, 6]);
    s.start = 0;
    s.limit = Some(0);
    assert_eq!(times(&s), Vec::<u64>::new());
    // Line numbers stay those of the file.
    let mut s = spec(&p);
    s.disk = Some(1);
    let lines: Vec<u64> = read_all(&s).unwrap().iter().map(|r| r.line).collect();
    assert_eq!(lines, vec![2, 4]);

    // On the real trace.
    let mut s = spec(&data("rsrch_1.csv"));
    s.disk = Some(1);
    s.start = 100;
    s.limit = Some(1000);
    let r = read_all(&s).unwrap();
    assert_eq!(r.len(), 1000);
    assert_eq!(r[0].line, 101);
    s.disk = Some(2);
    assert!(read_all(&s).unwrap().is_empty());
}

#[test]
fn time_window_and_operation_filter() {
    // MSR ticks are 100 ns: 10^7 ticks a second. Device 0 starts at 5 s
    // (absolute 5e7), device 1's earlier record must not move its origin.
    let s = 10_000_000u64;
    let text = format!(
        "{a},h,1,Read,0,512,1\n{b},h,0,Read,0,512,1\n{c},h,0,Write,512,512,1\n{d},h,0,Read,1024,512,1\n\
         {e},h,0,Write,1536,512,1\n{f},h,0,Write,2048,512,1\n{g},h,0,Read,4096,512,1\n",
        a = 1,
        b = 5 * s,
        c = 6 * s,
        d = 7 * s,
        // Out of order by half a second: still inside the window [1 s, 3 s).
        e = 8 * s,
        f = 7 * s + s / 2,
        g = 20 * s,
    );
    let p = write_temp("window", "w.csv", text.as_bytes());
    let lines = |sp: &TraceSpec| {
        read_all(sp)
            .unwrap()
            .iter()
            .map(|r| r.line)
            .collect::<Vec<_>>()
    };
    let base = TraceSpec {
        disk: Some(0),
        ..spec(&p)
    };
    assert_eq!(lines(&base), vec![2, 3, 4, 5, 6, 7]);
    let w = TraceSpec {
        time_from_s: Some(1.0),
        time_to_s: Some(3.0),
        ..base.clone()
    };
    // [1 s, 3 s) from 5 s: lines 3 (1 s), 4 (2 s) and 6 (2.5 s); 5 is at 3 s (outside, half-open).
    assert_eq!(lines(&w), vec![3, 4, 6]);
    assert_eq!(
        lines(&TraceSpec {
            only: Some(Op::Write),
            ..w.clone()
        }),
        vec![3, 6]
    );
    assert_eq!(
        lines(&TraceSpec {
            only: Some(Op::Read),
            ..base.clone()
        }),
        vec![2, 4, 7]
    );
    // start and limit count what the window and the filter leave.
    assert_eq!(
        lines(&TraceSpec {
            start: 1,
            limit: Some(1),
            ..w.clone()
        }),
        vec![4]
    );
    assert_eq!(
        lines(&TraceSpec {
            time_from_s: Some(2.0),
            ..base.clone()
        }),
        vec![4, 5, 6, 7]
    );
    assert_eq!(
        lines(&TraceSpec {
            time_to_s: Some(2.0),
            ..base.clone()
        }),
        vec![2, 3]
    );
    // Reading stops a second past the window: a malformed line after that is never read.
    let mut bad = text.clone();
    bad.push_str("garbage\n");
    let q = write_temp("window-bad", "bad.csv", bad.as_bytes());
    let stop = TraceSpec {
        disk: Some(0),
        time_to_s: Some(3.0),
        ..spec(&q)
    };
    assert_eq!(lines(&stop), vec![2, 3, 4, 6]);
    assert!(read_all(&TraceSpec {
        disk: Some(0),
        ..spec(&q)
    })
    .is_err());
    // The same selection through open_selected (convert, trace-info).
    let (_, mut next) = open_selected(&TraceSpec {
        only: Some(Op::Write),
        ..w.clone()
    })
    .unwrap();
    let mut got = vec![];
    while let Some((r, d)) = next().unwrap() {
        got.push((r.line, d));
    }
    assert_eq!(got, vec![(3, Some(0)), (6, Some(0))]);
    // An empty or impossible window is a one-line configuration error.
    for (from, to) in [
        (Some(3.0), Some(3.0)),
        (Some(-1.0), None),
        (None, Some(f64::NAN)),
    ] {
        let e = open_trace(&TraceSpec {
            time_from_s: from,
            time_to_s: to,
            ..base.clone()
        })
        .err()
        .unwrap();
        assert!(
            matches!(e, SimError::Config(ref m) if m.contains("time_") && !m.contains('\n')),
            "{e}"
        );
    }
    // A synthetic trace has its own mix and clock.
    let synth = TraceSpec {
        path: "synth".into(),
        synth: Some(crate::trace::synth::SynthSpec::new(
            crate::trace::synth::SynthKind::Sequential,
        )),
        only: Some(Op::Read),
        ..TraceSpec::default()
    };
    assert!(
        matches!(open_trace(&synth).err(), Some(SimError::Config(ref m)) if m.contains("'only'"))
    );
}

#[test]
fn disk_on_format_without_disks_is_config_error() {
    let mut s = spec(&data("cloudPhysicsIO.vscsi"));
    s.disk = Some(1);
    match open_trace(&s).err().unwrap() {
        SimError::Config(m) => assert!(m.contains("disk") && m.contains("vscsi"), "{m}"),
        e => panic!("{e:?}"),
    }
    let mut s = spec(&data("cloudPhysicsIO.csv"));
    s.disk = Some(1);
    assert!(matches!(open_trace(&s).err().unwrap(), SimError::Config(_)));
}

#[test]
fn progress_moves_and_ends_at_one() {
    let mut r = open_trace(&spec(&data("rsrch_1.csv"))).unwrap();
    assert!(r.progress() < 0.2);
    let mut last = 0.0;
    let mut n = 0;
    while r.next_record().unwrap().is_some() {
        let p = r.progress();
        assert!(p >= last && p <= 1.0);
        last = p;
        n += 1;
        if n == 7000 {
            assert!(p > 0.2 && p < 0.9, "{p}");
        }
    }
    assert_eq!(r.progress(), 1.0);
    // gz: progress counts compressed bytes.
    let mut r = open_trace(&spec(&data("wdev_3.csv.gz"))).unwrap();
    while r.next_record().unwrap().is_some() {}
    assert_eq!(r.progress(), 1.0);
    assert!(r.next_record().unwrap().is_none());
}

#[test]
fn open_reader_in_memory() {
    let mut s = spec("memory.msr");
    s.format = Some(Format::Msr);
    let mut r = open_reader(
        Box::new(io::Cursor::new(b"10,h,0,Write,4096,8192,5".to_vec())),
        &s,
    )
    .unwrap();
    let rec = r.next_record().unwrap().unwrap();
    assert_eq!(rec.op, Op::Write);
    assert_eq!(rec.time.0, 1000);
    assert_eq!(r.next_record().unwrap(), None);
    // The label is used in errors.
    let mut r = open_reader(
        Box::new(io::Cursor::new(b"10,h,0,Wrote,4096,8192,5".to_vec())),
        &s,
    )
    .unwrap();
    match r.next_record().unwrap_err() {
        SimError::TraceFormat { at, .. } => assert_eq!(
            at,
            Location {
                file: "memory.msr".into(),
                line: 1
            }
        ),
        e => panic!("{e:?}"),
    }
}

#[test]
fn line_numbers_count_blank_lines() {
    for (text, want) in [
        ("1,h,0,Read,0,1,1\n\n\n4,h,0,Read,0,1,1", vec![1, 4]),
        ("1,h,0,Read,0,1,1\n\n\n4,h,0,Read,0,1,1\n", vec![1, 4]),
        (
            "\n\n3,h,0,Read,0,1,1\r\n\r\n5,h,0,Read,0,1,1\r\n\r\n",
            vec![3, 5],
        ),
        (
            "1,h,0,Read,0,1,1\n   \n\t\n4,h,0,Read,0,1,1\n\n",
            vec![1, 4],
        ),
        ("1,h,0,Read,0,1,1", vec![1]),
        ("\n2,h,0,Read,0,1,1", vec![2]),
    ] {
        let mut s = spec("mem");
        s.format = Some(Format::Msr);
        let mut r = open_reader(Box::new(io::Cursor::new(text.as_bytes().to_vec())), &s).unwrap();
        let mut lines = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            lines.push(rec.line);
        }
        assert_eq!(lines, want, "{text:?}");
    }
}

/// Random damage to real lines never panics: every outcome is a record, the
/// end, or an error.
#[test]
fn damaged_input_never_panics() {
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let samples: [(Format, &[u8]); 5] = [
        (Format::Msr, b"128166481075232275,rsrch,1,Write,281358336,45056,94872\n128166481075232718,rsrch,1,Read,281292800,65536,94430\n"),
        (Format::Spc, b"0,303567,3584,w,0.000000\n1,55590,3072,R,0.026214\n"),
        (Format::CloudphysicsCsv, b"version,time,op,size,lbn\n1,5633898,2a,512,42932745\n1,5633899,28,512,4\n"),
        (Format::Csv, b"0.5,r,8,8\n1,w,16,1\n"),
        (Format::Vscsi, &[]),
    ];
    let vs = std::fs::read(data("cloudPhysicsIO.vscsi")).unwrap();
    let alphabet = b"0123456789,.-+eExX rRwW\n\r\t\"\xff\x00";
    for round in 0..3000 {
        let (format, base) = samples[round % samples.len()];
        let mut bytes: Vec<u8> = if format == Format::Vscsi {
            vs[..32 * 4].to_vec()
        } else {
            base.to_vec()
        };
        for _ in 0..1 + rnd() % 4 {
            let i = (rnd() as usize) % (bytes.len() + 1);
            match rnd() % 3 {
                0 if i < bytes.len() => bytes[i] = alphabet[(rnd() as usize) % alphabet.len()],
                1 if i < bytes.len() => {
                    bytes.remove(i);
                }
                _ => bytes.insert(
                    i,
                    if format == Format::Vscsi {
                        rnd() as u8
                    } else {
                        alphabet[(rnd() as usize) % alphabet.len()]
                    },
                ),
            }
        }
        let mut s = spec("fuzz");
        s.format = Some(format);
        if let Ok(mut r) = open_reader(Box::new(io::Cursor::new(bytes.clone())), &s) {
            for _ in 0..100 {
                match r.next_record() {
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => break,
                }
            }
        }
        // Sniffing too.
        let _ = sniff(Box::new(io::Cursor::new(bytes)), "fuzz");
    }
}

#[test]
fn explicit_format_overrides_guess() {
    let mut s = spec(&data("cloudPhysicsIO.csv"));
    s.format = Some(Format::Msr);
    match read_err(&s) {
        SimError::TraceFormat { at, msg } => {
            assert_eq!(at.line, 1);
            assert!(msg.contains("expected 7 fields"), "{msg}");
        }
        e => panic!("{e:?}"),
    }
}
