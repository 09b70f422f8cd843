// The server end to end over loopback, against the deterministic test engine, with curl (an independent
// HTTP client) and raw sockets for what clients do wrong (slow, oversized, gone mid-stream).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <regex>
#include <thread>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include "fake_engine.h"
#include "llmbench/serve/server.h"

namespace llmbench::serve {
namespace {

using nlohmann::json;
using test::FakeEngine;
using tcp = boost::asio::ip::tcp;

struct Reply {
  int status = 0;
  std::string headers;  // lower-cased
  std::string body;
  std::string header(const std::string& name) const {
    const auto at = headers.find("\n" + name + ": ");
    if (at == std::string::npos) return {};
    const auto start = at + name.size() + 3;
    return headers.substr(start, headers.find('\r', start) - start);
  }
};

std::string shell(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  char buf[65536];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

// curl's view of a response: headers (-D -) then the decoded body.
Reply parse_curl(const std::string& out) {
  Reply r;
  std::size_t start = 0;
  for (;;) {
    const auto end = out.find("\r\n\r\n", start);
    if (end == std::string::npos) return r;
    r.headers = out.substr(start, end - start + 2);
    r.status = std::stoi(r.headers.substr(r.headers.find(' ') + 1, 3));
    start = end + 4;
    if (r.status != 100) break;  // 100 Continue precedes the real head
  }
  for (auto& c : r.headers)
    if (c == ':') break;
  std::string lower;
  bool in_name = true;
  for (char c : r.headers) {  // header names lower-cased, values kept
    if (c == '\n') in_name = true;
    else if (c == ':') in_name = false;
    lower.push_back(in_name ? char(std::tolower(static_cast<unsigned char>(c))) : c);
  }
  r.headers = "\n" + lower;
  r.body = out.substr(start);
  return r;
}

std::string temp_file(const std::string& content) {
  char name[] = "/tmp/llmbench_serve_XXXXXX";
  const int fd = mkstemp(name);
  close(fd);
  std::ofstream(name, std::ios::binary) << content;
  return name;
}

// The SSE events' data lines, in order.
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const auto end = body.find("\n\n", at);
    out.push_back(body.substr(at + 6, end - at - 6));
    at = end;
  }
  return out;
}

class ServerTest : public ::testing::Test {
 protected:
  void start(FakeEngine::Options eo = {}, ServeOptions so = {}) {
    tok = std::shared_ptr<const Tokenizer>(tokenizer_from_json(tiny_tokenizer_json(), tiny_tokenizer_config_json(), "tiny"));
    engine = std::make_unique<FakeEngine>(eo, tok);
    so.port = 0;
    server = std::make_unique<Server>(*engine, tok, so);
    server->start();
    base = "http://127.0.0.1:" + std::to_string(server->port());
  }
  void TearDown() override {
    if (server) server->shutdown();
    engine.reset();  // before the server: its requests' callbacks hold connections
    server.reset();
  }

  Reply get(const std::string& path, const std::string& extra = "") {
    return parse_curl(shell("curl -sS -D - " + extra + " '" + base + path + "'"));
  }
  Reply post(const std::string& path, const std::string& body, const std::string& extra = "") {
    const std::string file = temp_file(body);
    Reply r = parse_curl(shell("curl -sS -N -D - -H 'Content-Type: application/json' --data-binary @" + file + " " +
                               extra + " '" + base + path + "'"));
    std::remove(file.c_str());
    return r;
  }
  std::string expected_text(const std::vector<std::int64_t>& prompt, int n) {
    std::vector<TokenId> ids;
    for (int i = 0; i < n; ++i) ids.push_back(TokenId(FakeEngine::next_token(prompt, i, 512)));
    return tok->decode(ids, true);
  }
  bool wait_idle(double seconds = 3) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      const EngineStats s = engine->stats();
      if (s.running == 0 && s.waiting == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  tcp::socket connect() {
    tcp::socket s(io);
    s.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(server->port())));
    return s;
  }
  // Sends `request` on a new connection: everything the server answers until it closes.
  std::string exchange(const std::string& request) {
    tcp::socket s = connect();
    boost::asio::write(s, boost::asio::buffer(request));
    return read_until_close(s);
  }
  // Everything the server sends until it closes (or `seconds` of silence).
  static std::string read_until_close(tcp::socket& s, double seconds = 5) {
    timeval tv{static_cast<time_t>(seconds), static_cast<suseconds_t>((seconds - int(seconds)) * 1e6)};
    setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string out;
    char buf[4096];
    for (;;) {  // plain recv: asio's blocking read would poll past SO_RCVTIMEO
      const ssize_t n = ::recv(s.native_handle(), buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, std::size_t(n));
    }
  }

  boost::asio::io_context io;
  std::shared_ptr<const Tokenizer> tok;
  std::unique_ptr<FakeEngine> engine;
  std::unique_ptr<Server> server;
  std::string base;
};

