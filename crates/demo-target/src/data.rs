//! The in-memory "database": posts generated at start from a fixed seed.
//!
//! Words are drawn from a Zipf-like distribution over a vocabulary whose head
//! is a list of real Korean and English words (검색, 엔진, search, engine, …)
//! and whose tail is made-up words. That gives the index the shape the seed
//! post describes: a few very frequent terms (long posting lists, slow to
//! score), many mid-frequency terms and a long tail of rare ones.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The head of the vocabulary, most frequent first (Korean and English
/// interleaved so both languages have frequent, mid and rare terms).
const HEAD_WORDS: &[&str] = &[
    "검색",
    "search",
    "엔진",
    "engine",
    "테스트",
    "test",
    "서버",
    "server",
    "성능",
    "performance",
    "부하",
    "load",
    "캐시",
    "cache",
    "데이터베이스",
    "database",
    "분석",
    "analysis",
    "파도",
    "wave",
    "위키",
    "wiki",
    "게시판",
    "board",
    "인덱스",
    "index",
    "응답",
    "response",
    "지연",
    "latency",
    "처리량",
    "throughput",
    "대기열",
    "queue",
    "병목",
    "bottleneck",
    "커넥션",
    "connection",
    "스레드",
    "thread",
    "메모리",
    "memory",
    "샤딩",
    "sharding",
    "복제",
    "replication",
    "장애",
    "failure",
    "회복",
    "recovery",
    "모니터링",
    "monitoring",
    "대시보드",
    "dashboard",
    "쿼리",
    "query",
    "토큰",
    "token",
    "형태소",
    "morpheme",
    "스케일",
    "scale",
    "배포",
    "deploy",
    "로그",
    "log",
    "한계점",
    "limit",
    "눈사태",
    "avalanche",
    "최적화",
    "optimization",
    "트랜잭션",
    "transaction",
    "설계",
    "design",
    "구현",
    "implementation",
    "사용자",
    "user",
    "요청",
    "request",
    "레디스",
    "redis",
    "카프카",
    "kafka",
    "루씬",
    "lucene",
    "자동완성",
    "autocomplete",
    "가비지",
    "garbage",
    "컬렉션",
    "collection",
    "프로메테우스",
    "prometheus",
    "그라파나",
    "grafana",
    "스트레스",
    "stress",
    "소크",
    "soak",
    "스파이크",
    "spike",
    "카오스",
    "chaos",
    "백분위",
    "percentile",
    "평균",
    "average",
    "에러",
    "error",
    "타임아웃",
    "timeout",
    "재시도",
    "retry",
    "게시글",
    "post",
    "좋아요",
    "like",
    "카테고리",
    "category",
    "태그",
    "tag",
    "문서",
    "document",
    "리뷰",
    "review",
    "알림",
    "alert",
    "스프링",
    "spring",
    "자바",
    "java",
    "러스트",
    "rust",
    "네트워크",
    "network",
    "컨테이너",
    "container",
    "클러스터",
    "cluster",
    "노드",
    "node",
    "프록시",
    "proxy",
    "세션",
    "session",
    "인증",
    "authentication",
];

/// Hangul syllables the made-up Korean words are built from.
const KO_SYLLABLES: &[&str] = &[
    "가", "나", "다", "라", "마", "바", "사", "아", "자", "차", "카", "타", "파", "하", "강", "민",
    "서", "연", "준", "지", "현", "우", "진", "수", "영", "성", "호", "경", "정", "재", "도", "리",
    "소", "미", "주", "윤", "빛", "별", "솔", "울",
];

/// Latin syllables the made-up English-looking words are built from.
const EN_SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ne", "ru", "ta", "zo", "vi", "pe", "dra", "sol", "tor", "ven", "qua", "rix",
    "bel", "cor", "dan", "fel", "gar", "hul", "jin", "kel", "lum", "mor", "nix", "pol", "sar",
];

/// Tags attached to posts (one to three each).
const TAGS: &[&str] = &[
    "검색",
    "성능",
    "인프라",
    "캐시",
    "데이터베이스",
    "부하테스트",
    "모니터링",
    "search",
    "performance",
    "infra",
    "cache",
    "database",
    "loadtest",
    "rust",
    "java",
    "devops",
];

/// Authors' given names; a number is appended to make a pool of authors.
const AUTHORS: &[&str] = &[
    "김민준",
    "이서연",
    "박지후",
    "최서윤",
    "정도윤",
    "강하은",
    "조예준",
    "윤지민",
    "alice",
    "bob",
    "carol",
    "dave",
    "erin",
    "frank",
    "grace",
    "heidi",
];

