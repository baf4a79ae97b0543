//! BM25 over the corpus: the tokenizer, the term-major CSR postings, and one-pass query scoring.
//!
//! The tokenizer reproduces the common "Lucene English" pipeline that bm25s also uses, so the two
//! can be compared term for term: lowercase, Unicode word runs of two or more characters (the
//! regex `\w\w+`), the 33-word Lucene English stop set, then the Snowball English stemmer.
//! Scoring is the Lucene BM25 variant: `idf = ln(1 + (N - df + 0.5) / (df + 0.5))` and
//! `tf / (tf + k1 (1 - b + b dl / avgdl))`; `dl` counts tokens after stopword removal.
//!
//! Postings are term-major (CSR): the terms are sorted, and each term owns one contiguous run of
//! `(chunk, tf)` pairs in ascending chunk order, each posting's score contribution (its impact)
//! computed once at load.
//!
//! A chunk's score is the sum of its impacts under the query's tokens, added in query-token
//! order from zero, so scores are the same bits on every run and at every thread count. The
//! search is MaxScore ([`Bm25Index::search_terms`]): the terms are ordered by the largest impact
//! each can add, and a chunk found only under terms whose largest impacts cannot together beat
//! the `k`-th score is never scored. Where the strongest term is rare beside the rest, every
//! chunk under it is scored first, so the `k`-th score starts near its final value. The other
//! chunks are found a window of 4,096 chunks at a time: the terms that can still matter add
//! their postings into the window's running sums (each posting read once, in order, into memory
//! that stays cached), and a chunk whose sum could still enter is then scored from zero in query
//! order. What is skipped could not have entered, so the result is the exhaustive sum's, bit
//! for bit (a test holds it to that sum over random corpora, with and without the first pass
//! and with windows of several sizes).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};

/// The Lucene English stop set (as in Lucene's `EnglishAnalyzer` and bm25s' `"en"` list).
pub const STOPWORDS_EN: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// BM25 parameters. Defaults are the seed's operating point (k1 = 0.9, b = 0.4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation.
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 0.9, b: 0.4 }
    }
}

/// Lowercase, word runs of >= 2 chars, stopwords out, Snowball English stems.
pub struct Tokenizer {
    stemmer: Stemmer,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokenizer(lucene-english: lowercase, \\w\\w+, 33 stopwords, snowball english)")
    }
}

impl Default for Tokenizer {
    fn default() -> Self {
        Tokenizer::english()
    }
}

impl Tokenizer {
    /// The English tokenizer described in the module docs.
    pub fn english() -> Self {
        Tokenizer {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }

    /// A stable name for the tokenizer, recorded in the export's BM25 statistics.
    pub fn name(&self) -> &'static str {
        "lucene-english-v1"
    }

    /// Calls `emit` with each token of `text`, in order.
    pub fn for_each_token(&self, text: &str, mut emit: impl FnMut(&str)) {
        let lower = text.to_lowercase();
        let mut start: Option<usize> = None;
        let mut chars = 0usize;
        let flush = |s: usize, e: usize, n: usize, emit: &mut dyn FnMut(&str)| {
            if n < 2 {
                return;
            }
            let word = &lower[s..e];
            if STOPWORDS_EN.contains(&word) {
                return;
            }
            emit(&self.stemmer.stem(word));
        };
        for (i, c) in lower.char_indices() {
            if c.is_alphanumeric() || c == '_' {
                if start.is_none() {
                    start = Some(i);
                    chars = 0;
                }
                chars += 1;
            } else if let Some(s) = start.take() {
                flush(s, i, chars, &mut emit);
            }
        }
        if let Some(s) = start {
            flush(s, lower.len(), chars, &mut emit);
        }
    }

    /// The tokens of `text`, in order (duplicates kept).
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_token(text, |t| out.push(t.to_string()));
        out
    }
}

/// The BM25 index of one corpus: term dictionary, CSR postings and precomputed impacts.
#[derive(Debug, Clone)]
pub struct Bm25Index {
    params: Bm25Params,
    doc_len: Vec<u32>,
    avgdl: f64,
    /// Sorted and unique ([`Bm25Index::from_parts`] checks it): a term's id is its position,
    /// found by binary search, so the dictionary is held once (a hash map beside it would
    /// hold every term again: some 65 MB at a million chunks).
    terms: Vec<String>,
    offsets: Vec<u32>,
    post_chunk: Vec<u32>,
    /// Each posting's score contribution, computed from its term frequency, which is then
    /// dropped: a search reads only the impacts, and the frequencies are written from the
    /// [`Bm25Parts`] a build makes, so the index holds one array of postings fewer.
    impact: Vec<f32>,
    /// Each term's largest impact: what the term can add to a chunk's score, at most.
    term_max: Vec<f32>,
}

/// The persisted form of a [`Bm25Index`]: what the export writes (`bm25-stats.json` holds all
/// but the postings, `bm25-postings.parquet` the postings).
#[derive(Debug, Clone, PartialEq)]
pub struct Bm25Parts {
    /// BM25 parameters the index was built for.
    pub params: Bm25Params,
    /// Token count of each chunk (after stopword removal), by chunk index.
    pub doc_len: Vec<u32>,
    /// Sorted term dictionary.
    pub terms: Vec<String>,
    /// `offsets[t]..offsets[t+1]` is term `t`'s run in the postings (len = terms + 1).
    pub offsets: Vec<u32>,
    /// Chunk index of each posting, ascending within a term.
    pub post_chunk: Vec<u32>,
    /// Term frequency of each posting.
    pub post_tf: Vec<u32>,
}

