//! The page and its scripts and styles, compiled into the binary: the dashboard
//! needs no network beyond its own port (no CDN), and the page a run serves is
//! always the one built with it. Every file of `assets/` is listed here, once.

/// One file of the page.
pub(crate) struct Asset {
    /// Its name under `/assets/` (`index.html` is also `/`).
    pub(crate) name: &'static str,
    /// Its `Content-Type`.
    pub(crate) content_type: &'static str,
    /// Its bytes.
    pub(crate) body: &'static [u8],
}

/// Every file of the page.
pub(crate) const ASSETS: &[Asset] = &[
    Asset {
        name: "index.html",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../assets/index.html"),
    },
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/app.js"),
    },
    Asset {
        name: "chart.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/chart.js"),
    },
    Asset {
        name: "model.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/model.js"),
    },
    Asset {
        name: "format.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/format.js"),
    },
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../assets/style.css"),
    },
];

/// The file named `name`, if the page has one.
pub(crate) fn asset(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_its_files_are_found_by_name_only() {
        let page = asset("index.html").unwrap();
        assert!(page
            .body
            .windows(5)
            .any(|w| w.eq_ignore_ascii_case(b"<html")));
        assert!(asset("app.js").is_some());
        assert!(asset("../Cargo.toml").is_none());
        assert!(asset("").is_none());
    }
}
