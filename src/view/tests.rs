use super::*;

const HOSTILE: [&str; 4] = [
    "</script><script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "line\u{2028}separator\u{2029}paragraph & <!-- comment",
];

fn store_with(texts: &[&str]) -> Store {
    let store = Store::memory();
    let mut parent: Option<String> = None;
    for (i, text) in texts.iter().enumerate() {
        let id = format!("e-{i}");
        let entry = Object::new()
            .string("id", &id)
            .string_or_null("parentId", parent.as_deref())
            .number("timestamp", i as u64)
            .string("type", "message")
            .raw(
                "message",
                &Object::new()
                    .string("role", "user")
                    .string("content", text)
                    .finish(),
            )
            .finish();
        store.append(entry).expect("append");
        parent = Some(id);
    }
    store
}

fn render(store: &Store, options: &str) -> String {
    render_html(store, &ViewOptions::from_json(options).expect("options")).expect("render")
}

/// The text between `open` and the next `</script>`.
fn between<'h>(html: &'h str, open: &str) -> &'h str {
    let start = html.find(open).expect("open") + open.len();
    let end = start + html[start..].find("</script>").expect("close");
    &html[start..end]
}

fn data(html: &str) -> &str {
    between(
        html,
        "<script type=\"application/json\" id=\"session-data\">",
    )
}

/// The document without its data block: what the browser reads as markup and code.
fn outside_data(html: &str) -> String {
    let data = data(html);
    html.replacen(data, "", 1)
}

#[test]
fn a_closing_script_tag_in_the_session_stays_inside_the_data() {
    let html = render(&store_with(&HOSTILE), "{}");
    assert_eq!(html.matches("<script").count(), 2, "{html}");
    assert_eq!(html.matches("</script").count(), 2);
    assert!(data(&html).contains("\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"));
}

#[test]
fn markup_in_the_session_is_never_markup_in_the_page() {
    let html = render(&store_with(&HOSTILE), "{}");
    assert!(!html.contains("<img"), "{html}");
    assert!(!html.contains("<!--"));
    let data = data(&html);
    for c in ['<', '>', '&', '\u{2028}', '\u{2029}'] {
        assert!(!data.contains(c), "{c:?} unescaped in the data");
    }
}

#[test]
fn the_data_block_is_the_sessions_entries_unchanged() {
    let store = store_with(&HOSTILE);
    let html = render(&store, r#"{"title":"t"}"#);
    let data: serde_json::Value = serde_json::from_str(data(&html)).expect("data is JSON");
    let entries: serde_json::Value =
        serde_json::from_slice(&store.entries_json().expect("entries")).expect("JSON");
    assert_eq!(data["entries"], entries);
    for (i, text) in HOSTILE.iter().enumerate() {
        assert_eq!(data["entries"][i]["message"]["content"], *text);
    }
}

#[test]
fn the_csp_forbids_every_load_and_allows_only_the_inlined_script_and_style() {
    let html = render(&store_with(&["hi"]), "{}");
    let script = between(&html, "</script>\n<script>");
    let start = html.find("<style>").expect("style") + "<style>".len();
    let style = &html[start..start + html[start..].find("</style>").expect("end")];
    let csp = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         script-src '{}'; style-src '{}'; img-src data:;",
        sha256_source(script),
        sha256_source(style)
    );
    assert!(html.contains(&csp), "{csp}");
    // The policy comes before anything it governs.
    assert!(html.find(&csp) < html.find("<style>"));
}

#[test]
fn the_page_references_no_url() {
    let html = render(
        &store_with(&["see https://example.com and //cdn.example/x.js"]),
        "{}",
    );
    let page = outside_data(&html);
    for url in ["http:", "https:", "//", "src=", "href="] {
        assert!(!page.contains(url), "{url} in the page outside the data");
    }
}

#[test]
fn the_page_script_builds_the_dom_from_text_only() {
    for sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "Function(",
        "setAttribute",
    ] {
        assert!(!JS.contains(sink), "page.js uses {sink}");
    }
}

