#pragma once
// One client connection to an HTTP endpoint: plain TCP for http://, TLS over TCP for https:// (OpenSSL, when
// llmbench was built with it: LLMBENCH_TLS). The load client and http_get do their I/O through it, so neither
// knows which one it has.
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace llmbench {

// How an https:// endpoint's certificate is checked (`llmbench load --ca-cert`, `--insecure`).
struct TlsOptions {
  std::string ca_file;    // PEM certificates trusted besides the system's own (/etc/ssl/certs)
  bool insecure = false;  // neither the certificate nor the host name is checked (curl's -k)
};

bool tls_available();  // this build has OpenSSL

// What every TLS connection to one https:// endpoint shares: the trusted roots, the checks, the host name.
class TlsClient {
 public:
  // Error: a ca_file that cannot be read or holds no certificate; a build without TLS.
  TlsClient(std::string host, const TlsOptions& options);
  ~TlsClient();

 private:
  friend class Connection;
  struct Context;
  std::unique_ptr<Context> context_;
  std::string host_;
  bool insecure_;
};

class Connection {
 public:
  using Handler = std::function<void(boost::system::error_code)>;
  template <class Body>
  using Parser = boost::beast::http::response_parser<Body>;

  // `tls` null: plain TCP.
  Connection(boost::asio::io_context& io, std::shared_ptr<TlsClient> tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  boost::beast::tcp_stream& tcp();  // the TCP layer: its timeouts, its socket
  bool is_tls() const;
  void async_connect(const boost::asio::ip::tcp::resolver::results_type& addresses, Handler done);  // TCP only
  // After the TCP connect: TLS's handshake (SNI, the certificate and the host name checked); plain: at once.
  void async_handshake(Handler done);
  // Why a handshake failed, in a few words (the certificate check's verdict when it was that).
  std::string handshake_failure(const boost::system::error_code& ec) const;

  void async_write(boost::beast::http::request<boost::beast::http::string_body>& request, Handler done);
  void async_write(boost::beast::http::request<boost::beast::http::empty_body>& request, Handler done);
  void async_read_header(boost::beast::flat_buffer& buffer, Parser<boost::beast::http::buffer_body>& parser, Handler done);
  void async_read_some(boost::beast::flat_buffer& buffer, Parser<boost::beast::http::buffer_body>& parser, Handler done);
  void async_read(boost::beast::flat_buffer& buffer, Parser<boost::beast::http::string_body>& parser, Handler done);

  bool quiet();  // no byte received since the last response and no error: fit for the next request
  void close();             // no TLS close_notify: the benchmark does not wait for the server's

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmbench
