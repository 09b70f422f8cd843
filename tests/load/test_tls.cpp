// `llmbench load` against https:// endpoints: tests/load/scripted_server.py serving TLS (Python's ssl module, an
// independent implementation) with certificates made here by the openssl command-line tool.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/load/client.h"
#include "llmbench/load/runner.h"
#include "llmbench/load/server_process.h"
#include "llmbench/stats/stats.h"

using namespace llmbench;
namespace fs = std::filesystem;

namespace {

// Sanitizer builds (scripts/test.sh --sanitize, --tsan) run the instrumented client 2x (ASan) to 10x (TSan)
// slower: a request's own handling, a fraction of a millisecond optimised, takes 2-3 ms under TSan.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kLatencyTolerance = 0.15;
#else
constexpr double kLatencyTolerance = 0.05;
#endif

// Self-signed certificates, made once per test run in a temporary folder: `good` names localhost and
// 127.0.0.1, `other` only example.com.
struct Certificates {
  fs::path dir;
  bool made = false;
  Certificates() {
    dir = fs::temp_directory_path() / ("llmbench_tls_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    made = make("good", "/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1") &&
           make("other", "/CN=example.com", "subjectAltName=DNS:example.com");
  }
  ~Certificates() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  bool make(const std::string& name, const std::string& subject, const std::string& san) const {
    const std::string command = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -keyout '" +
                                key(name) + "' -out '" + cert(name) + "' -subj '" + subject + "' -addext '" + san +
                                "' >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
  }
  std::string cert(const std::string& name) const { return (dir / (name + ".pem")).string(); }
  std::string key(const std::string& name) const { return (dir / (name + ".key")).string(); }
};

const Certificates& certificates() {
  static Certificates c;
  return c;
}

#define SKIP_WITHOUT_TLS()                                                                     \
  do {                                                                                         \
    if (!tls_available()) GTEST_SKIP() << "built without OpenSSL";                             \
    if (!certificates().made) GTEST_SKIP() << "the openssl command could not make certificates"; \
  } while (0)

// A scripted server (stops itself after 60 s), https with certificate `name` unless it is "".
struct TlsServer {
  ServerProcess process;
  TlsServer(const std::string& name, std::vector<std::string> args) : process(command(name, std::move(args)), 20) {}
  static std::vector<std::string> command(const std::string& name, std::vector<std::string> args) {
    std::vector<std::string> argv = {"python3", LLMBENCH_SCRIPTED_SERVER, "--lifetime-s", "60"};
    if (!name.empty())
      argv.insert(argv.end(), {"--tls-cert", certificates().cert(name), "--tls-key", certificates().key(name)});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
};

LoadOptions options_for(const std::string& url, int requests) {
  LoadOptions o;
  o.endpoint = url;
  o.tokenizer = "tiny";
  o.input_len = 16;
  o.output_len = 6;
  o.timeout_s = 10;
  o.concurrency = {2};
  o.num_requests = requests;
  o.ca_cert = certificates().cert("good");
  return o;
}

const LoadResult& only_load(const Results& r) {
  EXPECT_EQ(r.points.size(), 1u);
  return *r.points.at(0).load;
}

// The message run_load fails with ("" when it does not).
std::string error_of(const LoadOptions& o) {
  try {
    run_load(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// What the server says it saw: connections accepted, requests.
nlohmann::json server_stats(const std::string& url) {
  const auto [status, body] = http_get(parse_endpoint(url), "/stats", 5, {}, {}, TlsOptions{"", true});
  EXPECT_EQ(status, 200);
  return nlohmann::json::parse(body);
}

}  // namespace

TEST(Tls, StreamsOverHttpsWithTheScriptsLatenciesAndKeptAliveConnections) {
  SKIP_WITHOUT_TLS();
  TlsServer server("good", {"--ttft-ms", "40", "--itl-ms", "8"});
  ASSERT_EQ(server.process.url().rfind("https://127.0.0.1:", 0), 0u) << server.process.url();
  const auto before = server_stats(server.process.url());
  LoadOptions o = options_for(server.process.url(), 12);
  o.warmup_requests = 2;
  const Results r = run_load(o);
  const LoadResult& l = only_load(r);
  EXPECT_EQ(l.completed, 12);
  EXPECT_EQ(l.failed, 0);
  EXPECT_EQ(l.endpoint, server.process.url());
  EXPECT_EQ(l.tls_verify, std::optional<bool>(true));  // checked against --ca-cert
  for (const auto& rec : l.requests) {
    EXPECT_EQ(rec.output_tokens, 6);
    EXPECT_EQ(rec.itl_ms.size(), 5u);
  }
  // Two kept-alive TLS connections carry the 14 requests, so the handshakes fall on the warm-ups: the timed
  // requests' medians are the script's (the loopback round trip and TLS records add well under a millisecond
  // in an optimised build).
  // The TTFT reference is what the server served (its log: a loaded host wakes its threads late, never early);
  // the client sees the time the server took to notice the request on top (test_scripted_server.cpp's latency
  // test says how much).
  const PointResult& p = r.points.at(0);
  const auto after = server_stats(server.process.url());
  std::vector<double> served;
  for (const auto& entry : after["log"]) {
    if (!entry["ttft_ms"].is_null()) served.push_back(entry["ttft_ms"].get<double>());
  }
  EXPECT_GE(median(served), 40);
  EXPECT_GE(p.summary.at("ttft_ms").p50, median(served) - 0.5);
  EXPECT_LE(p.summary.at("ttft_ms").p50, median(served) + 8);
  EXPECT_GE(p.summary.at("ttft_ms").min, 40);
  EXPECT_NEAR(p.summary.at("itl_ms").p50, 8, 2 * kLatencyTolerance * 8);
  // GET /v1/models (its own connection) and the two streams' connections; none opened per request.
  EXPECT_EQ(after["requests"].get<int>() - before["requests"].get<int>(), 14);
  EXPECT_EQ(after["connections"].get<int>() - before["connections"].get<int>() - 1, 3);  // minus this GET's own
}

TEST(Tls, BodiesThatEndWithTheConnectionAndWholeResponses) {
  SKIP_WITHOUT_TLS();
  // Request 1: a 503 whose plain-text body ends where the connection does; request 2: a stream without
  // Content-Length or chunked framing, ended by closing the connection. Over TLS the server closes without
  // close_notify ("stream truncated"), which must end such a body as a plain connection's end does.
  TlsServer server("good", {"--ttft-ms", "5", "--itl-ms", "1", "--faults", "1:http503text,2:untilclose"});
  LoadOptions o = options_for(server.process.url(), 4);
  o.concurrency = {1};
  const Results r = run_load(o);
  const LoadResult& l = only_load(r);
  EXPECT_EQ(l.completed, 3);
  ASSERT_EQ(l.failed, 1);
  EXPECT_EQ(l.requests.at(1).error, "http_503");
  EXPECT_NE(l.requests.at(1).error_detail.find("overloaded"), std::string::npos) << l.requests.at(1).error_detail;
  EXPECT_TRUE(l.requests.at(2).ok) << l.requests.at(2).error;
  for (int i : {0, 2, 3}) EXPECT_EQ(l.requests.at(i).output_tokens, 6);
  // Whole responses ("stream": false) over the same TLS server.
  o.no_stream = true;
  const Results whole = run_load(o);
  EXPECT_EQ(only_load(whole).completed, 4);
  EXPECT_EQ(only_load(whole).requests.at(0).output_tokens, 6);
}

TEST(Tls, AnUntrustedCertificateIsRefusedWithTheReasonAndTheWayOut) {
  SKIP_WITHOUT_TLS();
  TlsServer server("good", {"--ttft-ms", "5", "--itl-ms", "1"});
  LoadOptions o = options_for(server.process.url(), 2);
  o.ca_cert.clear();  // the system's roots only: a self-signed certificate is not among them
  const std::string what = error_of(o);
  EXPECT_NE(what.find("/v1/models: TLS handshake failed: the server's certificate was refused: self-signed certificate"),
            std::string::npos) << what;
  EXPECT_NE(what.find("--ca-cert FILE, or skip the check with --insecure"), std::string::npos) << what;
  // With the model given there is no lookup: every request fails as "tls", with the same reason.
  o.model = "scripted";
  const Results r = run_load(o);
  const LoadResult& l = only_load(r);
  EXPECT_EQ(l.failed, 2);
  EXPECT_EQ(l.errors.at("tls"), 2);
  EXPECT_NE(l.requests.at(0).error_detail.find("self-signed certificate"), std::string::npos) << l.requests.at(0).error_detail;
  // --insecure: no check at all.
  o.insecure = true;
  const Results unchecked = run_load(o);
  EXPECT_EQ(only_load(unchecked).completed, 2);
  EXPECT_EQ(only_load(unchecked).tls_verify, std::optional<bool>(false));  // the results say so
}

TEST(Tls, ACertificateForAnotherHostIsRefused) {
  SKIP_WITHOUT_TLS();
  TlsServer server("other", {"--ttft-ms", "5", "--itl-ms", "1"});
  LoadOptions o = options_for(server.process.url(), 2);
  o.ca_cert = certificates().cert("other");  // trusted, but it names example.com, not 127.0.0.1 or localhost
  o.model = "scripted";
  const Results r1 = run_load(o);
  const LoadResult& by_address = only_load(r1);
  ASSERT_EQ(by_address.errors.count("tls"), 1u);
  EXPECT_NE(by_address.requests.at(0).error_detail.find("IP address mismatch"), std::string::npos)
      << by_address.requests.at(0).error_detail;
  const std::string port = parse_endpoint(server.process.url()).port;
  o.endpoint = "https://localhost:" + port;
  const Results r2 = run_load(o);
  const LoadResult& by_name = only_load(r2);
  ASSERT_EQ(by_name.errors.count("tls"), 1u);
  EXPECT_NE(by_name.requests.at(0).error_detail.find("hostname mismatch"), std::string::npos)
      << by_name.requests.at(0).error_detail;
  o.insecure = true;
  o.ca_cert.clear();
  EXPECT_EQ(only_load(run_load(o)).completed, 2);
}

TEST(Tls, HttpsToAPlainServerSaysItDoesNotSpeakTls) {
  SKIP_WITHOUT_TLS();
  TlsServer server("", {"--ttft-ms", "5", "--itl-ms", "1"});
  const std::string port = parse_endpoint(server.process.url()).port;
  LoadOptions o = options_for("https://127.0.0.1:" + port, 2);
  const std::string what = error_of(o);
  EXPECT_NE(what.find("the server does not speak TLS (is it an http:// endpoint?)"), std::string::npos) << what;
}

TEST(Tls, EndpointsAndOptions) {
  if (!tls_available()) {
    EXPECT_THROW(parse_endpoint("https://api.example.com"), UsageError);  // says it was built without OpenSSL
    GTEST_SKIP() << "built without OpenSSL";
  }
  const Endpoint e = parse_endpoint("https://api.example.com/openai/v1/");  // an OpenAI SDK base_url
  EXPECT_TRUE(e.tls);
  EXPECT_EQ(e.port, "443");
  EXPECT_EQ(e.url(), "https://api.example.com:443/openai");
  EXPECT_FALSE(parse_endpoint("http://h").tls);
  EXPECT_EQ(parse_endpoint("https://[::1]:8443").url(), "https://[::1]:8443");
  LoadOptions o;
  o.endpoint = "http://127.0.0.1:8000";
  o.insecure = true;
  EXPECT_THROW(validate(o), UsageError);  // --insecure and --ca-cert are for https
  o.insecure = false;
  o.endpoint = "https://127.0.0.1:8000";
  o.ca_cert = "/nonexistent/ca.pem";
  EXPECT_THROW(validate(o), UsageError);
  EXPECT_THROW(TlsClient("h", TlsOptions{LLMBENCH_SCRIPTED_SERVER, false}), Error);  // a file with no PEM in it
}
