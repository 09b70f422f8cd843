#include "session.h"

#include <sys/socket.h>
#include <sys/types.h>

#include <cctype>
#include <cerrno>
#include <ctime>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "llmbench/base/log.h"
#include "llmbench/serve/sse.h"
#include "llmbench/serve/timing.h"

namespace llmbench::serve {

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
bool is_set(Clock::time_point t) { return t != Clock::time_point{}; }
bool starts_nocase(std::string_view s, beast::string_view prefix) {
  return s.size() >= prefix.size() && beast::iequals(beast::string_view(s.data(), prefix.size()), prefix);
}

constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr std::size_t kMaxHeaderBytes = 64 * 1024;  // request line and fields, as sent
// What the read buffer may hold: the header, or a chunk-size line or trailer section (Beast bounds neither:
// one connection filled gigabytes), plus one read.
constexpr std::size_t kMaxBufferBytes = 2 * kMaxHeaderBytes;
constexpr double kLingerSeconds = 1;  // reading what the client still sends before closing (no RST)

std::uint64_t random_seed() {
  static std::atomic<std::uint64_t> next{std::random_device{}()};
  return next.fetch_add(0x9e3779b97f4a7c15ull);
}

}  // namespace

ServerContext::ServerContext(Engine& engine, std::shared_ptr<const Tokenizer> tokenizer, ServeOptions options)
    : engine(engine),
      tokenizer(std::move(tokenizer)),
      options(std::move(options)),
      model_name(engine.model_name()),
      max_context(engine.max_context()),
      vocab_size(engine.vocab_size()),
      created(static_cast<std::int64_t>(std::time(nullptr))) {}

// One completion in flight on this connection.
struct Session::Job {
  Job(std::uint64_t id, const Tokenizer& tokenizer, CompletionRequest& r, const std::string& model)
      : id(id),
        endpoint(r.endpoint),
        stream(r.stream),
        include_usage(r.include_usage),
        response_id(make_response_id(r.endpoint)),
        created(static_cast<std::int64_t>(std::time(nullptr))),
        text(tokenizer, std::move(r.stop)),
        chunks(r.endpoint, response_id, created, model) {}

  std::uint64_t id;
  Endpoint endpoint;
  bool stream;
  bool include_usage;
  std::string response_id;
  std::int64_t created;
  TextStream text;
  ChunkFormat chunks;
  std::shared_ptr<EngineRequest> request;
  std::string text_out;      // non-streamed: the completion so far
  std::string scratch;       // streamed: one chunk's JSON (capacity reused)
  int prompt_tokens = 0;
  int completion_tokens = 0;
  double tokenize_ms = 0;
  double stream_ms = 0;      // writes to the socket while this job ran
  EngineTimes times;         // merged from the events
  Clock::time_point last_event;
};

Session::Session(ServerContext& ctx, tcp::socket socket)
    : ctx_(ctx), socket_(std::move(socket)), executor_(socket_.get_executor()), timer_(executor_) {
  buffer_.max_size(kMaxBufferBytes);
  ++ctx_.metrics.connections;
}

Session::~Session() { --ctx_.metrics.connections; }

void Session::start() {
  asio::dispatch(executor_, [self = shared_from_this()] { self->wait_request(); });
}

void Session::drain() {
  asio::post(executor_, [self = shared_from_this()] {
    if (self->phase_ == Phase::idle) self->close();
    else self->keep_alive_ = false;
  });
}

void Session::close_if_idle() {
  asio::post(executor_, [self = shared_from_this()] {
    if (self->phase_ == Phase::idle) self->close();
  });
}

// ---- reading

void Session::wait_request() {
  phase_ = Phase::idle;
  if (ctx_.draining) return close();
  if (buffer_.size() > 0) {  // pipelined: the next request is already here
    first_byte_ = Clock::now();
    return read_request();
  }
  arm_timer(ctx_.options.idle_timeout_s);
  idle_ = true;
  socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
    if (self->phase_ != Phase::idle) return;
    self->idle_ = false;
    if (ec) return self->close();
    self->first_byte_ = Clock::now();
    self->read_request();
  });
}

