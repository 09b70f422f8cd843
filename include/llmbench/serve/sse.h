#pragma once
#include <string>
#include <string_view>

// Server-Sent Events over HTTP/1.1 chunked transfer encoding: the response head, one `data:` event per
// chunk, and the last chunk.
namespace llmbench::serve {

// The status line and headers of an event stream (keep-alive unless `close`).
std::string sse_response_head(bool close);
// Appends one HTTP chunk holding "data: <data>\n\n".
void append_sse_event(std::string& out, std::string_view data);
// "data: [DONE]" and the zero-length chunk that ends the body.
void append_sse_done(std::string& out);

}  // namespace llmbench::serve