#[test]
fn a_link_gets_an_href_only_when_it_is_http_or_https() {
    // One place sets an href, right behind the check of its scheme.
    assert_eq!(JS.matches(".href").count(), 1);
    let check = JS
        .find("if (!/^https?:\\/\\/\\S+$/i.test(url)) return document.createTextNode(raw);")
        .expect("the scheme check");
    let href = JS.find("a.href = url;").expect("href");
    assert!(check < href && href - check < 200);
}

#[test]
fn the_default_leaf_is_the_latest_and_an_unknown_leaf_is_refused() {
    let store = store_with(&["a", "b"]);
    let html = render(&store, "{}");
    let data: serde_json::Value = serde_json::from_str(data(&html)).expect("JSON");
    assert_eq!(data["leaf"], "e-1");
    assert_eq!(data["latest"], "e-1");
    let html = render(&store, r#"{"leaf":"e-0"}"#);
    let data: serde_json::Value = serde_json::from_str(super::tests::data(&html)).expect("JSON");
    assert_eq!(data["leaf"], "e-0");
    let options = ViewOptions::from_json(r#"{"leaf":"nope"}"#).expect("options");
    assert!(matches!(
        render_html(&store, &options),
        Err(Error::UnknownLeaf { id }) if id == "nope"
    ));
}

#[test]
fn view_options_go_through_the_one_parser() {
    assert!(matches!(
        ViewOptions::from_json(r#"{"leef":"x"}"#),
        Err(Error::InvalidOption { message }) if message.contains("leef")
    ));
    assert!(ViewOptions::from_json("[]").is_err());
}

#[test]
fn the_title_is_text() {
    let html = render(
        &store_with(&["x"]),
        r#"{"title":"</title><script>alert(1)</script>"}"#,
    );
    assert!(html.contains("<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>"));
    assert_eq!(html.matches("<script").count(), 2);
}

#[test]
fn an_empty_store_renders_a_page() {
    let html = render(&Store::memory(), "{}");
    let data: serde_json::Value = serde_json::from_str(data(&html)).expect("JSON");
    assert_eq!(data["leaf"], serde_json::Value::Null);
    assert_eq!(data["entries"], serde_json::json!([]));
}

#[test]
fn base64_is_rfc_4648() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    assert_eq!(
        sha256_source(""),
        "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
    );
}

/// Standard base64 decoded: the inverse of [`base64`], for the tests only.
fn unbase64(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut bits, mut held) = (0u32, 0u32);
    for c in text.bytes().filter(|&c| c != b'=') {
        let value = ALPHABET.iter().position(|&a| a == c).expect("base64") as u32;
        bits = (bits << 6) | value;
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
        }
    }
    out
}

/// The entries a page carries deflated, inflated as the browser does (zlib format).
fn inflated_entries(html: &str) -> serde_json::Value {
    let data: serde_json::Value = serde_json::from_str(data(html)).expect("data is JSON");
    assert!(
        data.get("entries").is_none(),
        "plain entries beside the deflated"
    );
    let deflated = unbase64(data["entriesDeflate"].as_str().expect("entriesDeflate"));
    let json = miniz_oxide::inflate::decompress_to_vec_zlib(&deflated).expect("zlib");
    serde_json::from_slice(&json).expect("the inflated entries are JSON")
}

/// One entry whose message is `len` times "x", and the size of the store's entries JSON.
fn store_of_one(len: usize) -> (Store, usize) {
    let store = store_with(&["x".repeat(len).as_str()]);
    let size = store.entries_json().expect("entries").len();
    (store, size)
}

#[test]
fn entries_from_the_deflate_size_on_are_carried_deflated_below_it_as_plain_json() {
    let overhead = store_of_one(0).1;
    let (at, size) = store_of_one(DEFLATE_FROM - overhead);
    assert_eq!(size, DEFLATE_FROM);
    let html = render(&at, "{}");
    let entries: serde_json::Value =
        serde_json::from_slice(&at.entries_json().expect("entries")).expect("JSON");
    assert_eq!(inflated_entries(&html), entries);
    // 256 KiB of one letter deflate to a few hundred bytes beside the page's own.
    let empty = render(&Store::memory(), "{}").len();
    assert!(html.len() < empty + 2000, "{} bytes", html.len());

    let (below, size) = store_of_one(DEFLATE_FROM - overhead - 1);
    assert_eq!(size, DEFLATE_FROM - 1);
    let data: serde_json::Value =
        serde_json::from_str(super::tests::data(&render(&below, "{}"))).expect("JSON");
    assert!(data.get("entriesDeflate").is_none());
    assert_eq!(
        data["entries"][0]["message"]["content"]
            .as_str()
            .map(str::len),
        Some(DEFLATE_FROM - overhead - 1)
    );
}