void Session::read_request() {
  phase_ = Phase::reading;
  head_ = false;
  chunked_ = true;
  arm_timer(ctx_.options.read_timeout_s);  // header and body together
  parser_.emplace();
  parser_->body_limit(ctx_.options.max_body_bytes);
  parser_->header_limit(kMaxHeaderBytes);
  http::async_read_header(socket_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

// The request line and fields as sent: Beast's header_limit lets many short fields through (it took 260 KB of
// 8-byte lines), so the whole header is measured once it has been read.
static std::size_t header_bytes(const http::request<http::string_body>& req) {
  std::size_t n = req.method_string().size() + req.target().size() + 12;  // " HTTP/1.1\r\n", the empty line
  for (const auto& f : req) n += f.name_string().size() + f.value().size() + 4;  // ": ", "\r\n"
  return n;
}

void Session::on_header(beast::error_code ec) {
  if (ec || phase_ != Phase::reading) return on_read(ec);
  const auto& req = parser_->get();
  if (header_bytes(req) > kMaxHeaderBytes) return on_read(http::error::header_limit);
  // An HTTP/1.0 client knows no interim responses: RFC 9110 §10.1.1 has the server ignore its 100-continue.
  if (req.version() >= 11 && beast::iequals(req[http::field::expect], "100-continue") && !parser_->is_done()) {
    asio::async_write(socket_, asio::buffer(kContinue, sizeof kContinue - 1),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec) return self->on_read(ec);
                        http::async_read(self->socket_, self->buffer_, *self->parser_,
                                         [self](beast::error_code ec, std::size_t) { self->on_read(ec); });
                      });
    return;
  }
  http::async_read(socket_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->on_read(ec);
  });
}

void Session::on_read(beast::error_code ec) {
  disarm_timer();
  if (phase_ != Phase::reading) return;
  received_ = Clock::now();
  if (timed_out_) {
    timed_out_ = false;
    phase_ = Phase::busy;
    keep_alive_ = false;
    count_response_ = true;
    return respond_error(ApiError(408, "invalid_request_error", "request_timeout",
                                  cat("the request was not received within ", ctx_.options.read_timeout_s, " s")));
  }
  if (ec) {
    const bool http_error = ec.category() == beast::error_code(http::error::bad_target).category();
    if (!http_error || ec == http::error::end_of_stream || ec == http::error::partial_message)
      return close();  // the client went away (or a socket error)
    phase_ = Phase::busy;
    keep_alive_ = false;
    count_response_ = true;
    if (ec == http::error::body_limit)
      return respond_error(ApiError(413, "invalid_request_error", "request_too_large",
                                    cat("the request body exceeds ", ctx_.options.max_body_bytes, " bytes")));
    if (ec == http::error::header_limit)
      return respond_error(ApiError(431, "invalid_request_error", "headers_too_large", "the request headers are too large"));
    if (ec == http::error::buffer_overflow)
      return respond_error(ApiError(431, "invalid_request_error", "headers_too_large",
                                    cat("a chunk-size line or the trailer fields exceed ", kMaxBufferBytes, " bytes")));
    if (ec == http::error::bad_version) {
      // Beast reads HTTP/1.0 and 1.1 only: a well-formed other version (HTTP/2.0, h2's preface) is a 505.
      const std::string_view head(static_cast<const char*>(buffer_.data().data()), buffer_.size());
      const std::string_view line = head.substr(0, head.find("\r\n"));
      const std::string_view v = line.size() >= 9 ? line.substr(line.size() - 9) : std::string_view();
      if (v.size() == 9 && v.substr(0, 6) == " HTTP/" && std::isdigit(static_cast<unsigned char>(v[6])) && v[7] == '.' &&
          std::isdigit(static_cast<unsigned char>(v[8])))
        return respond_error(ApiError(505, "invalid_request_error", "http_version_not_supported",
                                      cat(v.substr(1), " is not supported: this server speaks HTTP/1.1 and HTTP/1.0")));
    }
    return respond_error(ApiError(400, "invalid_request_error", "bad_http", cat("malformed HTTP request: ", ec.message())));
  }
  handle();
}

