// fadsl's own stand-in for CANN's register/op_def_registry.h (and the ge/gert types it
// brings), for tests only: the subset a generated op_host/<op>.cpp uses, with the names
// and shapes of metadef's inc/external headers. OP_ADD records the operator definition
// so the test harness can read its inputs, outputs, attributes and functions.
#ifndef FADSL_TEST_OP_DEF_REGISTRY_H
#define FADSL_TEST_OP_DEF_REGISTRY_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tiling/platform/platform_ascendc.h"

namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;
enum DataType { DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT32 = 3, DT_UINT8 = 4, DT_BF16 = 27 };
enum Format { FORMAT_ND = 2 };
}  // namespace ge

namespace gert {
class Shape {
public:
    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
    size_t GetDimNum() const { return dims_.size(); }
    int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : INT64_MIN; }
    void SetDimNum(size_t n) { dims_.resize(n, 0); }
    void SetDim(size_t i, int64_t d)
    {
        if (i < dims_.size()) {
            dims_[i] = d;
        }
    }

private:
    std::vector<int64_t> dims_;
};

class StorageShape {
public:
    explicit StorageShape(Shape s) : shape_(s) {}
    const Shape& GetStorageShape() const { return shape_; }
    const Shape& GetOriginShape() const { return shape_; }

private:
    Shape shape_;
};

class RuntimeAttrs {
public:
    std::vector<float> floats;
    std::vector<int64_t> ints;
    std::vector<char> isFloat;
    template <typename T>
    const T* GetAttrPointer(size_t index) const;
};
template <>
inline const float* RuntimeAttrs::GetAttrPointer<float>(size_t i) const
{
    return i < isFloat.size() && isFloat[i] ? &floats[i] : nullptr;
}
template <>
inline const int64_t* RuntimeAttrs::GetAttrPointer<int64_t>(size_t i) const
{
    return i < isFloat.size() && !isFloat[i] ? &ints[i] : nullptr;
}

class TilingData {
public:
    void* GetData() { return bytes.data(); }
    size_t GetCapacity() const { return bytes.size(); }
    void SetDataSize(size_t size) { dataSize = size; }
    std::vector<uint8_t> bytes = std::vector<uint8_t>(64 * 1024);
    size_t dataSize = 0;
};

class CompileTimeTensorDesc {
public:
    ge::DataType GetDataType() const { return dtype; }
    ge::DataType dtype = ge::DT_FLOAT16;
};

class TilingContext {
public:
    const StorageShape* GetInputShape(size_t i) const { return i < inputs.size() ? &inputs[i] : nullptr; }
    const CompileTimeTensorDesc* GetInputDesc(size_t i) const { return i < descs.size() ? &descs[i] : nullptr; }
    ge::graphStatus SetTilingKey(uint64_t key)
    {
        tilingKey = key;
        return ge::GRAPH_SUCCESS;
    }
    const RuntimeAttrs* GetAttrs() const { return &attrs; }
    fe::PlatFormInfos* GetPlatformInfo() const { return platform; }
    ge::graphStatus SetBlockDim(uint32_t d)
    {
        blockDim = d;
        return ge::GRAPH_SUCCESS;
    }
    ge::graphStatus SetScheduleMode(const uint32_t mode)
    {
        scheduleMode = mode;
        return ge::GRAPH_SUCCESS;
    }
    TilingData* GetRawTilingData() { return &tiling; }
    size_t* GetWorkspaceSizes(size_t count)
    {
        workspaces.assign(count, 0);
        return workspaces.data();
    }
    std::vector<StorageShape> inputs;
    std::vector<CompileTimeTensorDesc> descs;
    uint64_t tilingKey = 0;
    RuntimeAttrs attrs;
    fe::PlatFormInfos* platform = nullptr;
    uint32_t blockDim = 0;
    uint32_t scheduleMode = 0;
    TilingData tiling;
    std::vector<size_t> workspaces;
};

class InferShapeContext {
public:
    const Shape* GetInputShape(size_t i) const { return i < inputs.size() ? &inputs[i] : nullptr; }
    Shape* GetOutputShape(size_t i) { return i < outputs.size() ? &outputs[i] : nullptr; }
    const RuntimeAttrs* GetAttrs() const { return &attrs; }
    std::vector<Shape> inputs;
    std::vector<Shape> outputs;
    RuntimeAttrs attrs;
};