/// A [`Bm25Index`] rebuilt from persisted parts whose term frequencies come a term at a time,
/// as a reader streams them: each term's impacts are made as its frequencies arrive, so the
/// frequencies (a `u32` per posting, 105 MB at a million chunks) are never held whole.
#[derive(Debug)]
pub struct Bm25Loading {
    /// The index, its impacts filled up to term `next`.
    index: Bm25Index,
    next: usize,
}

impl Bm25Loading {
    /// Checks the parts but the frequencies (which [`Bm25Loading::term`] takes): offsets one
    /// longer than the terms, ascending, ending at the postings' length; terms sorted and
    /// unique; every posting's chunk one of `doc_len`'s.
    pub fn new(
        params: Bm25Params,
        doc_len: Vec<u32>,
        terms: Vec<String>,
        offsets: Vec<u32>,
        post_chunk: Vec<u32>,
    ) -> Result<Bm25Loading, Bm25PartsError> {
        if offsets.len() != terms.len() + 1 {
            return Err(Bm25PartsError::OffsetsLength {
                offsets: offsets.len(),
                terms: terms.len(),
            });
        }
        if *offsets.last().unwrap_or(&0) as usize != post_chunk.len() {
            return Err(Bm25PartsError::PostingsLength);
        }
        if offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(Bm25PartsError::OffsetsNotAscending);
        }
        if terms.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Bm25PartsError::TermsNotSorted);
        }
        let n = doc_len.len();
        if let Some(&bad) = post_chunk.iter().find(|&&c| c as usize >= n) {
            return Err(Bm25PartsError::ChunkOutOfRange {
                chunk: bad,
                chunks: n,
            });
        }
        let avgdl = mean_len(&doc_len);
        for (t, w) in offsets.windows(2).enumerate() {
            if post_chunk[w[0] as usize..w[1] as usize]
                .windows(2)
                .any(|p| p[0] >= p[1])
            {
                return Err(Bm25PartsError::ChunksNotAscending { term: t });
            }
        }
        let impact = Vec::with_capacity(post_chunk.len());
        let term_max = Vec::with_capacity(terms.len());
        Ok(Bm25Loading {
            index: Bm25Index {
                params,
                doc_len,
                avgdl,
                terms,
                offsets,
                post_chunk,
                impact,
                term_max,
            },
            next: 0,
        })
    }

    /// The next term's frequencies, one per posting of its run: a run of another length, or
    /// a term past the last, is refused.
    pub fn term(&mut self, tfs: &[u32]) -> Result<(), Bm25PartsError> {
        let ix = &mut self.index;
        let t = self.next;
        if t + 1 >= ix.offsets.len() {
            return Err(Bm25PartsError::PostingsLength);
        }
        let (s, e) = (ix.offsets[t] as usize, ix.offsets[t + 1] as usize);
        if tfs.len() != e - s {
            return Err(Bm25PartsError::PostingsLength);
        }
        let n = ix.doc_len.len() as f64;
        let (k1, b, avgdl) = (ix.params.k1 as f64, ix.params.b as f64, ix.avgdl);
        let df = (e - s) as f64;
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        if tfs.contains(&0) {
            return Err(Bm25PartsError::ZeroFrequency { term: t });
        }
        for (&tf, &chunk) in tfs.iter().zip(&ix.post_chunk[s..e]) {
            let tf = tf as f64;
            let dl = ix.doc_len[chunk as usize] as f64;
            let norm = if avgdl > 0.0 {
                1.0 - b + b * dl / avgdl
            } else {
                1.0
            };
            ix.impact.push((idf * tf / (tf + k1 * norm)) as f32);
        }
        let max = ix.impact[s..e].iter().copied().fold(0.0f32, f32::max);
        ix.term_max.push(max);
        self.next += 1;
        Ok(())
    }

    /// The index, once every term's frequencies came.
    pub fn finish(self) -> Result<Bm25Index, Bm25PartsError> {
        if self.next != self.index.terms.len() {
            return Err(Bm25PartsError::PostingsLength);
        }
        Ok(self.index)
    }
}

/// Why persisted parts make no consistent [`Bm25Index`] ([`Bm25Index::from_parts`]): each names
/// the first inconsistency found, in the order the checks run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Bm25PartsError {
    /// `offsets` is not one entry longer than `terms`.
    #[error("offsets has {offsets} entries for {terms} terms (expected terms + 1)")]
    OffsetsLength {
        /// Entries of `offsets`.
        offsets: usize,
        /// Number of terms.
        terms: usize,
    },
    /// The two postings arrays differ in length, or from the last offset.
    #[error("postings arrays disagree with the offsets")]
    PostingsLength,
    /// An offset is smaller than the one before it.
    #[error("offsets are not ascending")]
    OffsetsNotAscending,
    /// A term is not greater than the one before it.
    #[error("terms are not sorted and unique")]
    TermsNotSorted,
    /// A term's postings are not in strictly ascending chunk order.
    #[error("the postings of term {term} are not in strictly ascending chunk order")]
    ChunksNotAscending {
        /// The term's id (its place in the dictionary).
        term: usize,
    },
    /// A posting with a term frequency of zero.
    #[error("a posting of term {term} has a term frequency of 0")]
    ZeroFrequency {
        /// The term's id (its place in the dictionary).
        term: usize,
    },
    /// A posting names a chunk the corpus does not have.
    #[error("posting names chunk {chunk} but the corpus has {chunks} chunks")]
    ChunkOutOfRange {
        /// The chunk the posting names.
        chunk: u32,
        /// Chunks in the corpus.
        chunks: usize,
    },
}

