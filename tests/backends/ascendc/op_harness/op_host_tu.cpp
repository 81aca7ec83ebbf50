// The generated op_host/<op>.cpp (FADSL_OP_HOST), compiled against fadsl's stand-ins of the
// CANN host headers (register/, tiling/), with what the harness asks of it.
#include <cstdio>

#include "op_spec.h"
#include FADSL_OP_HOST

namespace fadsl_test {
namespace {

ops::OpDef& TheOp()
{
    if (ops::Registered().size() != 1) {
        std::fprintf(stderr, "expected one OP_ADD, got %zu\n", ops::Registered().size());
        std::exit(4);
    }
    return *ops::Registered()[0];
}

gert::Shape MakeShape(const std::vector<int64_t>& dims)
{
    gert::Shape s;
    s.SetDimNum(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
        s.SetDim(i, dims[i]);
    }
    return s;
}

void SetAttrs(const Spec& spec, gert::RuntimeAttrs& a)
{
    for (size_t i = 0; i < spec.attrs.size(); ++i) {
        a.isFloat.push_back(spec.attrIsFloat[i]);
        a.floats.push_back(static_cast<float>(spec.attrs[i]));
        a.ints.push_back(static_cast<int64_t>(spec.attrs[i]));
    }
}

}  // namespace

OpTiling RunOpTiling(const Spec& spec)
{
    fe::PlatFormInfos platform;
    platform.aicCores = spec.cores;
    platform.libApiWorkspace = spec.sysws;
    gert::TilingContext tc;
    for (const auto& dims : spec.inputs) {
        tc.inputs.emplace_back(MakeShape(dims));
    }
    SetAttrs(spec, tc.attrs);
    tc.platform = &platform;
    OpTiling out;
    out.status = TheOp().aicore_.tiling(&tc);
    out.blockDim = tc.blockDim;
    out.scheduleMode = tc.scheduleMode;
    out.workspace = tc.workspaces.empty() ? 0 : tc.workspaces[0];
    out.tiling.assign(tc.tiling.bytes.begin(), tc.tiling.bytes.begin() + tc.tiling.dataSize);
    return out;
}

void PrintOperator(const Spec& spec)
{
    const ops::OpDef& op = TheOp();
    std::printf("op type %s configs %zu", op.type_.c_str(), op.aicore_.configs.size());
    for (const std::string& c : op.aicore_.configs) {
        std::printf(" %s", c.c_str());
    }
    std::printf("\n");
    for (const auto* list : {&op.inputs_, &op.outputs_}) {
        for (const auto& p : *list) {
            std::printf("op %s %s %d %zu %d\n", list == &op.inputs_ ? "input" : "output", p.name.c_str(),
                        static_cast<int>(p.type), p.dtypes.size(), p.dtypes.empty() ? -1 : static_cast<int>(p.dtypes[0]));
        }
    }
    for (const auto& a : op.attrs_) {
        std::printf("op attr %s %s\n", a.name.c_str(), a.kind.c_str());
    }
    gert::InferShapeContext ic;
    for (const auto& dims : spec.inputs) {
        ic.inputs.push_back(MakeShape(dims));
    }
    SetAttrs(spec, ic.attrs);
    ic.outputs.resize(op.outputs_.size());
    std::printf("op infershape %u\n", op.inferShape_(&ic));
    for (const gert::Shape& s : ic.outputs) {
        std::printf("op shape");
        for (size_t i = 0; i < s.GetDimNum(); ++i) {
            std::printf(" %lld", static_cast<long long>(s.GetDim(i)));
        }
        std::printf("\n");
    }
    gert::InferDataTypeContext dc;
    op.inferDataType_(&dc);
    for (ge::DataType t : dc.outputs) {
        std::printf("op dtype %d\n", static_cast<int>(t));
    }
}

}  // namespace fadsl_test
