//! What the view's cost asked of the rule set (issue 36): the default rules are compiled
//! on first use, so each must compile, and a text compiles only the rules it triggers.

use super::*;

#[test]
fn every_default_rule_compiles_on_first_use() {
    let redactor = Redactor::new(&SecretsOptions::default()).expect("the default rules");
    assert_eq!(redactor.rules.len(), DEFAULT_RULES.len());
    for rule in &redactor.rules {
        assert!(
            rule.compiled.get().is_none(),
            "{} compiled early",
            rule.name
        );
        assert!(rule.regex().is_some(), "{} does not compile", rule.name);
    }
}

#[test]
fn a_text_compiles_only_the_rules_it_triggers() {
    let redactor = Redactor::new(&SecretsOptions::default()).expect("the default rules");
    let key = format!("ghp_{}", random(ALNUM, 36, 7));
    let line = format!(r#"{{"id":"a","text":"plain words, then {key}"}}"#);
    assert_eq!(
        redactor.redact_json_strings(&line),
        r#"{"id":"a","text":"plain words, then [REDACTED:github-token]"}"#
    );
    let compiled: Vec<&str> = redactor
        .rules
        .iter()
        .filter(|r| r.compiled.get().is_some())
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(compiled, ["github-token"]);
}
