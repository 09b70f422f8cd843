#pragma once
#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "llmbench/base/error.h"
#include "llmbench/load/connection.h"
#include "llmbench/report/load_result.h"

namespace llmbench {

class Tokenizer;

// http://HOST[:PORT][/BASE] or https://HOST[:PORT][/BASE] (TLS: when built with OpenSSL).
struct Endpoint {
  bool tls = false;  // https://
  std::string host;
  std::string port = "80";  // https: 443
  std::string base_path;  // without a trailing '/' or "/v1" (the requests' paths start with /v1), may be empty
  std::string host_port() const;  // HOST:PORT, an IPv6 address bracketed ([::1]:8000): URL and Host header
  std::string url() const;
};
Endpoint parse_endpoint(const std::string& url);  // UsageError on a bad URL
bool is_loopback(const std::string& host);

using Clock = std::chrono::steady_clock;

struct ClientOptions {
  Endpoint endpoint;
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every request
  double timeout_s = 60;                                      // per request, connect to last byte
  const Tokenizer* tokenizer = nullptr;  // counts output tokens when the server sends no usage
  bool stream = true;  // false: the response is one JSON object (its TTFT is its e2e, no ITL)
  TlsOptions tls;      // an https:// endpoint's certificate check
};

// What one streamed request gave, beyond its RequestRecord.
struct Exchange;

// HTTP/1.1 keep-alive client for OpenAI streaming endpoints, driven by one io_context on one thread:
// any number of requests in flight, each on its own connection (idle connections are reused).
class LoadClient {
 public:
  // Called once per request, on the io thread. `counted_by` says how output_tokens was counted:
  // usage, tokenizer or events; `text` is the answer's content events joined ("" for a failed request).
  using Done = std::function<void(RequestRecord record, const std::string& counted_by, std::string text)>;

  LoadClient(boost::asio::io_context& io, ClientOptions options);
  ~LoadClient();

  // POSTs `body` (JSON, stream: true) to base_path + `path`; `start` is the record's time zero. With
  // `cancel_after_ms`, the request is abandoned that long after it was sent whole (the connection closed;
  // error kClientCancel) unless it is done by then.
  void post(const std::string& path, std::string body, Clock::time_point start, Done done,
            std::optional<double> cancel_after_ms = std::nullopt);
  // Closes every connection: requests in flight end with error "cancelled".
  void cancel_all();
  int in_flight() const { return in_flight_; }

 private:
  friend struct Exchange;
  boost::asio::io_context& io_;
  ClientOptions options_;
  boost::asio::ip::tcp::resolver::results_type addresses_;
  std::shared_ptr<TlsClient> tls_;  // null for http://
  std::vector<std::shared_ptr<Exchange>> live_;
  std::deque<std::unique_ptr<Connection>> idle_;  // kept-alive connections, TLS sessions included
  int in_flight_ = 0;
};

// Thrown when `should_stop` ended a wait (Ctrl-C): not a failure, the command ends as interrupted.
class Interrupted : public Error {
 public:
  using Error::Error;
};

// A plain GET (for /health and /v1/models), synchronous; throws Error on a connection failure, a refused
// TLS handshake or a timeout, Interrupted as soon as `should_stop` (polled every 50 ms) says so.
// Returns {status, body}.
std::pair<int, std::string> http_get(const Endpoint& endpoint, const std::string& path, double timeout_s,
                                     const std::vector<std::pair<std::string, std::string>>& headers = {},
                                     const std::function<bool()>& should_stop = {}, const TlsOptions& tls = {});

}  // namespace llmbench
