// libFuzzer: the load client's HTTP layer (src/load/client.cpp's LoadClient) against a fake server in the same
// process, on 127.0.0.1 (an ephemeral port) and the client's own io_context. The input is
//   byte 0: flags: 1 stream, 2 count tokens with the tiny tokenizer, 8 the server closes the connection after
//           each response (a kept-alive one the client then finds closed when it reuses it); 0xF0 all set: the
//           server never closes, and a 5 ms deadline ends the request instead (rare: each such input costs 5 ms);
//   byte 1: the server's write size (0: each response at once, else 1 to 255 bytes a write, the client running
//           between writes);
//   then the raw bytes of one response, or of two split by "|NEXT|": a second request is posted after the first
//   ends, on the kept-alive connection when the client keeps it, else on a new one.
// The server reads each request, writes its bytes, and closes the connection unless the client is done with the
// request and a second one follows, so the client always sees EOF and nothing waits for its deadline. Checked:
// Done once per post(), in_flight() back to 0, a successful record's numbers consistent, an error's strings one
// bounded line of UTF-8, and no "timeout" unless the server held the connection (else the client missed its close).
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/base/utf8.h"
#include "llmbench/load/client.h"
#include "llmbench/load/sse.h"
#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr double kTimeoutS = 5;  // the client's deadline: a backstop only (long enough for a stalled, loaded box)
constexpr double kHoldTimeoutS = 0.005;  // while the server holds the connection: the deadline is what ends it
constexpr std::string_view kNext = "|NEXT|";
constexpr auto kGiveUp = std::chrono::seconds(7);  // past the client's deadline: its Done must have come

// Everything that outlives one input: the loop, the listening socket, the tokenizer.
struct World {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard = asio::make_work_guard(io);
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
  std::string url = cat("http://127.0.0.1:", acceptor.local_endpoint().port());
  // The fuzz build stubs out the built-in copy: read from the source tree, once.
  std::unique_ptr<Tokenizer> tiny = tokenizer_from_json(
      read_file(LLMBENCH_SOURCE_DIR "/assets/tiny/tokenizer.json"), "", "assets/tiny/tokenizer.json");
  World() { acceptor.non_blocking(true); }
};

World& world() {
  static World w;
  return w;
}

// Runs the client's handlers until none is ready (its reads of what the server wrote included: loopback
// bytes are there once send() returns).
void settle() {
  while (world().io.poll() > 0) {
  }
}

bool valid_line(const std::string& s, std::size_t max_bytes) {
  if (s.size() > max_bytes || !utf8::is_valid(s)) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7F) return false;
  return true;
}

void check(const RequestRecord& r, const std::string& counted_by, bool stream, bool hold) {
  if (r.ok) {
    if (!r.error.empty() || !r.error_detail.empty()) __builtin_trap();
    if (counted_by != "usage" && counted_by != "tokenizer" && counted_by != "events") __builtin_trap();
    if (!(r.ttft_ms >= 0) || !(r.e2e_ms >= r.ttft_ms) || r.output_tokens < 1 || r.prompt_tokens < 0) __builtin_trap();
    // One gap fewer than tokens at most (split_gaps' contract); a whole response has none, its TTFT is its e2e.
    if (r.itl_ms.size() > static_cast<std::size_t>(r.output_tokens - 1)) __builtin_trap();
    if (!stream && (!r.itl_ms.empty() || r.ttft_ms != r.e2e_ms)) __builtin_trap();
    for (double g : r.itl_ms)
      if (!(g >= 0)) __builtin_trap();
  } else {
    if (r.error.empty() || !counted_by.empty() || !valid_line(r.error, 32)) __builtin_trap();
    if (!hold && r.error == "timeout") __builtin_trap();  // the server closed: the client must have seen EOF
    // The server's message, or "Content-Encoding: " + one (unsupported_encoding); "..." ends a cut one.
    if (!valid_line(r.error_detail, kMaxServerMessageBytes + 3 + 18)) __builtin_trap();
  }
  for (const auto& [stage, ms] : r.server_ms)
    if (!(ms >= 0 && ms <= 1e9)) __builtin_trap();
}

// The fake server's side of the current connection.
struct Server {
  tcp::socket conn{world().io};
  std::string request;

  void close() {
    boost::system::error_code ec;
    conn.shutdown(tcp::socket::shutdown_both, ec);
    conn.close(ec);
  }

  // A whole request: its header and the Content-Length bytes of body after it (the client always sends one).
  bool request_complete() const {
    const auto end = request.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const auto at = request.find("Content-Length: ");
    const std::size_t length = at < end ? std::stoul(request.substr(at + 16, 10)) : 0;
    return request.size() >= end + 4 + length;
  }

