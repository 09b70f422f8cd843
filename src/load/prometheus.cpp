#include "llmbench/load/prometheus.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace llmbench {

namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

// A sample value: a float, NaN or ±Inf (Go's ParseFloat spellings); false when it is not one.
bool parse_value(const std::string& text, double& out) {
  if (text == "NaN") return out = std::numeric_limits<double>::quiet_NaN(), true;
  if (text == "+Inf" || text == "Inf") return out = std::numeric_limits<double>::infinity(), true;
  if (text == "-Inf") return out = -std::numeric_limits<double>::infinity(), true;
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(out);
}

// One sample line; false when it is malformed.
bool parse_sample(const std::string& line, PromSample& s) {
  std::size_t i = 0;
  if (i >= line.size() || !name_start(line[i])) return false;
  while (i < line.size() && name_char(line[i])) ++i;
  s.name = line.substr(0, i);
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && line[i] == ' ') ++i;
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      const std::size_t b = i;
      if (i >= line.size() || !(std::isalpha(static_cast<unsigned char>(line[i])) || line[i] == '_')) return false;
      while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
      std::string label = line.substr(b, i - b);
      if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return false;
      i += 2;
      std::string value;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\') {
          if (++i >= line.size()) return false;
          value += line[i] == 'n' ? '\n' : line[i];  // \\ \" \n
        } else {
          value += line[i];
        }
        ++i;
      }
      if (i >= line.size()) return false;  // no closing quote
      ++i;
      s.labels.emplace_back(std::move(label), std::move(value));
      while (i < line.size() && line[i] == ' ') ++i;
      if (i < line.size() && line[i] == ',') ++i;
      else if (i >= line.size() || line[i] != '}') return false;
    }
  }
  std::istringstream rest(line.substr(i));
  std::string value, timestamp, extra;
  if (!(rest >> value)) return false;
  rest >> timestamp;
  if (rest >> extra) return false;
  return parse_value(value, s.value);
}

std::string escaped(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace

PromPage parse_prometheus(const std::string& text) {
  PromPage page;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    line = line.substr(b);
    if (line[0] == '#') {
      std::istringstream words(line.substr(1));
      std::string keyword, family, type;
      if (words >> keyword >> family >> type && keyword == "TYPE") page.types[family] = type;
      continue;
    }
    PromSample s;
    if (parse_sample(line, s)) page.samples.push_back(std::move(s));
    else ++page.bad_lines;
  }
  return page;
}

std::string series_key(const std::string& name, std::vector<std::pair<std::string, std::string>> labels,
                       const std::string& drop) {
  labels.erase(std::remove_if(labels.begin(), labels.end(), [&](const auto& l) { return !drop.empty() && l.first == drop; }),
               labels.end());
  if (labels.empty()) return name;
  std::sort(labels.begin(), labels.end());
  std::string out = name + "{";
  for (std::size_t i = 0; i < labels.size(); ++i) out += (i ? "," : "") + labels[i].first + "=\"" + escaped(labels[i].second) + "\"";
  return out + "}";
}

}  // namespace llmbench
