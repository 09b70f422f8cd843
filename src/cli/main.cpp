#include <c10/util/Exception.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <string>

#include "command.h"
#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/base/version.h"
#include "llmbench/dist/dist_env.h"
#include "llmbench/dist/launcher.h"
#include "llmbench/dist/session.h"

namespace {

// A tensor-parallel rank 0 whose child rank died reports that death, not the broken collective it caused;
// other ranks name themselves.
int fail(int code, const std::string& message, bool ours = true) {
  if (auto child = llmbench::dist::child_failure()) {
    // A rank that exited by itself printed its one line (bad input: 2, a failure: 1): the command's error.
    if (const int child_code = llmbench::dist::child_failure_exit()) return child_code;
    std::cerr << "llmbench: error: " << *child << std::endl;
    return llmbench::kExitFailure;
  }
  const int rank = llmbench::dist::process_rank();
  // Our messages have one line, and a value they quote may hold a line break: escaped, not cut there.
  // Other libraries' may carry more lines (c10's backtrace): their first.
  std::cerr << "llmbench: error: " << (rank ? llmbench::cat("rank ", rank, ": ") : "")
            << (ours ? llmbench::one_line(message) : llmbench::first_line(message)) << std::endl;
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace llmbench;
  // A closed stdout (`llmbench load … | head -1`) is a failed write, not death by SIGPIPE (exit 141): the
  // results file is written either way and the exit code stays the command's.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"llmbench: LLM inference latency, measured the way you would trust"};
  app.set_version_flag("--version", std::string(version()) + " (commit " + git_commit() + ")");
  app.require_subcommand(1);
  bool verbose = false;
  std::string log_level = "info";
  app.add_flag("-v,--verbose", verbose, "Log debug messages (same as --log-level debug)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")->capture_default_str();
  // -v and --log-level also after the subcommand (`llmbench report r.json --log-level warn`): an option the
  // subcommand does not know falls through to these.
  app.fallthrough();

  cli::Commands commands;
  cli::add_info_command(app, commands);
  cli::add_generate_command(app, commands);
  cli::add_gate_command(app, commands);
  cli::add_tokenize_command(app, commands);
  cli::add_report_command(app, commands);
  cli::add_run_command(app, commands);
  cli::add_compare_command(app, commands);
  cli::add_load_command(app, commands);
  cli::add_serve_command(app, commands);
  cli::add_profile_command(app, commands);

  cli::set_command_line(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // The first argument that is no option and no subcommand: an unknown command, said as such.
    if (argc > 1 && argv[1][0] != '-') {
      std::string names;
      bool known = false;
      for (const CLI::App* sub : app.get_subcommands({})) {
        names += (names.empty() ? "" : ", ") + sub->get_name();
        known = known || sub->get_name() == argv[1];
      }
      if (!known) return fail(kExitUsage, cat("unknown command '", argv[1], "' (commands: ", names, ")"));
    }
    // CLI11 says "--runs: At Most 1 required but received 2" for an option given twice.
    std::string message = e.what();
    const std::string twice = ": At Most 1 required but received ";
    if (const auto at = message.find(twice); at != std::string::npos)
      message = cat(message.substr(0, at), ": given ", message.substr(at + twice.size()),
                    " times; give it once");
    return fail(kExitUsage, message);
  }

  // A tensor-parallel group ends here, whatever the outcome, before static destruction (NCCL needs CUDA up).
  // A failed run aborts the communicators rather than waiting on ranks that may be stuck.
  struct EndTensorParallel {
    bool ok = false;
    ~EndTensorParallel() { dist::end_tensor_parallel(ok); }
  } end_tp;
  try {
    log::set_level(verbose ? log::Level::debug : log::parse_level(log_level));
    // Tensor-parallel ranks other than 0 keep to warnings unless asked for more.
    if (dist::process_rank() != 0 && log::level() == log::Level::info) log::set_level(log::Level::warn);
    for (auto& c : commands)
      if (c.app->parsed()) {
        int code = c.run();
        // What a command prints on stdout is its result (a table, tokens, a report): a write that failed there
        // (a full disk, a closed pipe) fails the command instead of passing for an empty result.
        errno = 0;
        std::cout.flush();
        if (code == 0 && (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)))
          code = fail(kExitFailure, cat("stdout: write failed", errno ? cat(": ", std::strerror(errno)) : std::string()));
        end_tp.ok = code == 0;
        return code;
      }
    return fail(kExitUsage, "no subcommand given (see --help)");
  } catch (const UsageError& e) {
    return fail(kExitUsage, e.what());
  } catch (const Error& e) {
    return fail(kExitFailure, e.what());
  } catch (const std::bad_alloc&) {
    return fail(kExitFailure, "out of memory");
  } catch (const c10::Error& e) {
    return fail(kExitFailure, e.what_without_backtrace(), false);
  } catch (const std::exception& e) {
    return fail(kExitFailure, e.what(), false);
  }
}