  // Reads the request that carries `tag` from the current connection or a new one (the client did not keep the
  // old one); false when the client gave up on it first (`done`). A request without the tag is an earlier one the
  // server never took (its client gave up first, as at a 5 ms deadline): that connection is dropped.
  bool read_request(const int& done, const std::string& tag) {
    World& w = world();
    request.clear();
    for (const auto give_up = Clock::now() + kGiveUp; Clock::now() < give_up;) {
      settle();
      if (done) return false;
      boost::system::error_code ec;
      tcp::socket fresh(w.io);
      w.acceptor.accept(fresh, ec);
      if (!ec) {
        close();
        conn = std::move(fresh);
        request.clear();
      }
      if (conn.is_open()) {
        char buf[4096];
        const ssize_t n = ::recv(conn.native_handle(), buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN)) close();  // the client closed it (or reset it)
        if (n > 0) {
          request.append(buf, n);
          if (!request_complete()) continue;
          if (request.find(cat('"', tag, '"')) != std::string::npos) return true;
          close();
          request.clear();
          continue;
        }
      }
      pollfd fds[2] = {{w.acceptor.native_handle(), POLLIN, 0}, {conn.is_open() ? conn.native_handle() : -1, POLLIN, 0}};
      ::poll(fds, 2, 1);
    }
    __builtin_trap();  // neither a request nor the client's Done within its deadline
  }

  // `chunk` bytes a write (0: all at once), the client running between writes so it reads each on its own.
  void write(std::string_view bytes, std::size_t chunk) {
    for (std::size_t at = 0; at < bytes.size() && conn.is_open();) {
      const std::size_t n = chunk ? std::min(chunk, bytes.size() - at) : bytes.size() - at;
      // The client may have closed its end already (a refused response): the rest goes nowhere.
      if (::send(conn.native_handle(), bytes.data() + at, n, MSG_NOSIGNAL) < 0) break;
      at += n;
      settle();
    }
  }
};

// Runs the loop until `done` (the client's deadline guarantees it).
void wait_for(const int& done) {
  for (const auto give_up = Clock::now() + kGiveUp; !done && Clock::now() < give_up;)
    if (world().io.poll() == 0) world().io.run_one_for(std::chrono::milliseconds(1));
  if (!done) __builtin_trap();
}

}  // namespace
}  // namespace llmbench

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace llmbench;
  if (size < 2) return 0;
  World& w = world();
  const unsigned flags = data[0];
  const std::size_t chunk = data[1];
  const std::string_view in(reinterpret_cast<const char*>(data) + 2, size - 2);
  std::vector<std::string_view> responses;
  if (const auto cut = in.find(kNext); cut != std::string_view::npos)
    responses = {in.substr(0, cut), in.substr(cut + kNext.size())};
  else
    responses = {in};

  ClientOptions options;
  options.endpoint = parse_endpoint(w.url);
  options.timeout_s = kTimeoutS;
  options.stream = flags & 1;
  options.tokenizer = flags & 2 ? w.tiny.get() : nullptr;
  const bool close_each = flags & 8;
  const bool hold = (flags & 0xF0) == 0xF0;
  if (hold) options.timeout_s = kHoldTimeoutS;
  {
    LoadClient client(w.io, options);
    Server server;
    int dones[2] = {0, 0};
    for (std::size_t i = 0; i < responses.size(); ++i) {
      static unsigned serial = 0;
      const std::string tag = cat("request ", ++serial);
      const std::string body = cat(R"({"model": "m", "prompt": ")", tag, R"(", "max_tokens": 4)",
                                   options.stream ? R"(, "stream": true})" : "}");
      auto on_done = [&dones, i, stream = options.stream, hold](RequestRecord r, const std::string& by, std::string text) {
        if (++dones[i] > 1) __builtin_trap();
        if (!r.ok && !text.empty()) __builtin_trap();  // a failed request has no answer to carry into a history
        if (std::getenv("FUZZ_LOAD_HTTP_PRINT"))  // to see what a seed does: FUZZ_LOAD_HTTP_PRINT=1 fuzz_load_http FILE
          std::fprintf(stderr, "request %zu: %s [%s] %d tokens by %s, %zu ITLs\n", i + 1, r.ok ? "ok" : r.error.c_str(),
                       r.error_detail.c_str(), r.output_tokens, by.c_str(), r.itl_ms.size());
        check(r, by, stream, hold);
      };
      client.post("/v1/completions", body, Clock::now(), on_done);
      if (!server.read_request(dones[i], tag)) continue;  // it failed before sending (or while)
      server.write(responses[i], chunk);
      settle();
      // Done with this one and another follows on the kept-alive connection: leave it open (unless told not to).
      if (dones[i] && i + 1 < responses.size() && !close_each) continue;
      if (!hold) server.close();
      wait_for(dones[i]);
    }
    server.close();
    for (std::size_t i = 0; i < responses.size(); ++i) wait_for(dones[i]);
    if (dones[0] != 1 || dones[1] != (responses.size() > 1 ? 1 : 0) || client.in_flight() != 0) __builtin_trap();
    settle();  // the handlers of the closed sockets' aborted operations, before the client goes
  }
  settle();
  return 0;
}
