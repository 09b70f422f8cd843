#pragma once
#include <string>
#include <string_view>

// Server-Sent Events over HTTP/1.1 chunked transfer encoding: the response head, one `data:` event per
// chunk, and the last chunk. An HTTP/1.0 client gets them unframed (chunked = false): the body ends
// when the server closes the connection.
namespace llmbench::serve {

// The status line and headers of an event stream (keep-alive unless `close`).
std::string sse_response_head(bool close, bool chunked = true);
// Appends one HTTP chunk holding "data: <data>\n\n".
void append_sse_event(std::string& out, std::string_view data, bool chunked = true);
// "data: [DONE]" and the zero-length chunk that ends the body.
void append_sse_done(std::string& out, bool chunked = true);

}  // namespace llmbench::serve
