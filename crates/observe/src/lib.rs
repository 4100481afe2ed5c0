//! Observing the target: scraping its Prometheus / OpenMetrics endpoints (the
//! service's `/metrics` or Spring Boot's `/actuator/prometheus`, node_exporter,
//! mysqld/redis/nginx exporters) while the load runs, into `observe.jsonl` of the
//! result directory, on the same clock as the load's seconds.
//!
//! [`exposition`] reads the text formats; [`scraper`] runs the loop. What the
//! values mean (which resource was the bottleneck) is `pado-analysis`'s job,
//! working from the stored file only.

pub mod exposition;
pub mod scraper;

pub use scraper::{Endpoint, ObserveConfig, ScrapeTally, Scraper};
