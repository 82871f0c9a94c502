//! The web page, built into the binary: `web/index.html` with `web/app.css` and `web/app.js` put inline, so the
//! page is one answer to one request (which carries the token); the script then sends the token as a header.

use std::sync::OnceLock;

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

const HTML: &str = include_str!("../../web/index.html");
const CSS: &str = include_str!("../../web/app.css");
const JS: &str = include_str!("../../web/app.js");

fn page() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| HTML.replace("/*APP_CSS*/", CSS).replace("/*APP_JS*/", JS))
}

pub async fn index() -> Response {
    let mut r = page().into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}
