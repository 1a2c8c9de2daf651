//! A trivial binary: the floor of a Rust binary's size, beside the peer's.

fn main() {
    println!("hello");
}
