#include "llmbench/load/connection.h"

#include <fstream>
#include <optional>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#ifndef LLMBENCH_TLS  // set by CMake (1 with OpenSSL); a build that does not set it has no TLS
#define LLMBENCH_TLS 0
#endif
#if LLMBENCH_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#endif

#include "llmbench/base/error.h"

namespace llmbench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

bool tls_available() { return LLMBENCH_TLS != 0; }

// ---------------------------------------------------------------- TLS settings

#if LLMBENCH_TLS
struct TlsClient::Context {
  asio::ssl::context ssl{asio::ssl::context::tls_client};
};
#else
struct TlsClient::Context {};
#endif

TlsClient::TlsClient(std::string host, const TlsOptions& options)
    : context_(std::make_unique<Context>()), host_(std::move(host)), insecure_(options.insecure) {
#if LLMBENCH_TLS
  auto& ssl = context_->ssl;
  SSL_CTX_set_min_proto_version(ssl.native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  ssl.set_default_verify_paths(ec);  // the system's roots; none (a bare box) leaves --ca-cert or --insecure
  if (!options.ca_file.empty()) {
    if (!std::ifstream(options.ca_file)) throw Error(cat("--ca-cert ", options.ca_file, ": cannot read the file"));
    ssl.load_verify_file(options.ca_file, ec);
    if (ec) throw Error(cat("--ca-cert ", options.ca_file, ": no PEM certificate in it (", ec.message(), ")"));
  }
  ssl.set_verify_mode(insecure_ ? asio::ssl::verify_none : asio::ssl::verify_peer);
#else
  (void)options;
  throw Error("https needs TLS, and this llmbench was built without OpenSSL (install libssl-dev and rebuild)");
#endif
}

TlsClient::~TlsClient() = default;

// ---------------------------------------------------------------- the connection

struct Connection::Impl {
  std::shared_ptr<TlsClient> tls_client;
  std::optional<beast::tcp_stream> plain;
#if LLMBENCH_TLS
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
#endif

  // f(stream) with the stream that carries HTTP: the TLS stream, or the TCP one.
  template <class F>
  void with_stream(F&& f) {
#if LLMBENCH_TLS
    if (tls) return f(*tls);
#endif
    f(*plain);
  }

  // A read's end. A TLS peer that closes without TLS's close_notify (many do) is "stream truncated": for a body
  // that ends where the connection does, that is its end; otherwise a closed connection, like a plain one's EOF.
  template <class Body>
  auto read_done(Parser<Body>& parser, Handler done) {
    return [&parser, done = std::move(done)](boost::system::error_code ec, std::size_t) {
#if LLMBENCH_TLS
      if (ec == asio::ssl::error::stream_truncated) {
        ec = asio::error::eof;
        if (parser.is_header_done() && parser.need_eof()) parser.put_eof(ec);
      }
#else
      (void)parser;
#endif
      done(ec);
    };
  }
};

Connection::Connection(asio::io_context& io, std::shared_ptr<TlsClient> tls) : impl_(std::make_unique<Impl>()) {
  impl_->tls_client = std::move(tls);
  if (!impl_->tls_client) {
    impl_->plain.emplace(io);
    return;
  }
#if LLMBENCH_TLS
  const TlsClient& client = *impl_->tls_client;
  impl_->tls.emplace(io, client.context_->ssl);
  SSL* ssl = impl_->tls->native_handle();
  boost::system::error_code ec;
  asio::ip::make_address(client.host_, ec);
  const bool address = !ec;
  // SNI: the host name (never an address) tells a shared front end which certificate to present.
  if (!address) SSL_set_tlsext_host_name(ssl, client.host_.c_str());
  if (!client.insecure_) {  // the certificate must name the host: a DNS name, or an IP address in its SAN
    if (address) X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), client.host_.c_str());
    else SSL_set1_host(ssl, client.host_.c_str());
  }
#endif
}

Connection::~Connection() = default;

beast::tcp_stream& Connection::tcp() {
#if LLMBENCH_TLS
  if (impl_->tls) return impl_->tls->next_layer();
#endif
  return *impl_->plain;
}

bool Connection::is_tls() const { return impl_->tls_client != nullptr; }

void Connection::async_connect(const tcp::resolver::results_type& addresses, Handler done) {
  tcp().async_connect(addresses, [this, done = std::move(done)](boost::system::error_code ec, const tcp::endpoint&) {
    if (!ec) tcp().socket().set_option(tcp::no_delay(true), ec);
    done(ec);
  });
}

void Connection::async_handshake(Handler done) {
#if LLMBENCH_TLS
  if (impl_->tls) return impl_->tls->async_handshake(asio::ssl::stream_base::client, std::move(done));
#endif
  asio::post(tcp().get_executor(), [done = std::move(done)] { done({}); });
}

std::string Connection::handshake_failure(const boost::system::error_code& ec) const {
#if LLMBENCH_TLS
  if (impl_->tls) {
    const long verdict = SSL_get_verify_result(impl_->tls->native_handle());
    if (verdict != X509_V_OK)
      return cat("the server's certificate was refused: ", X509_verify_cert_error_string(verdict),
                 " (trust it with --ca-cert FILE, or skip the check with --insecure)");
    if (ec == asio::ssl::error::stream_truncated || ec == asio::error::eof) return "the server closed the connection";
    if (ec.category() == asio::error::get_ssl_category() && ERR_GET_REASON(ec.value()) == SSL_R_WRONG_VERSION_NUMBER)
      return "the server does not speak TLS (is it an http:// endpoint?)";
  }
#endif
  return ec.message();
}

void Connection::async_write(http::request<http::string_body>& request, Handler done) {
  impl_->with_stream([&](auto& s) {
    http::async_write(s, request, [done = std::move(done)](boost::system::error_code ec, std::size_t) { done(ec); });
  });
}

void Connection::async_write(http::request<http::empty_body>& request, Handler done) {
  impl_->with_stream([&](auto& s) {
    http::async_write(s, request, [done = std::move(done)](boost::system::error_code ec, std::size_t) { done(ec); });
  });
}

void Connection::async_read_header(beast::flat_buffer& buffer, Parser<http::buffer_body>& parser, Handler done) {
  impl_->with_stream([&](auto& s) { http::async_read_header(s, buffer, parser, impl_->read_done(parser, std::move(done))); });
}

void Connection::async_read_some(beast::flat_buffer& buffer, Parser<http::buffer_body>& parser, Handler done) {
  impl_->with_stream([&](auto& s) { http::async_read_some(s, buffer, parser, impl_->read_done(parser, std::move(done))); });
}

void Connection::async_read(beast::flat_buffer& buffer, Parser<http::string_body>& parser, Handler done) {
  impl_->with_stream([&](auto& s) { http::async_read(s, buffer, parser, impl_->read_done(parser, std::move(done))); });
}

bool Connection::quiet() {
  boost::system::error_code ec;
  return tcp().socket().available(ec) == 0 && !ec;
}

void Connection::close() {
  boost::system::error_code ignored;
  tcp().socket().close(ignored);
}

}  // namespace llmbench
