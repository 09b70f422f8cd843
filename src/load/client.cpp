#include "llmbench/load/client.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "llmbench/base/error.h"
#include "llmbench/base/version.h"
#include "llmbench/load/sse.h"
#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::size_t kMaxWholeResponse = std::size_t{16} << 20;  // a non-streamed response, as an SSE event
// Response headers: a gateway's cookies and policies pass Beast's default of 8 KiB.
constexpr std::uint32_t kMaxResponseHeader = 64u << 10;
// Of an error response's body, the most read for the server's message, and how long it may take to come.
constexpr std::size_t kMaxErrorBody = std::size_t{16} << 10;
constexpr std::chrono::seconds kErrorBodyWait{2};

// ---------------------------------------------------------------- endpoint

std::string Endpoint::host_port() const {
  return cat(host.find(':') == std::string::npos ? host : "[" + host + "]", ":", port);
}

std::string Endpoint::url() const { return cat(tls ? "https://" : "http://", host_port(), base_path); }

Endpoint parse_endpoint(const std::string& url) {
  auto bad = [&](const std::string& why) { return UsageError(cat("--endpoint '", url, "': ", why)); };
  Endpoint e;
  e.tls = url.rfind("https://", 0) == 0;
  if (!e.tls && url.rfind("http://", 0) != 0) throw bad("expected http://HOST[:PORT][/PATH] or https://…");
  if (e.tls && !tls_available())
    throw bad("https needs TLS, and this llmbench was built without OpenSSL (install libssl-dev and rebuild)");
  if (e.tls) e.port = "443";
  std::string rest = url.substr(e.tls ? 8 : 7);
  const auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) e.base_path = rest.substr(slash);
  while (!e.base_path.empty() && e.base_path.back() == '/') e.base_path.pop_back();
  // A base URL ending in /v1 is the OpenAI SDKs' convention (base_url="https://host/v1"): the requests' paths
  // (/v1/completions, /v1/models) already start with it.
  constexpr std::string_view kV1 = "/v1";
  if (e.base_path.size() >= kV1.size() && e.base_path.compare(e.base_path.size() - kV1.size(), kV1.size(), kV1) == 0)
    e.base_path.resize(e.base_path.size() - kV1.size());
  if (e.base_path.find_first_of("?# ") != std::string::npos) throw bad("no query, fragment or space in the path");
  if (authority.find('@') != std::string::npos) throw bad("credentials in the URL are not supported (use --api-key)");
  if (!authority.empty() && authority.front() == '[') {  // [::1]:8000
    const auto close = authority.find(']');
    if (close == std::string::npos) throw bad("unterminated IPv6 address");
    e.host = authority.substr(1, close - 1);
    authority = authority.substr(close + 1);
    if (!authority.empty() && authority.front() != ':') throw bad("expected ':' after the IPv6 address");
    if (!authority.empty()) e.port = authority.substr(1);
  } else {
    const auto colon = authority.find(':');
    if (colon != authority.rfind(':')) throw bad("an IPv6 address goes in brackets: http://[::1]:PORT");
    e.host = authority.substr(0, colon);
    if (colon != std::string::npos) e.port = authority.substr(colon + 1);
  }
  if (e.host.empty()) throw bad("no host");
  if (e.port.empty() || e.port.size() > 5 || !std::all_of(e.port.begin(), e.port.end(), ::isdigit) ||
      std::stoi(e.port) < 1 || std::stoi(e.port) > 65535)
    throw bad(cat("bad port '", e.port, "'"));
  return e;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string reason_of(const boost::system::error_code& ec) {
  if (ec == beast::error::timeout) return "timeout";
  if (ec == asio::error::operation_aborted) return "cancelled";
  // Beast's HTTP error category (a static object: the pointer outlives the temporary error_code).
  const boost::system::error_category* http_errors = &boost::system::error_code(http::error::partial_message).category();
  if (ec.category() == *http_errors && ec != http::error::partial_message && ec != http::error::end_of_stream)
    return "bad_http";
  return "disconnect";  // eof, partial message, reset, broken pipe
}

}  // namespace

// ---------------------------------------------------------------- one request

