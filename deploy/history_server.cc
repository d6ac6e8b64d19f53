#include "deploy/history_server.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "am/status/status_page.h"
#include "rest/json.h"
#include "rest/web_page.h"

namespace tide::deploy {
namespace {

namespace fs = std::filesystem;
using rest::JsonWriter;

constexpr size_t kMaxDecisionsPerRequest = 1000;  // what the AM's log keeps

// The list at GET /. Elements the browser test reads: rows of #apps with data-app-id, #errors.
constexpr std::string_view kStyle = R"css(main { padding: 16px 24px; }
a { color: #2563eb; }
.SUCCEEDED { color: #16a34a; } .FAILED, .KILLED { color: #dc2626; } .INCOMPLETE { color: #ea580c; }
#errors li { color: #991b1b; font-family: ui-monospace, monospace; font-size: 12px; }
#errors:empty { display: none; }
)css";

constexpr std::string_view kBody = R"html(<header>
  <h1>tide history</h1>
  <span class="meta" id="dir"></span>
  <span id="conn">connecting…</span>
</header>
<main>
  <section>
    <h2>Ended applications</h2>
    <table>
      <thead><tr><th>Id</th><th>Name</th><th>User</th><th>State</th><th>Started</th>
        <th class="num">Duration</th><th class="num">Executors</th><th>Diagnostics</th></tr></thead>
      <tbody id="apps"></tbody>
    </table>
  </section>
  <section id="unreadable" hidden>
    <h2>Logs that could not be read</h2>
    <ul id="errors"></ul>
  </section>
</main>
)html";

constexpr std::string_view kScript = R"js(
// The token comes once in this page's address (?token=...) and is kept for the tab, so that
// the applications' pages (same key as the AM's page) read with it too.
const TOKEN = tokenFromAddress("tideControlToken");
async function refresh() {
  const conn = document.getElementById("conn");
  try {
    const response = await fetch("api/v1/applications", { cache: "no-store", headers: bearerHeaders(TOKEN) });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error ? body.error.message : "HTTP " + response.status);
    document.getElementById("dir").textContent = body.dir;
    const rows = body.applications.map((a) => el("tr", { "data-app-id": a.id }, [
      el("td", {}, [el("a", { href: "history/" + encodeURIComponent(a.id) + "/", text: a.id })]),
      el("td", { text: a.name }), el("td", { text: a.user }),
      el("td", { class: a.state, text: a.state }),
      el("td", { text: new Date(a.startedAtEpochMs).toLocaleString() }),
      el("td", { class: "num", text: (a.durationMs / 1000).toFixed(1) + " s" }),
      el("td", { class: "num", text: String(a.executors) }),
      el("td", { class: "why", text: a.diagnostics })]));
    if (rows.length === 0) rows.push(el("tr", {}, [el("td", { class: "empty", colspan: "8", text: "no event logs in " + body.dir })]));
    document.getElementById("apps").replaceChildren(...rows);
    document.getElementById("errors").replaceChildren(...body.errors.map((e) => el("li", { text: e.error })));
    document.getElementById("unreadable").hidden = body.errors.length === 0;
    conn.textContent = "updated " + new Date().toLocaleTimeString();
    conn.className = "";
  } catch (e) {
    conn.textContent = e.message;
    conn.className = "down";
  }
}
refresh();
setInterval(refresh, 5000);
)js";

std::string_view historyListHtml() {
  static const std::string page = rest::webPage("tide · history", kStyle, kBody, kScript);
  return page;
}

// Pages (no data, no credential): "/" and "/history/<id>" with or without its slash.
bool isPage(const std::string& path) {
  static const std::regex page(R"(^/(history/[^/]+/?)?$)");
  return std::regex_match(path, page);
}

// The decisions document with the newest `limit` (it is stored newest first).
std::string decisionsDocument(const std::string& stored, size_t limit) {
  if (stored.empty()) return R"({"nowMs":0,"decisions":[]})";
  rapidjson::Document doc = rest::parseJson(stored);
  if (doc.HasMember("decisions") && doc["decisions"].IsArray()) {
    auto& list = doc["decisions"];
    while (list.Size() > limit) list.PopBack();
  }
  return rest::toJsonString(doc);
}