#[test]
fn a_deflated_page_holds_every_entry_unchanged_and_nothing_readable_as_markup() {
    let filler: Vec<String> = (0..400)
        .map(|i| format!("filler {i} {}", "y".repeat(1000)))
        .collect();
    let mut texts: Vec<&str> = filler.iter().map(String::as_str).collect();
    texts.extend(HOSTILE);
    let store = store_with(&texts);
    let html = render(&store, "{}");
    let entries: serde_json::Value =
        serde_json::from_slice(&store.entries_json().expect("entries")).expect("JSON");
    let inflated = inflated_entries(&html);
    assert_eq!(inflated, entries);
    for (i, text) in HOSTILE.iter().enumerate() {
        assert_eq!(inflated[400 + i]["message"]["content"], *text);
    }
    assert_eq!(html.matches("<script").count(), 2);
    assert!(!outside_data(&html).contains("filler"));
    assert!(!data(&html).contains("filler"));
}

#[test]
fn a_deflated_page_is_redacted_like_a_plain_one() {
    let secret = format!("ghp_{}", "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6");
    let filler: Vec<String> = (0..400)
        .map(|i| format!("filler {i} {}", "z".repeat(1000)))
        .collect();
    let with_secret = format!("my token is {secret} keep it");
    let mut texts: Vec<&str> = filler.iter().map(String::as_str).collect();
    texts.push(&with_secret);
    let store = store_with(&texts);
    let redacted = inflated_entries(&render(&store, "{}"));
    assert_eq!(
        redacted[400]["message"]["content"],
        "my token is [REDACTED:github-token] keep it"
    );
    let kept = inflated_entries(&render(&store, r#"{"redact":false}"#));
    assert_eq!(kept[400]["message"]["content"], with_secret.as_str());
}

/// The page's outline, parsed (plain or deflated).
fn outline(html: &str) -> serde_json::Value {
    let data: serde_json::Value = serde_json::from_str(data(html)).expect("data is JSON");
    if let Some(deflated) = data["outlineDeflate"].as_str() {
        assert!(data.get("outline").is_none());
        let json = miniz_oxide::inflate::decompress_to_vec_zlib(&unbase64(deflated)).expect("zlib");
        return serde_json::from_slice(&json).expect("the inflated outline is JSON");
    }
    data["outline"].clone()
}

const BRANCHY: [&str; 8] = [
    r#"{"id":"u","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"go"}}"#,
    r#"{"id":"a","parentId":"u","timestamp":2,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"reading"},{"type":"toolCall","id":"c1","name":"read","arguments":{}},{"type":"toolCall","id":"c2","name":"read","arguments":{}}]}}"#,
    r#"{"id":"r2","parentId":"a","timestamp":3,"type":"message","message":{"role":"toolResult","toolCallId":"c2","toolName":"read","content":[],"isError":false}}"#,
    r#"{"id":"r1","parentId":"r2","timestamp":4,"type":"message","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[],"isError":false}}"#,
    r#"{"id":"k","parentId":"r1","timestamp":5,"type":"compaction","summary":"s","firstKeptEntryId":"u","tokensBefore":9}"#,
    r#"{"id":"side","parentId":"u","timestamp":6,"type":"message","message":{"role":"user","content":"other"}}"#,
    r#"{"id":"k0","parentId":"side","timestamp":7,"type":"compaction","summary":"s","firstKeptEntryId":null,"tokensBefore":9}"#,
    r#"{"id":"m","parentId":"k","timestamp":8,"type":"metadata","key":"cwd","value":"/w"}"#,
];

fn branchy() -> Store {
    let store = Store::memory();
    for line in BRANCHY {
        store.append(line).expect("append");
    }
    store
}

#[test]
fn the_outline_holds_the_parents_the_tool_pairing_and_what_compactions_keep() {
    let html = render(&branchy(), r#"{"leaf":"side"}"#);
    let outline = outline(&html);
    // Each entry's distance back to its parent, 0 for the root.
    assert_eq!(
        outline["parents"],
        serde_json::json!([0, 1, 1, 1, 1, 5, 1, 3])
    );
    // The message at 1 calls two tools, keys 0 (c1) and 1 (c2); the results at 2 and 3
    // answer keys 1 and 0: the same id, the same key.
    assert_eq!(outline["calls"], serde_json::json!([1, 2, 0, 1]));
    assert_eq!(outline["results"], serde_json::json!([2, 1, 3, 0]));
    // The compaction at 4 keeps from position 0; the one at 6 keeps nothing (-1).
    assert_eq!(outline["compactions"], serde_json::json!([4, 0, 6, -1]));
    assert_eq!(outline["leaf"], 5);
    assert_eq!(outline["latest"], 7);
    let entries: serde_json::Value = serde_json::from_str(data(&html)).expect("JSON");
    let sizes: Vec<usize> = BRANCHY.iter().map(|l| l.len()).collect();
    assert_eq!(outline["sizes"], serde_json::json!(sizes));
    assert_eq!(entries["entries"].as_array().map(Vec::len), Some(8));
}

#[test]
fn the_outlines_sizes_cut_the_deflated_entries_into_each_entry_as_written() {
    let secret = format!("ghp_{}", "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6");
    let filler: Vec<String> = (0..400)
        .map(|i| format!("filler {i} {}", "w".repeat(1000)))
        .collect();
    let with_secret = format!("my token is {secret} keep it");
    let mut texts: Vec<&str> = filler.iter().map(String::as_str).collect();
    texts.push(&with_secret);
    texts.extend(HOSTILE);
    let store = store_with(&texts);
    for options in ["{}", r#"{"redact":false}"#] {
        let html = render(&store, options);
        let data: serde_json::Value = serde_json::from_str(data(&html)).expect("JSON");
        let entries = miniz_oxide::inflate::decompress_to_vec_zlib(&unbase64(
            data["entriesDeflate"].as_str().expect("deflated"),
        ))
        .expect("zlib");
        let outline = outline(&html);
        let sizes = outline["sizes"].as_array().expect("sizes");
        assert_eq!(sizes.len(), texts.len());
        let parsed: serde_json::Value = serde_json::from_slice(&entries).expect("JSON");
        // As the page reads them: from after the '[', each entry then one ','.
        let mut at = 1;
        for (i, size) in sizes.iter().enumerate() {
            let size = size.as_u64().expect("a size") as usize;
            let one: serde_json::Value =
                serde_json::from_slice(&entries[at..at + size]).expect("one entry");
            assert_eq!(one, parsed[i]);
            at += size + 1;
        }
        assert_eq!(at, entries.len());
        let shown = parsed[400]["message"]["content"].as_str().expect("text");
        match options {
            "{}" => assert_eq!(shown, "my token is [REDACTED:github-token] keep it"),
            _ => assert_eq!(shown, with_secret),
        }
    }
}

/// Redaction on this thread only.
const SEQUENTIAL: Pipeline = Pipeline {
    from: usize::MAX,
    chunk: usize::MAX,
};

/// The page with redaction on a second thread whatever the session's size, `chunk`
/// bytes of entries at a time.
fn pipelined(chunk: usize) -> Pipeline {
    Pipeline { from: 0, chunk }
}

fn render_with(store: &Store, options: &str, pipeline: Pipeline) -> String {
    let options = ViewOptions::from_json(options).expect("options");
    render_html_with(store, &options, pipeline).expect("render")
}

/// The entries a page carries, plain or deflated, as their JSON text.
fn carried_entries(html: &str) -> String {
    let data: serde_json::Value = serde_json::from_str(data(html)).expect("data is JSON");
    match data["entriesDeflate"].as_str() {
        Some(deflated) => String::from_utf8(
            miniz_oxide::inflate::decompress_to_vec_zlib(&unbase64(deflated)).expect("zlib"),
        )
        .expect("UTF-8"),
        None => data["entries"].to_string(),
    }
}

#[test]
fn a_deflate_stream_fed_in_pieces_writes_what_one_call_writes() {
    let corpus = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/interop/corpus/pi/pimono-before-compaction.jsonl"
    ))
    .expect("a corpus file");
    // Text that deflates poorly: every block a new run of digits.
    let noise: Vec<u8> = (0..40_000u64)
        .flat_map(|i| (i * 2_654_435_761 % 1_000_003).to_string().into_bytes())
        .collect();
    for text in [&corpus[..], &noise[..], b"", b"x"] {
        let whole = miniz_oxide::deflate::compress_to_vec_zlib(text, DEFLATE_LEVEL);
        for piece in [1, 7, 4096, 65_536, usize::MAX] {
            let mut deflater = Deflater::new();
            for part in text.chunks(piece.min(text.len().max(1))) {
                deflater.push(part).expect("push");
            }
            assert_eq!(
                deflater.finish().expect("finish"),
                whole,
                "{} bytes in pieces of {piece}",
                text.len()
            );
        }
    }
}

/// A private key block (PEM) of four lines.
fn pem() -> String {
    let body: Vec<String> = (0..4)
        .map(|i| format!("MIIEow{i}AKCAQEA7xQ2vR9kL3mN8pT1wZ5yB6cD0fG4hJ2sU7eK9qX3aV1nM5rW8tYo"))
        .collect();
    format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
        body.join("\n")
    )
}

