// The harness's run description (fadsl's own test code), shared by its translation units.
// A spec file holds lines: dir PATH | cores N | sysws N | input RANK D0 D1 ... |
// attr f VALUE | attr i VALUE.
#ifndef FADSL_TEST_OP_SPEC_H
#define FADSL_TEST_OP_SPEC_H

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fadsl_test {

struct Spec {
    std::string dir;
    uint32_t cores = 0;
    uint32_t sysws = 0;
    std::vector<std::vector<int64_t>> inputs;
    std::vector<bool> attrIsFloat;
    std::vector<double> attrs;
};

struct OpTiling {
    uint32_t status = 1;
    uint32_t blockDim = 0;
    uint32_t scheduleMode = 0;
    size_t workspace = 0;
    std::vector<uint8_t> tiling;
};

inline bool ReadSpec(const char* path, Spec& spec)
{
    std::ifstream file(path);
    std::string line;
    while (std::getline(file, line)) {
        std::istringstream in(line);
        std::string key;
        in >> key;
        if (key == "dir") {
            in >> spec.dir;
        } else if (key == "cores") {
            in >> spec.cores;
        } else if (key == "sysws") {
            in >> spec.sysws;
        } else if (key == "input") {
            size_t rank = 0;
            in >> rank;
            std::vector<int64_t> dims(rank);
            for (int64_t& d : dims) {
                in >> d;
            }
            spec.inputs.push_back(dims);
        } else if (key == "attr") {
            std::string kind;
            double value = 0;
            in >> kind >> value;
            spec.attrIsFloat.push_back(kind == "f");
            spec.attrs.push_back(value);
        }
    }
    return !spec.dir.empty();
}

// Defined with the generated op_host/<op>.cpp (op_host_tu.cpp).
OpTiling RunOpTiling(const Spec& spec);
void PrintOperator(const Spec& spec);

}  // namespace fadsl_test

#endif