struct Exchange : std::enable_shared_from_this<Exchange> {
  Exchange(LoadClient& c, Clock::time_point start_time, LoadClient::Done on_done, std::optional<double> cancel_ms)
      : client(c), start(start_time), deadline(start_time + std::chrono::duration_cast<Clock::duration>(
                                                                std::chrono::duration<double>(c.options_.timeout_s))),
        timer(c.io_), cancel_after_ms(cancel_ms), cancel_timer(c.io_), done(std::move(on_done)),
        sse([this](std::string_view data) { on_event(data); }, [this](std::string_view data) { on_error_event(data); }) {}

  LoadClient& client;
  Clock::time_point start, deadline, last_event;
  // The timeout is a deadline for the whole request, whatever the server sends meanwhile (a stream of
  // keep-alive comments or of endless events keeps every read short, but not the request).
  asio::steady_timer timer;
  std::optional<double> cancel_after_ms;  // --cancel-rate: abandoned this long after it was sent whole
  asio::steady_timer cancel_timer;
  LoadClient::Done done;
  SseParser sse;
  http::request<http::string_body> request;
  std::unique_ptr<Connection> conn;
  bool reused = false;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::buffer_body>> parser;
  char body[8192];
  bool finished = false, saw_done = false;
  std::vector<std::string> pieces;  // text of each content event
  std::string whole;                // a non-streamed response's body
  int error_status = 0;             // a non-200 response's status, once its header is in
  std::string error_body;           // the start of a non-200 response's body
  std::vector<double> gaps;         // ms between consecutive content events
  std::optional<int> usage_prompt, usage_completion, usage_cached;
  RequestRecord record;