impl Bm25Parts {
    /// The index's parts over `texts` (chunk index = position), what an export writes.
    /// The texts are read once, in order, so an iterator that makes each as it goes holds one
    /// at a time.
    pub fn build(
        texts: impl IntoIterator<Item = impl AsRef<str>>,
        tokenizer: &Tokenizer,
        params: Bm25Params,
    ) -> Bm25Parts {
        let mut per_term: BTreeMap<String, Vec<(u32, u32)>> = BTreeMap::new();
        let mut doc_len = Vec::new();
        for (chunk, text) in texts.into_iter().enumerate() {
            let mut tf: BTreeMap<String, u32> = BTreeMap::new();
            let mut len = 0u32;
            tokenizer.for_each_token(text.as_ref(), |t| {
                len += 1;
                *tf.entry(t.to_string()).or_default() += 1;
            });
            doc_len.push(len);
            for (term, n) in tf {
                per_term.entry(term).or_default().push((chunk as u32, n));
            }
        }
        // the postings arrays at their exact size: grown by doubling, they could hold twice
        // the postings while the per-term lists are still held
        let total: usize = per_term.values().map(Vec::len).sum();
        let mut offsets = Vec::with_capacity(per_term.len() + 1);
        offsets.push(0);
        let mut parts = Bm25Parts {
            params,
            doc_len,
            terms: Vec::with_capacity(per_term.len()),
            offsets,
            post_chunk: Vec::with_capacity(total),
            post_tf: Vec::with_capacity(total),
        };
        for (term, postings) in per_term {
            parts.terms.push(term);
            for (c, n) in postings {
                parts.post_chunk.push(c);
                parts.post_tf.push(n);
            }
            parts.offsets.push(parts.post_chunk.len() as u32);
        }
        parts
    }

    /// Average chunk length in tokens (0 for no chunks).
    pub fn avgdl(&self) -> f64 {
        mean_len(&self.doc_len)
    }
}

/// The mean of the chunk lengths (0 for no chunks): BM25's `avgdl`.
fn mean_len(doc_len: &[u32]) -> f64 {
    let total: u64 = doc_len.iter().map(|&l| l as u64).sum();
    if doc_len.is_empty() {
        0.0
    } else {
        total as f64 / doc_len.len() as f64
    }
}

impl Bm25Index {
    /// Builds the index over `texts` (chunk index = position); see [`Bm25Parts::build`].
    pub fn build(
        texts: impl IntoIterator<Item = impl AsRef<str>>,
        tokenizer: &Tokenizer,
        params: Bm25Params,
    ) -> Bm25Index {
        Bm25Index::from_parts(Bm25Parts::build(texts, tokenizer, params))
            .expect("a freshly built index is consistent")
    }

    /// Rebuilds the index from its persisted parts, checking that they are consistent.
    pub fn from_parts(p: Bm25Parts) -> Result<Bm25Index, Bm25PartsError> {
        let Bm25Parts {
            params,
            doc_len,
            terms,
            offsets,
            post_chunk,
            post_tf,
        } = p;
        if post_tf.len() != post_chunk.len() {
            return Err(Bm25PartsError::PostingsLength);
        }
        let mut loading = Bm25Loading::new(params, doc_len, terms, offsets, post_chunk)?;
        for t in 0..loading.index.terms.len() {
            let run = loading.index.offsets[t] as usize..loading.index.offsets[t + 1] as usize;
            loading.term(&post_tf[run])?;
        }
        loading.finish()
    }

    /// Token count of each chunk, by chunk index.
    pub fn doc_len(&self) -> &[u32] {
        &self.doc_len
    }

    /// The sorted term dictionary; a term's id is its position.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// `offsets[t]..offsets[t + 1]` is term `t`'s run in the postings (terms + 1 entries).
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    /// The chunk of each posting, ascending within a term.
    pub fn post_chunk(&self) -> &[u32] {
        &self.post_chunk
    }

    /// Number of chunks indexed.
    pub fn num_chunks(&self) -> usize {
        self.doc_len.len()
    }

    /// Number of distinct terms.
    pub fn num_terms(&self) -> usize {
        self.terms.len()
    }

    /// Number of postings.
    pub fn num_postings(&self) -> usize {
        self.post_chunk.len()
    }

    /// Average chunk length in tokens.
    pub fn avgdl(&self) -> f64 {
        self.avgdl
    }

    /// The parameters the impacts were computed with.
    pub fn params(&self) -> Bm25Params {
        self.params
    }

    /// Term ids of the query's tokens (unknown tokens dropped, repeats kept: a repeated query
    /// term counts twice, as in Lucene's and bm25s' sums).
    pub fn query_terms(&self, tokenizer: &Tokenizer, query: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        tokenizer.for_each_token(query, |t| {
            if let Ok(id) = self.terms.binary_search_by(|term| term.as_str().cmp(t)) {
                ids.push(id as u32);
            }
        });
        ids
    }

    /// The top `k` chunks for `query` by BM25, as `(chunk, score)` with score > 0, ordered by
    /// descending score then ascending chunk index.
    pub fn search(&self, tokenizer: &Tokenizer, query: &str, k: usize) -> Vec<(u32, f32)> {
        let terms = self.query_terms(tokenizer, query);
        self.search_terms(&terms, k)
    }

    /// [`Bm25Index::search`] over already-resolved term ids, by MaxScore (see the module's
    /// documentation): the exhaustive sum's result, reading only the postings that could change
    /// it.
    ///
    /// Where the query's strongest term (the largest impact) is rare beside the rest, every
    /// chunk under it is scored first: those are the likeliest to rank, so the top `k` starts
    /// near its final floor and the weak terms' long postings drop out of the search early.
    /// The rest are found a window of chunks at a time under the other terms.
    pub fn search_terms(&self, terms: &[u32], k: usize) -> Vec<(u32, f32)> {
        if k == 0 || terms.is_empty() {
            return Vec::new();
        }
        // a window wider than the corpus would only clear more memory per query
        let window = WINDOW.min(self.doc_len.len().max(1));
        self.maxscore(terms, k, self.seeds_first(terms), window)
    }

