//! End-to-end tests: the real `pado` binary against a real local server
//! (`pado-testkit`) that counts what it receives and misbehaves on request. Every
//! number pado reports is checked against the server's own count or the delay it
//! applied. One test binary, a module per area.

mod harness;

mod agents;
mod analysis;
mod browser;
mod capacity;
mod dashboard;
mod dashboard_browser;
mod demo;
mod demo_protocols;
mod docs_examples;
mod errors;
mod events;
mod experiment;
mod first_run;
mod flows;
mod generator;
mod grpc;
mod history;
mod hostile;
mod http2;
mod image;
mod k6_corpus;
mod k6_grpc;
mod k6_http_more;
mod k6_metrics;
mod k6_modules;
mod k6_start;
mod k6_tier2;
mod kubernetes;
mod limits;
mod llm_demo;
mod llm_prompt;
mod llm_report;
mod measurement;
mod merge;
mod models;
mod netns;
mod network;
mod observe;
mod outputs;
mod protocols;
mod raw_output;
mod recovery;
mod redirects;
mod safety;
mod scenarios;
mod script;
mod script_runtime;
mod segments;
mod signals;
mod soak;
mod sse;
mod thresholds;
mod tls_trust;
mod tooling;
mod verdict;
mod websocket;
mod why;
