#include "executor/block_server.h"

#include <fstream>
#include <sstream>

#include "common/logging.h"

namespace tide::executor {

BlockServer::BlockServer(const BlockStore& store, const std::string& appSecret,
                         const std::string& bindAddress, const rest::TlsSettings& tls)
    : store_(store) {
  rest::HttpServerOptions options;
  options.bindAddress = bindAddress;
  options.port = 0;
  options.threadCount = 4;
  options.auth = rest::bearerTokenAuth(appSecret);
  tls.applyTo(options);
  // Requests are the fetches of other executors: routine, so only at debug.
  options.log = [](const std::string& line) {
    static const Logger log("executor");
    TIDE_LOG(log, debug) << line;
  };
  server_ = std::make_unique<rest::HttpServer>(options);
  server_->get(R"(/blocks/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string path = req.matches[1];
    const std::optional<std::filesystem::path> file = store_.find(path);
    if (!file) throw rest::RestError(404, "no block " + path + " on this executor");
    std::ifstream in(*file, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in && !in.eof()) throw rest::RestError(500, "cannot read block " + path);
    res.set_content(bytes.str(), "application/octet-stream");
  });
}

}  // namespace tide::executor