/// Secrets of several kinds (each prefix apart from its body, so that no line of this
/// file looks like a credential): for each, a part of it that must not be in a page,
/// and how it is planted in a JSON string (the raw JSON of the string's content): as
/// written, with an escape in its keyword, in a JSON text held in a string (a Codex
/// tool call's arguments), or with escaped newlines.
fn planted_secrets() -> Vec<(&'static str, String)> {
    let github = "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6";
    let aws = "QW3ER7TY2UI5OP4A";
    let escaped = "ZX6CV2BN7ML3KJ4H";
    let nested = "Zq7Xw3Er9Ty5Ui1Op8As4Df6Gh2Jk0Lz5Xc7";
    vec![
        (github, format!("my token is ghp_{github} keep it")),
        (aws, format!("export KEY=AKIA{aws}")),
        // `\u0041` spells the `A` of AKIA.
        (escaped, format!("key \\u0041KIA{escaped}")),
        (
            nested,
            format!("{{\\\"command\\\":\\\"push ghp_{nested}\\\"}}"),
        ),
        (
            "AKCAQEA7xQ2vR9kL3mN8pT1wZ5yB6cD0fG4hJ2sU7eK9qX3aV1nM5rW8tYo",
            pem().replace('\n', "\\n"),
        ),
    ]
}

