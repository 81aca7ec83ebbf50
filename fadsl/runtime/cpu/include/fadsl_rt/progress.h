// fadsl CPU runtime: how many tasks of the launch grid are finished, for `fadsl sim`'s
// "x of N tasks done". fadsl::TaskDone (fadsl_tile.h; nothing on the device) calls TaskDone
// once per task. When the environment variable FADSL_PROGRESS_FILE names a file, the count is
// kept there as one fixed-width decimal line, rewritten in place after every task; when it is
// unset or empty nothing is written. A file that cannot be opened only loses the progress
// display, never the run.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core.h"

namespace fadsl_rt {

struct ProgressState {
    std::mutex mu;
    int64_t done = 0;
    int fd = -2;  // -2: not opened yet; -1: no file
};
inline ProgressState& Progress() {
    static ProgressState s;
    return s;
}

inline int64_t TasksDone() {
    ProgressState& p = Progress();
    std::lock_guard<std::mutex> g(p.mu);
    return p.done;
}

inline void TaskDone() {
    ProgressState& p = Progress();
    std::lock_guard<std::mutex> g(p.mu);
    ++p.done;
    if (p.fd == -2) {
        const char* path = std::getenv("FADSL_PROGRESS_FILE");
        p.fd = (path && *path) ? ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    }
    if (p.fd < 0) return;
    char line[24];
    const int n = std::snprintf(line, sizeof line, "%20lld\n", static_cast<long long>(p.done));
    if (::pwrite(p.fd, line, static_cast<size_t>(n), 0) != n) {
        ::close(p.fd);
        p.fd = -1;
    }
}

}  // namespace fadsl_rt