// One job of the stored jobs document; 404 for none.
std::string jobDocument(const std::string& stored, const std::string& jobId) {
  if (!stored.empty()) {
    const rapidjson::Document doc = rest::parseJson(stored);
    if (doc.HasMember("jobs") && doc["jobs"].IsArray()) {
      for (const auto& job : doc["jobs"].GetArray()) {
        if (rest::optionalString(job, "id") == jobId) return rest::toJsonString(job);
      }
    }
  }
  throw rest::RestError(404, "no job " + jobId);
}

}  // namespace

bool validApplicationId(const std::string& id) {
  static const std::regex valid(R"([A-Za-z0-9_-][A-Za-z0-9_.-]{0,127})");
  return std::regex_match(id, valid);
}

HistoryServer::HistoryServer(HistoryServerOptions options) : options_(std::move(options)) {
  rest::HttpServerOptions http;
  http.bindAddress = options_.host;
  http.port = options_.port;
  http.threadCount = 4;
  http.maxRequestBodyBytes = 4096;  // it takes no bodies
  options_.tls.applyTo(http);
  auto bearer = rest::bearerTokenAuth(options_.token);
  http.auth = [bearer](const httplib::Request& req) -> std::optional<std::string> {
    if (isPage(req.path)) return std::nullopt;
    return bearer(req);
  };
  server_ = std::make_unique<rest::HttpServer>(http);
  registerRoutes();
}

HistoryServer::~HistoryServer() {
  stop();
}

int HistoryServer::start() {
  return server_->start();
}

void HistoryServer::stop() {
  if (server_) server_->stop();
}

HistoryServer::Cached HistoryServer::load(const std::string& path) {
  std::error_code ec;
  const auto mtime = fs::last_write_time(path, ec);
  const uintmax_t size = ec ? 0 : fs::file_size(path, ec);
  const int64_t mtimeNs = ec ? -1 : static_cast<int64_t>(mtime.time_since_epoch().count());
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(path);
    if (it != cache_.end() && it->second.mtimeNs == mtimeNs && it->second.size == size) {
      return it->second;
    }
  }
  Cached entry;
  entry.mtimeNs = mtimeNs;
  entry.size = size;
  try {
    entry.app = std::make_shared<const am::ReplayedApplication>(am::replayEventLog(path));
  } catch (const am::EventLogError& e) {
    entry.error = e.what();
  } catch (const std::exception& e) {
    entry.error = path + ": " + e.what();
  }
  std::lock_guard<std::mutex> lock(mu_);
  cache_[path] = entry;
  return entry;
}

std::shared_ptr<const am::ReplayedApplication> HistoryServer::application(const std::string& id) {
  if (!validApplicationId(id)) {
    throw rest::RestError(400, "bad application id '" + id.substr(0, 140) +
                                   "': expected letters, digits, '_', '-' and '.'");
  }
  const std::string path = am::eventLogPath(options_.dir, id);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw rest::RestError(404, "no history of " + id + " in " + options_.dir);
  }
  const Cached entry = load(path);
  if (!entry.app) throw rest::RestError(500, entry.error);
  return entry.app;
}

