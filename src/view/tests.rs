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
