//! What every pado crate shares and none owns: how units are read and written for
//! people ([`units`]), how text is fitted to a terminal ([`text`]), names made from
//! what users wrote ([`names`]), the UTC timestamp ([`stamp`]), the poison-tolerant
//! lock ([`lock`]) and how many tokens a text is without a tokenizer ([`tokens`]). It depends on no other pado crate, so any of them can use it and a
//! rule changed here changes everywhere at once.

pub mod lock;
pub mod names;
pub mod stamp;
pub mod text;
pub mod tokens;
pub mod units;

pub use lock::lock;