// ---- routing

void Session::handle() {
  phase_ = Phase::busy;
  const auto& req = parser_->get();
  keep_alive_ = req.keep_alive() && !ctx_.draining;
  head_ = req.method() == http::verb::head;
  chunked_ = req.version() >= 11;
  std::string_view path(req.target().data(), req.target().size());
  // RFC 9112 3.2.2: the absolute-form (http://host:port/path?query, as sent to proxies) is routed on its path.
  if (starts_nocase(path, "http://") || starts_nocase(path, "https://")) {
    const auto end = path.find_first_of("/?", path.find("//") + 2);
    path = end == std::string_view::npos || path[end] == '?' ? "/" : path.substr(end);
  }
  path = path.substr(0, path.find('?'));
  count_response_ = path != "/health" && path != "/metrics";
  try {
    // A transfer coding other than chunked (gzip, …) was not decoded: the body and where the next request
    // starts are unknown (RFC 9112 6.1, 6.3). Answer and close.
    const auto te = req.equal_range(http::field::transfer_encoding);
    if (te.first != te.second && (std::next(te.first) != te.second || !beast::iequals(te.first->value(), "chunked"))) {
      keep_alive_ = false;
      throw ApiError(501, "invalid_request_error", "unsupported_transfer_encoding",
                     cat("Transfer-Encoding '", te.first->value(), "' is not supported (only chunked)"));
    }
    // RFC 9112 3.2 (RFC 7230 5.4): an HTTP/1.1 request carries exactly one Host header, else 400.
    const auto hosts = req.equal_range(http::field::host);
    if (req.version() >= 11 && (hosts.first == hosts.second || std::next(hosts.first) != hosts.second))
      throw ApiError(400, "invalid_request_error", "bad_host",
                     hosts.first == hosts.second ? "an HTTP/1.1 request needs a Host header"
                                                 : "an HTTP/1.1 request takes one Host header, not several");
    route(req, path);
  } catch (const ApiError& e) {
    respond_error(e);
  } catch (const std::exception& e) {
    log::error(cat("serve: ", req.method_string(), " ", path, ": ", first_line(e.what())));
    respond_error(ApiError(500, "server_error", "internal_error", first_line(e.what())));
  }
}

void Session::route(const http::request<http::string_body>& req, std::string_view path) {
  const bool get = req.method() == http::verb::get || head_, post = req.method() == http::verb::post;
  auto method_not_allowed = [&](const char* allowed) {
    respond(405, error_json(ApiError(405, "invalid_request_error", "method_not_allowed",
                                     cat(req.method_string(), " is not allowed on ", path, " (", allowed, ")"))),
            "application/json", {{"Allow", allowed}});
  };
  if (path == "/health") {
    if (!get) return method_not_allowed("GET");
    if (auto failure = ctx_.engine.failure())
      return respond(503, dump_json({{"status", "failed"}, {"error", *failure}}), "application/json");
    if (ctx_.draining) return respond(503, "{\"status\":\"shutting down\"}", "application/json");
    const EngineStats stats = ctx_.engine.stats();
    nlohmann::json health{{"status", "ok"}, {"tp", stats.tp}};
    if (stats.tp > 1) health["tp_backend"] = stats.tp_backend;
    return respond(200, dump_json(health), "application/json");
  }
  if (path == "/metrics") {
    if (!get) return method_not_allowed("GET");
    return respond(200, ctx_.metrics.render(ctx_.engine.stats()), "text/plain; version=0.0.4; charset=utf-8");
  }
  if (path == "/v1/models" || path.rfind("/v1/models/", 0) == 0) {
    if (!get) return method_not_allowed("GET");
    check_auth(req);
    nlohmann::json model{{"id", ctx_.model_name}, {"object", "model"}, {"created", ctx_.created},
                         {"owned_by", "llmbench"}, {"max_model_len", ctx_.max_context}};
    if (path == "/v1/models")
      return respond(200, dump_json({{"object", "list"}, {"data", {model}}}), "application/json");
    const std::string_view id = path.substr(std::string_view("/v1/models/").size());
    if (id != ctx_.model_name)
      throw ApiError(404, "invalid_request_error", "model_not_found", cat("model '", id, "' does not exist"), "model");
    return respond(200, dump_json(model), "application/json");
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!post) return method_not_allowed("POST");
    check_auth(req);
    return start_completion(req, path == "/v1/completions" ? Endpoint::completions : Endpoint::chat);
  }
  throw ApiError(404, "invalid_request_error", "not_found", cat("no route for ", req.method_string(), " ", path));
}

