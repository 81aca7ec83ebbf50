// Runs the op package's kernel (op_kernel/<op>.cpp, compiled against fadsl's CPU runtime)
// with the tiling, blockDim and workspace size the generated op_host/<op>.cpp computes
// (op_host_tu.cpp). Usage: op_run SPEC, where SPEC (op_spec.h) also lists the operator's
// tensors in order, as "tensor in|out PATH BYTES". FADSL_OP_DECL declares the kernel
// entry, FADSL_OP_LAUNCH launches it over t (tiling), a[] (tensors), workspace, tiling.
#include <cstdio>
#include <cstring>

#include "op_spec.h"
#include "tikicpulib.h"

FADSL_OP_DECL

int main(int argc, char* argv[])
{
    fadsl_test::Spec spec;
    if (argc != 2 || !fadsl_test::ReadSpec(argv[1], spec)) {
        return 2;
    }
    const fadsl_test::OpTiling t = fadsl_test::RunOpTiling(spec);
    if (t.status != 0) {
        std::fprintf(stderr, "the op's tiling function failed\n");
        return 3;
    }
    std::vector<uint8_t*> a;
    std::vector<std::string> kinds, paths;
    std::vector<size_t> sizes;
    std::ifstream file(argv[1]);
    std::string line;
    while (std::getline(file, line)) {
        std::istringstream in(line);
        std::string key, kind, path;
        size_t bytes = 0;
        in >> key >> kind >> path >> bytes;
        if (key != "tensor") {
            continue;
        }
        uint8_t* p = static_cast<uint8_t*>(AscendC::GmAlloc(bytes));
        if (kind == "in") {
            FILE* f = std::fopen(path.c_str(), "rb");
            if (f == nullptr || std::fread(p, 1, bytes, f) != bytes) {
                std::fprintf(stderr, "cannot read %s\n", path.c_str());
                return 2;
            }
            std::fclose(f);
        }
        a.push_back(p);
        kinds.push_back(kind);
        paths.push_back(path);
        sizes.push_back(bytes);
    }
    uint8_t* workspace = static_cast<uint8_t*>(AscendC::GmAlloc(t.workspace));
    uint8_t* tiling = static_cast<uint8_t*>(AscendC::GmAlloc(t.tiling.size()));
    std::memcpy(tiling, t.tiling.data(), t.tiling.size());
    AscendC::SetKernelMode(KernelMode::FADSL_KERNEL_MODE);
    FADSL_OP_LAUNCH;
    for (size_t i = 0; i < a.size(); ++i) {
        if (kinds[i] == "out") {
            FILE* f = std::fopen(paths[i].c_str(), "wb");
            if (f == nullptr || std::fwrite(a[i], 1, sizes[i], f) != sizes[i]) {
                return 2;
            }
            std::fclose(f);
        }
    }
    std::printf("op_run blockDim %u workspace %zu\n", t.blockDim, t.workspace);
    return 0;
}
