#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "llmbench/serve/metrics.h"
#include "llmbench/serve/openai.h"
#include "llmbench/serve/server.h"
#include "llmbench/serve/text_stream.h"

namespace llmbench::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// What every connection shares: the engine, the tokenizer, options, metrics.
struct ServerContext {
  ServerContext(Engine& engine, std::shared_ptr<const Tokenizer> tokenizer, ServeOptions options);
  Engine& engine;
  std::shared_ptr<const Tokenizer> tokenizer;
  ServeOptions options;
  Metrics metrics;
  std::string model_name;
  int max_context;
  std::int64_t vocab_size;
  std::int64_t created;            // unix seconds at start (the models list's "created")
  std::atomic<bool> draining{false};
};

// One HTTP/1.1 connection: keep-alive request loop, routing, and the response of at most one
// completion at a time. Every handler runs on the connection's strand; the engine thread only posts.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(ServerContext& ctx, tcp::socket socket);
  ~Session();
  void start();
  // The server is shutting down: an idle connection closes now, a busy one after its response.
  void drain();
  // Out of file descriptors: a connection waiting for its next request closes to make room.
  bool idle() const { return idle_; }
  void close_if_idle();

 private:
  enum class Phase { idle, reading, busy, closing, closed };
  using Headers = std::vector<std::pair<std::string, std::string>>;
  struct Job;

  void wait_request();
  void read_request();
  void on_header(beast::error_code ec);
  void on_read(beast::error_code ec);
  void handle();
  void route(const http::request<http::string_body>& req, std::string_view path);
  void check_auth(const http::request<http::string_body>& req) const;
  void start_completion(const http::request<http::string_body>& req, Endpoint endpoint);
  void on_engine_event(std::uint64_t job_id, const EngineEvent& event);
  void finish_job(const std::string& finish_reason);
  void fail_job(const ApiError& error, const std::string& finish_reason);

  void respond(int status, const std::string& body, const char* content_type, const Headers& headers = {});
  void respond_error(const ApiError& error);
  void flush();
  void on_written(beast::error_code ec);
  void after_response();
  void watch_disconnect();
  void linger_close();
  void drain_read();
  void close();
  void arm_timer(double seconds);
  void disarm_timer();
  void on_timeout();

  ServerContext& ctx_;
  tcp::socket socket_;
  asio::any_io_executor executor_;  // the strand every handler of this connection runs on
  asio::steady_timer timer_;        // idle, read, write and lingering-close deadlines
  std::uint64_t timer_generation_ = 0;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Phase phase_ = Phase::idle;
  std::atomic<bool> idle_{false};  // waiting for a request (read by the acceptor)
  bool timed_out_ = false;
  bool keep_alive_ = true;
  bool count_response_ = false;    // an API request (not /health or /metrics)
  bool response_done_ = false;     // the response's last byte is queued in out_
  bool head_ = false;              // a HEAD request: the response goes without its body
  bool chunked_ = true;            // the client speaks HTTP/1.1: streams use chunked encoding (else: until close)
  std::string out_;                // bytes to write next
  std::string writing_;            // bytes of the write in progress
  bool write_busy_ = false;
  bool watching_ = false;
  Clock::time_point write_started_;
  Clock::time_point first_byte_;   // first byte of the current request
  Clock::time_point received_;     // the current request fully read
  std::unique_ptr<Job> job_;
  std::uint64_t jobs_ = 0;
};

}  // namespace llmbench::serve