    /// Term `t`'s number of postings.
    fn run_len(&self, t: u32) -> usize {
        (self.offsets[t as usize + 1] - self.offsets[t as usize]) as usize
    }

    /// The query's strongest term: the largest impact, the first in query order of equals.
    fn strongest(&self, terms: &[u32]) -> u32 {
        let max_of = |t: u32| self.term_max[t as usize];
        terms
            .iter()
            .copied()
            .reduce(|a, b| if max_of(b) > max_of(a) { b } else { a })
            .expect("terms is not empty")
    }

    /// Whether the strongest term's chunks are scored first: where scoring them (a seek per
    /// query token each) costs at most what adding every posting of the query once into a
    /// window would. A common strongest term is left to the windows with the rest.
    fn seeds_first(&self, terms: &[u32]) -> bool {
        let postings: usize = terms.iter().map(|&t| self.run_len(t)).sum();
        self.run_len(self.strongest(terms)) * terms.len() * SEEK_COST <= postings
    }

    /// MaxScore (`k` > 0, `terms` not empty), the strongest term's chunks scored first or not,
    /// with windows of `window` chunks (tests try several of both).
    fn maxscore(
        &self,
        terms: &[u32],
        k: usize,
        seed_first: bool,
        window: usize,
    ) -> Vec<(u32, f32)> {
        let seed = seed_first.then(|| self.strongest(terms));
        let mut best = Best::new(k);
        if let Some(seed) = seed {
            self.score_seed(terms, seed, &mut best);
        }
        WindowPass::new(self, terms, seed, window).run(&mut best);
        best.into_hits()
    }

    /// Term `t`'s postings, from the first.
    fn cursor(&self, t: u32) -> Cursor<'_> {
        let run = self.offsets[t as usize] as usize..self.offsets[t as usize + 1] as usize;
        Cursor {
            chunks: &self.post_chunk[run.clone()],
            impacts: &self.impact[run],
            at: 0,
        }
    }

    /// MaxScore's first pass: every chunk under the `seed` term, scored as the exhaustive sum
    /// scores it: from zero, in query order (one cursor per query token: a repeated term counts
    /// twice).
    fn score_seed(&self, terms: &[u32], seed: u32, best: &mut Best) {
        let mut probes: Vec<Cursor<'_>> = terms.iter().map(|&t| self.cursor(t)).collect();
        for &chunk in self.cursor(seed).chunks {
            let mut score = 0.0f32;
            for probe in &mut probes {
                probe.seek(chunk);
                if probe.current() == Some(chunk) {
                    score += probe.impact();
                }
            }
            best.offer(chunk, score);
        }
    }
}

/// MaxScore's window pass. Every chunk the first pass did not score is under some other term:
/// those terms' tokens (the lists, in query order) are read a window of chunks at a time. The
/// lists left (the accumulated ones) put their impacts into the window, each posting read once,
/// in chunk order, into memory that stays cached. A chunk found there that could still enter is
/// then scored from zero in query order, its accumulated lists' impacts read from the window and
/// the others' found by a seek.
struct WindowPass<'a> {
    /// Chunks per window.
    window: usize,
    /// Each list's postings, read through the windows.
    lists: Vec<Cursor<'a>>,
    /// Each list's largest impact: what it can add to a chunk's score, at most.
    max: Vec<f32>,
    /// The lists by their largest impact, ascending (equals in query order).
    by_max: Vec<usize>,
    /// `bound[j]`: what a chunk found under `by_max[..j]` alone can score, at most.
    bound: Vec<f64>,
    /// A sum of n non-negative f32s rounds up by less than n ulps of the exact sum, so
    /// [`WindowPass::safe`] (`x * slack`) bounds every score whose exact sum is at most `x`.
    slack: f64,
    /// `by_max[..essential]` are the lists whose chunks alone cannot enter the top `k`.
    essential: usize,
    /// The seed term's postings, to pass over the chunks the first pass scored (`None`: there
    /// was no first pass).
    seeded: Option<Cursor<'a>>,
    /// Each list's postings again, for the seeks of the chunks scored.
    probes: Vec<Cursor<'a>>,
    /// The window's running sums, by chunk.
    acc: Vec<f64>,
    /// List `l`'s impact on the window's chunk `at` at `l * window + at` (zero where none:
    /// adding zero to a sum of positive impacts leaves its bits).
    impacts: Vec<f32>,
    /// The window's chunks found under an accumulated list, a bit each.
    found: Vec<u64>,
    /// Whether each list's impacts in the window are in `acc` and `impacts`.
    accumulated: Vec<bool>,
    /// The impacts found by a seek under the lists not accumulated, for the chunk scored.
    got: Vec<f32>,
}

