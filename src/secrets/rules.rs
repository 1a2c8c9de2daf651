//! The default rule set: the secrets that matter in a coding agent's transcript, each
//! written from its vendor's documented key format, with the keywords that must occur
//! in a text before its pattern is run.
//!
//! Patterns are `regex` syntax over bytes, ASCII word boundaries only (`(?-u:\b)`: the
//! lazy DFA handles them on any text, where a Unicode `\b` falls back to a slower
//! engine on non-ASCII input). Where only part of a match is the secret (the password
//! of a URL, the value of `password=`), the pattern names that part `secret`, and only
//! it is reported and redacted.

/// What a match must also pass to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// The pattern is specific enough.
    None,
    /// The value is not a placeholder (`password`, `${DB_PASSWORD}`, `<token>`, `***`).
    NotPlaceholder,
    /// The value is not a placeholder and looks random: letters and digits, and at
    /// least [`MIN_ENTROPY`] bits of Shannon entropy per byte.
    HighEntropy,
}

/// The least Shannon entropy, in bits per byte, of a value that counts as random for
/// [`Check::HighEntropy`]: English words and identifiers score below it, generated
/// keys and passwords of 12 or more characters above it.
pub(crate) const MIN_ENTROPY: f64 = 3.0;

/// One default rule.
pub(crate) struct DefaultRule {
    pub name: &'static str,
    pub pattern: &'static str,
    /// Literals (ASCII, matched ignoring case) of which one occurs in every match.
    pub keywords: &'static [&'static str],
    /// When not empty, each keyword counts only followed by one of these.
    pub suffixes: &'static [&'static str],
    /// A byte that must occur too (the `@` of a URL with a password): a text with a
    /// keyword but without it is passed over.
    pub also: Option<u8>,
    /// Every match spells one of the keywords exactly as written (a vendor's prefix in
    /// a case-sensitive pattern, or a keyword without letters), so a text is first
    /// searched for them as they are; otherwise in any ASCII case.
    pub exact_case: bool,
    pub check: Check,
}

/// The name of the rule that also judges a string by the member it is the value of
/// (`{"password": "…"}`): the same rule as `password = …` in text.
pub(crate) const ASSIGNMENT_RULE: &str = "secret-assignment";

/// Member names whose string value is judged as a [`ASSIGNMENT_RULE`] value (the name
/// ends in one of these words; ASCII case ignored).
pub(crate) const ASSIGNMENT_KEYS: &str = r"(?i)^(?:[a-z0-9]*[_.-])*(?:password|passwd|pwd|secret|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret|access[_-]?token|auth[_-]?token|api[_-]?token|token)$";

