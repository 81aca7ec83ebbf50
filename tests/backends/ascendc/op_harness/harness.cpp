// Test harness (fadsl's own): runs main.cpp's host code (compiled with -Dmain=HostMain
// against launch/tikicpulib.h, which records the launch) and the generated op_host/<op>.cpp
// (op_host_tu.cpp), and prints what each computed, for the test to compare.
// Usage: harness SPEC (op_spec.h).
#include <cstdio>

#include "launch/launch_record.h"
#include "op_spec.h"

int HostMain(int argc, char* argv[]);

namespace {

void PrintBytes(const char* what, const uint8_t* p, size_t n)
{
    std::printf("%s", what);
    for (size_t i = 0; i < n; ++i) {
        std::printf(" %02x", p[i]);
    }
    std::printf("\n");
}

}  // namespace

int main(int argc, char* argv[])
{
    fadsl_test::Spec spec;
    if (argc != 2 || !fadsl_test::ReadSpec(argv[1], spec)) {
        return 2;
    }
    std::string arg0 = "host";
    char* hostArgv[] = {&arg0[0], &spec.dir[0], nullptr};
    const int rc = HostMain(2, hostArgv);
    const fadsl_test::Launch& launch = fadsl_test::Recorded();
    std::printf("main rc %d launched %d blockDim %u\n", rc, launch.done ? 1 : 0, launch.blockDim);
    for (uint8_t* p : launch.args) {
        std::printf("main arg %zu\n", fadsl_test::Allocations()[p]);
    }
    if (launch.done) {
        uint8_t* tiling = launch.args.back();
        PrintBytes("main tiling", tiling, fadsl_test::Allocations()[tiling]);
    }
    fadsl_test::PrintOperator(spec);
    const fadsl_test::OpTiling op = fadsl_test::RunOpTiling(spec);
    std::printf("op tiling status %u blockDim %u workspace %zu schedmode %u\n", op.status, op.blockDim, op.workspace,
                op.scheduleMode);
    PrintBytes("op tiling", op.tiling.data(), op.tiling.size());
    return 0;
}