impl<'a> WindowPass<'a> {
    /// The pass over the tokens of `terms` but the `seed` term's, with windows of `window`
    /// chunks.
    fn new(
        index: &'a Bm25Index,
        terms: &[u32],
        seed: Option<u32>,
        window: usize,
    ) -> WindowPass<'a> {
        let others: Vec<u32> = terms.iter().copied().filter(|&t| Some(t) != seed).collect();
        let max: Vec<f32> = others.iter().map(|&t| index.term_max[t as usize]).collect();
        let mut by_max: Vec<usize> = (0..others.len()).collect();
        by_max.sort_by(|&a, &b| max[a].total_cmp(&max[b]).then(a.cmp(&b)));
        let mut bound = vec![0.0f64; others.len() + 1];
        for (j, &l) in by_max.iter().enumerate() {
            bound[j + 1] = bound[j] + f64::from(max[l]);
        }
        let n = others.len();
        WindowPass {
            window,
            lists: others.iter().map(|&t| index.cursor(t)).collect(),
            max,
            by_max,
            bound,
            slack: 1.0 + (terms.len() as f64 + 1.0) * f64::from(f32::EPSILON),
            essential: 0,
            seeded: seed.map(|t| index.cursor(t)),
            probes: others.iter().map(|&t| index.cursor(t)).collect(),
            acc: vec![0.0f64; window],
            impacts: vec![0.0f32; window * n],
            found: vec![0u64; window.div_ceil(64)],
            accumulated: vec![false; n],
            got: vec![0.0f32; n],
        }
    }

    /// `x`, raised to bound every score whose exact sum is at most `x`.
    fn safe(&self, x: f64) -> f64 {
        x * self.slack
    }

    /// Moves the lists whose chunks alone can no longer enter `best` out of the essential ones.
    fn settle(&mut self, best: &Best) {
        while self.essential < self.by_max.len()
            && !best.may_enter(self.safe(self.bound[self.essential + 1]))
        {
            self.essential += 1;
        }
    }

    /// Offers `best` every chunk that could enter it, a window at a time from the first chunk
    /// left under an essential list, until no list is essential or none has a chunk left.
    fn run(mut self, best: &mut Best) {
        self.settle(best);
        while self.essential < self.by_max.len() {
            let Some(first) = self.by_max[self.essential..]
                .iter()
                .filter_map(|&l| self.lists[l].current())
                .min()
            else {
                break;
            };
            let base = first as usize / self.window * self.window;
            self.accumulate(base);
            // what the lists not accumulated can add, at most (fixed for the window: a list
            // that stops being accumulated as its chunks are scored has put its impacts in
            // already)
            let skipped = self.essential;
            let rest = self.stream_skipped(base, skipped, best);
            let found = std::mem::take(&mut self.found);
            for at in set_bits(&found) {
                self.score(base, at, skipped, rest, best);
            }
            self.found = found;
            self.found.fill(0);
        }
    }

    /// Adds the essential lists' postings in the window from `base` into it, each list marked
    /// accumulated (and every other list not).
    fn accumulate(&mut self, base: usize) {
        let window = self.window;
        let end = base + window;
        self.accumulated.fill(false);
        for &l in &self.by_max[self.essential..] {
            self.accumulated[l] = true;
            let list = &mut self.lists[l];
            let upto = list.at + gallop(&list.chunks[list.at..], end);
            let into = &mut self.impacts[l * window..][..window];
            for i in list.at..upto {
                let at = list.chunks[i] as usize - base;
                self.acc[at] += f64::from(list.impacts[i]);
                into[at] = list.impacts[i];
                self.found[at / 64] |= 1 << (at % 64);
            }
            list.at = upto;
        }
    }

    /// What the lists not accumulated (`by_max[..skipped]`) can add to a chunk of the window
    /// from `base`, at most, once those cheaper to read through the window than to seek into are
    /// accumulated too.
    fn stream_skipped(&mut self, base: usize, skipped: usize, best: &Best) -> f64 {
        let window = self.window;
        let end = base + window;
        let mut rest = self.bound[skipped];
        if skipped > 0 {
            // a list not accumulated is read through the window too where that is cheaper
            // than a seek into it for each chunk that may enter: its impacts then stand in
            // the bound for its largest (only chunks found already are kept: no other can
            // enter)
            let may_enter = set_bits(&self.found)
                .filter(|&at| best.may_enter(self.safe(rest + self.acc[at])))
                .count();
            for &l in self.by_max[..skipped].iter().rev() {
                let list = &mut self.lists[l];
                list.seek(base as u32);
                let upto = list.at + gallop(&list.chunks[list.at..], end);
                if upto - list.at > may_enter * STREAM_COST {
                    continue;
                }
                self.accumulated[l] = true;
                rest -= f64::from(self.max[l]);
                let into = &mut self.impacts[l * window..][..window];
                for i in list.at..upto {
                    let at = list.chunks[i] as usize - base;
                    if self.found[at / 64] & (1 << (at % 64)) != 0 {
                        self.acc[at] += f64::from(list.impacts[i]);
                        into[at] = list.impacts[i];
                    }
                }
                list.at = upto;
            }
            // the subtractions above may round below the sum of the maxima left
            rest = rest.max(0.0);
        }
        rest
    }

    /// Scores the window's chunk `at` (from `base`) and offers it, where it could still enter:
    /// `rest` is what the lists not accumulated (`by_max[..skipped]`) can add to it, at most.
    /// The window's impacts of the chunk are taken either way, leaving the window clear.
    fn score(&mut self, base: usize, at: usize, skipped: usize, rest: f64, best: &mut Best) {
        let chunk = (base + at) as u32;
        // a chunk under the seed term was scored with its chunks
        let scored = |seeded: &mut Cursor<'_>| {
            seeded.seek(chunk);
            seeded.current() == Some(chunk)
        };
        let mut upper = rest + std::mem::take(&mut self.acc[at]);
        let mut enters =
            best.may_enter(self.safe(upper)) && !self.seeded.as_mut().is_some_and(scored);
        // the lists not accumulated, the strongest first, each impact found taking
        // the place of the list's largest in the bound, until it cannot enter
        for &l in self.by_max[..skipped].iter().rev() {
            if !enters {
                break;
            }
            if self.accumulated[l] {
                continue;
            }
            let probe = &mut self.probes[l];
            probe.seek(chunk);
            let here = if probe.current() == Some(chunk) {
                probe.impact()
            } else {
                0.0
            };
            upper += f64::from(here) - f64::from(self.max[l]);
            self.got[l] = here;
            enters = best.may_enter(self.safe(upper));
        }
        // the score from zero in query order (the seed term is not under this chunk:
        // it adds nothing), the window's impacts taken either way
        let mut score = 0.0f32;
        for l in 0..self.lists.len() {
            score += if self.accumulated[l] {
                std::mem::take(&mut self.impacts[l * self.window + at])
            } else {
                self.got[l]
            };
        }
        if enters && best.offer(chunk, score) {
            self.settle(best);
        }
    }
}