void Session::check_auth(const http::request<http::string_body>& req) const {
  if (ctx_.options.api_key.empty()) return;
  const auto auth = req[http::field::authorization];
  if (auth.empty())
    throw ApiError(401, "authentication_error", "invalid_api_key",
                   "missing API key: send 'Authorization: Bearer KEY' (the server runs with --api-key)");
  // The scheme is case-insensitive (RFC 9110 11.1), the key is not.
  const beast::string_view scheme = "Bearer ";
  if (auth.size() != scheme.size() + ctx_.options.api_key.size() || !beast::iequals(auth.substr(0, scheme.size()), scheme) ||
      auth.substr(scheme.size()) != ctx_.options.api_key)
    throw ApiError(401, "authentication_error", "invalid_api_key", "incorrect API key");
}

// ---- completions

void Session::start_completion(const http::request<http::string_body>& req, Endpoint endpoint) {
  if (ctx_.draining) throw ApiError(503, "server_error", "shutting_down", "the server is shutting down");
  CompletionRequest r = parse_request(req.body(), endpoint);
  if (!r.model.empty() && r.model != ctx_.model_name)
    throw ApiError(404, "invalid_request_error", "model_not_found",
                   cat("model '", r.model, "' does not exist; this server serves '", ctx_.model_name, "'"), "model");
  const auto t0 = Clock::now();
  std::vector<std::int64_t> ids;
  try {
    ids = prompt_tokens(r, *ctx_.tokenizer, ctx_.vocab_size);
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {  // the tokenizer refused the text
    throw bad_request(endpoint == Endpoint::chat ? "messages" : "prompt", first_line(e.what()));
  }
  const double tokenize_ms = ms_between(t0, Clock::now());
  const int max_tokens = resolve_max_tokens(r, ids.size(), ctx_.max_context);

  auto request = std::make_shared<EngineRequest>();
  request->prompt = std::move(ids);
  request->max_tokens = max_tokens;
  request->temperature = r.temperature;
  request->top_p = r.top_p;
  request->seed = r.seed ? *r.seed : random_seed();
  request->ignore_eos = r.ignore_eos;
  request->min_tokens = r.min_tokens;
  const std::uint64_t id = ++jobs_;
  // The engine thread only posts; the event is handled on this connection's strand.
  request->on_event = [self = shared_from_this(), id](const EngineEvent& event) {
    asio::post(self->executor_, [self, id, event] { self->on_engine_event(id, event); });
  };
  auto job = std::make_unique<Job>(id, *ctx_.tokenizer, r, ctx_.model_name);
  job->request = request;
  job->prompt_tokens = static_cast<int>(request->prompt.size());
  job->tokenize_ms = tokenize_ms;
  bool accepted = false;
  try {
    accepted = ctx_.engine.submit(request);
  } catch (const UsageError& e) {
    throw bad_request(endpoint == Endpoint::chat ? "messages" : "prompt", first_line(e.what()));
  }
  if (!accepted)
    throw ApiError(503, "server_error", "overloaded", "the server's request queue is full (--max-queue); retry later");
  ctx_.metrics.prompt_tokens += job->prompt_tokens;
  job_ = std::move(job);
  if (job_->stream) {
    if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the stream ends when the connection does
    out_ += sse_response_head(!keep_alive_, chunked_);
    if (endpoint == Endpoint::chat) append_sse_event(out_, job_->chunks.role_chunk(), chunked_);
    flush();
  }
  watch_disconnect();
}

void Session::on_engine_event(std::uint64_t job_id, const EngineEvent& event) {
  if (!job_ || job_->id != job_id || phase_ == Phase::closed) return;  // answered already (stop string)
  Job& j = *job_;
  const auto now = Clock::now();
  // The queue time is known once the request holds a slot: observed then, so that a request cancelled later
  // (the client went away mid-stream) still counts in the histogram.
  const bool admitted_now = is_set(event.times.admitted) && !is_set(j.times.admitted);
  if (is_set(event.times.enqueued)) j.times.enqueued = event.times.enqueued;
  if (is_set(event.times.admitted)) j.times.admitted = event.times.admitted;
  if (admitted_now && is_set(j.times.enqueued))
    ctx_.metrics.queue.observe(ms_between(j.times.enqueued, j.times.admitted) / 1e3);
  if (is_set(event.times.first_token)) j.times.first_token = event.times.first_token;
  if (is_set(event.times.finished)) j.times.finished = event.times.finished;
  if (!event.tokens.empty()) {
    if (j.completion_tokens == 0) ctx_.metrics.ttft.observe(ms_between(received_, now) / 1e3);
    else ctx_.metrics.itl.observe(ms_between(j.last_event, now) / 1e3);
    j.last_event = now;
    const bool last = event.finish == FinishReason::stop || event.finish == FinishReason::length;
    for (std::size_t i = 0; i < event.tokens.size(); ++i) {
      ++j.completion_tokens;
      std::string piece = j.text.push(static_cast<TokenId>(event.tokens[i]));
      if (last && i + 1 == event.tokens.size()) piece += j.text.finish();  // held-back text rides on the last token
      // Streamed: one chunk per token, its text "" when it decodes to nothing (a skipped special token,
      // bytes of an unfinished UTF-8 sequence, a possible stop-string prefix), as vLLM does: a client
      // times every token.
      if (j.stream) {
        j.scratch.clear();
        j.chunks.append_text(j.scratch, piece);
        append_sse_event(out_, j.scratch, chunked_);
      } else {
        j.text_out += piece;
      }
      if (j.text.stopped()) {  // answer now; the engine frees the slot at its next step
        j.request->cancelled = true;
        return finish_job("stop");
      }
    }
    if (j.stream) flush();
  }
  switch (event.finish) {
    case FinishReason::none: return;
    case FinishReason::stop: return finish_job("stop");
    case FinishReason::length: return finish_job("length");
    case FinishReason::cancelled:
      return fail_job(ApiError(503, "server_error", "cancelled", "the request was cancelled (the server is shutting down)"),
                      "cancelled");
    case FinishReason::error:
      return fail_job(ApiError(500, "server_error", "engine_error", cat("the engine failed: ", event.error)), "error");
  }
}

void Session::finish_job(const std::string& finish_reason) {
  Job& j = *job_;
  const auto now = Clock::now();
  const std::string rest = j.text.finish();
  StageTimes t;
  t.http_recv = ms_between(first_byte_, received_);
  t.tokenize = j.tokenize_ms;
  if (is_set(j.times.enqueued) && is_set(j.times.admitted)) t.queue = ms_between(j.times.enqueued, j.times.admitted);
  if (is_set(j.times.admitted) && is_set(j.times.first_token)) t.prefill = ms_between(j.times.admitted, j.times.first_token);
  const auto last = is_set(j.times.finished) && j.times.finished < now ? j.times.finished : now;
  if (is_set(j.times.first_token)) t.decode = ms_between(j.times.first_token, last);
  // Streamed: the socket writes so far. Not streamed: the header goes out with the body, so this is the
  // time from the last token to the body being queued (detokenizing the rest, the JSON).
  t.stream = j.stream ? j.stream_ms : ms_between(last, Clock::now());
  ctx_.metrics.e2e.observe(ms_between(received_, now) / 1e3);
  ctx_.metrics.generation_tokens += j.completion_tokens;
  ctx_.metrics.count_finish(finish_reason);
  const Usage usage{j.prompt_tokens, j.completion_tokens};
  auto job = std::move(job_);  // the engine may still hold the request until its next step; we are done with it
  if (j.stream) {
    if (!rest.empty()) {
      j.scratch.clear();
      j.chunks.append_text(j.scratch, rest);
      append_sse_event(out_, j.scratch, chunked_);
    }
    const std::string timing = ",\"llmbench_timing\":" + timing_json(t);
    append_sse_event(out_, j.chunks.finish_chunk(finish_reason, j.include_usage ? "" : timing), chunked_);
    if (j.include_usage) append_sse_event(out_, j.chunks.usage_chunk(usage, timing), chunked_);
    append_sse_done(out_, chunked_);
    if (count_response_) ctx_.metrics.count_response(200);
    response_done_ = true;
    return flush();
  }
  respond(200, completion_json(j.endpoint, j.response_id, j.created, ctx_.model_name, j.text_out + rest, finish_reason, usage, ""),
          "application/json", {{"Server-Timing", server_timing_header(t)}});
}

void Session::fail_job(const ApiError& error, const std::string& finish_reason) {
  auto job = std::move(job_);
  ctx_.metrics.count_finish(finish_reason);
  ctx_.metrics.generation_tokens += job->completion_tokens;
  if (!job->stream) return respond_error(error);
  append_sse_event(out_, error_json(error), chunked_);  // the status line is gone: the error travels as an event
  append_sse_done(out_, chunked_);
  if (count_response_) ctx_.metrics.count_response(error.status);
  response_done_ = true;
  flush();
}

// ---- writing

void Session::respond(int status, const std::string& body, const char* content_type, const Headers& headers) {
  http::response<http::string_body> res{static_cast<http::status>(status), 11};
  res.set(http::field::server, "llmbench");
  res.set(http::field::content_type, content_type);
  for (const auto& [name, value] : headers) res.set(name, value);
  res.keep_alive(keep_alive_);
  // HTTP/1.0 closes after each response unless the reply says keep-alive (RFC 9112 9.3): echo the client's.
  if (keep_alive_ && !chunked_) res.set(http::field::connection, "keep-alive");
  res.body() = body;
  res.prepare_payload();
  std::ostringstream os;
  if (head_) os << res.base();  // the headers a GET would get, Content-Length included
  else os << res;
  out_ += os.str();
  if (count_response_) ctx_.metrics.count_response(status);
  response_done_ = true;
  flush();
}

void Session::respond_error(const ApiError& error) {
  Headers headers;
  if (error.status == 503) headers.emplace_back("Retry-After", "1");
  if (error.status == 401) headers.emplace_back("WWW-Authenticate", "Bearer");
  respond(error.status, error_json(error), "application/json", headers);
}

void Session::flush() {
  if (write_busy_ || phase_ == Phase::closed || phase_ == Phase::closing) return;
  if (out_.empty()) {
    if (response_done_) after_response();
    return;
  }
  writing_.swap(out_);
  out_.clear();
  write_busy_ = true;
  write_started_ = Clock::now();
  arm_timer(ctx_.options.write_timeout_s);
  asio::async_write(socket_, asio::buffer(writing_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->on_written(ec);
  });
}

void Session::on_written(beast::error_code ec) {
  write_busy_ = false;
  disarm_timer();
  if (job_) job_->stream_ms += ms_between(write_started_, Clock::now());
  if (phase_ == Phase::closed) return;
  if (ec) return close();  // the client went away: close() cancels the request
  writing_.clear();
  flush();
}

void Session::after_response() {
  response_done_ = false;
  if (!keep_alive_ || ctx_.draining) return linger_close();
  wait_request();
}

// A connection may go away while its request waits in the queue or generates: the socket turns readable
// and a peek reads end of file. Bytes to read are a pipelined request: they move to the read buffer (bounded;
// the next read starts from it), so that an end of file behind them is seen too.
void Session::watch_disconnect() {
  if (watching_) return;
  watching_ = true;
  const std::uint64_t job = job_ ? job_->id : 0;
  socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this(), job](beast::error_code ec) {
    self->watching_ = false;
    if (self->phase_ != Phase::busy || !self->job_) return;
    // Armed for an earlier request of this keep-alive connection: the next request's bytes woke it, and
    // have been read since. Watch again for the request now running.
    if (self->job_->id != job) return self->watch_disconnect();
    if (ec) return self->close();
    // A wake-up is not yet a disconnect: the reactor sometimes completes this wait with nothing to read and
    // the client still there (about 1 in 200 streams of tests/cli/serve_tp.sh; the request was then closed
    // as a 499 before its first token). Only end of file (the client closed) or a socket error ends the
    // request; a wake-up without either waits again.
    char byte = 0;
    const ssize_t n = ::recv(self->socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) {
      const std::size_t room = self->buffer_.max_size() - self->buffer_.size();
      if (room == 0) return;  // a full buffer: the next read sees what follows
      const ssize_t got = ::recv(self->socket_.native_handle(), self->buffer_.prepare(room).data(), room, MSG_DONTWAIT);
      if (got > 0) self->buffer_.commit(std::size_t(got));
      return self->watch_disconnect();
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return self->watch_disconnect();
    self->close();
  });
}

