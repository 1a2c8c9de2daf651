//! The checked-in `include/session.h` must be exactly what the build generates.

#[test]
fn checked_in_header_matches_the_generated_one() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/session.h"));
    let checked_in =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/session.h"))
            .unwrap_or_default();
    assert!(
        generated == checked_in,
        "include/session.h is out of date; regenerate it with:\n\n    SESSION_UPDATE_HEADER=1 cargo build\n"
    );
}
