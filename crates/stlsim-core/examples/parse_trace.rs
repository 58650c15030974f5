//! Read a trace to its end and print the records read: for instruction
//! counts of one reader under callgrind (deterministic, unlike wall time on
//! a shared machine), e.g.
//! `valgrind --tool=callgrind target/release/examples/parse_trace thesios FILE`.

use stlsim_core::trace::{open_trace, Format, TraceSpec};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, format, path, ..] = args.as_slice() else {
        eprintln!("usage: parse_trace FORMAT FILE [REPEAT]");
        std::process::exit(2);
    };
    let repeat: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(1);
    let mut n = 0u64;
    for _ in 0..repeat {
        let spec = TraceSpec {
            path: path.clone(),
            format: Some(Format::parse(format).unwrap_or_else(|e| {
                eprintln!("{e}");
                std::process::exit(2)
            })),
            all_devices: true,
            ..Default::default()
        };
        let mut r = open_trace(&spec).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        });
        while let Some(_rec) = r.next_record().unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        }) {
            n += 1;
        }
    }
    println!("{n}");
}
