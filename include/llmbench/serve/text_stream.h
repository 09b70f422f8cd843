#pragma once
#include <string>
#include <vector>

#include "llmbench/tokenizer/stream_decoder.h"

namespace llmbench::serve {

// Detokenizes a completion as it is generated and watches for stop strings on the text. push() returns
// the text that may be sent now: valid UTF-8 (StreamDecoder), and never the start of a possible stop
// string, which is held back until the next tokens show it is not one. Once a stop string matched,
// the text before it has been returned and nothing more is.
class TextStream {
 public:
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop);

  std::string push(TokenId id);
  // End of generation: the text still held back (unless stopped).
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  // Moves what can be sent out of pending_ into the result; sets stopped_ on a match.
  std::string release(bool at_end);

  StreamDecoder decoder_;
  std::vector<std::string> stop_;
  std::string pending_;  // decoded text not sent yet (a possible stop-string prefix)
  bool stopped_ = false;
};

}  // namespace llmbench::serve
