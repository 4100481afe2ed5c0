//! `k6/experimental/csv`'s reading: a file's records as Go's `encoding/csv`
//! reads them (RFC 4180 quoting, every record as long as the first), by the
//! `csv` crate.

/// Every record of `data`, split on `delimiter` (one character; empty: `,`), or
/// why not (the line of a record of the wrong length, or of bad quoting).
pub(crate) fn rows(data: &[u8], delimiter: &str) -> Result<Vec<Vec<String>>, String> {
    let d = match delimiter.as_bytes() {
        [] => b',',
        [b] => *b,
        _ => return Err("csv: the delimiter must be a single character".into()),
    };
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(d)
        .from_reader(data);
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| format!("csv: {e}"))?;
        out.push(rec.iter().map(str::to_string).collect());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::rows;

    #[test]
    fn quoted_fields_hangul_and_other_delimiters_read_as_go_does() {
        let data = "name,city\n\"Kim, Ji\",서울\n파도,\"say \"\"hi\"\"\"\r\n";
        assert_eq!(
            rows(data.as_bytes(), ",").unwrap(),
            vec![
                vec!["name".to_string(), "city".into()],
                vec!["Kim, Ji".into(), "서울".into()],
                vec!["파도".into(), "say \"hi\"".into()],
            ]
        );
        assert_eq!(
            rows(b"a;b\n1;2\n", ";").unwrap(),
            vec![
                vec!["a".to_string(), "b".into()],
                vec!["1".into(), "2".into()]
            ]
        );
    }

    #[test]
    fn a_short_record_and_a_long_delimiter_are_refused() {
        let e = rows(b"a,b\n1\n", ",").unwrap_err();
        assert!(e.contains("line 2") || e.contains("2"), "{e}");
        assert!(rows(b"a", "::").unwrap_err().contains("single character"));
    }
}