/// How many made-up words follow the head of the vocabulary.
const TAIL_WORDS: usize = 2_400;

/// Unix time of the oldest generated post (2024-01-01T00:00:00Z).
const BASE_TIME: i64 = 1_704_067_200;
/// Seconds between two consecutive generated posts.
const POST_SPACING: i64 = 600;

/// One post. Shared as `Arc<Post>`; only the like counter changes in place.
#[derive(Debug)]
pub(crate) struct Post {
    pub id: u64,
    pub title: String,
    pub body: String,
    pub author: String,
    pub tags: Vec<String>,
    /// Unix seconds.
    pub created_at: i64,
    pub likes: AtomicU64,
}

impl Post {
    /// Detail JSON, as `GET /api/posts/{id}` returns it.
    pub(crate) fn detail_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "title": self.title,
            "body": self.body,
            "author": self.author,
            "tags": self.tags,
            "created_at": pado_base::stamp::utc_secs(self.created_at),
            "likes": self.likes.load(Ordering::Relaxed),
        })
    }

    /// Summary JSON, as items of `GET /api/posts`.
    pub(crate) fn summary_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "title": self.title,
            "author": self.author,
            "tags": self.tags,
            "created_at": pado_base::stamp::utc_secs(self.created_at),
            "likes": self.likes.load(Ordering::Relaxed),
        })
    }
}

/// The posts table: id → post, ids increase with creation time so that
/// "newest first" is "highest id first".
#[derive(Debug, Default)]
pub(crate) struct Store {
    pub posts: BTreeMap<u64, Arc<Post>>,
    pub next_id: u64,
}

impl Store {
    /// Inserts a new post with the next id and returns it.
    pub(crate) fn create(
        &mut self,
        title: String,
        body: String,
        author: String,
        tags: Vec<String>,
        now: i64,
    ) -> Arc<Post> {
        let id = self.next_id;
        self.next_id += 1;
        let post = Arc::new(Post {
            id,
            title,
            body,
            author,
            tags,
            created_at: now,
            likes: AtomicU64::new(0),
        });
        self.posts.insert(id, post.clone());
        post
    }
}

/// Deterministic word sampler: Zipf-like weights (1/(rank+1)) over the
/// first `limit` words, inverted once into a lookup table so that drawing a
/// word is one random number and one index (start-up time matters: the
/// service generates close to a million words before it accepts requests).
struct Sampler {
    table: Vec<u32>,
}

impl Sampler {
    const BITS: u32 = 18;

    fn new(words: usize, limit: usize) -> Sampler {
        let n = limit.min(words).max(1);
        let total: f64 = (0..n).map(|r| 1.0 / (r as f64 + 1.0)).sum();
        let size = 1usize << Self::BITS;
        let mut table = Vec::with_capacity(size);
        let mut cumulative = 0.0;
        for rank in 0..n {
            cumulative += 1.0 / (rank as f64 + 1.0) / total;
            // Every word gets at least one slot, so the tail exists.
            let upto = ((cumulative * size as f64).round() as usize).clamp(table.len() + 1, size);
            table.resize(upto, rank as u32);
        }
        table.resize(size, (n - 1) as u32);
        Sampler { table }
    }

    fn sample(&self, rng: &mut fastrand::Rng) -> u32 {
        self.table[(rng.u32(..) >> (32 - Self::BITS)) as usize]
    }
}

/// The whole vocabulary: head words, then made-up Korean and English words
/// alternately, deduplicated.
pub(crate) fn vocabulary(rng: &mut fastrand::Rng) -> Vec<String> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut words: Vec<String> = Vec::with_capacity(HEAD_WORDS.len() + TAIL_WORDS);
    for w in HEAD_WORDS {
        if seen.insert((*w).to_string()) {
            words.push((*w).to_string());
        }
    }
    let mut attempts = 0;
    while words.len() < HEAD_WORDS.len() + TAIL_WORDS && attempts < TAIL_WORDS * 20 {
        attempts += 1;
        // Alternate Korean and English-looking made-up words.
        let korean = (words.len() & 1) == 0;
        let (syllables, parts) = if korean {
            (KO_SYLLABLES, rng.usize(2..=3))
        } else {
            (EN_SYLLABLES, rng.usize(2..=4))
        };
        let word: String = (0..parts)
            .map(|_| syllables[rng.usize(..syllables.len())])
            .collect();
        if seen.insert(word.clone()) {
            words.push(word);
        }
    }
    words
}

