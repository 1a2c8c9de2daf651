//! The peer's tokenizer: tantivy's default (`SimpleTokenizer`: runs of alphanumeric
//! characters) for everything but CJK, and overlapping bigrams for a run of CJK
//! characters (a run of one character is one token), so that a CJK query of two or more
//! characters is a phrase of bigrams found inside any run. Lowercased and tokens over 40
//! bytes dropped, as tantivy's `default` analyzer does.

use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, TextAnalyzer, Token, TokenStream, Tokenizer,
};

/// The name the analyzer is registered under.
pub const NAME: &str = "words_cjk_bigrams";

/// Han, kana, Hangul and their extensions: the scripts written without spaces.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3100..=0x312F | 0x31F0..=0x31FF | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CjkBigrams::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .build()
}

#[derive(Clone, Default)]
pub struct CjkBigrams {
    token: Token,
}

pub struct Stream<'a> {
    text: &'a str,
    /// The byte where scanning goes on.
    at: usize,
    /// Inside a CJK run: whether a token of it was given yet.
    run: Option<bool>,
    /// Whether a separator came since the last token: the next token's position then
    /// skips one, so that a phrase never spans a separator the query does not hold
    /// (`项目 目名` is not `项目名`).
    gap: bool,
    token: &'a mut Token,
}

impl Tokenizer for CjkBigrams {
    type TokenStream<'a> = Stream<'a>;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> Stream<'a> {
        self.token.reset();
        Stream {
            text,
            at: 0,
            run: None,
            gap: false,
            token: &mut self.token,
        }
    }
}

impl Stream<'_> {
    fn emit(&mut self, from: usize, to: usize) -> bool {
        self.token.text.clear();
        self.token.text.push_str(&self.text[from..to]);
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = self.token.position.wrapping_add(1 + usize::from(self.gap));
        self.gap = false;
        true
    }
}

impl TokenStream for Stream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            let mut chars = self.text[self.at..].chars();
            let Some(c) = chars.next() else {
                return false;
            };
            let start = self.at;
            let next = start + c.len_utf8();
            if let Some(given) = self.run {
                // `c` is CJK: a bigram with the next one, or the run's end.
                match chars.next().filter(|&d| is_cjk(d)) {
                    Some(d) => {
                        self.run = Some(true);
                        self.at = next;
                        return self.emit(start, next + d.len_utf8());
                    }
                    None => {
                        self.run = None;
                        self.at = next;
                        if !given {
                            return self.emit(start, next);
                        }
                    }
                }
                continue;
            }
            if is_cjk(c) {
                self.run = Some(false);
                continue;
            }
            if !c.is_alphanumeric() {
                self.gap = true;
                self.at = next;
                continue;
            }
            let end = self.text[start..]
                .char_indices()
                .find(|&(_, d)| !d.is_alphanumeric() || is_cjk(d))
                .map_or(self.text.len(), |(i, _)| start + i);
            self.at = end;
            return self.emit(start, end);
        }
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// The tokens of `text` through [`analyzer`], each with its position.
pub fn tokens(text: &str) -> Vec<(usize, String)> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(t) = stream.next() {
        out.push((t.position, t.text.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lowercased_and_cjk_runs_become_bigrams() {
        let texts: Vec<String> = tokens("读取 README.md，告诉我项目名 会话12 Ünï 字")
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(
            texts,
            [
                "读取", "readme", "md", "告诉", "诉我", "我项", "项目", "目名", "会话", "12",
                "ünï", "字"
            ]
        );
    }

    #[test]
    fn a_separator_leaves_a_gap_in_the_positions_and_a_run_does_not() {
        let positions =
            |text: &str| -> Vec<usize> { tokens(text).into_iter().map(|(p, _)| p).collect() };
        assert_eq!(positions("项目名"), [0, 1]);
        assert_eq!(positions("项目 目名"), [0, 2]);
        assert_eq!(positions("abc项目"), [0, 1]);
        assert_eq!(positions("tiny-pi"), [0, 2]);
    }
}
