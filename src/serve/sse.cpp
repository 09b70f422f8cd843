#include "llmbench/serve/sse.h"

#include <cstdio>

namespace llmbench::serve {

std::string sse_response_head(bool close, bool chunked) {
  return std::string("HTTP/1.1 200 OK\r\nServer: llmbench\r\nContent-Type: text/event-stream\r\n"
                     "Cache-Control: no-cache\r\n") +
         (chunked ? "Transfer-Encoding: chunked\r\n" : "") + "Connection: " + (close ? "close" : "keep-alive") +
         "\r\n\r\n";
}

void append_sse_event(std::string& out, std::string_view data, bool chunked) {
  if (chunked) {
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size() + 8);  // "data: " + data + "\n\n"
    out += size;
  }
  out += "data: ";
  out += data;
  out += chunked ? "\n\n\r\n" : "\n\n";
}

void append_sse_done(std::string& out, bool chunked) {
  append_sse_event(out, "[DONE]", chunked);
  if (chunked) out += "0\r\n\r\n";
}

}  // namespace llmbench::serve
