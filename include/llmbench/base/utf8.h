#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace llmbench::utf8 {

// Bytes of the well-formed sequence starting at text[i] (i < text.size()), 0 when it is malformed, or -1 when
// it is a valid-so-far sequence cut off by the end of the text.
int sequence_length(std::string_view text, std::size_t i);

// Offset of the first byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no overlongs,
// no surrogates, nothing above U+10FFFF), or text.size() when the whole text is valid.
std::size_t first_invalid(std::string_view text);

inline bool is_valid(std::string_view text) { return first_invalid(text) == text.size(); }

// Length of the longest prefix that ends on a complete code point, for streaming decode: a trailing
// sequence that is still incomplete (but could become valid) is held back.
std::size_t complete_prefix(std::string_view text);

// `text` for an error message: whole up to `max_bytes`, else cut there (back to the start of a code point)
// with "..." after it.
std::string shortened(std::string_view text, std::size_t max_bytes);

}  // namespace llmbench::utf8
