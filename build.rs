//! Generates the C header with cbindgen.
//!
//! The header is always written to `$OUT_DIR/session.h`. It is written to
//! `include/session.h` only when `SESSION_UPDATE_HEADER=1`, so a build never modifies
//! the source tree by itself (`cargo package` verifies exactly that). The test
//! `tests/header.rs` fails when the checked-in header differs from the generated one
//! and prints the command that refreshes it.

use std::env;
use std::path::PathBuf;

fn main() {
    // The ABI major version is the crate's major version: it names the shared
    // library's SONAME, and both move only when a released function, type or status
    // value changes incompatibly (additions keep the major).
    let abi_major =
        env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets CARGO_PKG_VERSION_MAJOR");
    let crate_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

    // cbindgen reads the whole crate (a `pub const` anywhere reaches the header), so
    // any change under src/ regenerates it; watching only src/ffi left stale headers.
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=SESSION_UPDATE_HEADER");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libsession.so.{abi_major}");
    soname_link(&out_dir, &abi_major);

    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is readable and valid");
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen can parse the ffi module");

    let generated = out_dir.join("session.h");
    bindings.write_to_file(&generated);
    if env::var("SESSION_UPDATE_HEADER").as_deref() == Ok("1") {
        bindings.write_to_file(crate_dir.join("include").join("session.h"));
    }
}

/// A program linked against the build tree (`-Ltarget/release -lsession`) asks the
/// loader for the SONAME, `libsession.so.<major>`: put that name beside the library in
/// the profile directory, as a relative symlink to `libsession.so`. It may dangle until
/// the link step that follows this script writes the library. The installed layout is
/// `scripts/install.sh`'s and does not change.
fn soname_link(out_dir: &std::path::Path, abi_major: &str) {
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    // OUT_DIR is <profile dir>/build/<crate>-<hash>/out.
    let Some(profile_dir) = out_dir.ancestors().nth(3) else {
        return;
    };
    let link = profile_dir.join(format!("libsession.so.{abi_major}"));
    if std::fs::symlink_metadata(&link).is_ok() {
        return;
    }
    if let Err(e) = std::os::unix::fs::symlink("libsession.so", &link) {
        println!("cargo:warning=could not create {}: {e}", link.display());
    }
}
