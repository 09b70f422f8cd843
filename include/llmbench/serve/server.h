#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "llmbench/engine/engine.h"
#include "llmbench/tokenizer/tokenizer.h"

// The OpenAI-compatible HTTP/1.1 server (Boost.Beast): a few I/O threads own the sockets; the engine
// thread hands tokens over by posting to the connection's strand and never waits on a socket.
//
//   Server server(*engine, tokenizer, options);
//   server.start();                 // binds and listens; server.port() is the bound port
//   …                               // until SIGINT/SIGTERM
//   server.shutdown();              // stop accepting, engine->stop(grace), drain, join
namespace llmbench::serve {

constexpr std::size_t kMaxBodyBytes = 8u << 20;  // 413 beyond this

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                  // 0: a free port
  std::string api_key;              // "" : no authentication
  int io_threads = 2;
  double read_timeout_s = 10;       // first byte of a request → whole request read (408 after)
  double idle_timeout_s = 60;       // keep-alive connection without a request (closed after)
  double write_timeout_s = 30;      // a write the client does not take (connection dropped after)
  double shutdown_grace_ms = 2000;  // running requests may finish for this long on shutdown
  std::size_t max_body_bytes = kMaxBodyBytes;
};

class Server {
 public:
  // `engine` must outlive the server's shutdown(); `tokenizer` is the model's (or --tokenizer's).
  Server(Engine& engine, std::shared_ptr<const Tokenizer> tokenizer, ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the I/O threads. Throws Error when the address cannot be bound.
  void start();
  int port() const;
  const std::string& host() const;
  // Stops accepting, stops the engine (running requests finish or are cancelled within the grace
  // time), lets responses drain for up to a second, joins the I/O threads. Idempotent.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmbench::serve