/// A session of `filler` messages of about `size` bytes each, with the planted secrets'
/// raw JSON string contents in messages at `at` (positions, in order).
fn planted_store(filler: usize, size: usize, at: &[usize]) -> Store {
    let store = Store::memory();
    let secrets = planted_secrets();
    let mut planted = secrets.iter().cycle();
    for i in 0..filler {
        let parent = match i {
            0 => "null".to_owned(),
            _ => format!("\"e-{}\"", i - 1),
        };
        let content = match at.contains(&i) {
            true => planted
                .next()
                .map(|(_, raw)| raw.clone())
                .unwrap_or_default(),
            false => format!("filler {i} {}", "lorem ipsum ".repeat(size / 12)),
        };
        store
            .append(format!(
                r#"{{"id":"e-{i}","parentId":{parent},"timestamp":{i},"type":"message","message":{{"role":"user","content":"{content}"}}}}"#
            ))
            .expect("append");
    }
    store
}

#[test]
fn pipelined_pages_are_the_sequential_pages_wherever_the_chunks_end() {
    let store = planted_store(600, 700, &[0, 1, 2, 3, 4, 150, 299, 300, 301, 599]);
    let sequential = render_with(&store, "{}", SEQUENTIAL);
    let entries = carried_entries(&sequential);
    for (secret, raw) in planted_secrets() {
        assert!(!entries.contains(secret), "a secret in the page: {raw}");
    }
    assert_eq!(entries.matches("[REDACTED:").count(), 10);
    for chunk in [1, 700, 2000, 64 * 1024, 400_000, usize::MAX] {
        assert_eq!(
            render_with(&store, "{}", pipelined(chunk)),
            sequential,
            "chunks of {chunk} bytes"
        );
    }
    assert_eq!(render_with(&store, "{}", Pipeline::DEFAULT), sequential);
    assert_eq!(render(&store, "{}"), sequential);
}

