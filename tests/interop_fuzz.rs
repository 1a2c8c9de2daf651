//! Every import path with arbitrary input (issue 14): never a panic, always a report
//! that accounts for every line, and output that opens. Random bytes, and files
//! spliced from the real fixtures' lines with random damage (torn lines, junk,
//! duplicated and dropped lines), which reach far deeper into the mappings.

#[path = "interop/import_property.rs"]
mod import_property;

use std::path::Path;

use proptest::prelude::*;

fn fixture_lines() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/fixtures");
    let mut lines = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for path in names {
        let bytes = std::fs::read(path).unwrap();
        lines.extend(bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec));
    }
    lines.push(br#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#.to_vec());
    lines.push(br#"{"type":"compaction","id":"c","parentId":"u","timestamp":"2025-01-01T00:00:01Z","summary":"s","firstKeptEntryId":"u","tokensBefore":1}"#.to_vec());
    lines.push(br#"{"type":"message","id":"u","parentId":null,"timestamp":"x","message":{"role":"user","content":"\ud83d"}}"#.to_vec());
    lines
}

fn spliced() -> impl Strategy<Value = Vec<u8>> {
    let lines = fixture_lines();
    let count = lines.len();
    prop::collection::vec(
        (
            0..count,
            any::<u8>(),
            0usize..400,
            prop::collection::vec(any::<u8>(), 0..8),
        ),
        0..24,
    )
    .prop_map(move |picks| {
        let mut out = Vec::new();
        for (index, action, cut, junk) in picks {
            let line = &lines[index];
            match action % 6 {
                0 => out.extend_from_slice(&line[..cut.min(line.len())]),
                1 => {
                    out.extend_from_slice(line);
                    out.extend_from_slice(&junk);
                }
                2 => out.extend_from_slice(&junk),
                _ => out.extend_from_slice(line),
            }
            if action % 7 != 0 {
                out.push(b'\n');
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_import_without_panic_and_with_a_full_report(data in prop::collection::vec(any::<u8>(), 0..600)) {
        import_property::check_import(&data);
    }

    #[test]
    fn damaged_real_sessions_import_every_line(data in spliced()) {
        import_property::check_import(&data);
    }
}

#[test]
fn empty_and_blank_inputs_are_refused_as_no_conversation() {
    for data in [&b""[..], b"\n", b"  \n\t\r\n", b"\n\n"] {
        import_property::check_import(data);
        for format in import_property::FORMATS {
            assert!(matches!(
                session::interop::import(format, data),
                Err(session::Error::NotImportable { detected: None, .. })
            ));
        }
    }
}