/// What scoring a chunk under the strongest term costs per query token (a seek), in adds of a
/// posting into a window: the seed pass is taken where it costs at most one add per posting.
const SEEK_COST: usize = 4;

/// Postings of a list read through a window that cost what one seek into it does (a seek into a
/// long list misses the cache; a posting read in order does not).
const STREAM_COST: usize = 32;

/// Chunks per window of MaxScore's accumulation: 4,096 running sums of 8 bytes (32 KB) and a
/// row of 4,096 impacts per query token (16 KB each), which stay cached while every posting of a
/// window is added.
const WINDOW: usize = 1 << 12;

/// The best `k` hits so far, by descending score then ascending chunk, whatever order they are
/// offered in.
struct Best {
    k: usize,
    /// Its top is the hit that leaves first.
    heap: BinaryHeap<Worst>,
}

impl Best {
    fn new(k: usize) -> Best {
        Best {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    /// Whether a chunk scoring at most `bound` could enter: above zero while there are fewer
    /// than `k`, then at least the `k`-th score (an equal score enters with a lower chunk).
    fn may_enter(&self, bound: f64) -> bool {
        match self.full() {
            Some(worst) => bound >= f64::from(worst.1),
            None => bound > 0.0,
        }
    }

    fn full(&self) -> Option<&Worst> {
        (self.heap.len() == self.k)
            .then(|| self.heap.peek())
            .flatten()
    }

    /// Offers a scored chunk; whether it entered.
    fn offer(&mut self, chunk: u32, score: f32) -> bool {
        if score.is_nan() || score <= 0.0 {
            return false;
        }
        let hit = Worst(chunk, score);
        if self.full().is_some_and(|worst| hit >= *worst) {
            return false;
        }
        self.heap.push(hit);
        if self.heap.len() > self.k {
            self.heap.pop();
        }
        true
    }

    fn into_hits(self) -> Vec<(u32, f32)> {
        let mut hits: Vec<(u32, f32)> = self.heap.into_iter().map(|Worst(c, s)| (c, s)).collect();
        top_k(&mut hits, self.k);
        hits
    }
}

/// One query token's postings, read in ascending chunk order.
struct Cursor<'a> {
    chunks: &'a [u32],
    impacts: &'a [f32],
    at: usize,
}

impl Cursor<'_> {
    fn current(&self) -> Option<u32> {
        self.chunks.get(self.at).copied()
    }

    fn impact(&self) -> f32 {
        self.impacts[self.at]
    }

    /// Moves to the first posting at or after `chunk`.
    fn seek(&mut self, chunk: u32) {
        self.at += gallop(&self.chunks[self.at..], chunk as usize);
    }
}

/// The positions of the set bits of `words` (bit `b` of word `w` is position `64 w + b`), in
/// ascending order.
fn set_bits(words: &[u64]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(w, &word)| {
        let mut bits = word;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let at = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                at
            })
        })
    })
}

/// How many of `chunks` (ascending) are below `chunk`: galloping from the front, then a binary
/// search, so a near target costs a few steps and a far one a logarithm of the distance.
fn gallop(chunks: &[u32], chunk: usize) -> usize {
    let mut step = 1;
    while step < chunks.len() && (chunks[step] as usize) < chunk {
        step *= 2;
    }
    let upto = (step + 1).min(chunks.len());
    chunks[..upto].partition_point(|&c| (c as usize) < chunk)
}

/// A hit in the top-`k` heap, ordered so that the heap's top is the hit that leaves first:
/// the lowest score, and of equal scores the highest chunk.
#[derive(Debug, Clone, Copy)]
struct Worst(u32, f32);

impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        other.1.total_cmp(&self.1).then(self.0.cmp(&other.0))
    }
}
impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Worst {}