  void begin() {
    timer.expires_at(deadline);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec) return;
      // A non-200 response already said why the request failed; a body still coming at the deadline does not
      // make it a timeout.
      if (self->error_status) return self->fail(cat("http_", self->error_status), server_message(self->error_body));
      self->fail("timeout");
    });
    // A kept-alive connection with bytes waiting got something nobody asked for (a stray second response,
    // a stray line): its next response could not be told from them, so it is closed, not reused.
    while (!client.idle_.empty()) {
      std::unique_ptr<Connection> idle = std::move(client.idle_.front());
      client.idle_.pop_front();
      if (!idle->quiet()) {
        idle->close();
        continue;
      }
      conn = std::move(idle);
      reused = true;
      return write();
    }
    connect();
  }

  void connect() {
    reused = false;
    conn = std::make_unique<Connection>(client.io_, client.tls_);
    conn->async_connect(client.addresses_, [self = shared_from_this()](auto ec) {
      if (self->finished) return;
      if (ec) return self->fail("connect");
      // https: the TLS handshake is part of the request's time, as the connect is (a kept-alive one skips both).
      self->conn->async_handshake([self](auto ec) {
        if (self->finished) return;
        if (ec) return self->fail("tls", self->conn->handshake_failure(ec));
        self->write();
      });
    });
  }

  // A kept-alive connection the server closed meanwhile fails before any response byte: retry once.
  bool retry_fresh(const boost::system::error_code& ec) {
    const bool closed = ec == http::error::end_of_stream || ec == asio::error::eof ||
                        ec == asio::error::connection_reset || ec == asio::error::broken_pipe;
    if (!reused || !closed || finished) return false;
    // The old connection goes once this handler (one of its own operations') has returned.
    std::unique_ptr<Connection> old = std::move(conn);
    old->close();
    asio::post(client.io_, [old = std::move(old)] {});
    connect();
    return true;
  }

  void write() {
    conn->async_write(request, [self = shared_from_this()](auto ec) {
      if (self->finished) return;
      if (ec) {
        if (!self->retry_fresh(ec)) self->fail(reason_of(ec));
        return;
      }
      if (self->cancel_after_ms) self->arm_cancel();
      self->read_header();
    });
  }

  // The request is all sent: a user who gives up waits so long from now (AIPerf's timing, so that the point
  // of cancellation does not depend on connecting or on the send).
  void arm_cancel() {
    cancel_timer.expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(*cancel_after_ms)));
    cancel_timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->finished) return;
      self->fail(kClientCancel);
    });
  }

  // `fresh`: a new response; else the real one after an interim 1xx, whose bytes may be in the buffer.
  void read_header(bool fresh = true) {
    parser.emplace();
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser->header_limit(kMaxResponseHeader);
    if (fresh) buffer.clear();
    conn->async_read_header(buffer, *parser, [self = shared_from_this()](auto ec) {
      if (self->finished) return;
      if (ec) {
        if (!self->retry_fresh(ec)) self->fail(reason_of(ec));
        return;
      }
      const int status = self->parser->get().result_int();
      // 100 Continue, 102 Processing, 103 Early Hints: interim responses before the real one (RFC 9110).
      if (status >= 100 && status < 200 && status != 101) return self->read_header(false);
      // The request sends no Accept-Encoding, so a body in gzip, br, ... is the server's (or a proxy's) choice:
      // it cannot be read. An error body in one is left unread.
      const auto& header = self->parser->get();
      const auto encoding = header.find(http::field::content_encoding);
      const std::string coding = encoding == header.end() ? "" : server_message(std::string(encoding->value()));
      const bool encoded = !coding.empty() && !beast::iequals(coding, "identity");
      if (status != 200) return encoded ? self->fail(cat("http_", status)) : self->read_error_body(status);
      if (encoded) return self->fail("unsupported_encoding", cat("Content-Encoding: ", coding));
      if (!self->client.options_.stream) {  // a whole response's stage timings: the Server-Timing header
        const auto header = self->parser->get().find("Server-Timing");
        if (header != self->parser->get().end())
          for (const auto& [stage, ms] : parse_server_timing(std::string(header->value()))) self->record.server_ms[stage] = ms;
      }
      self->read_body();
    });
  }

  // A non-200 response fails; its server's message (in its first kMaxErrorBody bytes, if they come within
  // kErrorBodyWait) goes with it.
  void read_error_body(int status) {
    error_status = status;
    if (parser->is_done() || error_body.size() >= kMaxErrorBody)
      return fail(cat("http_", status), server_message(error_body));
    parser->get().body().data = body;
    parser->get().body().size = sizeof body;
    conn->tcp().expires_after(kErrorBodyWait);
    conn->async_read_some(buffer, *parser, [self = shared_from_this(), status](auto ec) {
      if (self->finished) return;
      if (ec == http::error::need_buffer) ec = {};
      const std::size_t got = sizeof self->body - self->parser->get().body().size;
      self->error_body.append(self->body, std::min(got, kMaxErrorBody - self->error_body.size()));
      if (ec) return self->fail(cat("http_", status), server_message(self->error_body));
      self->read_error_body(status);
    });
  }

  void read_body() {
    if (parser->is_done()) return body_done();  // an empty body (Content-Length: 0) has nothing to read
    parser->get().body().data = body;
    parser->get().body().size = sizeof body;
    conn->async_read_some(buffer, *parser, [self = shared_from_this()](auto ec) {
      if (self->finished) return;
      if (ec == http::error::need_buffer) ec = {};
      const std::size_t got = sizeof self->body - self->parser->get().body().size;
      if (!self->client.options_.stream) {  // one JSON object, parsed once it is all there
        if (self->whole.size() + got > kMaxWholeResponse) return self->fail("event_too_large");
        self->whole.append(self->body, got);
        if (ec) return self->fail(reason_of(ec));
        if (!self->parser->is_done()) return self->read_body();
        return self->body_done();
      }
      try {
        if (got > 0 && !self->saw_done) self->sse.feed({self->body, got});  // whatever follows [DONE] is ignored
      } catch (const Error&) {
        return self->fail("event_too_large");
      }
      if (self->finished) return;  // a bad event ended it
      if (ec) return self->fail(reason_of(ec));
      if (self->parser->is_done()) return self->complete();
      self->read_body();
    });
  }

  // The whole body is in: a streamed one must have ended with [DONE]; a whole response is one JSON object.
  void body_done() {
    if (client.options_.stream) return complete();
    StreamChunk chunk;
    try {
      chunk = parse_chunk(whole);
    } catch (const Error&) {
      return fail("malformed_json");
    }
    if (chunk.done) return fail("malformed_json");
    on_event(whole);
    if (finished) return;
    // Empty text that the server counts as tokens (special ones it does not print) is still a response.
    if (pieces.empty() && usage_completion.value_or(0) > 0) {
      record.ttft_ms = ms_between(start, Clock::now());
      pieces.emplace_back();
    }
    saw_done = true;
    complete();
  }

  void on_event(std::string_view data) {
    if (finished || saw_done) return;  // events after [DONE] are ignored
    const auto now = Clock::now();
    StreamChunk chunk;
    try {
      chunk = parse_chunk(data);
    } catch (const Error&) {
      return fail("malformed_sse");
    }
    if (chunk.done) {
      saw_done = true;
      return;
    }
    if (!chunk.error.empty()) return fail("server_error", chunk.error);
    if (chunk.prompt_tokens) usage_prompt = chunk.prompt_tokens;
    if (chunk.completion_tokens) usage_completion = chunk.completion_tokens;
    if (chunk.cached_tokens) usage_cached = chunk.cached_tokens;
    for (const auto& [stage, ms] : chunk.timing) record.server_ms[stage] = ms;
    if (!chunk.token) return;  // a token event even when its text is "" (one chunk per token)
    if (pieces.empty()) record.ttft_ms = ms_between(start, now);
    else gaps.push_back(ms_between(last_event, now));
    last_event = now;
    pieces.push_back(std::move(chunk.content));
  }

  // An SSE error event (llama.cpp's `error:` line): the server gave up on the request.
  void on_error_event(std::string_view data) {
    if (finished || saw_done) return;
    fail("server_error", server_message(data));
  }

  // One ITL per gap between content events, split by split_gaps when output_tokens says the events carried
  // more tokens and a tokenizer can tell which.
  void spread_itl() {
    const Tokenizer* tok = client.options_.tokenizer;
    if (!tok || record.output_tokens == static_cast<int>(pieces.size())) {
      record.itl_ms = gaps;
      return;
    }
    std::vector<int> event_tokens;
    for (const auto& piece : pieces) event_tokens.push_back(static_cast<int>(tok->encode(piece, false).size()));
    record.itl_ms = split_gaps(gaps, event_tokens, record.output_tokens);
  }

  void complete() {
    if (!saw_done) return fail("incomplete_stream");
    if (pieces.empty()) return fail("no_content");
    finished = true;
    record.ok = true;
    record.e2e_ms = ms_between(start, Clock::now());
    if (!client.options_.stream) record.ttft_ms = record.e2e_ms;  // a whole response's first token is its end
    std::string counted_by = "events";
    record.output_tokens = static_cast<int>(pieces.size());
    std::string text;
    for (const auto& p : pieces) text += p;
    // The server's count, unless it is fewer than the content events: every content event is a token.
    if (usage_completion && *usage_completion >= record.output_tokens) {
      record.output_tokens = *usage_completion;
      counted_by = "usage";
    } else if (client.options_.tokenizer) {
      // The tokenizer's count of the text, again never fewer than the content events (their text may be "").
      const int counted = static_cast<int>(client.options_.tokenizer->encode(text, false).size());
      if (counted >= record.output_tokens) {
        record.output_tokens = counted;
        counted_by = "tokenizer";
      }
    }
    spread_itl();
    record.prompt_tokens = usage_prompt.value_or(0);
    // Cached tokens are a part of the prompt's: a count beyond the server's own prompt count is not kept.
    if (usage_cached && usage_prompt && *usage_cached <= *usage_prompt) record.cached_tokens = usage_cached;
    if (parser->get().keep_alive() && buffer.size() == 0) client.idle_.push_back(std::move(conn));
    finish(counted_by, std::move(text));
  }

  // `detail`: the server's message, when it sent one.
  void fail(const std::string& reason, const std::string& detail = "") {
    if (finished) return;
    finished = true;
    record.ok = false;
    record.error = reason;
    record.error_detail = detail;
    record.e2e_ms = ms_between(start, Clock::now());
    if (conn) conn->close();
    finish("");
  }

  void finish(const std::string& counted_by, std::string text = "") {
    auto self = shared_from_this();
    timer.cancel();
    cancel_timer.cancel();
    auto& live = client.live_;
    live.erase(std::remove(live.begin(), live.end(), self), live.end());
    --client.in_flight_;
    done(std::move(record), counted_by, std::move(text));
  }
};