// A tensor-parallel engine whose rank failed: /health says so (503 with the reason) while the server
// still answers, until `serve` sees Engine::failure() and exits.
TEST_F(ServerTest, HealthReportsAFailedEngine) {
  start();
  EXPECT_EQ(get("/health").status, 200);
  engine->set_failure("tensor-parallel rank 1 (pid 42) was killed by signal 9 (Killed)");
  Reply h = get("/health");
  EXPECT_EQ(h.status, 503);
  EXPECT_EQ(json::parse(h.body)["status"], "failed");
  EXPECT_EQ(json::parse(h.body)["error"], "tensor-parallel rank 1 (pid 42) was killed by signal 9 (Killed)");
}

TEST_F(ServerTest, HealthModelsAndRoutes) {
  start();
  Reply h = get("/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(json::parse(h.body)["status"], "ok");
  EXPECT_EQ(json::parse(h.body)["tp"], 1);
  EXPECT_FALSE(json::parse(h.body).contains("tp_backend"));
  Reply m = get("/v1/models");
  ASSERT_EQ(m.status, 200);
  json models = json::parse(m.body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "fake");
  EXPECT_EQ(get("/v1/models/fake").status, 200);
  EXPECT_EQ(get("/v1/models/other").status, 404);
  Reply nf = get("/v2/nothing");
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(json::parse(nf.body)["error"]["code"], "not_found");
  Reply wrong = get("/v1/completions");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.header("allow"), "POST");
}

TEST_F(ServerTest, CompletionNotStreamed) {
  start();
  Reply r = post("/v1/completions", R"({"model":"fake","prompt":[10,20,30],"max_tokens":8,"temperature":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("content-type"), "application/json");
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "fake");
  EXPECT_EQ(j["choices"][0]["text"], expected_text({10, 20, 30}, 8));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"], (json{{"prompt_tokens", 3}, {"completion_tokens", 8}, {"total_tokens", 11}}));
  // Server-Timing: every stage, with durations that add up to something plausible (8 steps of 2 ms).
  const std::string timing = r.header("server-timing");
  std::smatch m;
  double decode = -1, prefill = -1;
  for (const char* stage : {"http_recv", "queue", "tokenize", "prefill", "decode", "stream"}) {
    ASSERT_TRUE(std::regex_search(timing, m, std::regex(std::string(stage) + ";dur=([0-9.]+)"))) << timing;
    if (std::string(stage) == "decode") decode = std::stod(m[1]);
    if (std::string(stage) == "prefill") prefill = std::stod(m[1]);
  }
  EXPECT_GE(decode, 7 * 2 * 0.9) << timing;
  EXPECT_GE(prefill, 0);
  // A text prompt goes through the tokenizer (with BOS).
  r = post("/v1/completions", R"({"prompt":"hello there","max_tokens":2})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["usage"]["prompt_tokens"], tok->encode("hello there", true).size());
}

TEST_F(ServerTest, CompletionStreamed) {
  start();
  Reply r = post("/v1/completions",
                 R"({"prompt":[65,66],"max_tokens":12,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type"), "text/event-stream");
  EXPECT_EQ(r.header("transfer-encoding"), "chunked");
  std::vector<std::string> events = sse_data(r.body);
  ASSERT_EQ(events.size(), 12u + 3);  // one chunk per token, finish, usage, [DONE]
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (std::size_t i = 0; i + 3 < events.size(); ++i) {
    json c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "text_completion");
    EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
    text += c["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, expected_text({65, 66}, 12));
  json fin = json::parse(events[events.size() - 3]);
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "length");
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 12);
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 2);
  for (const char* k : {"http_recv_ms", "queue_ms", "tokenize_ms", "prefill_ms", "decode_ms", "stream_ms"})
    EXPECT_TRUE(usage["llmbench_timing"][k].is_number()) << k << " " << events[events.size() - 2];
}

