#pragma once
#include <string>

namespace llmbench::serve {

// Server-side stage durations of one request, milliseconds.
struct StageTimes {
  double http_recv = 0;  // first byte of the request → request parsed
  double queue = 0;      // engine: submitted → took a slot
  double tokenize = 0;   // body JSON → prompt token ids
  double prefill = 0;    // engine: took a slot → first token
  double decode = 0;     // first token → last token
  double stream = 0;     // writing this response's bytes to the socket (streamed: before the final chunk)
};

// "http_recv;dur=0.041, queue;dur=0.002, …" (the Server-Timing header's syntax)
std::string server_timing_header(const StageTimes& t);
// {"http_recv_ms":…, "queue_ms":…, …}
std::string timing_json(const StageTimes& t);

}  // namespace llmbench::serve
