// What the stand-in launch API recorded (shared by the harness's two translation units).
#ifndef FADSL_TEST_LAUNCH_RECORD_H
#define FADSL_TEST_LAUNCH_RECORD_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <vector>

namespace fadsl_test {
inline std::map<void*, size_t>& Allocations()
{
    static std::map<void*, size_t> sizes;
    return sizes;
}
struct Launch {
    uint32_t blockDim = 0;
    std::vector<uint8_t*> args;
    bool done = false;
};
inline Launch& Recorded()
{
    static Launch launch;
    return launch;
}
inline void RecordLaunch(uint32_t blockDim, std::initializer_list<uint8_t*> args)
{
    Recorded() = Launch{blockDim, std::vector<uint8_t*>(args), true};
}
}  // namespace fadsl_test

#endif