/// Generated data: the posts, and the words each was made of (indices into
/// `vocabulary`), so that the index can be built without tokenizing the
/// text again (every vocabulary word is exactly one token).
pub(crate) struct Generated {
    pub store: Store,
    pub vocabulary: Vec<String>,
    /// Per post, in id order: (title words, body words).
    pub words: Vec<(Vec<u32>, Vec<u32>)>,
}

/// Generates `count` posts (ids 1..=count) from `seed`.
pub(crate) fn generate(count: usize, seed: u64) -> Generated {
    let mut rng = fastrand::Rng::with_seed(seed);
    let vocabulary = vocabulary(&mut rng);
    let body_words = Sampler::new(vocabulary.len(), usize::MAX);
    let title_words = Sampler::new(vocabulary.len(), 600);
    let mut posts = BTreeMap::new();
    let mut words = Vec::with_capacity(count);
    for i in 0..count {
        let id = i as u64 + 1;
        let title_len = rng.usize(3..=6);
        let mut title_ids: Vec<u32> = Vec::with_capacity(title_len);
        let mut attempts = 0;
        while title_ids.len() < title_len && attempts < 50 {
            attempts += 1;
            let w = title_words.sample(&mut rng);
            if !title_ids.contains(&w) {
                title_ids.push(w);
            }
        }
        let mut title = String::with_capacity(title_len * 10);
        for (k, w) in title_ids.iter().enumerate() {
            if k > 0 {
                title.push(' ');
            }
            title.push_str(&vocabulary[*w as usize]);
        }
        let body_len = rng.usize(20..=60);
        let mut body_ids: Vec<u32> = Vec::with_capacity(body_len);
        let mut body = String::with_capacity(body_len * 10);
        for k in 0..body_len {
            let mut w = body_words.sample(&mut rng);
            if body_ids.last() == Some(&w) {
                w = body_words.sample(&mut rng);
            }
            if k > 0 {
                body.push_str(if k % 9 == 0 { ". " } else { " " });
            }
            body.push_str(&vocabulary[w as usize]);
            body_ids.push(w);
        }
        body.push('.');
        let tag_count = rng.usize(1..=3);
        let mut tags: Vec<String> = Vec::with_capacity(tag_count);
        for _ in 0..tag_count {
            let t = TAGS[rng.usize(..TAGS.len())];
            if !tags.iter().any(|x| x == t) {
                tags.push(t.to_string());
            }
        }
        let author = format!(
            "{}{}",
            AUTHORS[rng.usize(..AUTHORS.len())],
            rng.usize(1..=12)
        );
        let post = Post {
            id,
            title,
            body,
            author,
            tags,
            created_at: BASE_TIME + id as i64 * POST_SPACING + rng.i64(0..POST_SPACING / 2),
            likes: AtomicU64::new(rng.u64(0..50)),
        };
        posts.insert(id, Arc::new(post));
        words.push((title_ids, body_ids));
    }
    Generated {
        store: Store {
            posts,
            next_id: count as u64 + 1,
        },
        vocabulary,
        words,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_has_korean() {
        let a = generate(200, 7).store;
        let b = generate(200, 7).store;
        assert_eq!(a.posts.len(), 200);
        assert_eq!(a.next_id, 201);
        for (x, y) in a.posts.values().zip(b.posts.values()) {
            assert_eq!(x.title, y.title);
            assert_eq!(x.body, y.body);
        }
        let korean = a.posts.values().filter(|p| p.body.contains("검색")).count();
        assert!(korean > 100, "검색 should be frequent, got {korean}");
        let c = generate(200, 8).store;
        assert_ne!(a.posts[&1].body, c.posts[&1].body);
    }

    #[test]
    fn vocabulary_words_are_single_tokens() {
        let g = generate(50, 9);
        for w in &g.vocabulary {
            assert_eq!(crate::index::tokenize(w), vec![w.clone()]);
        }
        let p = &g.store.posts[&1];
        let (title, body) = &g.words[0];
        let words = |ids: &[u32]| -> Vec<String> {
            ids.iter()
                .map(|i| g.vocabulary[*i as usize].clone())
                .collect()
        };
        assert_eq!(crate::index::tokenize(&p.title), words(title));
        assert_eq!(crate::index::tokenize(&p.body), words(body));
    }

    #[test]
    fn created_at_increases_with_id() {
        let s = generate(100, 1).store;
        let times: Vec<i64> = s.posts.values().map(|p| p.created_at).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]));
    }
}