// ---------------------------------------------------------------- the client

LoadClient::LoadClient(asio::io_context& io, ClientOptions options) : io_(io), options_(std::move(options)) {
  tcp::resolver resolver(io_);
  boost::system::error_code ec;
  addresses_ = resolver.resolve(options_.endpoint.host, options_.endpoint.port, ec);
  if (ec) throw Error(cat("cannot resolve ", options_.endpoint.host, ": ", ec.message()));
  if (options_.endpoint.tls) tls_ = std::make_shared<TlsClient>(options_.endpoint.host, options_.tls);
}

LoadClient::~LoadClient() = default;

void LoadClient::post(const std::string& path, std::string body, Clock::time_point start, Done done,
                      std::optional<double> cancel_after_ms) {
  auto ex = std::make_shared<Exchange>(*this, start, std::move(done), cancel_after_ms);
  auto& req = ex->request;
  req.method(http::verb::post);
  req.target(options_.endpoint.base_path + path);
  req.version(11);
  req.set(http::field::host, options_.endpoint.host_port());
  req.set(http::field::user_agent, cat("llmbench/", version()));
  req.set(http::field::content_type, "application/json");
  req.set(http::field::accept, "text/event-stream");
  for (const auto& [k, v] : options_.headers) req.set(k, v);
  req.body() = std::move(body);
  req.prepare_payload();
  live_.push_back(ex);
  ++in_flight_;
  ex->begin();
}