/// The default rules, in the order their matches win a tie.
pub(crate) const DEFAULT_RULES: &[DefaultRule] = &[
    // Private key blocks (PEM, OpenSSH, PGP): from BEGIN to END, or to the end of the
    // text when it was cut. A real key has a 64-character base64 line soon after its
    // header; a placeholder (`-----BEGIN PRIVATE KEY-----\n...`) has none.
    DefaultRule {
        name: "private-key",
        pattern: r"-----BEGIN[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----[\s\S]{0,300}?[A-Za-z0-9+/]{60}[\s\S]*?(?:-----END[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----|\z)",
        keywords: &["-----BEGIN"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // AWS access key ids: a four-letter prefix (AKIA long-term, ASIA temporary, ABIA
    // and ACCA for other services) and 16 characters of base32.
    DefaultRule {
        name: "aws-access-key-id",
        pattern: r"(?-u:\b)(?P<secret>(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})(?-u:\b)",
        keywords: &["AKIA", "ASIA", "ABIA", "ACCA"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // AWS secret access keys have no prefix: 40 base64 characters, recognised by the
    // name they are assigned to (aws_secret_access_key, AWS_SECRET_ACCESS_KEY,
    // SecretAccessKey in JSON).
    DefaultRule {
        name: "aws-secret-access-key",
        pattern: r#"(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret_?key)["']?\s*[:=]\s*["']?(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|\z)"#,
        // Every spelling holds "secret", the assignment rule's keyword too: one keyword
        // for both keeps the prefilter small.
        keywords: &["secret"],
        suffixes: &[],
        also: None,
        exact_case: false,
        check: Check::None,
    },
    // A GCP service-account key file: its private key is a private-key block; its
    // private_key_id (40 hex) names the key.
    DefaultRule {
        name: "gcp-service-account-key-id",
        pattern: r#""private_key_id"\s*:\s*"(?P<secret>[0-9a-f]{40})""#,
        keywords: &["private_key_id"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // Azure storage and Service Bus / Event Hubs connection strings: AccountKey= is 64
    // bytes of base64 (88 characters), SharedAccessKey= 32 bytes (44).
    DefaultRule {
        name: "azure-connection-string",
        pattern: r"(?i:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{42,86}={0,2})",
        keywords: &["accountkey=", "sharedaccesskey="],
        suffixes: &[],
        also: None,
        exact_case: false,
        check: Check::None,
    },
    // Anthropic: sk-ant-api03-… (and admin keys sk-ant-admin01-…).
    DefaultRule {
        name: "anthropic-api-key",
        pattern: r"(?-u:\b)(?P<secret>sk-ant-[a-z]{3,10}[0-9]{2}-[A-Za-z0-9_-]{32,})",
        keywords: &["sk-ant-"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // OpenAI: project, service-account and admin keys (sk-proj-, sk-svcacct-,
    // sk-admin-), and the older sk-…T3BlbkFJ… form ("OpenAI" in base64 in the middle).
    DefaultRule {
        name: "openai-api-key",
        pattern: r"(?-u:\b)(?P<secret>sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})",
        keywords: &["sk-proj-", "sk-svcacct-", "sk-admin-", "T3BlbkFJ"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // Google API keys: AIza and 35 characters.
    DefaultRule {
        name: "google-api-key",
        pattern: r"(?-u:\b)(?P<secret>AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|\z)",
        keywords: &["AIza"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // Hugging Face user access tokens: hf_ and 34 letters.
    DefaultRule {
        name: "huggingface-token",
        pattern: r"(?-u:\b)(?P<secret>hf_[A-Za-z0-9]{34,40})(?-u:\b)",
        keywords: &["hf_"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // GitHub: classic tokens (ghp_ personal, gho_ OAuth, ghu_ user-to-server, ghs_
    // server-to-server, ghr_ refresh) are the prefix and 36 base62 characters;
    // fine-grained personal tokens are github_pat_, 22 characters, _ and 59.
    DefaultRule {
        name: "github-token",
        pattern: r"(?-u:\b)(?P<secret>gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})(?-u:\b)",
        keywords: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // GitLab personal access tokens: glpat- and 20 characters; routable tokens (GitLab
    // 17.x) are 37 to 310 characters after the prefix, with dotted parts at the end.
    DefaultRule {
        name: "gitlab-token",
        pattern: r"(?-u:\b)(?P<secret>glpat-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+){0,2})",
        keywords: &["glpat-"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // Slack tokens: xoxb- (bot), xoxp- (user), xoxa-, xoxr- (refresh), xoxs-, xoxe-,
    // xoxo-: the prefix, a numeric team or user id, then more.
    DefaultRule {
        name: "slack-token",
        pattern: r"(?-u:\b)(?P<secret>xox[abeoprs]-[0-9]{6,}-[0-9A-Za-z-]{10,})",
        keywords: &["xox"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // Slack incoming webhooks and workflow triggers: the URL is the credential.
    DefaultRule {
        name: "slack-webhook",
        pattern: r"(?P<secret>https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,})",
        keywords: &["hooks.slack.com/"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // Discord webhooks: /api/webhooks/<id>/<token>.
    DefaultRule {
        name: "discord-webhook",
        pattern: r"(?P<secret>https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{5,}/[A-Za-z0-9_-]{20,})",
        keywords: &["/api/webhooks/"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // Stripe secret and restricted keys, live and test.
    DefaultRule {
        name: "stripe-key",
        pattern: r"(?-u:\b)(?P<secret>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,})",
        keywords: &["sk_live_", "rk_live_", "sk_test_", "rk_test_"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // JSON Web Tokens: three base64url parts, the first two JSON objects ("eyJ" is
    // `{"` in base64).
    DefaultRule {
        name: "jwt",
        pattern: r"(?-u:\b)(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,})",
        keywords: &["eyJ"],
        suffixes: &[],
        also: None,
        exact_case: true,
        check: Check::None,
    },
    // A URL with a password: scheme://user:password@host. Only the password is the
    // secret; a placeholder (`user:password@`, `:${PGPASSWORD}@`) is not one. The
    // user's and the password's characters are classed by bytes (`(?-u:…)`: anything
    // but ASCII whitespace and the URL's delimiters), which compiles in a seventh of the
    // time of the same class over Unicode repeated 128 times; the one difference is
    // that a Unicode space (U+00A0, U+2028, …) inside a password is taken as part of it.
    DefaultRule {
        name: "url-password",
        pattern: r#"(?i)(?-u:\b)[a-z][a-z0-9+.-]{1,20}://(?-u:[^\s:/?#@"'<>\[\]]){0,128}:(?P<secret>(?-u:[^\s:/?#@"'<>\[\]]){3,128})@[A-Za-z0-9.\[\]-]"#,
        keywords: &["://"],
        suffixes: &[],
        also: Some(b'@'),
        exact_case: true,
        check: Check::NotPlaceholder,
    },
    // password = …, secret: …, api_key=… and the like in text (shell, .env, YAML,
    // code), with a value that looks random.
    DefaultRule {
        name: ASSIGNMENT_RULE,
        pattern: r#"(?i)(?:password|passwd|pwd|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|access[_-]?token|auth[_-]?token|api[_-]?token)["']?\s{0,4}(?::|=|:=|=>)\s{0,4}["']?(?P<secret>[A-Za-z0-9+/=_\-!@#$%^&*.~]{8,128})"#,
        keywords: ASSIGNMENT_NAMES,
        suffixes: ASSIGNMENT_SUFFIXES,
        also: None,
        exact_case: false,
        check: Check::HighEntropy,
    },
];

/// The names the assignment rule looks for; its keywords are each followed by one of
/// [`ASSIGNMENT_SUFFIXES`], so that `apiKeySource` or `pwd` as a command does not send a
/// text to the rule.
const ASSIGNMENT_NAMES: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "api_key",
    "api-key",
    "apikey",
    "access_key",
    "access-key",
    "accesskey",
    "private_key",
    "private-key",
    "privatekey",
    "access_token",
    "access-token",
    "accesstoken",
    "auth_token",
    "auth-token",
    "authtoken",
    "api_token",
    "api-token",
    "apitoken",
];

/// What may follow a name in an assignment: a quote (also as the JSON escape `\"` in a
/// raw line), a space, `=` or `:`.
const ASSIGNMENT_SUFFIXES: &[&str] = &["\"", "\\\"", "'", " ", "=", ":"];

/// Whether `value` is a placeholder rather than a secret: a variable reference, a
/// template slot, a run of one masking character, or a word that names the value.
pub(crate) fn is_placeholder(value: &[u8]) -> bool {
    let lower = value.to_ascii_lowercase();
    const WORDS: &[&[u8]] = &[
        b"password",
        b"passwd",
        b"pass",
        b"pwd",
        b"secret",
        b"changeme",
        b"example",
        b"redacted",
        b"placeholder",
        b"your_password",
        b"yourpassword",
        b"mypassword",
        b"token",
    ];
    if WORDS.contains(&lower.as_slice()) {
        return true;
    }
    let first = value.first().copied().unwrap_or(b'*');
    let last = value.last().copied().unwrap_or(b'*');
    matches!(first, b'$' | b'<' | b'{' | b'%')
        || (first == b'[' && last == b']')
        || value.iter().all(|&b| b == first)
        || lower.starts_with(b"your")
        || lower.contains(&b'*')
        || lower.windows(7).any(|w| w == b"example" || w == b"redacte")
}

/// Whether `value` passes [`Check::HighEntropy`].
pub(crate) fn looks_random(value: &[u8]) -> bool {
    let letters = value.iter().any(u8::is_ascii_alphabetic);
    let digits = value.iter().any(u8::is_ascii_digit);
    letters && digits && !is_placeholder(value) && entropy(value) >= MIN_ENTROPY
}

/// Shannon entropy of `value`'s bytes, in bits per byte.
pub(crate) fn entropy(value: &[u8]) -> f64 {
    if value.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in value {
        counts[b as usize] += 1;
    }
    let n = value.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}