/// Keeps the best `k` of `hits` ordered by descending score, ties on ascending chunk index.
pub fn top_k(hits: &mut Vec<(u32, f32)>, k: usize) {
    let cmp = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if hits.len() > k {
        if k == 0 {
            hits.clear();
            return;
        }
        hits.select_nth_unstable_by(k - 1, cmp);
        hits.truncate(k);
    }
    hits.sort_unstable_by(cmp);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_token_is_the_term_at_its_place_in_the_sorted_dictionary() {
        // the binary search over the dictionary against a hash map of every term's position
        let t = Tokenizer::english();
        let texts = [
            "Alpha beta gamma delta, zeta and eta.",
            "Beta met Gamma in Zürich; alpha stayed.",
            "omega 42 x_y café",
        ];
        let index = Bm25Index::build(texts.iter().copied(), &t, Bm25Params::default());
        let terms = index.terms().to_vec();
        let reference: std::collections::HashMap<&str, u32> = terms
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), i as u32))
            .collect();
        for (i, term) in terms.iter().enumerate() {
            assert_eq!(index.query_terms(&t, term), vec![i as u32], "{term}");
        }
        let query = "gamma unknownword Alpha gamma zzzz aaaa café";
        let want: Vec<u32> = t
            .tokens(query)
            .iter()
            .filter_map(|tok| reference.get(tok.as_str()).copied())
            .collect();
        assert_eq!(index.query_terms(&t, query), want);
        assert_eq!(want.len(), 4, "repeats kept, unknown tokens dropped");
        assert!(index.query_terms(&t, "").is_empty());
    }

    #[test]
    fn tokenizer_lowercases_drops_stopwords_short_words_and_stems() {
        let t = Tokenizer::english();
        assert_eq!(
            t.tokens("The Running dogs, a cat & I were RUNNING in Paris!"),
            vec!["run", "dog", "cat", "were", "run", "pari"]
        );
        assert_eq!(
            t.tokens("x_y Café-au-lait 42"),
            vec!["x_i", "café", "au", "lait", "42"]
        );
        assert!(t.tokens("").is_empty());
    }

    const TINY: [&str; 4] = [
        "apple banana",
        "apple apple cherry",
        "banana cherry date",
        "elderberry",
    ];

    fn tiny() -> (Tokenizer, Bm25Index) {
        let t = Tokenizer::english();
        let idx = Bm25Index::build(TINY, &t, Bm25Params::default());
        (t, idx)
    }

    #[test]
    fn scores_match_hand_computation() {
        let (t, idx) = tiny();
        // N = 4, doc lengths 2, 3, 3, 1 -> avgdl 9/4. "apple": df 2, idf = ln(1 + 2.5/2.5) = ln 2.
        let idf = (2.0f64).ln();
        let (k1, b, avgdl) = (0.9f64, 0.4f64, 2.25f64);
        let s0 = idf * 1.0 / (1.0 + k1 * (1.0 - b + b * 2.0 / avgdl));
        let s1 = idf * 2.0 / (2.0 + k1 * (1.0 - b + b * 3.0 / avgdl));
        let hits = idx.search(&t, "apple", 10);
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].0, 1);
        assert!((hits[0].1 as f64 - s1).abs() < 1e-6);
        assert!((hits[1].1 as f64 - s0).abs() < 1e-6);
    }

    #[test]
    fn ties_break_on_ascending_chunk_and_k_truncates() {
        let t = Tokenizer::english();
        let idx = Bm25Index::build(
            ["zeta one", "zeta two", "zeta six", "other"],
            &t,
            Bm25Params::default(),
        );
        let hits = idx.search(&t, "zeta", 2);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(hits[0].1, hits[1].1);
        assert!(idx.search(&t, "unknownword", 5).is_empty());
        assert!(idx.search(&t, "zeta", 0).is_empty());
    }

    #[test]
    fn repeated_query_terms_count_twice_and_a_search_leaves_nothing_behind() {
        let (t, idx) = tiny();
        let once = idx.search(&t, "cherry", 10);
        let twice = idx.search(&t, "cherry cherry", 10);
        assert_eq!(once.len(), twice.len());
        for (a, b) in once.iter().zip(&twice) {
            assert_eq!(a.0, b.0);
            assert!((2.0 * a.1 - b.1).abs() < 1e-6);
        }
        // a second identical query gives identical bits
        assert_eq!(idx.search(&t, "cherry", 10), once);
    }

    #[test]
    fn an_index_loaded_a_term_at_a_time_is_the_index_built_whole() {
        let (t, idx) = tiny();
        let parts = Bm25Parts::build(TINY, &t, Bm25Params::default());
        let start = || {
            Bm25Loading::new(
                parts.params,
                parts.doc_len.clone(),
                parts.terms.clone(),
                parts.offsets.clone(),
                parts.post_chunk.clone(),
            )
            .unwrap()
        };
        let run =
            |t: usize| &parts.post_tf[parts.offsets[t] as usize..parts.offsets[t + 1] as usize];
        let mut loading = start();
        for term in 0..parts.terms.len() {
            loading.term(run(term)).unwrap();
        }
        // one term too many
        assert_eq!(loading.term(&[1]), Err(Bm25PartsError::PostingsLength));
        let loaded = loading.finish().unwrap();
        for q in ["apple", "banana cherry", "date elderberry apple"] {
            let (a, b) = (loaded.search(&t, q, 10), idx.search(&t, q, 10));
            assert_eq!(a.len(), b.len(), "{q}");
            for (x, y) in a.iter().zip(&b) {
                assert_eq!((x.0, x.1.to_bits()), (y.0, y.1.to_bits()), "{q}");
            }
        }
        // a run of the wrong length, and an index finished before its last term
        let mut loading = start();
        assert_eq!(
            loading.term(&[1, 1, 1]),
            Err(Bm25PartsError::PostingsLength)
        );
        loading.term(run(0)).unwrap();
        assert_eq!(
            loading.finish().unwrap_err(),
            Bm25PartsError::PostingsLength
        );
        // the structure is checked before any frequency comes
        let e = Bm25Loading::new(
            parts.params,
            parts.doc_len.clone(),
            parts.terms.clone(),
            parts.offsets.clone(),
            vec![0; parts.post_chunk.len() - 1],
        )
        .unwrap_err();
        assert_eq!(e, Bm25PartsError::PostingsLength);
    }

    #[test]
    fn parts_round_trip_and_corrupt_parts_are_rejected() {
        let (t, idx) = tiny();
        let parts = Bm25Parts::build(TINY, &t, Bm25Params::default());
        // what a build holds of the index is what its parts say
        assert_eq!(parts.doc_len, idx.doc_len());
        assert_eq!(parts.terms, idx.terms());
        assert_eq!(parts.offsets, idx.offsets());
        assert_eq!(parts.post_chunk, idx.post_chunk());
        assert_eq!(parts.avgdl(), idx.avgdl());
        // "apple" is term 0 and occurs twice in chunk 1
        assert_eq!(parts.terms[0], "appl");
        assert_eq!(parts.post_tf[..2], [1, 2]);
        let back = Bm25Index::from_parts(parts.clone()).unwrap();
        assert_eq!(
            back.search(&t, "banana cherry", 10),
            idx.search(&t, "banana cherry", 10)
        );
        let mut bad = parts.clone();
        bad.offsets.pop();
        assert!(Bm25Index::from_parts(bad).is_err());
        let mut bad = parts.clone();
        bad.post_chunk[0] = 99;
        assert!(Bm25Index::from_parts(bad)
            .unwrap_err()
            .to_string()
            .contains("chunk 99"));
        let mut bad = parts.clone();
        bad.terms.swap(0, 1);
        assert!(Bm25Index::from_parts(bad).is_err());
        // term 0's two postings (chunks 0 and 1) made equal, then swapped
        let mut bad = parts.clone();
        bad.post_chunk[1] = bad.post_chunk[0];
        assert_eq!(
            Bm25Index::from_parts(bad).unwrap_err(),
            Bm25PartsError::ChunksNotAscending { term: 0 }
        );
        let mut bad = parts.clone();
        bad.post_chunk.swap(0, 1);
        assert_eq!(
            Bm25Index::from_parts(bad).unwrap_err(),
            Bm25PartsError::ChunksNotAscending { term: 0 }
        );
        let mut bad = parts;
        bad.post_tf[0] = 0;
        assert_eq!(
            Bm25Index::from_parts(bad).unwrap_err(),
            Bm25PartsError::ZeroFrequency { term: 0 }
        );
    }

    /// The slow reference: every posting of every query token added into a dense accumulator
    /// in query order, every chunk above zero ranked.
    fn exhaustive(idx: &Bm25Index, terms: &[u32], k: usize) -> Vec<(u32, f32)> {
        let mut acc = vec![0.0f32; idx.num_chunks()];
        for &t in terms {
            let run = idx.offsets[t as usize] as usize..idx.offsets[t as usize + 1] as usize;
            for i in run {
                acc[idx.post_chunk[i] as usize] += idx.impact[i];
            }
        }
        let mut hits: Vec<(u32, f32)> = acc
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s > 0.0)
            .map(|(c, &s)| (c as u32, s))
            .collect();
        top_k(&mut hits, k);
        hits
    }

    #[test]
    fn maxscore_is_the_exhaustive_sum_bit_for_bit_over_random_corpora() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n
        };
        // a skewed vocabulary (word w drawn about 1/(w+1) as often) gives common terms with long
        // postings beside rare ones; short documents of few words repeat each other, so many
        // chunks tie
        let words: Vec<String> = (0..40).map(|w| format!("w{w}x")).collect();
        let (mut pruned, mut seeded) = (0usize, 0usize);
        for corpus in 0..30 {
            let docs = 1 + next(if corpus % 3 == 0 { 8 } else { 400 });
            let texts: Vec<String> = (0..docs)
                .map(|_| {
                    let len = 1 + next(if corpus % 2 == 0 { 3 } else { 12 });
                    (0..len)
                        .map(|_| {
                            let upto = next(words.len()) + 1;
                            words[next(upto)].as_str()
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            let t = Tokenizer::english();
            let idx = Bm25Index::build(&texts, &t, Bm25Params::default());
            for _ in 0..40 {
                let q_len = 1 + next(8);
                let terms: Vec<u32> = (0..q_len).map(|_| next(idx.num_terms()) as u32).collect();
                for k in [0, 1, 2, 5, 10, docs, docs + 3] {
                    let slow = exhaustive(&idx, &terms, k);
                    let bits = |h: &[(u32, f32)]| -> Vec<(u32, u32)> {
                        h.iter().map(|&(c, s)| (c, s.to_bits())).collect()
                    };
                    let at = format!("corpus {corpus}, {terms:?}, k = {k}");
                    assert_eq!(bits(&idx.search_terms(&terms, k)), bits(&slow), "{at}");
                    if k > 0 {
                        // both passes, with windows of one chunk, a few, not a power of two,
                        // past the corpus
                        for seed_first in [false, true] {
                            for window in [1, 3, 64, 100, WINDOW] {
                                let got = idx.maxscore(&terms, k, seed_first, window);
                                let how = format!("seed first {seed_first}, window {window}");
                                assert_eq!(bits(&got), bits(&slow), "{how}, {at}");
                            }
                        }
                        seeded += usize::from(idx.seeds_first(&terms));
                    }
                    let touched = exhaustive(&idx, &terms, usize::MAX).len();
                    pruned += usize::from(k > 0 && k < touched);
                }
            }
        }
        assert!(pruned > 1000, "the cases prune: {pruned}");
        // the search takes both ways
        assert!(
            seeded > 100 && seeded + 1000 < pruned,
            "{seeded} of {pruned}"
        );
    }

    #[test]
    fn a_cursor_seeks_the_first_posting_at_or_after_a_chunk() {
        let chunks: Vec<u32> = (0..100).map(|i| i * 3).collect();
        let impacts = vec![1.0f32; chunks.len()];
        for start in [0, 1, 7, 99, 100] {
            for target in [0, 1, 3, 4, 150, 297, 298, 1000] {
                let mut c = Cursor {
                    chunks: &chunks,
                    impacts: &impacts,
                    at: start,
                };
                c.seek(target);
                let want = start.max(chunks.partition_point(|&x| x < target));
                assert_eq!(c.at, want, "from {start} to {target}");
            }
        }
    }
}
