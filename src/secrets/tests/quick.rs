//! The quick keyword test that runs before the exact check finds every match it must.

use super::random::{B64, random};
use super::*;

/// One match of each rule whose keywords the quick test searches as written.
fn exact_case_examples() -> Vec<(&'static str, String)> {
    let body: Vec<String> = (0..3).map(|i| random(B64, 64, 80 + i)).collect();
    vec![
        (
            "private-key",
            format!(
                "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
                body.join("\n")
            ),
        ),
        (
            "aws-access-key-id",
            format!("AKIA{}", random(UPPER32, 16, 83)),
        ),
        (
            "gcp-service-account-key-id",
            format!("\"private_key_id\": \"{}\"", random(HEX, 40, 84)),
        ),
        (
            "anthropic-api-key",
            format!("sk-ant-api03-{}", random(URLSAFE, 93, 85)),
        ),
        (
            "openai-api-key",
            format!("sk-proj-{}", random(URLSAFE, 48, 86)),
        ),
        ("google-api-key", format!("AIza{}", random(URLSAFE, 35, 87))),
        ("huggingface-token", format!("hf_{}", random(ALNUM, 34, 88))),
        ("github-token", format!("ghp_{}", random(ALNUM, 36, 89))),
        ("gitlab-token", format!("glpat-{}", random(ALNUM, 20, 90))),
        (
            "slack-token",
            format!("xoxb-123456789012-{}", random(ALNUM, 24, 91)),
        ),
        (
            "slack-webhook",
            format!("https://hooks.slack.com/services/{}", random(ALNUM, 30, 92)),
        ),
        (
            "discord-webhook",
            format!(
                "https://discord.com/api/webhooks/123456789/{}",
                random(URLSAFE, 40, 93)
            ),
        ),
        ("stripe-key", format!("sk_live_{}", random(ALNUM, 24, 94))),
        (
            "jwt",
            format!(
                "eyJ{}.eyJ{}.{}",
                random(URLSAFE, 20, 95),
                random(URLSAFE, 20, 96),
                random(URLSAFE, 30, 97)
            ),
        ),
        (
            "url-password",
            format!(
                "postgres://app:{}@db.internal:5432/app",
                random(ALNUM, 16, 98)
            ),
        ),
    ]
}

/// `text` with every occurrence of `keyword` (ASCII case ignored) in the other case.
fn keyword_case_flipped(text: &str, keyword: &str) -> String {
    let (lower, keyword) = (text.to_ascii_lowercase(), keyword.to_ascii_lowercase());
    let mut out = text.as_bytes().to_vec();
    let mut from = 0;
    while let Some(at) = lower[from..].find(&keyword) {
        let at = from + at;
        for b in &mut out[at..at + keyword.len()] {
            *b = if b.is_ascii_lowercase() {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            };
        }
        from = at + keyword.len();
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn a_rule_whose_keywords_are_searched_as_written_matches_only_with_them_so() {
    let redactor = Redactor::standard().unwrap();
    let quick = redactor.quick.as_ref().expect("the quick test is built");
    let examples = exact_case_examples();
    for rule in DEFAULT_RULES.iter().filter(|r| r.exact_case) {
        let (_, text) = examples
            .iter()
            .find(|(name, _)| *name == rule.name)
            .unwrap_or_else(|| panic!("no example of {}", rule.name));
        assert_eq!(rules_in(text), vec![rule.name.to_owned()], "{}", rule.name);
        assert!(quick.any(text.as_bytes()), "{}", rule.name);
        // The same text with a keyword in another case is no match of the rule: the
        // quick test, which does not find it so spelled, loses nothing.
        for keyword in rule.keywords.iter().filter(|k| text.contains(*k)) {
            assert!(keyword.bytes().any(|b| b.is_ascii_alphabetic()) || *keyword == "://");
            let flipped = keyword_case_flipped(text, keyword);
            if flipped != *text {
                assert!(
                    !rules_in(&flipped).contains(&rule.name.to_owned()),
                    "{} with {keyword} in another case",
                    rule.name
                );
            }
        }
    }
}

#[test]
fn the_quick_test_finds_every_keyword_in_every_case_its_rule_can_match() {
    let redactor = Redactor::standard().unwrap();
    let quick = redactor.quick.as_ref().expect("the quick test is built");
    let filler = "a".repeat(FOLD_BLOCK + 64);
    let mut spellings_checked = 0;
    for rule in DEFAULT_RULES {
        for keyword in rule.keywords {
            let mut spellings = vec![(*keyword).to_owned()];
            if !rule.exact_case {
                spellings.push(keyword.to_ascii_uppercase());
                spellings.push(keyword_case_flipped(keyword, keyword));
            }
            for spelling in spellings {
                // Anywhere in the text, across the boundary of the lowercased blocks too.
                for at in [
                    0,
                    100,
                    FOLD_BLOCK - spelling.len() + 1,
                    FOLD_BLOCK - 1,
                    FOLD_BLOCK,
                ] {
                    let text = format!("{}{spelling}{}", &filler[..at], &filler[at..]);
                    assert!(quick.any(text.as_bytes()), "{spelling} at {at}");
                    spellings_checked += 1;
                }
            }
        }
    }
    for trigger in LINE_TRIGGERS {
        assert!(
            quick.any(format!("{filler}{trigger}").as_bytes()),
            "{trigger}"
        );
        assert!(
            quick.any(
                trigger
                    .to_ascii_uppercase()
                    .replace("\\U", "\\u")
                    .as_bytes()
            )
        );
    }
    assert!(spellings_checked > 300);
    assert!(!quick.any(filler.as_bytes()));
    assert!(!quick.any(b""));
}

#[test]
fn an_assignment_across_the_quick_tests_block_boundary_is_found() {
    let value = random(ALNUM, 24, 99);
    for at in FOLD_BLOCK - 12..FOLD_BLOCK + 2 {
        let text = format!("{} PassWord={value}", "b".repeat(at));
        assert_eq!(rules_in(&text), vec![ASSIGNMENT_RULE.to_owned()], "at {at}");
    }
}