#[test]
fn pipelined_pages_are_the_sequential_pages_on_the_corpus() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/corpus");
    let mut stack = vec![root];
    let mut sessions = 0;
    let temp = tempfile::tempdir().expect("a temporary folder");
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("the corpus") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read(&path).expect("a corpus file");
            let Ok(imported) = crate::interop::import(None, &text) else {
                continue;
            };
            // Opened as `session view` opens a file: read-only, each entry as written
            // (an import may keep what an append would refuse).
            let file = temp.path().join(format!("{sessions}.jsonl"));
            std::fs::write(&file, imported.lines.join("\n") + "\n").expect("write");
            let options = crate::JsonlOptions {
                read_only: true,
                ..crate::JsonlOptions::default()
            };
            let (store, _) = Store::open_jsonl_with(&file, &options).expect("open");
            let sequential = render_with(&store, "{}", SEQUENTIAL);
            let pipelined = render_with(&store, "{}", pipelined(4096));
            assert!(pipelined == sequential, "{}", path.display());
            sessions += 1;
        }
    }
    assert!(sessions >= 40, "{sessions} sessions");
}

#[test]
fn a_session_redaction_takes_across_the_deflate_size_is_carried_as_its_redacted_size_says() {
    // A private key of ~300 bytes becomes `[REDACTED:private-key]`: from just above the
    // deflate size to below it; ten AWS key ids grow by 8 bytes each: from just below it
    // to above.
    let aws: Vec<String> = (b'A'..b'K')
        .map(|c| format!("AKIA{}{}", "QW3ER7TY2UI5OP4", char::from(c)))
        .collect();
    for (content, shrinks) in [(pem(), true), (aws.join(" "), false)] {
        let (_, overhead) = store_of_one(content.len());
        let filler = match shrinks {
            true => DEFLATE_FROM + 10 - overhead,
            false => DEFLATE_FROM - 10 - overhead,
        };
        let store = store_with(&["x".repeat(filler).as_str(), content.as_str()]);
        let sequential = render_with(&store, "{}", SEQUENTIAL);
        let data: serde_json::Value = serde_json::from_str(data(&sequential)).expect("JSON");
        assert_eq!(data.get("entries").is_some(), shrinks, "shrinks: {shrinks}");
        assert_eq!(data.get("entriesDeflate").is_none(), shrinks);
        for chunk in [1, usize::MAX] {
            assert_eq!(render_with(&store, "{}", pipelined(chunk)), sequential);
        }
    }
}

#[test]
fn a_key_spelled_with_an_escape_after_other_escapes_is_still_redacted() {
    // Terminal colours (`\u001b`) come first: the quick test must look past every `\u`
    // to the one that spells the key's `A`.
    let key = "QW3ER7TY2UI5OP4B";
    let line = format!(
        r#"{{"id":"a","parentId":null,"timestamp":1,"type":"message","message":{{"role":"user","content":"\u001b[31mred\u001b[0m \u0041KIA{key}"}}}}"#
    );
    let redactor = crate::secrets::Redactor::standard().expect("the default rules");
    let redacted = redactor.redact_json_bytes(line.as_bytes());
    let text = String::from_utf8_lossy(&redacted);
    assert!(!text.contains(key), "{text}");
    assert!(text.contains(r"[0m [REDACTED:aws-access-key-id]"), "{text}");
}