// Half-close and read what the client still sends for a moment, so closing does not reset the connection
// before it has read our response (an unread request body makes the kernel send RST).
void Session::linger_close() {
  phase_ = Phase::closing;
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close();
  arm_timer(kLingerSeconds);
  drain_read();
}

void Session::drain_read() {
  buffer_.consume(buffer_.size());
  socket_.async_read_some(buffer_.prepare(16 * 1024), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    if (self->phase_ != Phase::closing) return;
    if (ec) return self->close();
    self->drain_read();
  });
}

void Session::close() {
  if (phase_ == Phase::closed) return;
  phase_ = Phase::closed;
  idle_ = false;
  disarm_timer();
  if (job_) {  // the client went away mid-request: free the slot at the next step
    job_->request->cancelled = true;
    ctx_.metrics.count_finish("cancelled");
    ctx_.metrics.generation_tokens += job_->completion_tokens;
    if (count_response_) ctx_.metrics.count_response(499);
    job_.reset();
  }
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

void Session::arm_timer(double seconds) {
  const std::uint64_t generation = ++timer_generation_;
  timer_.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
  timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
    if (ec || generation != self->timer_generation_) return;
    self->on_timeout();
  });
}

void Session::disarm_timer() {
  ++timer_generation_;
  timer_.cancel();
}

void Session::on_timeout() {
  if (phase_ == Phase::reading) {  // a slow client: on_read answers 408
    timed_out_ = true;
    beast::error_code ec;
    socket_.cancel(ec);
    return;
  }
  close();  // idle keep-alive, a write the client does not take, or the end of lingering
}

}  // namespace llmbench::serve