class InferDataTypeContext {
public:
    ge::DataType GetInputDataType(size_t i) const { return i < inputs.size() ? inputs[i] : ge::DT_FLOAT; }
    std::vector<ge::DataType> inputs;
    ge::graphStatus SetOutputDataType(size_t i, ge::DataType t)
    {
        if (outputs.size() <= i) {
            outputs.resize(i + 1, ge::DT_FLOAT);
        }
        outputs[i] = t;
        return ge::GRAPH_SUCCESS;
    }
    std::vector<ge::DataType> outputs;
};
}  // namespace gert

namespace ops {
enum Option { IGNORE = 0, OPTIONAL = 1, REQUIRED = 2, DYNAMIC = 3, VIRTUAL = 4 };
using TilingFn = ge::graphStatus (*)(gert::TilingContext*);
using InferShapeFn = ge::graphStatus (*)(gert::InferShapeContext*);
using InferDataTypeFn = ge::graphStatus (*)(gert::InferDataTypeContext*);

struct OpParamDef {
    std::string name;
    Option type = IGNORE;
    std::vector<ge::DataType> dtypes;
    std::vector<ge::Format> formats;
    OpParamDef& ParamType(Option t)
    {
        type = t;
        return *this;
    }
    OpParamDef& DataType(std::vector<ge::DataType> t)
    {
        dtypes = t;
        return *this;
    }
    OpParamDef& Format(std::vector<ge::Format> f)
    {
        formats = f;
        return *this;
    }
};

struct OpAttrDef {
    std::string name;
    Option type = IGNORE;
    std::string kind;
    OpAttrDef& AttrType(Option t)
    {
        type = t;
        return *this;
    }
    OpAttrDef& Float(void) { return Kind("Float"); }
    OpAttrDef& Float(float) { return Kind("Float"); }
    OpAttrDef& Int(void) { return Kind("Int"); }
    OpAttrDef& Int(int64_t) { return Kind("Int"); }
    OpAttrDef& Kind(const char* k)
    {
        kind = k;
        return *this;
    }
};

struct OpAICoreDef {
    TilingFn tiling = nullptr;
    std::vector<std::string> configs;
    OpAICoreDef& SetTiling(TilingFn f)
    {
        tiling = f;
        return *this;
    }
    OpAICoreDef& AddConfig(const char* soc)
    {
        configs.push_back(soc);
        return *this;
    }
};

class OpDef {
public:
    explicit OpDef(const char* type) : type_(type) {}
    OpParamDef& Input(const char* name) { return Add(inputs_, name); }
    OpParamDef& Output(const char* name) { return Add(outputs_, name); }
    OpAttrDef& Attr(const char* name)
    {
        attrs_.push_back(OpAttrDef{name});
        return attrs_.back();
    }
    OpDef& SetInferShape(InferShapeFn f)
    {
        inferShape_ = f;
        return *this;
    }
    OpDef& SetInferDataType(InferDataTypeFn f)
    {
        inferDataType_ = f;
        return *this;
    }
    OpAICoreDef& AICore() { return aicore_; }

    std::string type_;
    std::vector<OpParamDef> inputs_, outputs_;
    std::vector<OpAttrDef> attrs_;
    InferShapeFn inferShape_ = nullptr;
    InferDataTypeFn inferDataType_ = nullptr;
    OpAICoreDef aicore_;

private:
    static OpParamDef& Add(std::vector<OpParamDef>& list, const char* name)
    {
        list.push_back(OpParamDef{name});
        return list.back();
    }
};

inline std::vector<OpDef*>& Registered()
{
    static std::vector<OpDef*> ops;
    return ops;
}
}  // namespace ops

#define OP_ADD(op_type)                                 \
    static op_type g_fadsl_test_op_##op_type(#op_type); \
    static const bool g_fadsl_test_added_##op_type =    \
        (ops::Registered().push_back(&g_fadsl_test_op_##op_type), true)

#endif
