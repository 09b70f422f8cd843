#include "llmbench/report/kernel_split.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>

#include "llmbench/base/error.h"
#include "llmbench/report/format.h"

namespace llmbench {
namespace {

bool opens(char c) { return c == '<' || c == '(' || c == '[' || c == '{'; }
bool closes(char c) { return c == '>' || c == ')' || c == ']' || c == '}'; }

// Index of the first `want` outside every bracket pair, or npos; npos too when brackets do not balance.
std::size_t find_top(const std::string& s, char want, std::size_t from = 0) {
  int depth = 0;
  for (std::size_t i = from; i < s.size(); ++i) {
    if (depth == 0 && s[i] == want) return i;
    if (opens(s[i])) ++depth;
    if (closes(s[i]) && --depth < 0) return std::string::npos;
  }
  return std::string::npos;
}

std::size_t rfind_top(const std::string& s, char want) {
  std::size_t found = std::string::npos;
  for (std::size_t i = find_top(s, want); i != std::string::npos; i = find_top(s, want, i + 1)) found = i;
  return found;
}

// "a::b::c" → {"a", "b", "c"} (the separators outside brackets).
std::vector<std::string> components(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    if (opens(s[i])) ++depth;
    if (closes(s[i])) --depth;
    if (depth == 0 && s[i] == ':' && s[i + 1] == ':') {
      out.push_back(s.substr(start, i - start));
      start = i + 2;
      ++i;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

std::vector<std::string> identifiers(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    if (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back(s.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// torch's elementwise/reduce kernels are named by their functor, found among the template arguments.
std::string functor_hint(const std::string& targs) {
  for (const auto& id : identifiers(targs)) {
    if (starts(id, "gpu_") || id == "BinaryFunctor" || id == "UnaryFunctor" || id == "AUnaryFunctor" ||
        id == "BUnaryFunctor")
      continue;
    if (has(id, "kernel") || has(id, "Functor") || has(id, "functor")) return id;
  }
  return "";
}

}  // namespace

std::string short_kernel_name(const std::string& name) {
  if (starts(name, "Memcpy") || starts(name, "Memset")) return name;
  std::string s = name;
  for (std::size_t at; (at = s.find("(anonymous namespace)::")) != std::string::npos;) s.erase(at, 23);
  const std::size_t args = find_top(s, '(');
  std::string head = s.substr(0, args);  // return type and name with template arguments
  const std::size_t space = rfind_top(head, ' ');
  if (space != std::string::npos) head = head.substr(space + 1);
  std::string base = head, targs;
  if (const std::size_t lt = find_top(head, '<'); lt != std::string::npos) {
    base = head.substr(0, lt);
    const std::size_t gt = find_top(head, '>', lt + 1) ;
    targs = head.substr(lt + 1, gt == std::string::npos ? std::string::npos : gt - lt - 1);
  }
  const std::vector<std::string> parts = components(base);
  std::string leaf = parts.back();
  if (leaf.empty()) return name;
  std::string hint;
  const bool generic = leaf == "kernel" || leaf == "Kernel" || leaf == "Kernel2" || leaf == "device_kernel";
  if (generic) {
    if (parts.size() > 1) leaf = parts[parts.size() - 2] + "::" + leaf;
    const std::string first = targs.substr(0, find_top(targs, ','));
    std::string type = components(first.substr(0, find_top(first, '<'))).back();
    type.erase(0, type.find_first_not_of(' '));
    if (type.size() >= 8) hint = type;
  } else if (has(leaf, "elementwise") || has(leaf, "reduce_kernel")) {
    hint = functor_hint(targs);
  }
  return hint.empty() ? leaf : leaf + " [" + hint + "]";
}

std::vector<KernelActivity> after_lead_in(std::vector<KernelActivity> activities, double gap_us) {
  for (const auto& a : activities)
    if (a.start_us < 0) throw Error(cat("GPU activity '", a.name, "' has no start time: the lead-in cannot be told apart"));
  std::stable_sort(activities.begin(), activities.end(),
                   [](const KernelActivity& a, const KernelActivity& b) { return a.start_us < b.start_us; });
  double busy_until = 0;  // the latest end among the activities before i
  for (std::size_t i = 0; i < activities.size(); ++i) {
    if (i > 0 && activities[i].start_us - busy_until >= gap_us)
      return std::vector<KernelActivity>(activities.begin() + static_cast<std::ptrdiff_t>(i), activities.end());
    busy_until = std::max(busy_until, activities[i].start_us + activities[i].us);
  }
  throw Error(cat("the profiler recorded ", activities.size(), " GPU activities but no idle pause of ", gap_us / 1e3,
                  " ms between the lead-in and the recorded work (it dropped the lead-in's activities, or its "
                  "timestamps are not usable)"));
}

KernelSplit split_kernels(const std::vector<KernelActivity>& activities, int steps, double wall_us, bool full_names) {
  if (steps < 1) throw Error(cat("kernel split over ", steps, " steps"));
  std::map<std::string, std::pair<int, double>> by_name;  // name → (calls, µs) over all steps
  for (const auto& a : activities) {
    auto& slot = by_name[full_names ? a.name : short_kernel_name(a.name)];
    ++slot.first;
    slot.second += a.us;
  }
  KernelSplit split;
  split.steps = steps;
  split.wall_us = wall_us;
  for (const auto& [name, v] : by_name) {
    KernelSplitRow row{name, static_cast<double>(v.first) / steps, v.second / steps, 0};
    row.share = wall_us > 0 ? row.us_per_step / wall_us : 0;
    split.kernel_us += row.us_per_step;
    split.calls += row.calls_per_step;
    split.rows.push_back(std::move(row));
  }
  std::stable_sort(split.rows.begin(), split.rows.end(),
                   [](const KernelSplitRow& a, const KernelSplitRow& b) { return a.us_per_step > b.us_per_step; });
  return split;
}

namespace {

// Display width of UTF-8 text: one column per code point.
std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad_left(const std::string& s, std::size_t width) {
  const std::size_t n = columns(s);
  return n >= width ? s : std::string(width - n, ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  const std::size_t n = columns(s);
  return n >= width ? s : s + std::string(width - n, ' ');
}

}  // namespace

std::string format_kernel_split(const KernelSplit& split, int max_rows) {
  constexpr std::size_t kNameWidth = 72;
  auto cut = [&](const std::string& name) {
    return name.size() <= kNameWidth ? name : name.substr(0, kNameWidth - 3) + "...";
  };
  const std::string per = "/" + split.unit;
  std::ostringstream out;
  out << split.title << " — " << split.steps << " " << split.unit << (split.steps == 1 ? "" : "s") << " recorded\n";
  out << pad_right("kernel", kNameWidth) << "  " << pad_left("calls" + per, 13) << "  " << pad_left("µs" + per, 12)
      << "  " << pad_left("% of " + split.unit, 10) << "\n";
  auto line = [&](const std::string& name, double calls, double us, double share) {
    out << pad_right(cut(name), kNameWidth) << "  " << pad_left(fixed(calls, calls == static_cast<int>(calls) ? 0 : 2), 13)
        << "  " << pad_left(fixed(us, 1), 12) << "  "
        << pad_left(split.wall_us > 0 ? fixed(100 * share, 1) + " %" : "—", 10) << "\n";
  };
  const std::size_t shown = std::min(split.rows.size(), static_cast<std::size_t>(std::max(max_rows, 0)));
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& r = split.rows[i];
    line(r.name, r.calls_per_step, r.us_per_step, r.share);
  }
  if (shown < split.rows.size()) {
    double calls = 0, us = 0, share = 0;
    for (std::size_t i = shown; i < split.rows.size(); ++i) {
      calls += split.rows[i].calls_per_step;
      us += split.rows[i].us_per_step;
      share += split.rows[i].share;
    }
    line(cat("(", split.rows.size() - shown, " more kernels)"), calls, us, share);
  }
  line("all GPU activity", split.calls, split.kernel_us, split.wall_us > 0 ? split.kernel_us / split.wall_us : 0);
  if (split.wall_us > 0) {
    out << split.unit << " wall time " << fixed(split.wall_us, 1) << " µs without the profiler";
    if (split.profiled_wall_us > 0) out << ", " << fixed(split.profiled_wall_us, 1) << " µs while recording";
    out << "; GPU idle or launching " << fixed(std::max(0.0, split.wall_us - split.kernel_us), 1) << " µs ("
        << fixed(100 * std::max(0.0, 1 - split.kernel_us / split.wall_us), 1) << " %)\n";
  }
  for (const auto& n : split.notes) out << "note: " << n << "\n";
  return out.str();
}

}  // namespace llmbench
