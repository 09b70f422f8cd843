#include "llmbench/serve/server.h"

#include <algorithm>
#include <list>
#include <mutex>
#include <pthread.h>
#include <sys/resource.h>

#include <thread>

#include "llmbench/base/log.h"
#include "session.h"

namespace llmbench::serve {

namespace {
constexpr double kDrainSeconds = 1.5;  // after the engine stopped: responses still being written
constexpr int kReclaimIdle = 16;       // idle connections closed per failed accept when out of descriptors
}

struct Server::Impl {
  Impl(Engine& engine, std::shared_ptr<const Tokenizer> tokenizer, ServeOptions options)
      : ctx(engine, std::move(tokenizer), std::move(options)) {}

  void accept() {
    acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (!acceptor.is_open()) return;
      if (ec) {
        // Out of file descriptors (or another accept error): accepting again at once would spin and log
        // without end. Warn at most every 10 s and retry after a pause; connections that close make room, and
        // out of descriptors the oldest idle keep-alive connections close to make it (as nginx does): else
        // connections that send nothing would shut new clients out until --idle-timeout.
        const auto now = Clock::now();
        if (last_accept_warning == Clock::time_point{} || now - last_accept_warning > std::chrono::seconds(10)) {
          log::warn(cat("serve: accept: ", ec.message(), "; new connections wait until it clears"));
          last_accept_warning = now;
        }
        if (ec == asio::error::no_descriptors || ec == std::errc::too_many_files_open_in_system) close_idle(kReclaimIdle);
        accept_retry.expires_after(std::chrono::milliseconds(50));
        accept_retry.async_wait([this](beast::error_code) {
          if (acceptor.is_open()) accept();
        });
        return;
      }
      {
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        auto session = std::make_shared<Session>(ctx, std::move(socket));
        {
          std::lock_guard<std::mutex> lock(sessions_mutex);
          if (sessions.size() >= prune_at) {  // twice the live ones: a sweep per accept was quadratic in them
            sessions.remove_if([](const auto& s) { return s.expired(); });
            prune_at = std::max<std::size_t>(1024, 2 * sessions.size());
          }
          sessions.push_back(session);
        }
        session->start();
      }
      accept();
    });
  }

  void close_idle(int n) {
    std::lock_guard<std::mutex> lock(sessions_mutex);
    for (auto& weak : sessions) {  // oldest first
      if (n == 0) return;
      if (auto session = weak.lock(); session && session->idle()) {
        session->close_if_idle();
        --n;
      }
    }
  }

  ServerContext ctx;  // first: sessions destroyed with the io_context still use it
  asio::io_context ioc;
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor{asio::make_strand(ioc)};
  asio::steady_timer accept_retry{acceptor.get_executor()};
  Clock::time_point last_accept_warning{};  // touched on the acceptor's strand only
  std::vector<std::thread> threads;
  std::mutex sessions_mutex;
  std::list<std::weak_ptr<Session>> sessions;
  std::size_t prune_at = 1024;  // sweep the closed sessions out of the list at this size
  int port = 0;
  bool started = false;
  bool stopped = false;
};

Server::Server(Engine& engine, std::shared_ptr<const Tokenizer> tokenizer, ServeOptions options) {
  if (!tokenizer) throw UsageError("the server needs a tokenizer");
  if (options.io_threads < 1) throw UsageError("--io-threads must be at least 1");
  impl_ = std::make_unique<Impl>(engine, std::move(tokenizer), std::move(options));
}

Server::~Server() { shutdown(); }

void Server::start() {
  Impl& s = *impl_;
  const ServeOptions& o = s.ctx.options;
  if (o.port < 0 || o.port > 65535) throw UsageError(cat("--port must be in [0, 65535], got ", o.port));
  beast::error_code ec;
  tcp::resolver resolver(s.ioc);
  auto endpoints = resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive, ec);
  if (ec || endpoints.empty()) throw UsageError(cat("--host '", o.host, "': ", ec ? ec.message() : "no address"));
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  auto fail = [&](const char* what) {
    return Error(cat("cannot listen on ", o.host, ":", o.port, ": ", what, ": ", ec.message()));
  };
  if (s.acceptor.open(endpoint.protocol(), ec)) throw fail("open");
  if (s.acceptor.set_option(asio::socket_base::reuse_address(true), ec)) throw fail("SO_REUSEADDR");
  if (s.acceptor.bind(endpoint, ec)) throw fail("bind");
  if (s.acceptor.listen(asio::socket_base::max_listen_connections, ec)) throw fail("listen");
  s.port = s.acceptor.local_endpoint().port();
  // Each connection holds a descriptor: allow as many as the hard limit does (the soft limit is often 1024).
  if (rlimit lim{}; ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  s.started = true;
  s.accept();
  for (int i = 0; i < o.io_threads; ++i)
    s.threads.emplace_back([&s] {
      ::pthread_setname_np(::pthread_self(), "llmbench-io");  // per-thread CPU time in /proc (serving bench)
      s.ioc.run();
    });
}

int Server::port() const { return impl_->port; }
const std::string& Server::host() const { return impl_->ctx.options.host; }

void Server::shutdown() {
  Impl& s = *impl_;
  if (!s.started || s.stopped) return;
  s.stopped = true;
  s.ctx.draining = true;
  asio::post(s.acceptor.get_executor(), [&s] {
    beast::error_code ec;
    s.acceptor.close(ec);
    s.accept_retry.cancel();
  });
  {
    std::lock_guard<std::mutex> lock(s.sessions_mutex);
    for (auto& weak : s.sessions)
      if (auto session = weak.lock()) session->drain();
  }
  // Running requests finish (or are cancelled) and their last events are posted to the connections.
  s.ctx.engine.stop(s.ctx.options.shutdown_grace_ms);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kDrainSeconds));
  while (s.ctx.metrics.connections > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  s.work.reset();
  s.ioc.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
}

}  // namespace llmbench::serve
