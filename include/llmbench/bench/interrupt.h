#pragma once

namespace llmbench {

// SIGINT/SIGTERM set a flag instead of killing the process, so a run can stop after the current timed
// run and still write the finished points. A second signal of the same kind terminates at once.
void install_interrupt_handlers();
// 0 when no signal arrived, else the signal number (SIGINT, SIGTERM).
int interrupt_signal();
inline bool interrupted() { return interrupt_signal() != 0; }
// 128 + signal: 130 for SIGINT, 143 for SIGTERM.
int interrupt_exit_code();

}  // namespace llmbench