TEST_F(ServerTest, ChatStreamedAndNot) {
  start();
  const std::string body = R"({"model":"fake","messages":[{"role":"user","content":"Hi"}],"max_tokens":6)";
  std::vector<TokenId> prompt = tok->encode_chat({{"user", "Hi"}}, true);
  std::vector<std::int64_t> p(prompt.begin(), prompt.end());
  Reply r = post("/v1/chat/completions", body + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], expected_text(p, 6));
  EXPECT_EQ(j["usage"]["prompt_tokens"], p.size());

  r = post("/v1/chat/completions", body + R"(,"stream":true})");
  std::vector<std::string> events = sse_data(r.body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(json::parse(events[0])["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    json c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    if (c["choices"][0]["delta"].contains("content")) text += c["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, expected_text(p, 6));
  json fin = json::parse(events[events.size() - 2]);
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(fin["llmbench_timing"]["decode_ms"].is_number());
}

TEST_F(ServerTest, EveryStreamedTokenGetsAChunkEvenWithoutText) {
  // The tiny tokenizer's ids 0, 1, 2 are special tokens: skipped, they decode to "". Prompt [511] makes
  // the fake engine generate exactly those; prompt [509] generates 510 511 0 1 2 3, text around them.
  start();
  for (const auto& [prompt, n] : {std::pair<std::int64_t, int>{511, 3}, {509, 6}}) {
    Reply r = post("/v1/completions", cat(R"({"prompt":[)", prompt, R"(],"max_tokens":)", n, R"(,"stream":true})"));
    ASSERT_EQ(r.status, 200) << r.body;
    const std::vector<std::string> events = sse_data(r.body);
    ASSERT_EQ(events.size(), std::size_t(n) + 2) << r.body;  // n token chunks, finish, [DONE]
    std::string text;
    for (int i = 0; i < n; ++i) {
      const json c = json::parse(events[i]);
      ASSERT_TRUE(c["choices"][0]["text"].is_string()) << events[i];
      EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
      text += c["choices"][0]["text"].get<std::string>();
    }
    EXPECT_EQ(text, expected_text({prompt}, n));
    if (prompt == 511) {
      EXPECT_EQ(text, "");
    }
    EXPECT_EQ(json::parse(events[n])["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(json::parse(events[n])["usage"], nullptr);
  }
}

TEST_F(ServerTest, ChatStreamsAnEmptyDeltaForATokenWithoutText) {
  start();
  engine->set_script({0, 1, 2});  // special tokens of the tiny tokenizer: "" each
  Reply r = post("/v1/chat/completions",
                 R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"stream":true,)"
                 R"("stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<std::string> events = sse_data(r.body);
  ASSERT_EQ(events.size(), 1u + 4 + 3) << r.body;  // role, 4 tokens, finish, usage, [DONE]
  EXPECT_EQ(json::parse(events[0])["choices"][0]["delta"]["role"], "assistant");
  for (int i = 1; i <= 4; ++i) {
    const json delta = json::parse(events[i])["choices"][0]["delta"];
    EXPECT_EQ(delta, json({{"content", ""}})) << events[i];
  }
  EXPECT_EQ(json::parse(events[5])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(json::parse(events[6])["usage"]["completion_tokens"], 4);
}

TEST_F(ServerTest, StopStringEndsAndFreesTheSlot) {
  start({.max_batch = 4, .max_queue = 16, .max_context = 256, .vocab = 512, .step_ms = 5});
  const std::string full = expected_text({40}, 40);
  const std::string stop = full.substr(10, 3);
  const std::string want = full.substr(0, full.find(stop));
  for (const char* stream : {"false", "true"}) {
    Reply r = post("/v1/completions", cat(R"({"prompt":[40],"max_tokens":40,"stop":["@@@@",)", json(stop).dump(),
                                          R"(],"stream":)", stream, "}"));
    ASSERT_EQ(r.status, 200) << r.body;
    std::string text, finish;
    if (std::string(stream) == "false") {
      json j = json::parse(r.body);
      text = j["choices"][0]["text"];
      finish = j["choices"][0]["finish_reason"];
      EXPECT_LT(j["usage"]["completion_tokens"].get<int>(), 40);
    } else {
      for (const auto& e : sse_data(r.body)) {
        if (e == "[DONE]") continue;
        json c = json::parse(e);
        text += c["choices"][0]["text"].get<std::string>();
        if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
      }
    }
    EXPECT_EQ(text, want) << stream;
    EXPECT_EQ(finish, "stop");
    EXPECT_TRUE(wait_idle(1)) << "the cancelled request still holds a slot";
  }
}

TEST_F(ServerTest, KeepAliveReusesTheConnection) {
  start();
  const std::string file = temp_file(R"({"prompt":[1],"max_tokens":2})");
  const std::string out = shell("curl -sS -v -H 'Content-Type: application/json' --data-binary @" + file + " '" + base +
                                "/v1/completions' --next -H 'Content-Type: application/json' --data-binary @" + file +
                                " '" + base + "/v1/completions' 2>&1");
  std::remove(file.c_str());
  EXPECT_NE(out.find("Re-using existing connection"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '{') >= 2, true);
}

TEST_F(ServerTest, BadRequestsGetOpenAiErrors) {
  ServeOptions so;
  so.api_key = "sekret";
  start({.max_batch = 4, .max_queue = 16, .max_context = 64}, so);
  const std::string auth = "-H 'Authorization: Bearer sekret'";
  auto expect_error = [&](const Reply& r, int status, const std::string& code) {
    EXPECT_EQ(r.status, status) << r.body;
    json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.body;
    EXPECT_EQ(j["error"]["code"], code) << r.body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_TRUE(j["error"]["type"].is_string());
  };
  expect_error(post("/v1/completions", R"({"prompt":[1]})"), 401, "invalid_api_key");
  expect_error(post("/v1/completions", R"({"prompt":[1]})", "-H 'Authorization: Bearer nope'"), 401, "invalid_api_key");
  expect_error(get("/v1/models"), 401, "invalid_api_key");
  EXPECT_EQ(get("/v1/models", auth).status, 200);
  EXPECT_EQ(get("/health").status, 200);  // no key needed
  EXPECT_EQ(get("/v1/models", "-H 'Authorization: bearer sekret'").status, 200);  // the scheme's case is free
  expect_error(get("/v1/models", "-H 'Authorization: Bearer sekretX'"), 401, "invalid_api_key");
  expect_error(get("/v1/models", "-H 'Authorization: Bearer SEKRET'"), 401, "invalid_api_key");
  expect_error(post("/v1/completions", R"({"prompt":[1],)", auth), 400, "invalid_json");
  expect_error(post("/v1/completions", R"({"prompt":[1],"max_tokens":"many"})", auth), 400, "invalid_type");
  expect_error(post("/v1/completions", R"({"prompt":[1],"max_tokens":0})", auth), 400, "invalid_value");
  expect_error(post("/v1/completions", R"({"prompt":[1],"max_tokens":64})", auth), 400, "context_length_exceeded");
  expect_error(post("/v1/completions", json{{"prompt", std::vector<int>(64, 1)}}.dump(), auth), 400,
               "context_length_exceeded");
  expect_error(post("/v1/completions", R"({"prompt":[9999]})", auth), 400, "invalid_value");
  Reply huge_id = post("/v1/completions", R"({"prompt":[18446744073709551615]})", auth);
  expect_error(huge_id, 400, "invalid_value");
  EXPECT_NE(huge_id.body.find("18446744073709551615"), std::string::npos) << huge_id.body;
  // stop: at most kMaxStopStrings strings of kMaxStopBytes bytes.
  expect_error(post("/v1/completions", json{{"prompt", {1}}, {"stop", std::vector<std::string>(17, "x")}}.dump(), auth),
               400, "invalid_value");
  expect_error(post("/v1/completions", json{{"prompt", {1}}, {"stop", std::string(257, 'x')}}.dump(), auth), 400,
               "invalid_value");
  EXPECT_EQ(post("/v1/completions",
                 json{{"prompt", {1}}, {"max_tokens", 2}, {"stop", std::vector<std::string>(16, std::string(256, 'x'))}}.dump(),
                 auth)
                .status,
            200);
  // min_tokens beyond the default max_tokens (16 for completions)
  expect_error(post("/v1/completions", R"({"prompt":[1],"min_tokens":17})", auth), 400, "invalid_value");
  expect_error(post("/v1/completions", R"({"prompt":[1],"model":"gpt-4"})", auth), 404, "model_not_found");
  expect_error(post("/v1/completions", R"({"prompt":[1],"n":3})", auth), 400, "invalid_value");
  expect_error(post("/v1/chat/completions", R"({"messages":"hi"})", auth), 400, "invalid_type");
  // 9 MiB: refused from the Content-Length alone.
  expect_error(post("/v1/completions", "{\"prompt\":\"" + std::string(9 << 20, 'a') + "\"}", auth), 413,
               "request_too_large");
  EXPECT_EQ(post("/v1/completions", R"({"prompt":[1],"max_tokens":3})", auth).status, 200);
}

// Bytes that are not UTF-8 quoted back in an error message (a path, a JSON parse error that stops inside a
// character) are written as U+FFFD: the answer is valid JSON and the server lives on.
TEST_F(ServerTest, BytesThatAreNotUtf8GetAnErrorNotACrash) {
  start();
  auto post_raw = [&](const std::string& body) {
    return exchange("POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body);
  };
  auto error_of = [](const std::string& out) {
    const auto body = out.find("\r\n\r\n");
    json j = json::parse(out.substr(body == std::string::npos ? 0 : body + 4), nullptr, false);  // strict UTF-8
    return j.is_object() && j.contains("error") ? j["error"] : json();
  };
  std::string out = exchange("GET /\xff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 404", 0), 0u) << out;
  EXPECT_NE(error_of(out).value("message", "").find("\xEF\xBF\xBD"), std::string::npos) << out;
  out = exchange("GET /v1/models/\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 404", 0), 0u) << out;
  EXPECT_EQ(error_of(out).value("code", ""), "model_not_found") << out;
  for (const std::string body : {"{\"prompt\": \xE2\x80\x9Chello\xE2\x80\x9D}", "{\"prompt\": \xC3\xA9}",
                                 "{\"prompt\": \"a\xff\"}"}) {
    out = post_raw(body);
    EXPECT_EQ(out.rfind("HTTP/1.1 400", 0), 0u) << out;
    EXPECT_EQ(error_of(out).value("code", ""), "invalid_json") << out;
  }
  EXPECT_EQ(get("/health").status, 200);
}

// HEAD gets a GET's headers without the body; a transfer coding other than chunked is refused and the
// connection closed (its body's end is unknown); an HTTP/1.0 client's stream is unframed and ends with
// the connection.
TEST_F(ServerTest, HeadUnsupportedTransferCodingsAndHttp10Streams) {
  start();
  std::string out = exchange("HEAD /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  const auto second = out.find("\r\n\r\nHTTP/1.1 200");  // the HEAD answer ends with its headers
  ASSERT_NE(second, std::string::npos) << out;
  const std::string get_body = out.substr(out.find("\r\n\r\n", second + 4) + 4);
  EXPECT_EQ(json::parse(get_body)["status"], "ok");  // the only body: the GET's
  EXPECT_NE(out.substr(0, second).find("Content-Length: " + std::to_string(get_body.size())), std::string::npos) << out;
  out = exchange("HEAD /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 405", 0), 0u) << out;
  EXPECT_EQ(out.find("{"), std::string::npos) << out;

  const std::string body = R"({"prompt":[7],"max_tokens":3})";
  out = exchange("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" + body);
  EXPECT_EQ(out.rfind("HTTP/1.1 501", 0), 0u) << out;
  EXPECT_NE(out.find("unsupported_transfer_encoding"), std::string::npos) << out;
  EXPECT_EQ(out.find("HTTP/1.1", 1), std::string::npos) << out;  // the body was not read as a second request
  out = exchange("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 501", 0), 0u) << out;

  const std::string stream = R"({"prompt":[7],"max_tokens":3,"stream":true})";
  out = exchange("POST /v1/completions HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: " + std::to_string(stream.size()) +
            "\r\n\r\n" + stream);
  ASSERT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  const auto head_end = out.find("\r\n\r\n");
  const std::string head = out.substr(0, head_end), events = out.substr(head_end + 4);
  EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos) << head;
  EXPECT_NE(head.find("Connection: close"), std::string::npos) << head;
  std::string text, framed;
  for (const std::string& data : sse_data(events)) {
    framed += "data: " + data + "\n\n";
    if (data != "[DONE]") text += json::parse(data)["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(framed, events);  // nothing but the events: no chunk sizes
  EXPECT_EQ(sse_data(events).back(), "[DONE]");
  EXPECT_EQ(text, expected_text({7}, 3));

  // RFC 9110 10.1.1: an HTTP/1.0 client's Expect: 100-continue is ignored (it would take a 100 for the answer);
  // an HTTP/1.1 client's is answered.
  const std::string plain = R"({"prompt":[7],"max_tokens":3})";
  out = exchange("POST /v1/completions HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: " + std::to_string(plain.size()) +
                 "\r\n\r\n" + plain);
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  EXPECT_EQ(out.find("100 Continue"), std::string::npos) << out;
  out = exchange("POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Length: " +
                 std::to_string(plain.size()) + "\r\n\r\n" + plain);
  EXPECT_EQ(out.rfind("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200", 0), 0u) << out;
}

// Headers over 64 KiB are a 431 with the JSON error body, in one long field or in many short ones (Beast's own
// limit let 32,000 lines of "X-A: b" through).
TEST_F(ServerTest, HeadersOver64KiBAre431) {
  start();
  const std::string big = "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(66000, 'a') + "\r\n\r\n";
  std::string many = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 9000; ++i) many += "X-A: b\r\n";  // 9000 x 8 bytes = 72 KB
  many += "\r\n";
  for (const std::string& request : {big, many}) {
    const std::string out = exchange(request);
    EXPECT_EQ(out.rfind("HTTP/1.1 431", 0), 0u) << request.size() << ": " << out.substr(0, 200);
    EXPECT_NE(out.find(R"("code":"headers_too_large")"), std::string::npos) << out.substr(0, 400);
  }
  std::string fits = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  for (int i = 0; i < 7000; ++i) fits += "X-A: b\r\n";  // 56 KB
  EXPECT_EQ(exchange(fits + "\r\n").rfind("HTTP/1.1 200", 0), 0u);
}

// A chunked body's chunk-size line (its extensions) and its trailer fields are not bounded by Beast: the
// read buffer is. Sent without end, either is refused once it fills the buffer (it grew by the gigabyte
// until the read timeout), and the server keeps serving.
TEST_F(ServerTest, EndlessChunkExtensionOrTrailerIs431) {
  start();
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (const std::string& start : {head + "1;a=", head + "0\r\nX-T: "}) {
    tcp::socket s = connect();
    boost::asio::write(s, boost::asio::buffer(start));
    std::thread writer([&s] {  // 16 MiB at most, until the server closes
      const std::string filler(64 * 1024, 'x');
      boost::system::error_code ignored;
      for (int i = 0; i < 256 && !ignored; ++i) boost::asio::write(s, boost::asio::buffer(filler), ignored);
    });
    const auto t0 = std::chrono::steady_clock::now();
    const std::string out = read_until_close(s);
    writer.join();
    EXPECT_EQ(out.rfind("HTTP/1.1 431", 0), 0u) << out.substr(0, 200);
    EXPECT_NE(out.find(R"("code":"headers_too_large")"), std::string::npos) << out.substr(0, 400);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  }
  const std::string body = R"({"prompt":[7],"max_tokens":2})";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  const std::string out = exchange(head.substr(0, head.size() - 2) + "Connection: close\r\n\r\n" + size + ";ext=1\r\n" +
                                   body + "\r\n0\r\nX-T: 1\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;  // short extensions and trailers are fine
}

// RFC 9112 3.2.2: a server must accept the absolute-form of a target (what clients send to a proxy, and some
// send through one that passes it on): it is routed on its path, not answered 404.
TEST_F(ServerTest, AbsoluteFormTargetsAreRouted) {
  start();
  std::string out = exchange("GET http://127.0.0.1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  out = exchange("GET HTTPS://x:8000/v1/models?a=b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  const std::string body = R"({"prompt":[7],"max_tokens":2})";
  out = exchange("POST http://x/v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  EXPECT_NE(out.find(R"("completion_tokens":2)"), std::string::npos) << out;
  out = exchange("GET http://x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");  // no path: "/"
  EXPECT_EQ(out.rfind("HTTP/1.1 404", 0), 0u) << out;
  EXPECT_NE(out.find("no route for GET /\""), std::string::npos) << out;
}

// A well-formed version other than 1.0/1.1 (Beast reads no other) is a 505 naming it; a malformed one a 400.
TEST_F(ServerTest, OtherHttpVersionsAre505AndMalformedOnes400) {
  start();
  for (const char* line : {"GET /health HTTP/2.0", "PRI * HTTP/2.0", "GET /health HTTP/1.2"}) {
    const std::string out = exchange(std::string(line) + "\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(out.rfind("HTTP/1.1 505", 0), 0u) << line << ": " << out;
    EXPECT_NE(out.find(R"("code":"http_version_not_supported")"), std::string::npos) << out;
    EXPECT_NE(out.find(std::string(line).substr(std::string(line).size() - 8) + " is not supported"), std::string::npos) << out;
  }
  const std::string out = exchange("GET /health HTTP/1.x\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 400", 0), 0u) << out;
  EXPECT_NE(out.find("malformed HTTP request: bad version"), std::string::npos) << out;
}

// RFC 9112 3.2: an HTTP/1.1 request without one Host header is a 400 (with the usual JSON error body);
// HTTP/1.0 needs none. RFC 9112 9.3: an HTTP/1.0 keep-alive is echoed, and the connection then kept.
TEST_F(ServerTest, HostIsRequiredOnHttp11AndHttp10KeepAliveIsEchoed) {
  start();
  auto error_code = [](const std::string& out) {
    return json::parse(out.substr(out.find("\r\n\r\n") + 4))["error"].value("code", "");
  };
  std::string out = exchange("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 400", 0), 0u) << out;
  EXPECT_NE(out.find("Content-Type: application/json"), std::string::npos) << out;
  EXPECT_EQ(error_code(out), "bad_host") << out;
  out = exchange("GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 400", 0), 0u) << out;
  EXPECT_EQ(error_code(out), "bad_host") << out;

  // Two HTTP/1.0 requests on one connection: the first asks to keep it and is told so; the second does
  // not, is told close, and the server closes.
  out = exchange("GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /health HTTP/1.0\r\n\r\n");
  const auto second = out.find("HTTP/1.1 200", 1);
  ASSERT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  ASSERT_NE(second, std::string::npos) << out;
  const std::string first_head = out.substr(0, out.find("\r\n\r\n"));
  EXPECT_NE(first_head.find("Connection: keep-alive"), std::string::npos) << first_head;
  EXPECT_NE(out.substr(second).find("Connection: close"), std::string::npos) << out;
}

TEST_F(ServerTest, QueueFullIs503WithRetryAfter) {
  start({.max_batch = 1, .max_queue = 1, .max_context = 256, .vocab = 512, .step_ms = 20});
  auto running = std::async(std::launch::async, [&] { return post("/v1/completions", R"({"prompt":[1],"max_tokens":15})"); });
  while (engine->stats().running < 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto queued = std::async(std::launch::async, [&] { return post("/v1/completions", R"({"prompt":[2],"max_tokens":2})"); });
  while (engine->stats().waiting < 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  Reply r = post("/v1/completions", R"({"prompt":[3],"max_tokens":2})");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.header("retry-after"), "1");
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "overloaded");
  EXPECT_EQ(running.get().status, 200);
  EXPECT_EQ(queued.get().status, 200);
  EXPECT_EQ(post("/v1/completions", R"({"prompt":[3],"max_tokens":2})").status, 200);
}

TEST_F(ServerTest, SlowClientsGet408AndIdleOnesAreClosed) {
  ServeOptions so;
  so.read_timeout_s = 0.3;
  so.idle_timeout_s = 0.5;
  start({}, so);
  {  // headers never finish
    tcp::socket s = connect();
    boost::asio::write(s, boost::asio::buffer(std::string("POST /v1/completions HTTP/1.1\r\nHost: x\r\n")));
    const auto t0 = std::chrono::steady_clock::now();
    const std::string out = read_until_close(s);
    EXPECT_EQ(out.rfind("HTTP/1.1 408", 0), 0u) << out;
    EXPECT_NE(out.find("request_timeout"), std::string::npos);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  }
  {  // body never finishes
    tcp::socket s = connect();
    boost::asio::write(s, boost::asio::buffer(std::string(
                              "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"prompt\"")));
    EXPECT_EQ(read_until_close(s).rfind("HTTP/1.1 408", 0), 0u);
  }
  {  // idle keep-alive connection: closed without a response
    tcp::socket s = connect();
    EXPECT_EQ(read_until_close(s), "");
  }
  {  // garbage
    tcp::socket s = connect();
    boost::asio::write(s, boost::asio::buffer(std::string("HELLO\x01 / HTTP/1.1\r\n\r\n")));
    EXPECT_EQ(read_until_close(s).rfind("HTTP/1.1 400", 0), 0u);
  }
  EXPECT_EQ(get("/health").status, 200);
}

TEST_F(ServerTest, PipelinedRequestsAnsweredInOrder) {
  start();
  tcp::socket s = connect();
  const std::string body = R"({"prompt":[7],"max_tokens":3})";
  const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  boost::asio::write(s, boost::asio::buffer(req + req + "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string out = read_until_close(s);
  std::size_t n = 0;
  for (std::size_t at = 0; (at = out.find("HTTP/1.1 200", at)) != std::string::npos; ++at) ++n;
  EXPECT_EQ(n, 3u) << out;
  EXPECT_NE(out.find("\"status\":\"ok\""), std::string::npos);
}

// The next request of a keep-alive connection may arrive before the server is back to waiting for one
// (sent while the previous response was still generating): its bytes already sit in the socket, and the
// disconnect watch of the previous request has seen them. The server must still read it (Asio's epoll is
// edge-triggered: a wait registered after the edge must not be the only thing that could see it).
TEST_F(ServerTest, RequestArrivingBeforeTheServerWaitsForItIsRead) {
  FakeEngine::Options eo;
  eo.step_ms = 5;
  start(eo);
  auto request = [](const std::string& body, bool close) {
    return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
           std::string(close ? "Connection: close\r\n" : "") + "Content-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  };
  for (const bool stream : {true, false}) {
    SCOPED_TRACE(stream ? "first request streamed" : "first request not streamed");
    tcp::socket s = connect();
    boost::asio::write(s, boost::asio::buffer(request(
                              cat(R"({"prompt":[7],"max_tokens":20,"stream":)", stream ? "true" : "false", "}"), false)));
    std::this_thread::sleep_for(std::chrono::milliseconds(40));  // the first one is generating now
    boost::asio::write(s, boost::asio::buffer(request(R"({"prompt":[9],"max_tokens":2})", true)));
    const auto t0 = std::chrono::steady_clock::now();
    const std::string out = read_until_close(s, 3);
    std::size_t n = 0;
    for (std::size_t at = 0; (at = out.find("HTTP/1.1 200", at)) != std::string::npos; ++at) ++n;
    EXPECT_EQ(n, 2u) << out;
    EXPECT_NE(out.find(R"("finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":2,)"), std::string::npos)
        << out;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.5);
  }
}

// A client that sends its next request while this one generates (pipelining) and then goes away: the next
// request's bytes sat unread in the socket, hiding the end of file from the disconnect watch, and a
// non-streamed request ran to its end in its slot. The server takes them into its buffer and watches on.
TEST_F(ServerTest, DisconnectAfterAPipelinedRequestFreesTheSlot) {
  start({.max_batch = 4, .max_queue = 16, .max_context = 4096, .vocab = 512, .step_ms = 5});
  const std::string body = R"({"prompt":[7],"max_tokens":2000})";  // 10 s of tokens
  tcp::socket s = connect();
  boost::asio::write(s, boost::asio::buffer("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                            std::to_string(body.size()) + "\r\n\r\n" + body));
  while (engine->stats().running < 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  boost::asio::write(s, boost::asio::buffer(std::string("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  s.close();
  EXPECT_TRUE(wait_idle(2)) << "running " << engine->stats().running;
  EXPECT_NE(get("/metrics").body.find("llmbench_requests_total{code=\"499\"} 1\n"), std::string::npos);
}

TEST_F(ServerTest, DisconnectStormFreesEverySlot) {
  start({.max_batch = 8, .max_queue = 64, .max_context = 512, .vocab = 512, .step_ms = 5});
  const int kClients = 40;
  std::vector<tcp::socket> sockets;
  const std::string body = R"({"prompt":[5],"max_tokens":400,"stream":true})";
  for (int i = 0; i < kClients; ++i) {
    sockets.push_back(connect());
    const std::string path = i % 2 ? "/v1/completions" : "/v1/chat/completions";
    const std::string b = i % 2 ? body : R"({"messages":[{"role":"user","content":"x"}],"max_tokens":400,"stream":)" +
                                             std::string(i % 4 ? "true" : "false") + "}";
    boost::asio::write(sockets.back(), boost::asio::buffer("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                                           std::to_string(b.size()) + "\r\n\r\n" + b));
  }
  // Those holding a slot have started streaming: read some of it (waiting ones time out), then all go.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (auto& s : sockets) {
    char buf[256];
    ::recv(s.native_handle(), buf, sizeof buf, MSG_DONTWAIT);
  }
  EXPECT_EQ(engine->stats().running, 8);
  for (auto& s : sockets) {
    s.set_option(boost::asio::socket_base::linger(true, 0));  // RST, as a crashed client would
    s.close();
  }
  EXPECT_TRUE(wait_idle(3)) << "running " << engine->stats().running << " waiting " << engine->stats().waiting;
  EXPECT_EQ(get("/health").status, 200);
  Reply metrics = get("/metrics");
  EXPECT_NE(metrics.body.find("llmbench_requests_total{code=\"499\"} 40\n"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("llmbench_kv_cache_slots_used 0\n"), std::string::npos);
  EXPECT_NE(metrics.body.find("llmbench_request_finish_total{reason=\"cancelled\"} 40\n"), std::string::npos);
  // The 8 that held a slot waited in the queue first: their queue times count though they never finished.
  const std::string queued = "llmbench_request_queue_time_seconds_count ";
  const auto at = metrics.body.find(queued);
  ASSERT_NE(at, std::string::npos) << metrics.body;
  const int count = std::stoi(metrics.body.substr(at + queued.size()));
  EXPECT_GE(count, 8) << metrics.body;
  EXPECT_LE(count, kClients);
  Reply r = post("/v1/completions", R"({"prompt":[1],"max_tokens":4})");
  EXPECT_EQ(r.status, 200);
}

TEST_F(ServerTest, MetricsAreValidPrometheusText) {
  start();
  for (int i = 0; i < 3; ++i) post("/v1/completions", R"({"prompt":[1,2],"max_tokens":5,"stream":true})");
  post("/v1/completions", R"({"prompt":"x","max_tokens":"x"})");
  Reply m = get("/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.header("content-type").rfind("text/plain; version=0.0.4", 0), 0u);
  const std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"\})? (-?[0-9.e+-]+|\+Inf|NaN)$)");
  const std::regex comment(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  std::map<std::string, double> values;
  std::istringstream lines(m.body);
  for (std::string line; std::getline(lines, line);) {
    ASSERT_TRUE(std::regex_match(line, sample) || std::regex_match(line, comment)) << line;
    if (line[0] != '#') values[line.substr(0, line.rfind(' '))] = std::stod(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_EQ(values["llmbench_requests_total{code=\"200\"}"], 3);
  EXPECT_EQ(values["llmbench_requests_total{code=\"400\"}"], 1);
  EXPECT_EQ(values["llmbench_generation_tokens_total"], 15);
  EXPECT_EQ(values["llmbench_prompt_tokens_total"], 6);
  EXPECT_EQ(values["llmbench_time_to_first_token_seconds_count"], 3);
  EXPECT_EQ(values["llmbench_inter_token_latency_seconds_count"], 12);
  EXPECT_EQ(values["llmbench_e2e_request_latency_seconds_count"], 3);
  EXPECT_EQ(values["llmbench_request_queue_time_seconds_count"], 3);
  EXPECT_EQ(values["llmbench_kv_cache_slots_capacity"], 4);
}

TEST_F(ServerTest, ShutdownFinishesOrCancelsWithinTheGrace) {
  ServeOptions so;
  so.shutdown_grace_ms = 200;
  start({.max_batch = 2, .max_queue = 16, .max_context = 4096, .vocab = 512, .step_ms = 10}, so);
  auto short_one = std::async(std::launch::async, [&] { return post("/v1/completions", R"({"prompt":[1],"max_tokens":5,"stream":true})"); });
  auto long_one = std::async(std::launch::async, [&] { return post("/v1/completions", R"({"prompt":[2],"max_tokens":3000,"stream":true})"); });
  while (engine->stats().running < 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto t0 = std::chrono::steady_clock::now();
  server->shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  Reply a = short_one.get(), b = long_one.get();
  EXPECT_NE(a.body.find("\"finish_reason\":\"length\""), std::string::npos) << a.body;
  EXPECT_NE(b.body.find("\"code\":\"cancelled\""), std::string::npos) << b.body;
  EXPECT_NE(b.body.find("data: [DONE]"), std::string::npos);
}

}  // namespace
}  // namespace llmbench::serve
