#pragma once
#include <cstddef>
#include <initializer_list>

namespace llmbench {

// A/B switches read from the environment at every call (LLMBENCH_GEMV_KERNEL, LLMBENCH_PREFILL_GRAPH, …;
// docs/performance.md says what each one compares), so a test can flip one between calls.

// The index in `values` of the variable's value: 0 (the default) when it is unset or empty; UsageError
// "NAME must be a, b or c, got 'x'" for any other text.
std::size_t env_switch(const char* name, std::initializer_list<const char*> values);

// An integer in [lo, hi]; `unset` when the variable is unset or empty; UsageError otherwise.
long env_int(const char* name, long lo, long hi, long unset = 0);

}  // namespace llmbench