std::string HistoryServer::applicationsJson() {
  std::vector<std::string> paths;
  std::error_code ec;
  for (fs::directory_iterator it(options_.dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() != ".jsonl" || !validApplicationId(p.stem().string())) continue;
    std::error_code typeError;
    if (it->is_regular_file(typeError)) paths.push_back(p.string());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::shared_ptr<const am::ReplayedApplication>> apps;
  std::vector<std::string> errors;
  for (const auto& path : paths) {
    Cached entry = load(path);
    if (entry.app) {
      apps.push_back(entry.app);
    } else {
      errors.push_back(entry.error);
    }
  }
  // Newest first, as Spark's list.
  std::stable_sort(apps.begin(), apps.end(), [](const auto& a, const auto& b) {
    return a->application.startedAtEpochMs > b->application.startedAtEpochMs;
  });
  JsonWriter w;
  w.startObject().field("dir", options_.dir).key("applications").startArray();
  for (const auto& app : apps) {
    const int64_t duration =
        app->ended ? app->endedAtEpochMs - app->application.startedAtEpochMs : app->lastEventMs;
    w.startObject()
        .field("id", app->application.applicationId)
        .field("attemptId", app->application.attemptId)
        .field("name", app->name())
        .field("user", app->application.user)
        .field("state", app->state())
        .field("finalStatus", app->ended ? app->finalStatus : "")
        .field("diagnostics", app->diagnostics)
        .field("startedAtEpochMs", app->application.startedAtEpochMs)
        .field("endedAtEpochMs", app->endedAtEpochMs)
        .field("durationMs", duration)
        .field("executors", app->executors.size() + app->executorsDropped)
        .field("tornTail", app->tornTail)
        .field("url", "/history/" + app->application.applicationId + "/")
        .endObject();
  }
  w.endArray().key("errors").startArray();
  for (const auto& error : errors) w.startObject().field("error", error).endObject();
  w.endArray().endObject();
  return w.str();
}

void HistoryServer::registerRoutes() {
  rest::HttpServer& s = *server_;
  s.get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(std::string(historyListHtml()), "text/html; charset=utf-8");
  });
  s.get("/api/v1/applications", [this](const httplib::Request&, httplib::Response& res) {
    rest::replyJson(res, applicationsJson());
  });
  // The tracking URL has no slash at the end; the page's relative URLs need one.
  s.get(R"(/history/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
    std::string target = req.path + "/";
    const size_t query = req.target.find('?');
    if (query != std::string::npos) target += req.target.substr(query);
    res.set_redirect(target, 302);
  });
  s.get(R"(/history/([^/]+)/)", [this](const httplib::Request& req, httplib::Response& res) {
    (void)application(req.matches[1]);  // 400/404 before a page that could only fail
    res.set_header("Cache-Control", "no-cache");
    res.set_content(std::string(am::statusPageHtml()), "text/html; charset=utf-8");
  });
  auto read = [this](auto document) {
    return [this, document](const httplib::Request& req, httplib::Response& res) {
      rest::replyJson(res, document(*application(req.matches[1]), req));
    };
  };
  using App = am::ReplayedApplication;
  using Req = httplib::Request;
  s.get(R"(/history/([^/]+)/api/v1/status)",
        read([](const App& app, const Req&) { return am::replayedStatusDocument(app); }));
  s.get(R"(/history/([^/]+)/api/v1/executors)",
        read([](const App& app, const Req&) { return am::replayedExecutorsDocument(app); }));
  s.get(R"(/history/([^/]+)/api/v1/jobs)",
        read([](const App& app, const Req&) { return am::replayedJobsDocument(app); }));
  s.get(R"(/history/([^/]+)/api/v1/jobs/([^/]+))", read([](const App& app, const Req& req) {
          return jobDocument(am::replayedJobsDocument(app), req.matches[2]);
        }));
  s.get(R"(/history/([^/]+)/api/v1/allocation/decisions)", read([](const App& app, const Req& req) {
          const int64_t limit = rest::queryInteger(req, "limit", 100);
          return decisionsDocument(app.last.decisions,
                                   static_cast<size_t>(std::min<int64_t>(
                                       limit, static_cast<int64_t>(kMaxDecisionsPerRequest))));
        }));
  s.get(R"(/history/([^/]+)/api/v1/allocation/history)", read([](const App& app, const Req& req) {
          const TimeMs since = req.has_param("since") ? rest::queryInteger(req, "since", 0) : -1;
          return am::allocationHistoryDocument(app.lastEventMs, *app.history, since, "");
        }));
  // A history is read-only: the page's bounds form (and any write) gets a clear answer.
  auto readOnly = [](const httplib::Request&, httplib::Response&) {
    throw rest::RestError(405, "this is the history of an ended application: nothing can change");
  };
  s.put(R"(/history/([^/]+)/api/v1/.*)", readOnly);
  s.post(R"(/history/([^/]+)/api/v1/.*)", readOnly);
  s.del(R"(/history/([^/]+)/api/v1/.*)", readOnly);
}

}  // namespace tide::deploy
