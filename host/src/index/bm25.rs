//! Ranking: a tokeniser and BM25F over documents with weighted fields.
//!
//! Tokens are lowercase runs of letters and digits, split further at
//! snake_case, kebab-case, camelCase and acronym boundaries
//! (`getHTTPResponse` is `get http response`); a few English function
//! words are dropped, and plurals are folded (`issues` and `issue` match).
//!
//! Scoring is BM25F (Robertson and Zaragoza): a term's frequency in each
//! field is normalised by that field's length against its average, weighted
//! by the field, and summed; the sum saturates with `K1` and is multiplied
//! by the term's inverse document frequency, `ln(1 + (N - df + 0.5) / (df +
//! 0.5))`. Field weights (see [`Field`]): a tool's name counts most, its
//! description next, its parameters' names and descriptions less, and its
//! server's name and description least, so a query naming a server finds
//! its tools without outranking a tool named for the query.

/// BM25's term-frequency saturation.
pub const K1: f64 = 1.2;
/// How much a field's length normalises its term frequencies.
pub const B: f64 = 0.75;

/// Words too common in tool descriptions to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of", "on",
    "or", "that", "the", "this", "to", "with",
];

/// The fields of a document, in [`Document::fields`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Name,
    Description,
    Params,
    Server,
}

impl Field {
    pub const ALL: [Field; 4] = [
        Field::Name,
        Field::Description,
        Field::Params,
        Field::Server,
    ];

    pub fn weight(self) -> f64 {
        match self {
            Field::Name => 3.0,
            Field::Description => 1.0,
            Field::Params => 0.6,
            Field::Server => 0.4,
        }
    }
}

/// One searchable document: the tokens of each field.
#[derive(Debug, Clone, Default)]
pub struct Document {
    pub fields: [Vec<String>; 4],
}

impl Document {
    /// A document from the text of each field, tokenised.
    pub fn new(texts: [&str; 4]) -> Self {
        Self {
            fields: texts.map(tokenize),
        }
    }
}

/// The tokens of `text` (see the module docs).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        for word in split_case(run) {
            let word = word.to_lowercase();
            if !STOP_WORDS.contains(&word.as_str()) {
                tokens.push(fold_plural(word));
            }
        }
    }
    tokens
}

/// `run` split where camelCase or an acronym ends: `getHTTPResponse` is
/// `get`, `HTTP`, `Response`; digits stay with what precedes them.
fn split_case(run: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = run.char_indices().collect();
    let mut words = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary = c.is_uppercase()
            && (prev.is_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_uppercase() && next_lower));
        if boundary {
            words.push(&run[start..at]);
            start = at;
        }
    }
    if start < run.len() {
        words.push(&run[start..]);
    }
    words
}

/// `issues` -> `issue`, `entries` -> `entry`; leaves `status`, `address`,
/// `analysis` and short words alone.
fn fold_plural(word: String) -> String {
    if word.len() > 4 && word.ends_with("ies") {
        return format!("{}y", &word[..word.len() - 3]);
    }
    let keep = word.len() <= 3 || ["ss", "us", "is"].iter().any(|end| word.ends_with(end));
    match word.strip_suffix('s') {
        Some(stem) if !keep => stem.to_string(),
        _ => word,
    }
}

/// The `limit` best documents for `query`, best first: (index, score),
/// only documents that match at least one query term. Ties keep the
/// documents' order.
pub fn rank(docs: &[Document], query: &str, limit: usize) -> Vec<(usize, f64)> {
    let mut terms = tokenize(query);
    terms.sort();
    terms.dedup();
    if terms.is_empty() || docs.is_empty() {
        return Vec::new();
    }
    let n = docs.len() as f64;
    let average: Vec<f64> = Field::ALL
        .iter()
        .enumerate()
        .map(|(f, _)| {
            let total: usize = docs.iter().map(|d| d.fields[f].len()).sum();
            (total as f64 / n).max(1.0)
        })
        .collect();
    let idf: Vec<f64> = terms
        .iter()
        .map(|term| {
            let df = docs
                .iter()
                .filter(|d| d.fields.iter().any(|f| f.contains(term)))
                .count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let mut scored: Vec<(usize, f64)> = docs
        .iter()
        .enumerate()
        .filter_map(|(i, doc)| {
            let score: f64 = terms
                .iter()
                .zip(&idf)
                .map(|(term, idf)| {
                    let tf: f64 = Field::ALL
                        .iter()
                        .enumerate()
                        .map(|(f, field)| {
                            let tokens = &doc.fields[f];
                            let count = tokens.iter().filter(|t| *t == term).count() as f64;
                            let norm = 1.0 - B + B * tokens.len() as f64 / average[f];
                            field.weight() * count / norm
                        })
                        .sum();
                    idf * tf / (K1 + tf)
                })
                .sum();
            (score > 0.0).then_some((i, score))
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(limit);
    scored
}
