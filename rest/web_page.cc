#include "rest/web_page.h"

namespace tide::rest {
namespace {

constexpr std::string_view kStyle = R"css(:root {
  --bg: #f4f5f7; --card: #fff; --text: #1c2230; --muted: #6b7280; --border: #e2e5ea;
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { display: flex; align-items: baseline; gap: 14px; padding: 12px 24px;
  background: #111827; color: #f9fafb; flex-wrap: wrap; }
header h1 { font-size: 17px; margin: 0; font-weight: 600; letter-spacing: .02em; }
header .meta { color: #9ca3af; font-size: 13px; }
header .meta b { color: #e5e7eb; font-weight: 500; }
#conn { margin-left: auto; font-size: 12px; color: #9ca3af; }
#conn.down { color: #fca5a5; }
section { background: var(--card); border: 1px solid var(--border); border-radius: 8px;
  padding: 12px 16px; margin-bottom: 14px; min-width: 0; overflow-x: auto; }
section h2 { font-size: 14px; margin: 0; font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; }
th { text-align: left; color: var(--muted); font-weight: 500; border-bottom: 1px solid var(--border);
  padding: 4px 8px; white-space: nowrap; }
td { border-bottom: 1px solid #f0f1f4; padding: 4px 8px; font-variant-numeric: tabular-nums;
  vertical-align: top; }
td.num, th.num { text-align: right; }
td.why { color: #374151; }
.empty { color: var(--muted); font-style: italic; padding: 8px; }
)css";

constexpr std::string_view kScript = R"js("use strict";
function tokenFromAddress(storageKey) {
  const url = new URL(window.location.href);
  const given = url.searchParams.get("token");
  if (given) {
    sessionStorage.setItem(storageKey, given);
    url.searchParams.delete("token");
    window.history.replaceState(null, "", url.pathname + url.search + url.hash);
  }
  return sessionStorage.getItem(storageKey) || "";
}
function bearerHeaders(token, extra) {
  const headers = Object.assign({}, extra || {});
  if (token) headers["Authorization"] = "Bearer " + token;
  return headers;
}
function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const child of children || []) node.append(child);
  return node;
}
)js";

}  // namespace

std::string webPage(std::string_view title, std::string_view css, std::string_view body,
                    std::string_view script) {
  std::string page;
  page.reserve(kStyle.size() + css.size() + body.size() + kScript.size() + script.size() + 512);
  page += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<title>";
  page += title;
  page += "</title>\n<style>\n";
  page += kStyle;
  page += css;
  page += "\n</style>\n</head>\n<body>\n";
  page += body;
  page += "\n<script>\n";
  page += kScript;
  page += script;
  page += "\n</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace tide::rest