void LoadClient::cancel_all() {
  auto live = live_;
  for (auto& ex : live) ex->fail("cancelled");
  idle_.clear();
}

std::pair<int, std::string> http_get(const Endpoint& endpoint, const std::string& path, double timeout_s,
                                     const std::vector<std::pair<std::string, std::string>>& headers,
                                     const std::function<bool()>& should_stop, const TlsOptions& tls) {
  asio::io_context io;
  tcp::resolver resolver(io);
  Connection conn(io, endpoint.tls ? std::make_shared<TlsClient>(endpoint.host, tls) : nullptr);
  beast::flat_buffer buffer;
  http::request<http::empty_body> req{http::verb::get, endpoint.base_path + path, 11};
  req.set(http::field::host, endpoint.host_port());
  req.set(http::field::user_agent, cat("llmbench/", version()));
  for (const auto& [k, v] : headers) req.set(k, v);
  std::optional<http::response_parser<http::string_body>> res;
  boost::system::error_code failure;
  std::string tls_failure;  // why the handshake failed
  const std::string url = endpoint.url() + path;
  conn.tcp().expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(timeout_s)));
  boost::system::error_code ec;
  const auto addresses = resolver.resolve(endpoint.host, endpoint.port, ec);
  if (ec) throw Error(cat("GET ", url, ": cannot resolve ", endpoint.host, ": ", ec.message()));
  // 100 Continue, 102, 103: interim responses before the real one (RFC 9110) are skipped, as for the requests.
  // Every handler runs inside the loop below, in this frame.
  std::function<void()> read_response = [&] {
    res.emplace();
    res->header_limit(kMaxResponseHeader);
    conn.async_read(buffer, *res, [&](auto ec) {
      const int status = res->get().result_int();
      if (!ec && status >= 100 && status < 200 && status != 101) return read_response();
      failure = ec;
    });
  };
  conn.async_connect(addresses, [&](auto ec) {
    if (ec) return void(failure = ec);
    conn.async_handshake([&](auto ec) {
      if (ec) {
        if (ec != beast::error::timeout) tls_failure = conn.handshake_failure(ec);
        return void(failure = ec);
      }
      conn.async_write(req, [&](auto ec) {
        if (ec) return void(failure = ec);
        read_response();
      });
    });
  });
  // A deadline for the whole exchange, however the server dribbles its bytes.
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  while (!io.stopped()) {
    io.run_for(std::chrono::milliseconds(50));
    if (should_stop && should_stop()) throw Interrupted(cat("GET ", url, ": interrupted"));
    if (!io.stopped() && Clock::now() >= deadline) throw Error(cat("GET ", url, ": timed out"));
  }
  if (!tls_failure.empty())
    throw Error(cat("GET ", url, ": TLS handshake failed: ", tls_failure));
  if (failure) throw Error(cat("GET ", url, ": ", failure == beast::error::timeout ? "timed out" : failure.message()));
  return {res->get().result_int(), res->get().body()};
}

}  // namespace llmbench
